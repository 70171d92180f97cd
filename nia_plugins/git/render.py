"""The text the model gets: the whole state in a baseline, only what changed in an update."""

from __future__ import annotations

from nia_plugins.git.value import GitStatus

OPERATIONS = {
    "merge": "merge",
    "rebase": "rebase",
    "am": "git am session",
    "cherry-pick": "cherry-pick",
    "revert": "revert",
    "bisect": "bisect",
}


HEADER = "Git status (nia keeps this current; paths are relative to the project root):"


def _n_files(count: int, word: str = "file") -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def _names(paths: list[str]) -> str:
    return ", ".join(f"`{path}`" for path in paths)


def _tracking(value: GitStatus) -> str:
    if not value.upstream:
        return "no upstream"
    if value.ahead is None or value.behind is None:
        return f"its upstream `{value.upstream}` is gone"
    if not value.ahead and not value.behind:
        return f"up to date with `{value.upstream}`"
    return f"{value.ahead} ahead, {value.behind} behind `{value.upstream}`"


def _commit_text(value: GitStatus) -> str:
    if not value.oid:
        return "no commits yet"
    return f"`{value.head}` {value.subject}".rstrip()


def _operation(value: GitStatus, op: str) -> str:
    name = OPERATIONS.get(op, op)
    return f"{name} of `{value.rebasing}`" if op == "rebase" and value.rebasing else name


def _counts(value: GitStatus) -> str:
    parts = [
        f"{count} {word}"
        for count, word in (
            (value.conflicted, "conflicted"),
            (value.staged, "staged"),
            (value.modified, "modified"),
            (value.untracked or 0, "untracked"),
        )
        if count
    ]
    changed = len(value.entries) + value.more
    text = f"{_n_files(changed, 'changed path')} ({', '.join(parts)})" if changed else "clean"
    if value.untracked is None:
        text += ", untracked files not counted"
    return text


def _listing(value: GitStatus) -> list[str]:
    lines = [f"  - `{path}` ({label})" for path, label in value.entries]
    if value.more:
        lines.append(f"  - and {value.more} more")
    return lines


def render_baseline(value: GitStatus) -> str:
    """The whole state, as a list the model can scan."""
    if value.error:
        return f"Git: the status of this repository is not available ({value.error})."
    lines = [HEADER]
    if value.detached:
        lines.append("- HEAD is detached (no branch checked out)")
    else:
        lines.append(f"- Branch: `{value.branch}` ({_tracking(value)})")
    lines.append(f"- HEAD: {_commit_text(value)}")
    if value.operations:
        lines.append("- In progress: " + ", ".join(f"a {_operation(value, op)}" for op in value.operations))
    if value.stashes:
        lines.append(f"- Stashes: {value.stashes}")
    lines.append(f"- Working tree: {_counts(value)}" + (":" if not value.clean else ""))
    lines += _listing(value)
    return "\n".join(lines)


def _branch_change(old: GitStatus, new: GitStatus) -> str:
    if new.detached:
        return f"HEAD is now detached (was on branch `{old.branch}`)."
    if old.detached:
        return f"The branch is now `{new.branch}` (HEAD was detached)."
    return f"The branch is now `{new.branch}` (was `{old.branch}`)."


def _head_change(old: GitStatus, new: GitStatus) -> str:
    if not new.oid:
        return "HEAD now has no commits yet."
    if not old.oid:
        return f"The first commit was made: {_commit_text(new)}."
    if old.oid in new.parents:
        return f"A commit was made: {_commit_text(new)}."
    if new.parents and new.parents == old.parents:
        return f"The last commit was rewritten (amended): HEAD is now {_commit_text(new)} (was `{old.head}`)."
    return f"HEAD is now {_commit_text(new)} (was `{old.head}`)."


