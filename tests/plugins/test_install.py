"""``nia plugins install/uninstall`` run pip for nia's own interpreter and report what changed."""

from __future__ import annotations

import json
import sys

import pytest

from .conftest import run


def names(project):
    result = run("plugins", "list", "--json", "--location", str(project))
    return sorted(p["name"] for p in json.loads(result.stdout))


def test_uninstalling_a_pack_removes_all_its_plugins(site, project):
    site.install(
        "acme-pack",
        plugins={"acme-one": "acme_pack.one", "acme-two": "acme_pack.two"},
        modules={"acme_pack/__init__.py": "", "acme_pack/one.py": "", "acme_pack/two.py": ""},
    )
    site.plugin("other", "")
    assert names(project) == ["acme-one", "acme-two", "other"]

    result = run("plugins", "uninstall", "acme-two", input="y\n")  # a plugin's name finds its distribution

    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("Uninstall acme-pack (plugins: acme-one, acme-two)? [y/N]: y\n")
    assert "Successfully uninstalled acme-pack-1.0\nPlugins removed: acme-one, acme-two\n" in result.stdout
    assert names(project) == ["other"]
    assert not (site.root / "acme_pack").exists()


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
