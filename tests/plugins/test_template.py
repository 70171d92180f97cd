"""``nia plugin new`` renders plugin-template/, which is a working package on its own too."""

from __future__ import annotations

import glob
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from nia_core.plugin_template import TEMPLATE_MODULE, TEMPLATE_NAME, TEMPLATE_NAMESPACE, template_dir, template_files

from .conftest import run

REPOSITORY = Path(__file__).resolve().parents[2]


def rendered_text(folder: Path) -> str:
    return "\n".join(p.read_text() for p in sorted(folder.rglob("*")) if p.is_file())


def test_the_bundled_template_is_plugin_template():
    assert template_dir().resolve() == (REPOSITORY / "plugin-template").resolve()
    assert sorted(str(p) for p in template_files(template_dir())) == [
        ".github/workflows/test.yml",
        ".gitignore",
        "NOTES.md",
        "README.md",
        "pyproject.toml",
        "src/nia_template_plugin/__init__.py",
        "tests/test_nia_template_plugin.py",
    ]


def test_the_package_data_covers_every_template_file():
    """A wheel carries nia_core/templates/plugin; its patterns must reach the dotfiles as well."""
    patterns = tomllib.loads((REPOSITORY / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    package = REPOSITORY / "nia_core"
    found = [glob.glob(str(package / pattern), recursive=True) for pattern in patterns["nia_core"]]  # as setuptools
    matched = {Path(p).resolve() for paths in found for p in paths if os.path.isfile(p)}
    assert {(template_dir() / f).resolve() for f in template_files(template_dir())} <= matched


def test_new_renders_names_module_and_namespace(tmp_path):
    target = tmp_path / "acme-jira"

    result = run("plugin", "new", "acme-jira", "--dir", str(target))

    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(f"Created acme-jira in {target}\n  module: acme_jira, keys: acme-jira/...\n")
    assert (target / "src" / "acme_jira" / "__init__.py").is_file()
    assert (target / "tests" / "test_acme_jira.py").is_file()
    assert (target / ".github" / "workflows" / "test.yml").is_file()
    project = tomllib.loads((target / "pyproject.toml").read_text())["project"]
    assert project["name"] == "acme-jira"
    assert project["entry-points"]["nia"] == {"acme-jira": "acme_jira"}
    text = rendered_text(target)
    assert 'NIA_NAMESPACE = "acme-jira"' in text and 'key="acme-jira/notes"' in text
    for token in (TEMPLATE_NAME, TEMPLATE_MODULE, TEMPLATE_NAMESPACE):
        assert token not in text


@pytest.mark.parametrize(
    ("arguments", "namespace"),
    [(("nia-jira",), "jira"), (("Acme.Tracker",), "acme.tracker"), (("acme-jira", "--namespace", "jira"), "jira")],
)
def test_the_namespace_defaults_to_the_name_without_nia(tmp_path, arguments, namespace):
    target = tmp_path / "out"

    assert run("plugin", "new", *arguments, "--dir", str(target)).exit_code == 0

    assert f'NIA_NAMESPACE = "{namespace}"' in rendered_text(target)


def test_the_default_folder_is_the_name_in_the_current_one(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)

    assert run("plugin", "new", "nia-notes").exit_code == 0

    assert (tmp_path / "nia-notes" / "src" / "nia_notes" / "__init__.py").is_file()


def test_new_refuses_to_overwrite_a_folder(tmp_path):
    target = tmp_path / "taken"
    target.mkdir()
    (target / "keep.txt").write_text("mine")

    result = run("plugin", "new", "acme-jira", "--dir", str(target))

    assert result.exit_code == 2
    assert result.stderr == f"Error: {target} already exists; choose another --dir or remove it first\n"
    assert [p.name for p in target.iterdir()] == ["keep.txt"]
    (target / "keep.txt").unlink()
    assert run("plugin", "new", "acme-jira", "--dir", str(target)).exit_code == 0  # an empty folder is fine


def test_a_folder_that_cannot_be_created_is_one_line_naming_it(tmp_path):
    (tmp_path / "a-file").write_text("not a folder")
    target = tmp_path / "a-file" / "acme-jira"

    result = run("plugin", "new", "acme-jira", "--dir", str(target))

    assert result.exit_code == 1
    assert result.stderr == f"Error: cannot create the plugin: {target}: Not a directory\n"


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (("acme jira",), "plugin name 'acme jira' is not a package name"),
        (("-x",), "No such option '-x'"),
        (("nia-core",), "gives the module name 'nia_core', which nia itself uses"),
        (("9lives",), "gives the module name '9lives', which Python cannot import"),
        (("acme", "--namespace", "nia"), "namespace 'nia' is reserved for nia's built-in plugins"),
        (("acme", "--namespace", "Acme!"), "namespace 'Acme!' is not a key namespace"),
    ],
)
def test_unusable_names_are_refused(tmp_path, monkeypatch, arguments, message):
    monkeypatch.chdir(tmp_path)

    result = run("plugin", "new", *arguments)

    assert result.exit_code == 2 and message in result.stderr
    assert list(tmp_path.iterdir()) == []


KIT_DEMO = """
from nia_core import ContextSource

def test_kit(nia_project, nia_boundaries):
    nia_project.write("a.txt", "1")
    source = ContextSource(key="demo/a", load=lambda: nia_project.path("a.txt").read_text(),
                           baseline=lambda v: "a=" + v, removal=lambda v: "no a")
    texts = nia_boundaries.drive(source, lambda: nia_project.write("a.txt", "2"))
    assert texts.messages == ["a=1", "a=2", "no a"]

def test_unrelated():
    pass
"""


def test_template_rendered_package_and_kit_pass_in_a_plain_pytest_run(tmp_path):
    """One fresh pytest process (they are slow to start): the kit arrives through ``pytest11`` alone."""
    rendered = tmp_path / "acme-notes"
    assert run("plugin", "new", "acme-notes", "--dir", str(rendered)).exit_code == 0
    template = REPOSITORY / "plugin-template"
    demo = tmp_path / "demo"
    demo.mkdir()
    (demo / "test_uses_kit.py").write_text(KIT_DEMO)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(template / "src"), str(rendered / "src")]),
        "PYTHONDONTWRITEBYTECODE": "1",
    }

    folders = [str(template / "tests"), str(rendered / "tests"), str(demo)]
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", "--rootdir", str(tmp_path), *folders],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )

    assert result.returncode == 0, result.stdout + result.stderr
    passed = [line.split("::")[0].rsplit("/", 1)[-1] for line in result.stdout.splitlines() if " PASSED" in line]
    assert passed.count("test_nia_template_plugin.py") == 5
    assert passed.count("test_acme_notes.py") == 5
    assert passed.count("test_uses_kit.py") == 2
