"""Whether git would read this repository's data from outside the project: refs, objects, index.

A cloned repository cannot hold symlinks in its git directory, but an
unpacked archive can; so can ``objects/info/alternates``. Any of them would
put another repository's commits, trees or paths into the prompt.
"""

from __future__ import annotations

import os

from nia_plugins.git.escape import quoted
from nia_plugins.git.gitdir import ref_file
from nia_plugins.git.repository import Repository, inside_any, read_small, within


def ref_leaves_repository(repo: Repository) -> bool:
    """Whether HEAD's chain of refs, or ``packed-refs``, is a link out of the git directory.

    git follows a loose ref that is a symlink, and reads a file of the form
    ``ref: NAME`` there as a symbolic ref: a cloned repository (or an archive)
    could make the branch name nia reports come from a file outside it.
    """
    bases = (repo.gitdir, repo.commondir)

    def outside(path: str) -> bool:
        return os.path.lexists(path) and not any(within(path, base) for base in bases)

    if outside(os.path.join(repo.commondir, "packed-refs")):
        return True
    path: str | None = os.path.join(repo.gitdir, "HEAD")
    for _hop in range(6):  # git itself gives up on longer chains of symbolic refs
        if path is None:
            return False
        if outside(path):
            return True
        text = (read_small(path, repo.gitdir if within(path, repo.gitdir) else repo.commondir) or "").strip()
        if not text.startswith("ref:"):
            return False
        path = ref_file(repo, text[4:].strip())
    return False


MAX_ALTERNATES_DEPTH = 5
"""git follows alternates of alternates this deep; so does the check."""


_C_ESCAPES = {"a": 7, "b": 8, "f": 12, "n": 10, "r": 13, "t": 9, "v": 11, "\\": 92, '"': 34}


def _c_unquoted(line: str) -> str:
    """An alternates line as git reads it: C-quoted when it starts with ``"`` (else, or if malformed, as is)."""
    if not line.startswith('"'):
        return line
    out = bytearray()
    index = 1
    while index < len(line):
        ch = line[index]
        if ch == '"':
            return os.fsdecode(bytes(out)) if index == len(line) - 1 else line
        if ch != "\\":
            out += ch.encode("utf-8", "surrogateescape")
            index += 1
            continue
        escape = line[index + 1 : index + 2]
        octal = line[index + 1 : index + 4]
        if escape in _C_ESCAPES:
            out.append(_C_ESCAPES[escape])
            index += 2
        elif len(octal) == 3 and all(c in "01234567" for c in octal) and octal[0] in "0123":
            out.append(int(octal, 8))
            index += 4
        else:
            return line
    return line


def _links_out(folder: str, inside: tuple[str, ...], depth: int) -> str | None:
    """The first entry under ``folder`` (``depth`` levels) that is a symlink whose real path is outside ``inside``.

    ``os.scandir`` tells a symlink from the directory entry itself, so an
    ordinary folder costs no ``stat`` per entry.
    """
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return None
    for entry in entries:
        if entry.is_symlink():
            if not inside_any(entry.path, inside):
                return entry.path
        elif depth > 1 and entry.is_dir(follow_symlinks=False):
            found = _links_out(entry.path, inside, depth - 1)
            if found is not None:
                return found
    return None


def _store_outside(objects: str, inside: tuple[str, ...], depth: int) -> str | None:
    """Why the object store ``objects`` (or one it borrows from) holds data from outside ``inside``, or ``None``."""
    if not inside_any(objects, inside):
        return "leads outside the project"
    link = _links_out(objects, inside, 3)  # objects/xx/<loose>, pack/<pack>, info/commit-graphs/<graph>
    if link is not None:
        return f"has `{quoted(os.path.relpath(link, objects), 80)}` leading outside the project"
    alternates = os.path.join(objects, "info", "alternates")
    if not os.path.lexists(alternates):
        return None
    text = read_small(alternates, objects)
    if text is None:
        return "has an `info/alternates` nia cannot read as a plain file"
    for line in text.split("\n"):
        if not line or line.startswith("#"):
            continue
        borrowed = os.path.join(objects, _c_unquoted(line))
        if not inside_any(borrowed, inside):
            return "borrows objects from outside the project (`info/alternates`)"
        if depth >= MAX_ALTERNATES_DEPTH:
            return "borrows objects through more alternates than git follows"
        further = _store_outside(borrowed, inside, depth + 1)
        if further is not None:
            return further
    return None


def reaches_outside(repo: Repository, root: str) -> str | None:
    """Why git would read this repository's data from outside the project, or ``None``.

    What reaches the model (the commit's subject, the paths of the trees and
    of the index, the ahead/behind counts) comes from the object store, the
    index and the refs. Any of them may lead outside only through a symlink or
    an alternates file, which an unpacked archive can hold: then git is not
    asked. Inside means the repository's own git directory (trusted by
    :func:`~nia_plugins.git.repository.untrusted`) or the project.
    """
    inside = tuple(dict.fromkeys(os.path.realpath(folder) for folder in (repo.gitdir, repo.commondir, root)))
    objects = os.path.join(repo.commondir, "objects")
    problem = _store_outside(objects, inside, 1)
    if problem is not None:
        return f"its object store {problem}, which nia does not follow"
    candidates = [os.path.join(repo.gitdir, "index"), os.path.join(repo.commondir, "shallow")]
    candidates.append(os.path.join(repo.commondir, "info", "grafts"))
    try:
        candidates += [entry.path for entry in os.scandir(repo.gitdir) if entry.name.startswith("sharedindex.")]
    except OSError:
        pass
    for path in candidates:
        if os.path.lexists(path) and not inside_any(path, inside):
            name = os.path.relpath(path, repo.commondir if path.startswith(repo.commondir) else repo.gitdir)
            return f"its `{quoted(name, 80)}` leads outside the project, which nia does not follow"
    for base in dict.fromkeys((repo.commondir, repo.gitdir)):
        link = _links_out(os.path.join(base, "refs"), inside, 64)
        if link is not None:
            name = quoted(os.path.relpath(link, base), 80)
            return f"its ref `{name}` leads outside the project, which nia does not follow"
    return None
