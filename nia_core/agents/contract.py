"""What every host adapter knows: its hook input, its output form, its size limit, the files it loads itself.

Facts come from the host's documentation checked against its real binary
(``docs/hosts.md`` and ``tests/real_agents``); where they disagree, the binary wins
and the adapter says which document it checked.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nia_core.agents.transcript import Transcript

START = "start"
"""The role of an event that begins or continues a conversation (Claude Code's ``SessionStart``)."""
PROMPT = "prompt"
"""The role of an event that comes before each user turn (``UserPromptSubmit``): nia's safe boundary."""

HOOK_TIMEOUT = 30
"""Seconds a host lets nia's hook run (nia's own deadline is shorter; see :mod:`nia_core.agents.answer`)."""

FRESH = ("startup", "clear", "compact")
"""``SessionStart`` sources that begin a fresh conversation for the model: a new context epoch."""


class HostInputError(ValueError):
    """The hook's stdin is not what the host documents (named in the message)."""


@dataclass(frozen=True)
class HookInput:
    """One hook invocation, as the host described it on stdin."""

    event: str
    session_id: str
    cwd: str
    source: str = ""
    """SessionStart only: ``startup``, ``resume``, ``clear``, ``compact``, ``fork``."""
    transcript_path: str | None = None
    raw: Mapping[str, Any] = field(default_factory=dict)
    caller: Mapping[str, str] = field(default_factory=dict)
    """What the hook's own process learnt about the host process it runs under (:attr:`HostAdapter.caller`)."""


@dataclass(frozen=True)
class InputKeys:
    """The names of the hook input's members (Claude Code's, which most command-hook hosts copy)."""

    event: str = "hook_event_name"
    """``""``: the host does not name the event (GitHub Copilot CLI): every input is for the adapter's one event."""
    session: str = "session_id"
    cwd: str = "cwd"
    source: str = "source"
    transcript: str = "transcript_path"
    """``""``: the input names no transcript (the adapter's :attr:`HostAdapter.conversation` finds the host's store)."""


@dataclass(frozen=True)
class NativeFiles:
    """Instruction files a host loads into every session on its own, for a range of its versions."""

    since: tuple[int, ...]
    """The first version known to load them (inclusive)."""
    names: tuple[str, ...]
    """File names the host reads, e.g. ``AGENTS.md``."""
    source_keys: tuple[str, ...]
    """nia's context sources that deliver exactly those files; left to the host by default."""


@dataclass(frozen=True)
class SettingsPlaces:
    """Where a host reads its hook entries, per scope (each a path of names)."""

    project: tuple[str, ...]
    """Below the project root: ``(".claude", "settings.json")``; meant to be committed."""
    user_folder: tuple[str, str]
    """The user's configuration folder: the environment variable that moves it, and its default below the
    home folder (``("CLAUDE_CONFIG_DIR", ".claude")``)."""
    user: tuple[str, ...]
    """Below that folder: ``("settings.json",)``."""
    local: tuple[str, ...] | None = None
    """The host's personal, uncommitted project scope, when it has one (``.claude/settings.local.json``)."""


@dataclass(frozen=True)
class HookFormat:
    """How one of nia's hook entries is written in the host's JSON settings file."""

    nested: bool = True
    """``{"hooks": {EVENT: [{"hooks": [HANDLER]}]}}`` (Claude Code's form);
    ``False``: ``{"hooks": {EVENT: [HANDLER]}}``."""
    command_key: str = "command"
    timeout_key: str = "timeout"
    timeout_scale: int = 1
    """The host's timeout unit per second: 1 for seconds, 1000 for milliseconds (Gemini CLI)."""
    handler: Mapping[str, Any] = field(default_factory=lambda: {"type": "command"})
    """The handler's other members, before the command."""
    top: Mapping[str, Any] = field(default_factory=dict)
    """Members the file must hold at its top level beside ``hooks`` (``{"version": 1}``)."""
    created: Mapping[str, Any] = field(default_factory=dict)
    """Members nia writes at the top level of a file it creates, and only then: what the host itself adds to
    a file at its first start (Qwen Code's ``{"$version": 4}``), so that start leaves a committed file as it
    was. Never added to an existing file (the host may read a file without it as one to migrate); uninstall
    counts them as nia's when they are all that is left."""


@dataclass(frozen=True)
class Switch:
    """A TOML setting the host needs before it runs any hook, in a file beside the hooks file of each scope."""

    file: str
    """The file's name in the same folder as the hooks file: ``config.toml``."""
    table: str
    key: str


@dataclass(frozen=True)
class PluginModule:
    """A host that runs nia from a code module it loads (OpenCode's plugins) rather than from settings entries.

    ``nia hook install`` writes the module at the host's settings place for
    the scope (:attr:`HostAdapter.settings`), and recognises it exactly: a
    file counts as nia's only when it is byte for byte what :attr:`render`
    makes for the program it names, so uninstall never removes a file
    someone edited.
    """

    render: Callable[[str], str]
    """The module's text for a program (``/home/me/.venvs/nia/bin/nia``)."""
    program: Callable[[str], str | None]
    """The program a module's text runs, when the text is exactly what :attr:`render` makes for it."""
    event: str
    """The host's event the module answers (``chat.message``), for status and the hook log."""
    ignored: tuple[str, ...] = ()
    """Names, relative to the module's folder, that a ``.gitignore`` beside it keeps out of ``git status``: the
    module holds this machine's path to nia, so it is not committed (nia writes, and removes, those lines)."""


@dataclass(frozen=True)
class HostAdapter:
    """One agent host, as facts: how its hooks talk, what it records, what it loads itself, where its settings live.

    A command-hook host is one module that builds one of these (``ADAPTER``)
    and one line in :data:`nia_core.agents.ADAPTERS`; nothing else in nia
    names a host. docs/hosts.md ("The host contract") says what each fact
    must be measured with.
    """

    name: str
    """The host's name in commands and session ids: ``claude-code``, ``codex``."""
    title: str
    """For people: ``Claude Code``."""
    output_limit: int
    """The most hook output the host passes to the model whole, measured with the real binary."""
    measure: Callable[[str], int]
    """The size of a text in the unit the host's limit counts."""
    unit: str
    """That unit, for people: ``characters``, ``bytes``."""
    native: tuple[NativeFiles, ...]
    """What the host loads itself, per version range (newest last)."""
    host_version: Callable[[str | None], tuple[int, ...] | None]
    """The host's version, read from its transcript when it says (``None``: unknown)."""
    settings: SettingsPlaces
    """Where its hook entries live."""
    instruction_files: Callable[[Path], tuple[str, ...]] | None = None
    """For a host whose own settings choose the instruction files it loads (Gemini CLI's and Qwen Code's
    ``context.fileName``): the names it loads in the project at the path. ``native`` entries count only when
    these name all their files. ``None``: ``native`` says it all."""
    events: Mapping[str, str] = field(default_factory=lambda: {"SessionStart": START, "UserPromptSubmit": PROMPT})
    """The host's event names nia installs and answers, each with its role (:data:`START`, :data:`PROMPT`)."""
    fresh: tuple[str, ...] = FRESH
    """Start sources that begin a fresh conversation (a new epoch); any other start source is a boundary."""
    forks: tuple[str, ...] = ("fork",)
    """Start sources of a conversation that begins as a copy of another (a fork): it continues the other's epoch."""
    fork_parent: Callable[[HookInput], str | None] = lambda hook: None
    """The host's session id of the conversation a fork copies, where the host says it (``None``: not known)."""
    forks_copied: bool = False
    """The host runs no hook for a fork, and copies the conversation into a new one (OpenCode's ``--fork``): at a
    conversation's first prompt :attr:`fork_parent` says whether its record already holds nia's texts copied from
    another conversation, and which."""
    fork_recorded_late: bool = False
    """Whether the host may say which conversation a fork copies only after the fork's first turn (its
    transcript is written then): until it does, nia says nothing to the fork rather than a second baseline."""
    ancestors: Callable[[str], tuple[str, ...]] = lambda path: ()
    """The transcripts a fork's transcript continues without copying them (oldest first)."""
    caller: Callable[[int], Mapping[str, str]] = lambda parent: {}
    """Facts about the host process a hook runs under that its input leaves out (the session a fork copies,
    from the host's command line), read from the hook process's parent (its pid is the argument: the hook's
    own parent also when a resident process answers for it) and passed on with the input
    (:attr:`HookInput.caller`), so the answer stays a function of its input wherever it is computed."""
    input_keys: InputKeys = field(default_factory=InputKeys)
    output: str = "hookSpecificOutput"
    """How the text is printed: ``hookSpecificOutput`` (``{"hookSpecificOutput": {"hookEventName": EVENT,
    "additionalContext": TEXT}}``) or ``additionalContext`` (``{"additionalContext": TEXT}``)."""
    format: HookFormat = field(default_factory=HookFormat)
    switch: Switch | None = None
    """A setting the host needs before it runs hooks (the installer turns it on, marked as nia's)."""
    notes: tuple[str, ...] = ()
    """What ``nia hook install`` says after installing: trust steps the user takes in the host."""
    git_snapshot_off: Mapping[str, Any] | None = None
    """Settings members that switch off the host's own git status snapshot (which it says will not update),
    for ``nia hook install --no-host-git-status`` (``None``: the host has no such setting)."""
    git_snapshot_note: str = ""
    """What else those members switch off, for people."""
    trusted: Callable[[Path, Mapping[str, Any], list[str]], list[str]] | None = None
    """For ``nia hook status``: the events of nia's entries (in the hooks file at the path, already read) that
    the host has recorded the user's trust for; problems reading the host's record are appended to the list."""
    spill_folder: Callable[[str | None], Path | None] = lambda transcript_path: None
    """A folder of the host's own for the whole text of an output over its limit, from the hook's transcript path,
    where the host's file tools skip the project's git-ignored ``.nia/hook-output/`` (Gemini CLI's do); ``None``:
    the project's. The model is pointed at the file, so it must be one the host lets it read."""
    trust_said: tuple[str, str] = ("hooks reviewed", "hooks not reviewed yet: approve them in {name}")
    """What ``nia hook status`` says when the host trusts all of nia's entries, and when it does not
    (``{name}``: the host's command name)."""
    compaction: str = ""
    """A regular expression for the record a compaction leaves in the host's transcript: the model sees
    nothing written before the last one (``""``: the host's compactions are not recognised)."""
    compaction_recorded_first: bool = False
    """Whether that record is written before the host runs ``SessionStart`` (``compact``), so the
    hook can tell a compaction nia already answered from a new one (measured per host)."""
    start_recorded_late: bool = False
    """Whether the host writes a start hook's output to its transcript only after the next prompt's hook ran
    (so that prompt's hook must not look for it)."""
    conversation: Callable[[HookInput], Transcript | None] | None = None
    """Where the host keeps the conversation, when its hook input names no transcript: the host's store, read
    as a :class:`~nia_core.agents.transcript.Transcript` (``None`` when there is none to read yet)."""
    foreign: Callable[[HookInput], str] = lambda hook: ""
    """Why this hook must print nothing (''): another host runs this host's hooks and drops their output
    (GitHub Copilot CLI runs Claude Code's), so nothing printed there would reach a model."""
    turn: Callable[[HookInput], str] = lambda hook: _turn(hook.raw)
    """Which prompt a hook answers, as the host names it ('' when it does not): two of nia's hooks of one prompt
    (a user-level and a project-level install) share it, and the second finds the first one's text on its way."""
    module: PluginModule | None = None
    """The host loads a code module nia writes instead of settings entries (OpenCode)."""
    output_marker: str = ""
    """A string every transcript line that records hook output contains (a cheap filter before parsing)."""
    hook_outputs: Callable[[Mapping[str, Any]], list[str]] = lambda record: []
    """The texts one transcript line (a JSON object) records as hook output that reached the model.

    Only this counts as delivered: tool results and file contents (which the
    repository controls) are other records, so nia's text quoted inside them
    proves nothing. A compaction record that keeps part of the conversation
    (Gemini CLI's history snapshot) yields the hook outputs it kept."""
    recorded: Callable[[str], str] = lambda text: text
    """What the host makes of a hook's text before the model (and its transcript) gets it: the text itself, or
    :func:`escape_angles` for hosts that turn ``<`` and ``>`` into ``&lt;`` and ``&gt;`` (Gemini CLI, Qwen Code).
    The fidelity check compares nia's texts in that form."""
    joins: str = ""
    """The separator a host puts between the texts of several hooks of one event when it records them as one
    output (Gemini CLI and Qwen Code: a newline); ``""`` when each hook's output is its own record. nia's text
    then counts as delivered when it is one of those texts, whole, between separators."""

    def role(self, event: str) -> str | None:
        """:data:`START`, :data:`PROMPT`, or ``None`` for an event nia does not answer."""
        return self.events.get(event)

    def parse(self, data: bytes | str, caller: Mapping[str, str] | None = None) -> HookInput:
        """The hook input from the host's stdin JSON (and ``caller``); raises :class:`HostInputError` naming it."""
        try:
            raw = json.loads(data)
        except ValueError as exc:
            raise HostInputError(f"{self.title} hook input is not JSON: {exc}") from None
        except RecursionError:
            raise HostInputError(f"{self.title} hook input is nested too deeply to be hook JSON") from None
        if not isinstance(raw, dict):
            raise HostInputError(f"{self.title} hook input is not a JSON object")
        keys = self.input_keys
        event = raw.get(keys.event) if keys.event else next(iter(self.events))
        session_id = raw.get(keys.session)
        cwd = raw.get(keys.cwd)
        for key, value in ((keys.event, event), (keys.session, session_id), (keys.cwd, cwd)):
            if not isinstance(value, str) or not value:
                raise HostInputError(f"{self.title} hook input has no {key!r}")
            if not _clean_text(value):
                raise HostInputError(f"{self.title} hook input: {key!r} holds a NUL byte or a lone surrogate")
        source = raw.get(keys.source)
        transcript = raw.get(keys.transcript) if keys.transcript else None
        return HookInput(
            event=str(event),
            session_id=str(session_id),
            cwd=str(cwd),
            source=source if isinstance(source, str) else "",
            transcript_path=transcript
            if isinstance(transcript, str) and transcript and _clean_text(transcript)
            else None,
            raw=raw,
            caller=dict(caller or {}),
        )

    def render(self, event: str, text: str) -> str:
        """What to print on stdout so ``text`` reaches the model, in the host's JSON form.

        JSON rather than plain stdout: Codex rejects plain text that looks
        like JSON, and a plugin's text may start with ``{``.
        """
        if self.output == "additionalContext":
            payload: dict[str, Any] = {"additionalContext": text}
        else:
            payload = {"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}}
        return json.dumps(payload, ensure_ascii=False)

    def native_keys(self, version: tuple[int, ...] | None, root: Path | None = None) -> tuple[str, ...]:
        """Source keys the host already delivers at ``version`` (unknown: the newest known behaviour) in the
        project at ``root``: where the host's settings choose its files, only when they name every one."""
        chosen: NativeFiles | None = None
        for entry in self.native:
            if version is None or version >= entry.since:
                chosen = entry
        if chosen is None:
            return ()
        loads = self.instruction_files
        if root is not None and loads is not None and not set(chosen.names) <= set(loads(root)):
            return ()
        return chosen.source_keys


def _clean_text(value: str) -> bool:
    """Whether ``value`` can name a path and be stored: no NUL, valid UTF-8 (JSON can spell lone surrogates)."""
    if "\x00" in value:
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _turn(raw: Mapping[str, Any]) -> str:
    """A digest of the prompt's id, where the input has one (Claude Code and Qwen Code ``prompt_id``, Codex
    ``turn_id``, nia's OpenCode plugin ``message_id``); '' otherwise (a repeated prompt text is another prompt)."""
    for key in ("prompt_id", "turn_id", "message_id"):
        value = raw.get(key)
        if isinstance(value, str) and value:
            return hashlib.sha256(f"{key}\0{value}".encode("utf-8", "replace")).hexdigest()[:20]
    return ""


def escape_angles(text: str) -> str:
    """``<`` and ``>`` as ``&lt;`` and ``&gt;``, and nothing else (``&`` stays): what Gemini CLI and Qwen Code do
    to a hook's text before the model sees it."""
    return text.replace("<", "&lt;").replace(">", "&gt;")


def characters(text: str) -> int:
    """JavaScript string length: UTF-16 code units (Claude Code counts these)."""
    return len(text.encode("utf-16-le")) // 2


def utf8_bytes(text: str) -> int:
    return len(text.encode("utf-8"))
