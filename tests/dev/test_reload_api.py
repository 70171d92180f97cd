"""The reload API without the CLI: what another host (an agent server, a test) would call."""

from __future__ import annotations

import sys
import textwrap

import pytest

from nia_core.context import ReplacementReady, Unchanged, Updated
from nia_core.plugin_host import load_host
from nia_core.plugin_host.reload import DevSession
from nia_core.project import locate
from tests.dev.helpers import QUIET, plugin_source, write


@pytest.fixture
def project(tmp_path):
    (tmp_path / ".nia" / "plugins").mkdir(parents=True)
    return tmp_path


def plugins(project):
    return project / ".nia" / "plugins"


def open_session(project, *flags):
    session = DevSession.open(locate(project), flags=(*QUIET, *flags), entry_points=False)
    session.start()
    return session


def line_of(path, needle):
    return next(n for n, line in enumerate(path.read_text().splitlines(), 1) if needle in line)


def test_only_the_changed_plugins_modules_are_replaced(project):
    one = plugins(project) / "api_one.py"
    write(one, plugin_source({"api/one": "1"}))
    write(plugins(project) / "api_two" / "__init__.py", "from .helper import nia_context_sources\n")
    helper = plugins(project) / "api_two" / "helper.py"
    write(helper, plugin_source({"api/two": "a"}))
    session = open_session(project)
    before = {name: sys.modules[f"nia_local_plugins.{name}"] for name in ("api_one", "api_two", "api_two.helper")}

    write(helper, plugin_source({"api/two": "b"}))
    result = session.reload([helper])

    assert result is not None and result.reloaded == ("api_two",) and result.errors == ()
    assert isinstance(result.outcome, Updated) and result.outcome.text == "api/two is now b"
    assert sys.modules["nia_local_plugins.api_one"] is before["api_one"]
    assert sys.modules["nia_local_plugins.api_two"] is not before["api_two"]
    assert sys.modules["nia_local_plugins.api_two.helper"] is not before["api_two.helper"]
    assert session.snapshot == result.outcome.snapshot


def test_a_session_over_a_host_of_ones_own(project):
    path = plugins(project) / "api_own.py"
    write(path, plugin_source({"api/own": "1"}))
    location = locate(project)
    host = load_host(location, entry_points=False, flags=QUIET)
    session = DevSession(host, host.open(location))
    assert "api/own: 1" in session.start().generation.baseline
    write(path, plugin_source({"api/own": "2"}))
    result = session.reload([path])
    assert result is not None and isinstance(result.outcome, Updated)
    assert result.outcome.text == "api/own is now 2"


def test_saves_that_change_nothing_report_nothing(project):
    path = plugins(project) / "api_same.py"
    write(path, plugin_source({"api/same": "1"}))
    session = open_session(project)
    path.write_text(path.read_text())
    assert session.reload([path]) is None
    write(plugins(project) / "notes.txt", "not a plugin")
    assert session.reload([plugins(project) / "notes.txt"]) is None
    assert session.reload(None) is None


def test_a_full_check_finds_what_changed_without_being_told(project):
    path = plugins(project) / "api_full.py"
    write(path, plugin_source({"api/full": "1"}))
    session = open_session(project)
    write(path, plugin_source({"api/full": "2"}))
    result = session.reload(None)
    assert result is not None and result.paths == (str(path),) and result.reloaded == ("api_full",)


def test_a_new_plugin_that_fails_is_not_loaded_until_fixed(project):
    session = open_session(project)
    path = plugins(project) / "api_new.py"
    write(path, "from nia_core import hookimpl\nimport does_not_exist_anywhere\n")
    result = session.reload([path])
    assert result is not None and result.loaded == ()
    [error] = result.errors
    assert (error.plugin, error.file, error.line, error.kept_previous) == ("api_new", str(path), 2, False)
    assert "ModuleNotFoundError" in error.message and isinstance(result.outcome, Unchanged)
    write(path, plugin_source({"api/new": "hi"}))
    result = session.reload([path])
    assert result is not None and result.loaded == ("api_new",) and result.errors == ()
    assert isinstance(result.outcome, Updated) and result.outcome.changes[0].kind == "added"


