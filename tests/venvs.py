"""Child virtual environments that see what the running interpreter sees, inside a venv or not.

``python -m venv --system-site-packages`` lends the *base* interpreter's
packages: run from inside a virtualenv (as the README's commands are), the child
would not see the venv's nia, pip or click. A ``.pth`` file that adds the
parent's site folders (with their own ``.pth`` files, so editable installs work)
lends exactly what the tests run with, wherever they run.
"""

from __future__ import annotations

import site
import subprocess
import sys
import sysconfig
from pathlib import Path


def parent_site_dirs() -> list[str]:
    """The running interpreter's site folders, its own first."""
    folders = [sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"], *site.getsitepackages()]
    if site.ENABLE_USER_SITE and site.getusersitepackages():
        folders.append(site.getusersitepackages())
    unique: list[str] = []
    for folder in folders:
        if folder not in unique and Path(folder).is_dir():
            unique.append(folder)
    return unique


def nia_plugin_files() -> set[Path]:
    """The top-level entries (packages, modules, ``.pth`` files, dist-info) of every installed nia plugin."""
    from importlib.metadata import distributions

    found: set[Path] = set()
    for dist in distributions():
        if not any(entry.group == "nia" for entry in dist.entry_points):
            continue
        for file in dist.files or ():
            found.add(Path(str(dist.locate_file(Path(file).parts[0]))))
    return found


def lent_folder(folder: str, hidden: set[Path], into: Path) -> str:
    """``folder`` itself, or a folder of links to its entries but the ``hidden`` ones."""
    entries = list(Path(folder).iterdir())
    if not any(entry in hidden for entry in entries):
        return folder
    into.mkdir(parents=True)
    for entry in entries:
        if entry not in hidden:
            (into / entry.name).symlink_to(entry)
    return str(into)


def child_venv(path: Path) -> Path:
    """A venv at ``path`` without pip of its own that lends the parent's packages; returns its python.

    Installed nia plugins are not lent (a plugin pack installed where the tests
    run, ``pip install ./packs/nia-python``, say): a child starts with none.
    """
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
    python = path / "bin" / "python"
    hidden = nia_plugin_files()
    folders = [lent_folder(f, hidden, path / "lent" / str(n)) for n, f in enumerate(parent_site_dirs())]
    lines = [f"import site; site.addsitedir({folder!r})" for folder in folders]
    (site_packages(python) / "_nia_tests_parent.pth").write_text("\n".join(lines) + "\n")
    return python


def site_packages(python: Path) -> Path:
    """The purelib folder of the environment ``python`` belongs to."""
    out = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    return Path(out)