def _tracking_change(old: GitStatus, new: GitStatus, switched: bool) -> str | None:
    branch = f"`{new.branch}`"
    if switched:
        return f"{branch} has {_tracking(new)}." if not new.upstream else f"{branch} is {_tracking(new)}."
    if (old.upstream, old.ahead, old.behind) == (new.upstream, new.ahead, new.behind):
        return None
    if not new.upstream:
        return f"{branch} no longer has an upstream."
    if new.ahead is None or new.behind is None:
        return f"The upstream of {branch}, `{new.upstream}`, is gone."
    if old.upstream != new.upstream:
        return f"{branch} now tracks `{new.upstream}` ({_tracking(new)})."
    return f"{branch} is now {_tracking(new)} (was {_tracking(old)})."


def _tree_change(old: GitStatus, new: GitStatus) -> str:
    """What changed in the working tree since the last message, then (unless that says it all) where it stands."""
    if new.clean:
        extra = " (untracked files not counted)" if new.untracked is None else ""
        return f"The working tree is clean again{extra}."
    before, now = dict(old.entries), dict(new.entries)
    phrases: list[str] = []
    mentioned: set[str] = set()
    if not old.more:  # every changed path was named last time, so a path not named then is new
        groups: dict[str, list[str]] = {}
        for path, label in new.entries:
            if path not in before:
                groups.setdefault(label.split(":")[0], []).append(path)  # conflicts of every kind together
        for label, paths in groups.items():
            if label == "in conflict":
                phrases.append(f"{_n_files(len(paths))} now in conflict ({_names(paths)})")
            elif label == "untracked":
                phrases.append(f"{len(paths)} new untracked {_n_files(len(paths)).split(' ', 1)[1]} ({_names(paths)})")
            else:
                phrases.append(f"{_n_files(len(paths))} {label} since the last message ({_names(paths)})")
            mentioned.update(paths)
    for path, label in new.entries:
        if path in before and before[path] != label:
            phrases.append(f"`{path}` is now {label} (was {before[path]})")
            mentioned.add(path)
    if not new.more:
        gone = [path for path, _ in old.entries if path not in now]
        if gone:
            phrases.append(f"{_n_files(len(gone))} no longer changed ({_names(gone)})")
    text = "Working tree: " + ("; ".join(phrases) if phrases else "changed since the last message") + "."
    if old.clean and not new.more and all(path in mentioned for path, _ in new.entries):
        return text  # the change is the whole state
    return f"{text} It now has {_counts(new)}:\n" + "\n".join(_listing(new))


def render_update(old: GitStatus, new: GitStatus) -> str:
    """Only what changed, each part a statement of what is true now."""
    if new.error:
        return (
            f"Git: the status of this repository is no longer available ({new.error}); "
            "the branch and working tree described earlier may be out of date."
        )
    if old.error:
        return "The git status is available again.\n" + render_baseline(new)
    sentences: list[str] = []
    switched = old.detached != new.detached or old.branch != new.branch
    if switched:
        sentences += [_branch_change(old, new), f"HEAD: {_commit_text(new)}."]
    elif old.oid != new.oid:
        sentences.append(_head_change(old, new))
    tracking = None if new.detached else _tracking_change(old, new, switched)
    if tracking and (new.upstream or old.upstream):
        sentences.append(tracking)
    for op in new.operations:
        if op not in old.operations:
            sentences.append(f"A {_operation(new, op)} is now in progress.")
    for op in old.operations:
        if op not in new.operations:
            sentences.append(f"The {_operation(old, op)} is no longer in progress.")
    if old.stashes != new.stashes:
        sentences.append(
            f"There {'is' if new.stashes == 1 else 'are'} now {_n_files(new.stashes, 'stash')}"
            f" (was {old.stashes}).".replace("stashs", "stashes")
        )
    tree = ("entries", "more", "staged", "modified", "untracked", "conflicted")
    if any(getattr(old, name) != getattr(new, name) for name in tree):
        sentences.append(_tree_change(old, new))
    return "\n".join(sentences) if sentences else render_baseline(new)


def render_removal(_old: GitStatus) -> str:
    return "The git status given earlier is no longer maintained and may be out of date."