def test_a_key_clash_is_blamed_on_the_plugin_just_reloaded(project):
    # "api_dup_a" sorts first, so the registry would let it keep the key and drop "api_dup_b".
    first = plugins(project) / "api_dup_a.py"
    write(first, plugin_source({"api/a": "a"}))
    write(plugins(project) / "api_dup_b.py", plugin_source({"api/b": "b"}))
    session = open_session(project)
    write(first, plugin_source({"api/a": "a", "api/b": "stolen"}))
    result = session.reload([first])
    assert result is not None
    [error] = result.errors
    assert (error.plugin, error.file, error.kept_previous) == ("api_dup_a", str(first), True)
    assert error.line == line_of(first, "'api/b'")
    assert "'api/b'" in error.message and "plugin 'api_dup_b'" in error.message
    assert isinstance(result.outcome, Unchanged) and result.problems == ()


def test_a_hook_pluggy_rejects_is_reported_at_its_definition(project):
    path = plugins(project) / "api_sig.py"
    write(path, plugin_source({"api/sig": "1"}))
    session = open_session(project)
    write(path, plugin_source({"api/sig": "2"}).replace("(location):", "(location, no_such_argument):"))
    result = session.reload([path])
    assert result is not None
    [error] = result.errors
    assert (error.file, error.line, error.kept_previous) == (str(path), line_of(path, "def nia_"), True)
    assert "no_such_argument" in error.message
    assert isinstance(result.outcome, Unchanged)


def test_a_failing_renderer_rolls_the_plugin_back(project):
    path = plugins(project) / "api_render.py"
    write(path, plugin_source({"api/render": "1"}))
    session = open_session(project)
    write(
        path, plugin_source({"api/render": "2"}).replace("update=lambda old, new: ", "update=lambda old, new: 1/0 or ")
    )
    result = session.reload([path])
    assert result is not None
    [error] = result.errors
    assert error.kept_previous and error.file == str(path) and "ZeroDivisionError" in error.message
    assert isinstance(result.outcome, Unchanged)


def test_a_location_hook_that_raises_when_replayed_keeps_the_previous_version(project):
    path = plugins(project) / "api_opened.py"
    write(path, plugin_source({"api/opened": "1"}))
    session = open_session(project)
    extra = """
        from nia_core import hookimpl as _hookimpl

        @_hookimpl
        def nia_location_opened(location, context):
            raise RuntimeError("cannot open")
    """
    write(path, plugin_source({"api/opened": "2"}, extra=extra))
    result = session.reload([path])
    assert result is not None
    [error] = result.errors
    assert (
        error.kept_previous
        and error.line == line_of(path, "cannot open")
        and "RuntimeError: cannot open" in error.message
    )
    assert isinstance(result.outcome, Unchanged)


def test_a_file_plugin_turned_into_a_package_is_reloaded_from_its_new_place(project):
    path = plugins(project) / "api_grow.py"
    write(path, plugin_source({"api/grow": "file"}))
    session = open_session(project)
    path.unlink()
    package = plugins(project) / "api_grow"
    write(package / "__init__.py", plugin_source({"api/grow": "package"}))
    result = session.reload([path, package / "__init__.py"])
    assert result is not None and result.reloaded == ("api_grow",)
    assert isinstance(result.outcome, Updated) and result.outcome.text == "api/grow is now package"


def test_a_source_without_removal_text_forces_a_replacement(project):
    path = plugins(project) / "api_sticky.py"
    text = textwrap.dedent(
        """\
        from nia_core import ContextSource, hookimpl

        @hookimpl
        def nia_context_sources(location):
            return [ContextSource(key="api/sticky", load=lambda: 1, baseline=lambda v: f"sticky {v}")]
        """
    )
    write(path, text)
    session = open_session(project)
    path.unlink()
    result = session.reload([path])
    assert result is not None and result.unloaded == ("api_sticky",)
    assert isinstance(result.outcome, ReplacementReady) and "sticky" not in result.outcome.generation.baseline
    assert session.generation is result.outcome.generation


