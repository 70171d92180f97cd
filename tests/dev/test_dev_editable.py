"""``nia dev`` on a plugin package installed with ``pip install -e`` into a temporary virtual environment.

The package carries a tiny PEP 517/660 build backend of its own, so the
editable install needs neither the network nor the ``wheel`` package: pip
still does the installing, and writes the ``direct_url.json`` nia reads.
"""

from __future__ import annotations

import os
import subprocess
import textwrap

import pytest

from tests.dev.helpers import DevProcess, about, changes, isolated_env, plugin_source, write
from tests.venvs import child_venv

BACKEND = '''
"""Builds an editable wheel holding a .pth file that points at this project (PEP 660)."""
import base64, hashlib, os, zipfile

NAME, VERSION = "nia_acme_dev", "0.1.0"
FILES = {
    "METADATA": "Metadata-Version: 2.1\\nName: nia-acme-dev\\nVersion: 0.1.0\\n",
    "WHEEL": "Wheel-Version: 1.0\\nGenerator: test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n",
    "entry_points.txt": "[nia]\\nacme-dev = acme_dev\\nacme-extra = acme_dev.extra\\n",
}
INFO = f"{NAME}-{VERSION}.dist-info"


def get_requires_for_build_editable(config_settings=None):
    return []


def prepare_metadata_for_build_editable(metadata_directory, config_settings=None):
    os.makedirs(os.path.join(metadata_directory, INFO))
    for name, text in FILES.items():
        with open(os.path.join(metadata_directory, INFO, name), "w") as handle:
            handle.write(text)
    return INFO


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    project = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    members = {f"{NAME}.pth": project + "\\n", **{f"{INFO}/{n}": t for n, t in FILES.items()}}
    record = []
    for name, text in members.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(text.encode())}")
    record.append(f"{INFO}/RECORD,,")
    wheel = f"{NAME}-{VERSION}-py3-none-any.whl"
    with zipfile.ZipFile(os.path.join(wheel_directory, wheel), "w") as archive:
        for name, text in members.items():
            archive.writestr(name, text)
        archive.writestr(f"{INFO}/RECORD", "\\n".join(record) + "\\n")
    return wheel
'''

PYPROJECT = """\
[build-system]
requires = []
build-backend = "editable_backend"
backend-path = ["_backend"]

[project]
name = "nia-acme-dev"
version = "0.1.0"
"""


@pytest.mark.slow
def test_an_editable_installed_plugin_is_watched_and_reloaded_from_source(tmp_path):
    package = tmp_path / "acme"
    write(package / "pyproject.toml", PYPROJECT)
    write(package / "_backend" / "editable_backend.py", textwrap.dedent(BACKEND))
    init = package / "acme_dev" / "__init__.py"
    write(init, plugin_source({"acme/value": "aaa"}))
    write(package / "acme_dev" / "extra.py", plugin_source({"acme/extra": "x"}))
    venv = tmp_path / "venv"
    # The child venv borrows nia and pip from ours; --without-pip saves seconds of ensurepip.
    python = str(child_venv(venv))
    env = isolated_env(tmp_path / "home", PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INDEX="1")
    install = [python, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "-e", str(package)]
    subprocess.run(install, check=True, env=env, cwd=tmp_path)

    project = tmp_path / "project"
    project.mkdir()
    nia = [python, "-c", "from nia_core.cli import main; main()"]
    dev = DevProcess(project, tmp_path / "home", python=nia, env=env)
    try:
        baseline, watching = dev.started()
        assert baseline["sources"] == ["nia/environment", "acme/value", "acme/extra"]
        assert baseline["plugins"]["acme-dev"]["origin"] == "entry point"
        assert watching["paths"] == [str(package / "acme_dev")]

        stamp = init.stat().st_mtime_ns
        for value in ("bbb", "ccc"):  # same size, same mtime: only a from-source import sees both
            write(init, plugin_source({"acme/value": value}))
            os.utime(init, ns=(stamp, stamp))
            event = dev.until(about(init))
            assert sorted(event["reloaded"]) == ["acme-dev", "acme-extra"]
            assert changes(event) == [("updated", "acme/value", f"acme/value is now {value}")]
        assert not (package / "acme_dev" / "__pycache__").exists()

        write(package / "acme_dev" / "extra.py", "this is not python\n")
        event = dev.until(about(package / "acme_dev" / "extra.py"))
        [error] = event["errors"]
        assert error["plugin"] == "acme-extra" and error["line"] == 1 and error["kept_previous"]
        assert event["result"] == {"kind": "unchanged"}
        assert dev.interrupt() == 0
    finally:
        dev.close()

    # Uninstalling the editable package says which plugins went, though its folder (and metadata) stays.
    gone = subprocess.run(
        [*nia, "plugins", "uninstall", "--yes", "nia-acme-dev"], capture_output=True, text=True, env=env
    )
    assert gone.returncode == 0, gone.stderr
    assert gone.stdout == "Plugins removed: acme-dev, acme-extra\n"
    assert "Successfully uninstalled nia-acme-dev-0.1.0" in gone.stderr
