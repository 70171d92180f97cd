"""A misbehaving plugin gets one clear line naming it; the others keep working; --strict makes it fatal."""

from __future__ import annotations

import json

import pytest

from nia_core.plugin_host import load_host
from nia_core.project import locate

from .conftest import run

GOOD = """
from nia_core import ContextSource, hookimpl

NIA_NAMESPACE = "good"

@hookimpl
def nia_context_sources(location):
    return [ContextSource(key="good/hello", load=lambda: "world", baseline=lambda v: f"Hello, {v}.")]
"""


def hook(body: str, *, namespace: str | None = "bad", signature: str = "location") -> str:
    declared = f"NIA_NAMESPACE = {namespace!r}\n" if namespace else ""
    return (
        "import time\nfrom nia_core import ContextSource, hookimpl\n"
        f"{declared}\n@hookimpl\ndef nia_context_sources({signature}):\n    {body}\n"
    )


def source(key: str, **options: str) -> str:
    extra = "".join(f", {name}={value}" for name, value in options.items())
    return f"ContextSource(key={key!r}, load=lambda: 1, baseline=lambda v: 'bad says ' + str(v){extra})"


CASES = {
    "import error": (
        "import nope_not_a_module\n",
        "failed to import: ModuleNotFoundError: No module named 'nope_not_a_module'",
    ),
    "syntax error": ("def broken(:\n    pass\n", "failed to import: syntax error at "),
    "wrong hook signature": (
        hook("return []", signature="location, colour"),
        "invalid hook implementation: nia_context_sources(location, colour): Argument(s) {'colour'} are declared "
        "in the hookimpl but can not be found in the hookspec",
    ),
    "unknown hook": (
        "from nia_core import hookimpl\n@hookimpl\ndef nia_context_source(location):\n    return []\n",
        "zz_bad.py:2), which is not a nia hook",  # implements nia_context_source (FILE:LINE), ...
    ),
    "hook raises": (
        hook("raise RuntimeError('no token for the tracker')"),
        "raised RuntimeError: no token for the tracker",
    ),
    "generator raises": (
        hook(f"yield {source('bad/x')}\n    raise RuntimeError('the tracker went away')"),
        "raised RuntimeError: the tracker went away",
    ),
    "value the codec cannot encode": (
        hook(f"return [{source('bad/x', load='lambda: {1, 2}')}]".replace("load=lambda: 1, ", "")),
        "context source 'bad/x': codec could not encode the value: Object of type set is not JSON serializable",
    ),
    "returns a dict": (hook("return {'key': 'bad/x'}"), "returned dict, not a list of ContextSource"),
    "returns strings": (hook("return ['bad/x']"), "returned a str in its list, not a ContextSource"),
    "key outside namespace": (
        hook(f"return [{source('other/x')}]"),
        "source key 'other/x' is outside its declared namespace 'bad/'",
    ),
    "reserved namespace key": (
        hook(f"return [{source('nia/date')}]", namespace=None),
        "source key 'nia/date' uses the namespace 'nia/', reserved for built-ins",
    ),
    "declares reserved namespace": (hook("return []", namespace="nia"), "NIA_NAMESPACE 'nia' is reserved"),
    "key clash": (
        hook(f"return [{source('good/hello')}]", namespace=None),
        "source key 'good/hello' is already contributed by plugin 'good'",
    ),
    "loader hangs": (
        hook(
            f"return [{source('bad/slow', load='lambda: time.sleep(30)', timeout='0.3')}]".replace(
                "load=lambda: 1, ", ""
            )
        ),
        "context source 'bad/slow': loader timed out after 0.3s",
    ),
}


@pytest.fixture(params=sorted(CASES), ids=lambda name: name.replace(" ", "-"))
def case(request, site, project):
    module, reason = CASES[request.param]
    site.plugin("good", GOOD)
    site.plugin("zz-bad", module)
    return reason


def test_plugins_list_shows_the_plugin_broken_with_the_reason(case, project):
    result = run("plugins", "list", "--json", "--location", str(project))

    assert result.exit_code == 0, result.output
    plugins = {p["name"]: p for p in json.loads(result.stdout)}
    assert plugins["zz-bad"]["status"] == "broken"
    assert case in plugins["zz-bad"]["error"]
    assert plugins["good"]["status"] == "enabled" and plugins["good"]["source_keys"] == ["good/hello"]


def test_other_plugins_keep_working_and_one_line_names_the_plugin(case, project):
    result = run("context", "show", "--location", str(project))

    assert result.exit_code == 0, result.output
    assert "Hello, world." in result.stdout and "Today's date is" in result.stdout
    assert "bad says" not in result.stdout
    naming = [line for line in result.stderr.splitlines() if "plugin 'zz-bad'" in line]
    assert len(naming) == 1, result.stderr
    assert naming[0].startswith("Warning: plugin 'zz-bad': ") and case in naming[0]


def test_strict_turns_it_into_an_error(case, project):
    result = run("--strict", "context", "show", "--location", str(project))

    assert result.exit_code == 1
    error = result.stderr.splitlines()[-1]
    assert error.startswith("Error: plugin 'zz-bad': ") and case in error
    assert "Traceback" not in result.output


def test_strict_plugins_list_still_lists_then_fails(case, project):
    result = run("--strict", "plugins", "list", "--location", str(project))

    assert result.exit_code == 1
    assert "good 1.0 [entry point] enabled" in result.stdout
    assert "zz-bad 1.0 [entry point] broken" in result.stdout
    assert result.stderr.splitlines()[-1].startswith("Error: plugin 'zz-bad': ")