def test_what_is_watched_and_what_is_ignored(tmp_path):
    project = tmp_path / "build" / "project"  # a folder named like a cache must not hide the project
    (project / ".nia" / "plugins").mkdir(parents=True)
    extra = tmp_path / "more"
    extra.mkdir()
    session = DevSession.open(locate(project), plugins_dirs=[extra], entry_points=False)
    assert session.watch_roots() == [project / ".nia", extra]
    local = project / ".nia" / "plugins"
    for path in (local / "a.py", local / "pkg" / "data.json", project / ".nia" / "project.toml", extra / "b.py"):
        assert session.relevant(path), path
    for path in (
        local / "__pycache__" / "a.cpython-311.pyc",
        local / ".a.py.swp",
        local / "a.py~",
        local / "4913",
        local / ".git" / "index",
        local / "a.py.tmp.123",
        local / "sedDK8LJG",
        local / "tmpk3j_x9ab.py",
        local / ".~a.py",
        project / ".nia" / "sessions.db",
        project / "README.md",
    ):
        assert not session.relevant(path), path


def test_a_plugin_contributing_through_nia_location_opened_reloads_and_unloads(project):
    path = plugins(project) / "api_local.py"
    text = textwrap.dedent(
        """\
        from nia_core import ContextSource, hookimpl

        VALUE = "1"

        @hookimpl
        def nia_location_opened(location, context):
            source = ContextSource(key="api/here", load=lambda: VALUE, baseline=lambda v: f"here {v}",
                                   removal=lambda v: "not here any more")
            context.register("api-local-here", lambda location: [source])
        """
    )
    write(path, text)
    session = open_session(project)
    write(path, text.replace('"1"', '"2"'))
    result = session.reload([path])
    assert result is not None and result.errors == ()
    assert isinstance(result.outcome, Updated) and result.outcome.text == "here 2"
    path.unlink()
    result = session.reload([path])
    assert result is not None and result.unloaded == ("api_local",)
    assert isinstance(result.outcome, Updated) and result.outcome.text == "not here any more"


def test_a_reload_that_takes_another_plugins_key_is_refused_from_either_side(project):
    first, second = plugins(project) / "api_a.py", plugins(project) / "api_b.py"
    write(first, plugin_source({"api/x": "1"}))
    write(second, plugin_source({"api/y": "2"}))
    session = open_session(project)

    write(first, plugin_source({"api/y": "3"}))  # api_a composes first: the clash is recorded against api_b
    [error] = session.reload([first]).errors
    assert (error.plugin, error.kept_previous) == ("api_a", True)
    assert error.message.endswith("source key 'api/y' is also contributed by plugin 'api_b'")

    write(second, plugin_source({"api/x": "4", "api/y": "2"}))  # now the reloaded plugin composes second
    [error] = session.reload([second]).errors
    assert error.plugin == "api_b"
    assert error.message.endswith("source key 'api/x' is already contributed by plugin 'api_a'")


def _plant(folder, count):
    for number in range(count):
        (folder / f"d{number // 100}" / f"e{number}").mkdir(parents=True)


def test_a_plugin_too_large_to_compare_is_said_once_then_reloaded_on_its_file_events(project):
    init = plugins(project) / "big" / "__init__.py"
    write(init, plugin_source({"big/x": "1"}))
    _plant(init.parent / "vendored", 2_001)  # with their 21 parents: past the 2,000 a check may walk
    session = open_session(project)
    [notice] = session.take_notices()
    assert notice.startswith(f"plugin 'big': {init.parent} holds more than 2,000 files and folders"), notice

    write(init, plugin_source({"big/x": "2"}))
    assert session.reload(None) is None  # a full check no longer walks it
    result = session.reload([init])
    assert result is not None and result.reloaded == ("big",)
    assert isinstance(result.outcome, Updated) and result.outcome.text == "big/x is now 2"
    assert session.take_notices() == []


def test_a_local_folder_too_large_to_list_is_said_once_then_followed_through_file_events(project):
    for number in range(2_001):  # side by side: the listing of the folder itself is what a check repeats
        (plugins(project) / f"d{number}").mkdir()
    write(plugins(project) / "api_one.py", plugin_source({"api/one": "1"}))
    session = open_session(project)
    [notice] = session.take_notices()
    assert notice.startswith(f"{plugins(project)} holds more than 2,000 files and folders"), notice

    added = plugins(project) / "api_two" / "__init__.py"
    write(added, plugin_source({"api/two": "2"}))
    assert session.reload(None) is None  # a full check no longer lists it
    result = session.reload([added])
    assert result is not None and result.loaded == ("api_two",)
    added.unlink()
    result = session.reload([added])
    assert result is not None and result.unloaded == ("api_two",)
    assert session.take_notices() == []
