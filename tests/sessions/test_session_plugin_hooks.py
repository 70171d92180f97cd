"""Plugin hooks are called one at a time: a raising ``nia_summarize`` or a hook wrapper stays its plugin's problem."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .test_session_cli import SUMMARIZER, new_session, nia

RAISES = """
from nia_core import hookimpl


@hookimpl
def nia_summarize(messages):
    raise RuntimeError("no summary today")
"""

WRAPPER = """
from nia_core import ContextSource, hookimpl

NIA_NAMESPACE = "wrapped"


@hookimpl({option}=True)
def {hook}(location):
    result = yield
    return result
"""

GOOD = """
from nia_core import ContextSource, hookimpl

NIA_NAMESPACE = "good"


@hookimpl
def nia_context_sources(location):
    return [ContextSource(key="good/hello", load=lambda: "world", baseline=lambda v: f"Hello, {v}.")]
"""


@pytest.fixture
def project(tmp_path: Path, cli_env: dict[str, str]) -> Path:
    root = tmp_path / "project"
    (root / ".nia").mkdir(parents=True)
    return root


def plugins_dir(project: Path, **plugins: str) -> None:
    folder = project / ".nia" / "plugins"
    folder.mkdir(exist_ok=True)
    for name, source in plugins.items():
        (folder / f"{name}.py").write_text(source)


def listed(project: Path) -> dict[str, dict]:
    result = nia("plugins", "list", "--json", "--location", str(project))
    assert result.exit_code == 0, result.output
    return {p["name"]: p for p in json.loads(result.stdout)}


def summary_of(session_id: str) -> str:
    view = json.loads(nia("session", "show", session_id, "--model-view", "--json").output)
    [message] = view["messages"]
    return message["content"]


def test_a_raising_summarizer_falls_back_to_the_default_summary_with_a_warning(project: Path) -> None:
    plugins_dir(project, gloomy=RAISES)
    session_id = new_session(project)
    nia("session", "send", session_id, "alpha")
    nia("session", "send", session_id, "beta")

    compacted = nia("session", "compact", session_id)

    assert compacted.exit_code == 0, compacted.output
    assert "Warning: plugin 'gloomy': nia_summarize raised RuntimeError: no summary today" in compacted.stderr
    summary = summary_of(session_id)
    assert summary.startswith("Summary of the earlier conversation:\n")
    assert "- User: alpha" in summary and "- User: beta" in summary  # the default summary's lines
    plugins = listed(project)
    assert plugins["gloomy"]["status"] == "broken"
    assert plugins["gloomy"]["error"] == "nia_summarize raised RuntimeError: no summary today"


def test_a_raising_summarizer_lets_the_next_plugin_answer(project: Path) -> None:
    plugins_dir(project, brief=SUMMARIZER, zz_gloomy=RAISES)
    session_id = new_session(project)
    nia("session", "send", session_id, "alpha")

    compacted = nia("session", "compact", session_id)

    assert compacted.exit_code == 0, compacted.output
    assert "plugin 'zz_gloomy': nia_summarize raised RuntimeError" in compacted.stderr
    assert summary_of(session_id) == "Summary of the earlier conversation:\nThe user said: alpha"


def test_strict_makes_a_raising_summarizer_an_error_that_names_it(project: Path) -> None:
    plugins_dir(project, gloomy=RAISES)
    session_id = new_session(project)
    nia("session", "send", session_id, "alpha")

    compacted = nia("--strict", "session", "compact", session_id)

    assert compacted.exit_code == 1
    assert compacted.stderr == (
        f"Error: session {session_id}: plugin 'gloomy': nia_summarize raised RuntimeError: no summary today\n"
    )


@pytest.mark.parametrize("option", ["wrapper", "hookwrapper"])
@pytest.mark.parametrize("hook", ["nia_context_sources", "nia_providers"])
def test_a_hook_wrapper_is_refused_at_registration(project: Path, option: str, hook: str) -> None:
    plugins_dir(project, good=GOOD, wrapped=WRAPPER.format(option=option, hook=hook))
    reason = (
        f"invalid hook implementation: {hook}: @hookimpl({option}=True) is not supported on nia hooks "
        "(nia calls each implementation on its own); use a plain @hookimpl"
    )

    plugins = listed(project)
    shown = nia("context", "show", "--location", str(project))
    strict = nia("--strict", "context", "show", "--location", str(project))
    created = nia("session", "new", "--location", str(project))
    sent = nia("session", "send", created.stdout.strip(), "hi")

    assert plugins["wrapped"]["status"] == "broken" and plugins["wrapped"]["error"] == reason
    assert plugins["good"]["status"] == "enabled"
    assert shown.exit_code == 0 and "Hello, world." in shown.stdout
    assert f"Warning: plugin 'wrapped': {reason}" in shown.stderr
    assert strict.exit_code == 1 and strict.stderr == f"Error: plugin 'wrapped': {reason}\n"
    assert sent.exit_code == 0 and "you said: hi" in sent.stdout, sent.output
