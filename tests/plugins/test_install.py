"""``nia plugins install/uninstall`` run pip for nia's own interpreter and report what changed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from types import SimpleNamespace

import pytest

from tests.venvs import child_venv, site_packages

from .conftest import Site, run


def names(project):
    result = run("plugins", "list", "--json", "--location", str(project))
    return sorted(p["name"] for p in json.loads(result.stdout))


@pytest.fixture
def venv(tmp_path):
    """A real virtualenv whose site-packages the fake distributions are written to, and nia run in it.

    pip uninstalls only what lies inside the environment it runs for, so the
    test must install where a user's pip would: inside the venv.
    """
    python = child_venv(tmp_path / "venv")
    home = tmp_path / "home"

    def nia(*args: str, input: str | None = None, **extra: str) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PIP_REQUIRE_VIRTUALENV")}
        env.update(HOME=str(home), XDG_CACHE_HOME=str(home / ".cache"), PIP_DISABLE_PIP_VERSION_CHECK="1", **extra)
        command = [str(python), "-c", "from nia_core.cli import main; main()", *args]
        return subprocess.run(command, input=input, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)

    return SimpleNamespace(site=Site(site_packages(python)), nia=nia)


def listed(venv, project):
    return sorted(
        p["name"] for p in json.loads(venv.nia("plugins", "list", "--json", "--location", str(project)).stdout)
    )


@pytest.mark.slow
def test_uninstalling_a_pack_removes_all_its_plugins(venv, project):
    venv.site.install(
        "acme-pack",
        plugins={"acme-one": "acme_pack.one", "acme-two": "acme_pack.two"},
        modules={"acme_pack/__init__.py": "", "acme_pack/one.py": "", "acme_pack/two.py": ""},
    )
    venv.site.plugin("other", "")
    assert listed(venv, project) == ["acme-one", "acme-two", "other"]

    result = venv.nia("plugins", "uninstall", "acme-two", input="y\n")  # a plugin's name finds its distribution

    assert result.returncode == 0, result.stderr
    assert (
        result.stdout
        == "Uninstall acme-pack (plugins: acme-one, acme-two)? [y/N]: Plugins removed: acme-one, acme-two\n"
    )
    assert "Successfully uninstalled acme-pack-1.0" in result.stderr  # pip's own output, as it came
    assert listed(venv, project) == ["other"]
    assert not (venv.site.root / "acme_pack").exists()


@pytest.mark.slow
def test_pip_refusing_to_uninstall_is_reported_as_such(venv, tmp_path):
    """A distribution outside the environment (here on PYTHONPATH) is one pip will not touch: say so."""
    outside = Site(tmp_path / "elsewhere")
    outside.root.mkdir()
    outside.plugin("stray", "")

    result = venv.nia("plugins", "uninstall", "--yes", "stray", PYTHONPATH=str(outside.root))

    assert result.returncode == 1
    last = result.stderr.splitlines()[-1]
    assert last.startswith("Error: pip did not uninstall everything: Not uninstalling stray at "), last
    assert "outside environment" in last
    assert (outside.root / "stray.py").exists()


def test_uninstall_asks_first(site):
    site.plugin("kept", "")

    result = run("plugins", "uninstall", "kept", input="n\n")

    assert result.exit_code == 1 and "Aborted!" in result.stderr
    assert (site.root / "kept.py").exists()


def test_uninstalling_what_is_not_installed_fails_with_pips_output(site):
    result = run("plugins", "uninstall", "--yes", "no-such-nia-plugin-here")

    assert result.exit_code == 1
    assert "WARNING: Skipping no-such-nia-plugin-here as it is not installed." in result.stderr
    assert result.stderr.splitlines()[-1] == (
        f"Error: nothing was uninstalled: no-such-nia-plugin-here not installed for {sys.executable}"
    )


@pytest.mark.parametrize("name", ["NIA", "nia-context", "Nia_Context"])
def test_nia_will_not_uninstall_itself(name):
    result = run("plugins", "uninstall", "--yes", name)

    assert result.exit_code == 2
    assert result.stderr == "Error: nia cannot uninstall itself here; use pip uninstall nia-context\n"


def test_a_failed_install_shows_pips_output_and_exits_non_zero(tmp_path):
    missing = tmp_path / "not-a-plugin"

    result = run("plugins", "install", "-e", str(missing))

    assert result.exit_code == 1
    assert str(missing) in result.stderr and "ERROR" in result.stderr
    assert result.stderr.splitlines()[-1].startswith("Error: pip install failed (exit status 1)")


def test_install_needs_something_to_install():
    result = run("plugins", "install")

    assert result.exit_code == 2
    assert result.stderr == "Error: name at least one package to install (or -e PATH)\n"