def test_a_clashing_key_is_never_renamed(site, project):
    site.plugin("good", GOOD)
    site.plugin("zz-bad", CASES["key clash"][0])

    data = json.loads(run("context", "show", "--json", "--location", str(project)).stdout)

    keys = [s["key"] for s in data["sources"]]
    assert [s["plugin"] for s in data["sources"] if s["key"].startswith("good/")] == ["good"]
    assert keys.count("good/hello") == 1 and all(not k.startswith("good/hello") or k == "good/hello" for k in keys)


def test_a_rejected_plugin_leaves_nothing_registered(site, project):
    site.plugin(
        "half",
        "import click\nfrom nia_core import hookimpl\n"
        "@hookimpl\ndef nia_register_commands(cli):\n"
        "    @cli.command()\n    def half():\n        click.echo('half-registered')\n"
        "@hookimpl\ndef nia_context_sources(location, colour):\n    return []\n",
    )
    host = load_host(locate(project))

    assert host.plugins["half"].error.startswith("invalid hook implementation")
    assert not host.pm.has_plugin("half")
    assert all(impl.plugin_name != "half" for impl in host.pm.hook.nia_register_commands.get_hookimpls())
    assert "half" not in run("--help").stdout


def test_a_failing_renderer_is_found_by_plugins_list(site, project):
    site.plugin("good", GOOD)
    site.plugin(
        "zz-bad",
        hook(
            f"return [{source('bad/x', baseline='lambda v: v[0]')}]".replace(
                "baseline=lambda v: 'bad says ' + str(v), ", ""
            )
        ),
    )

    result = run("plugins", "list", "--json", "--location", str(project))

    plugins = {p["name"]: p for p in json.loads(result.stdout)}
    said = "context source 'bad/x': baseline renderer raised TypeError: 'int' object is not subscriptable"
    at = f" ({site.root / 'zz_bad.py'}:7)"  # the pack's own line, named by its absolute path (outside the project)
    assert plugins["zz-bad"]["error"] == said + at
    assert plugins["good"]["status"] == "enabled"


OPENED_RAISES = """
from nia_core import hookimpl

@hookimpl
def nia_location_opened(location, context):
    raise OSError("cannot reach the tracker")
"""


def test_a_raising_location_hook_leaves_the_others_running(site, project):
    site.plugin("aa-opens", OPENED_RAISES)  # sorts first: pluggy would otherwise stop at it
    site.plugin("good", GOOD)

    shown = run("context", "show", "--location", str(project))
    listed = {p["name"]: p for p in json.loads(run("plugins", "list", "--json", "--location", str(project)).stdout)}
    strict = run("--strict", "context", "show", "--location", str(project))

    assert shown.exit_code == 0 and "Hello, world." in shown.stdout
    assert shown.stderr == "Warning: plugin 'aa-opens': nia_location_opened raised OSError: cannot reach the tracker\n"
    assert listed["aa-opens"]["status"] == "broken" and listed["good"]["status"] == "enabled"
    assert strict.exit_code == 1
    assert strict.stderr == "Error: plugin 'aa-opens': nia_location_opened raised OSError: cannot reach the tracker\n"


COMMANDS_RAISE = """
from nia_core import hookimpl

@hookimpl
def nia_register_commands(cli):
    raise RuntimeError("no click for you")
"""


def test_a_command_hook_that_raises_shows_broken_in_plugins_list(site, project):
    site.plugin("good", GOOD)
    site.plugin("zz-bad", COMMANDS_RAISE)

    listed = run("plugins", "list", "--json", "--location", str(project))
    strict = run("--strict", "plugins", "list", "--location", str(project))

    plugins = {p["name"]: p for p in json.loads(listed.stdout)}
    assert plugins["zz-bad"]["status"] == "broken"
    assert plugins["zz-bad"]["error"] == "nia_register_commands raised RuntimeError: no click for you"
    assert plugins["good"]["status"] == "enabled"
    assert strict.exit_code == 1
    assert strict.stderr == "Error: plugin 'zz-bad': nia_register_commands raised RuntimeError: no click for you\n"


PROVIDERS_RAISE = """
from nia_core import hookimpl

@hookimpl
def nia_providers(location):
    raise RuntimeError("no endpoint configured")
"""

PROVIDER_NAME_TAKEN = """
from nia_core import hookimpl
from nia_core.sessions.messages import Reply

class Echo:
    name = "echo"

    def lower(self, request):
        return {}

    def send(self, request, *, stream=None):
        return Reply(text="")

@hookimpl
def nia_providers():
    return [Echo()]
"""


@pytest.mark.parametrize(
    ("module", "reason"),
    [
        (PROVIDERS_RAISE, "nia_providers raised RuntimeError: no endpoint configured"),
        (PROVIDER_NAME_TAKEN, "provider name 'echo' is taken by a built-in provider"),
    ],
    ids=["raises", "name-taken"],
)
def test_a_misbehaving_provider_hook_shows_broken_in_plugins_list(site, project, module, reason):
    site.plugin("good", GOOD)
    site.plugin("zz-bad", module)

    listed = run("plugins", "list", "--json", "--location", str(project))
    strict = run("--strict", "plugins", "list", "--location", str(project))
    session = run("session", "new", "--location", str(project))

    plugins = {p["name"]: p for p in json.loads(listed.stdout)}
    assert plugins["zz-bad"]["status"] == "broken" and plugins["zz-bad"]["error"] == reason
    assert plugins["good"]["status"] == "enabled"
    assert strict.exit_code == 1 and strict.stderr == f"Error: plugin 'zz-bad': {reason}\n"
    assert session.exit_code == 0 and session.stderr == f"Warning: plugin 'zz-bad': {reason}\n"
