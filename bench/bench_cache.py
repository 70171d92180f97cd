"""How much of every request a provider can serve from its prompt cache: nia vs a naive host vs the lower bound.

    python bench/bench_cache.py [--turns 200]

One scripted coding session (user turns, some with a tool round trip) over a
realistic context: a 20 KB AGENTS.md, 30 docs files, the date, the
environment, and two plugin sources (a linter and a CI plugin). The context
changes 20 times: docs edited (AGENTS.md once), plugins reloaded, sources
removed (two docs deleted, the CI plugin unloaded), the date rolling over.

The same script runs three ways, in lockstep, over the same files:

- **nia**: the real engine. ``initialize`` renders the baseline once;
  ``reconcile`` at each safe boundary appends one mid-conversation system
  message per change, after the promoted input.
- **naive**: re-renders the whole system prompt (``initialize``) every turn
  and sends it as the system prompt, as most tools do.
- **lower bound**: the first baseline forever; the context never changes.

Every request is lowered through the ``anthropic-messages`` lowering (and,
in a second table, ``openai-chat``) and measured as the provider's cache
sees it (:mod:`bench.prompt_cache`): the bytes and estimated tokens
that are a byte-identical prefix of the previous request; the tokens a cache
with Anthropic's documented rules reads, writes and misses; and the cost at
Anthropic's multipliers (cache write 1.25x, cache read 0.1x of base input).
Dollar figures come from the same code as ``nia session stats``
(:mod:`nia_core.runtime.usage` with the built-in price table): each request's
usage is what a session would store for it, priced as Claude Sonnet 4.5 and as
gpt-4.1, beside what the same requests would cost with no cache hits.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import random
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nia_core import ContextSource, StatCache
from nia_core.context import (
    Location,
    ReplacementBlocked,
    ReplacementReady,
    Snapshot,
    SystemContextRegistry,
    Unchanged,
    Updated,
    initialize,
    reconcile,
)
from nia_core.project import locate
from nia_core.providers.anthropic_messages import AnthropicMessagesProvider
from nia_core.providers.openai_chat import OpenAIChatProvider
from nia_core.providers.pricing import PriceTable
from nia_core.runtime.usage import Totals
from nia_core.sessions.messages import Message, ModelRequest, ToolCall, Usage
from nia_plugins import instructions
from nia_plugins.date import date_source
from nia_plugins.environment import environment_source

if __package__:  # imported as bench.bench_cache (the tests)
    from bench.prompt_cache import (
        CACHE_READ,
        CACHE_WRITE,
        AnthropicCache,
        CacheUsage,
        Prompt,
        anthropic_prompt,
        chat_cached_tokens,
        chat_prompt,
        shared_prefix,
    )
else:  # python bench/bench_cache.py: this folder is sys.path[0]
    from prompt_cache import (
        CACHE_READ,
        CACHE_WRITE,
        AnthropicCache,
        CacheUsage,
        Prompt,
        anthropic_prompt,
        chat_cached_tokens,
        chat_prompt,
        shared_prefix,
    )

SONNET = "anthropic-messages/claude-sonnet-4-5"
GPT = "openai-chat/gpt-4.1"
PRICES = PriceTable()
TARGET = 0.99

VOCABULARY = (
    "refactor the loader so that the snapshot codec keeps canonical json stable across restarts and check "
    "the tests for the registry scope because closing a plugin must remove its sources with their removal "
    "text then make the boundary promote pending input before reconcile and write the update with the "
    "snapshot in one transaction while the provider request keeps the baseline byte identical"
)
WORDS = tuple(VOCABULARY.split(" "))


# -- the project and its context ---------------------------------------------------------------


def words(rng: random.Random, count: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(count))


def paragraph_file(rng: random.Random, title: str, size: int) -> str:
    parts = [f"# {title}\n"]
    section = 0
    while sum(len(p) for p in parts) < size:
        section += 1
        parts.append(f"\n## {title} {section}\n\n")
        for _ in range(4):
            parts.append(f"- {words(rng, rng.randint(8, 18)).capitalize()}.\n")
        parts.append(f"\n{words(rng, 40).capitalize()}.\n")
    return "".join(parts)[:size]


def write(path: Path, text: str) -> None:
    """Write and move the mtime forward, so a stat sees the change even within one clock tick."""
    before = path.stat().st_mtime_ns if path.exists() else 0
    path.write_text(text, encoding="utf-8")
    after = max(path.stat().st_mtime_ns, before + 1_000_000)
    os.utime(path, ns=(after, after))


class Clock:
    def __init__(self) -> None:
        self.now = dt.datetime(2025, 6, 2, 9, 30, tzinfo=dt.UTC)

    def __call__(self) -> dt.datetime:
        return self.now


_docs = StatCache()


def doc_source(root: Path, path: Path) -> ContextSource:
    name = path.stem.lower()
    rel = path.relative_to(root).as_posix()
    return ContextSource(
        key=f"docs/{name}",
        load=lambda: _docs.read_bytes(str(path)).decode("utf-8"),
        baseline=lambda text: f"Project document {rel}:\n\n{text}",
        update=lambda _old, text: f"Project document {rel} changed. Its full current text:\n\n{text}",
        removal=lambda _old: f"Project document {rel} was deleted; disregard what it said.",
    )


def plugin_source(key: str, title: str, value: dict[str, Any]) -> ContextSource:
    def render(v: dict[str, Any]) -> str:
        lines = [f"{title} (version {v['version']}):"] + [f"- {rule}" for rule in v["rules"]]
        return "\n".join(lines)

    return ContextSource(
        key=key,
        load=lambda: value,
        baseline=render,
        update=lambda _old, new: f"{title} was reloaded. " + render(new),
        removal=lambda _old: f"{title} is no longer loaded; its rules no longer apply.",
    )


def plugin_value(rng: random.Random, version: str) -> dict[str, Any]:
    return {"version": version, "rules": [words(rng, 12) for _ in range(12)]}


@dataclass
class World:
    """The project folder, the registry the plugins contribute to, and the knobs the script turns."""

    root: Path
    location: Location
    registry: SystemContextRegistry
    clock: Clock
    rng: random.Random
    scopes: dict[str, Any] = field(default_factory=dict)
    versions: dict[str, int] = field(default_factory=dict)
    _sources: dict[Path, ContextSource] = field(default_factory=dict)

    @classmethod
    def create(cls, root: Path) -> World:
        rng = random.Random(20250602)
        (root / ".git").mkdir()
        write(root / "AGENTS.md", paragraph_file(rng, "Agent instructions", 20 * 1024))
        (root / "docs").mkdir()
        for n in range(30):
            write(root / "docs" / f"doc{n:02d}.md", paragraph_file(rng, f"Document {n}", rng.randint(1500, 4500)))
        world = cls(root, locate(root), SystemContextRegistry(), Clock(), rng)
        env, date = environment_source(world.location), date_source(world.clock)
        builtins = world.registry.scope("builtins")
        builtins.register("nia-environment", lambda _loc: [env], reserved=True, priority=0)
        builtins.register("nia-date", lambda _loc: [date], reserved=True, priority=1)
        builtins.register(
            "nia-instructions", lambda loc: instructions.nia_context_sources(loc, {}), reserved=True, priority=2
        )
        world.registry.scope("docs").register("docs", world.docs, namespace="docs")
        world.load_plugin("lint", "Linter rules")
        world.load_plugin("ci", "CI pipeline")
        return world

    def docs(self, _location: Location) -> list[ContextSource]:
        paths = sorted((self.root / "docs").glob("*.md"))
        return [self._sources.setdefault(p, doc_source(self.root, p)) for p in paths]

    def load_plugin(self, name: str, title: str) -> None:
        version = self.versions.get(name, 0) + 1
        self.versions[name] = version
        value = plugin_value(self.rng, f"1.{version}.0")
        source = plugin_source(f"{name}/rules", title, value)
        scope = self.registry.scope(name)
        scope.register(name, lambda _loc: [source], namespace=name)
        self.scopes[name] = (scope, title)

    # the 20 changes -----------------------------------------------------------------------------

    def edit_doc(self, n: int) -> str:
        path = self.root / "docs" / f"doc{n:02d}.md"
        write(path, path.read_text(encoding="utf-8") + f"\n\n## Addendum\n\n{words(self.rng, 60)}.\n")
        return f"edit docs/{path.name}"

    def edit_agents(self) -> str:
        path = self.root / "AGENTS.md"
        text = path.read_text(encoding="utf-8")
        write(path, text.replace("## Agent instructions 3", "## Agent instructions 3 (revised)", 1))
        return "edit AGENTS.md"

    def reload_plugin(self, name: str) -> str:
        scope, title = self.scopes.pop(name)
        scope.close()
        self.load_plugin(name, title)
        return f"reload plugin {name}"

    def unload_plugin(self, name: str) -> str:
        scope, _ = self.scopes.pop(name)
        scope.close()
        return f"remove plugin {name}"

    def delete_doc(self, n: int) -> str:
        (self.root / "docs" / f"doc{n:02d}.md").unlink()
        return f"remove docs/doc{n:02d}.md"

    def next_day(self) -> str:
        self.clock.now += dt.timedelta(days=1)
        return f"date -> {self.clock.now.date()}"


def change_script(world: World) -> list[Callable[[], str]]:
    """The 20 context changes, in order: 10 edits, 4 reloads, 3 removals, 4 date roll-overs (one edit is AGENTS.md)."""
    return [
        lambda: world.edit_doc(3),
        world.next_day,
        lambda: world.reload_plugin("lint"),
        lambda: world.edit_doc(11),
        world.edit_agents,
        lambda: world.delete_doc(7),
        lambda: world.edit_doc(3),
        lambda: world.reload_plugin("ci"),
        world.next_day,
        lambda: world.edit_doc(20),
        lambda: world.reload_plugin("lint"),
        lambda: world.edit_doc(25),
        lambda: world.unload_plugin("ci"),
        world.next_day,
        lambda: world.edit_doc(14),
        lambda: world.reload_plugin("lint"),
        lambda: world.edit_doc(29),
        lambda: world.delete_doc(18),
        world.next_day,
        lambda: world.edit_doc(0),
    ]


# -- the conversation ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Turn:
    """One user turn: the input, and what the model answers (a tool round trip first, sometimes)."""

    user: str
    tool: tuple[str, str, str] | None  # (assistant text, tool path, tool result)
    reply: str


def conversation(turns: int, root: Path) -> list[Turn]:
    rng = random.Random(7)
    script = []
    for n in range(turns):
        user = f"Turn {n}: {words(rng, rng.randint(20, 80))}?"
        tool = None
        if n % 3 == 1:
            path = f"docs/doc{rng.randrange(30):02d}.md"
            result = paragraph_file(rng, f"Listing of {path}", rng.randint(800, 2500))
            tool = (f"Let me read {path}.", path, result)
        reply = f"{words(rng, rng.randint(60, 220)).capitalize()}."
        script.append(Turn(user, tool, reply))
    return script


# -- the three hosts --------------------------------------------------------------------------------


class Host:
    """A session runner: keeps the history and decides the baseline and messages of each request."""

    name = ""

    def __init__(self) -> None:
        self.history: list[Message] = []
        self.requests: list[ModelRequest] = []

    def boundary(self, context: Any, promoted: list[Message]) -> ModelRequest:
        raise NotImplementedError

    def answer(self, message: Message) -> None:
        self.history.append(message)


class NiaHost(Host):
    name = "nia (epochs)"

    def __init__(self) -> None:
        super().__init__()
        self.baseline: str | None = None
        self.snapshot = Snapshot()
        self.updates = 0
        self.epochs = 0

    def boundary(self, context: Any, promoted: list[Message]) -> ModelRequest:
        if self.baseline is None:
            generation = initialize(context)
            self.baseline, self.snapshot, self.epochs = generation.baseline, generation.snapshot, 1
        self.history += promoted
        outcome = reconcile(context, self.snapshot)
        if isinstance(outcome, Updated):
            self.history.append(Message("system_update", outcome.text))
            self.snapshot = outcome.snapshot
            self.updates += 1
        elif isinstance(outcome, ReplacementReady):
            self.baseline, self.snapshot = outcome.generation.baseline, outcome.generation.snapshot
            self.history = [m for m in self.history if m.kind != "system_update"]
            self.epochs += 1
        else:
            assert isinstance(outcome, Unchanged | ReplacementBlocked)
        return ModelRequest("bench", "anthropic-messages/claude-sonnet-4-5", self.baseline, tuple(self.history))


class NaiveHost(Host):
    name = "naive (re-rendered system prompt)"

    def boundary(self, context: Any, promoted: list[Message]) -> ModelRequest:
        self.history += promoted
        baseline = initialize(context).baseline
        return ModelRequest("bench", "anthropic-messages/claude-sonnet-4-5", baseline, tuple(self.history))


class LowerBound(Host):
    name = "lower bound (nothing changes)"

    def __init__(self) -> None:
        super().__init__()
        self.baseline: str | None = None

    def boundary(self, context: Any, promoted: list[Message]) -> ModelRequest:
        if self.baseline is None:
            self.baseline = initialize(context).baseline
        self.history += promoted
        return ModelRequest("bench", "anthropic-messages/claude-sonnet-4-5", self.baseline, tuple(self.history))


# -- measuring ----------------------------------------------------------------------------------------


@dataclass
class Tally:
    name: str
    requests: int = 0
    size: int = 0
    prefix_bytes: int = 0
    tokens: int = 0
    prefix_tokens: int = 0
    usage: CacheUsage = field(default_factory=CacheUsage)
    chat_tokens: int = 0
    chat_cached: int = 0
    previous: Prompt | None = None
    chat_previous: Prompt | None = None
    cache: AnthropicCache = field(default_factory=AnthropicCache)
    anthropic_totals: Totals = field(default_factory=Totals)
    """What ``nia session stats`` would report for these requests (input only: replies are scripted)."""
    chat_totals: Totals = field(default_factory=Totals)

    def add(self, anthropic_body: dict[str, Any], chat_body: dict[str, Any]) -> None:
        prompt = anthropic_prompt(anthropic_body)
        size, tokens = shared_prefix(self.previous, prompt)
        self.requests += 1
        self.size += prompt.size
        self.prefix_bytes += size
        self.tokens += prompt.tokens
        self.prefix_tokens += tokens
        served = self.cache.serve(prompt)
        self.usage = CacheUsage(
            self.usage.read + served.read, self.usage.written + served.written, self.usage.uncached + served.uncached
        )
        self.previous = prompt
        self.anthropic_totals.add(SONNET, Usage(served.total, 0, served.read, served.written), PRICES)
        chat = chat_prompt(chat_body)
        cached = chat_cached_tokens(self.chat_previous, chat)
        self.chat_tokens += chat.tokens
        self.chat_cached += cached
        self.chat_previous = chat
        self.chat_totals.add(GPT, Usage(chat.tokens, 0, cached, 0), PRICES)

    @property
    def byte_fraction(self) -> float:
        return self.prefix_bytes / self.size

    @property
    def token_fraction(self) -> float:
        return self.prefix_tokens / self.tokens

    @property
    def served_fraction(self) -> float:
        return self.usage.read / self.usage.total

    @property
    def cost(self) -> float:
        return self.usage.cost(write=CACHE_WRITE, read=CACHE_READ)

    @property
    def chat_fraction(self) -> float:
        return self.chat_cached / self.chat_tokens

    @property
    def chat_cost(self) -> float:
        return self.chat_totals.cost


def run(turns: int) -> tuple[list[Tally], dict[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="nia-bench-cache-") as folder:
        root = Path(folder).resolve()
        world = World.create(root)
        view = world.registry.open(world.location)
        changes = change_script(world)
        every = max(1, turns // len(changes))
        due = {every * i + every // 2: change for i, change in enumerate(changes)}
        hosts: list[Host] = [LowerBound(), NiaHost(), NaiveHost()]
        tallies = [Tally(h.name) for h in hosts]
        anthropic = AnthropicMessagesProvider.from_config({}, environ={})
        openai = OpenAIChatProvider.from_config({}, environ={})
        applied: list[str] = []
        first_baseline = 0

        def boundary(promoted: list[Message]) -> None:
            nonlocal first_baseline
            context = view.assemble(strict=True).context
            for host, tally in zip(hosts, tallies, strict=True):
                request = host.boundary(context, list(promoted))
                first_baseline = first_baseline or len(request.baseline.encode("utf-8"))
                chat_request = ModelRequest(
                    request.session_id, "openai-chat/gpt-4.1", request.baseline, request.messages
                )
                tally.add(anthropic.lower(request), openai.lower(chat_request))

        started = time.perf_counter()
        for n, turn in enumerate(conversation(turns, root)):
            if n in due:
                applied.append(due[n]())
            boundary([Message("user", turn.user)])
            if turn.tool is not None:
                text, path, result = turn.tool
                call = ToolCall(f"toolu_{n:04d}", "read_file", {"path": path})
                for host in hosts:
                    host.answer(Message("assistant", text, tool_calls=(call,)))
                boundary([Message("tool_result", result, tool_call_id=call.id)])
            for host in hosts:
                host.answer(Message("assistant", turn.reply))
        nia = hosts[1]
        assert isinstance(nia, NiaHost)
        info = {
            "turns": turns,
            "requests": tallies[0].requests,
            "changes": applied,
            "updates": nia.updates,
            "epochs": nia.epochs,
            "baseline_bytes": first_baseline,
            "seconds": time.perf_counter() - started,
        }
        view.close()
        return tallies, info


def percent(value: float) -> str:
    return f"{100 * value:.2f} %"


def table(tallies: list[Tally], info: dict[str, Any]) -> str:
    lower, nia, naive = tallies
    rows = [
        "| run | input MB | input tokens (M, est.) | prefix of previous request: bytes | : tokens "
        "| cache reads (Anthropic rules) | cost, base-input tokens (M) | input cost, USD (Sonnet 4.5) "
        "| : with no cache hits | cost vs lower bound |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for tally in tallies:
        totals = tally.anthropic_totals
        rows.append(
            f"| {tally.name} | {tally.size / 1e6:.1f} | {tally.tokens / 1e6:.1f} | {percent(tally.byte_fraction)} | "
            f"{percent(tally.token_fraction)} | {percent(tally.served_fraction)} | {tally.cost / 1e6:.2f} | "
            f"{totals.cost:.2f} | {totals.cost_without_cache:.2f} | {tally.cost / lower.cost:.3f}x |"
        )
    ratios = {
        "bytes": nia.byte_fraction / lower.byte_fraction,
        "tokens": nia.token_fraction / lower.token_fraction,
        "cache reads": nia.served_fraction / lower.served_fraction,
    }
    verdict = "PASS" if min(ratios.values()) >= TARGET else "FAIL"
    naive_ratios = naive.byte_fraction / lower.byte_fraction, naive.served_fraction / lower.served_fraction
    chat_rows = [
        "| run | cached tokens (OpenAI rules: prefix >= 1024, 128-token steps) | input cost, USD (gpt-4.1) "
        "| : with no cache hits | cost vs lower bound |",
        "|---|---:|---:|---:|---:|",
    ]
    for tally in tallies:
        chat_rows.append(
            f"| {tally.name} | {percent(tally.chat_fraction)} | {tally.chat_totals.cost:.2f} "
            f"| {tally.chat_totals.cost_without_cache:.2f} | {tally.chat_cost / lower.chat_cost:.3f}x |"
        )
    header = (
        f"{info['turns']} user turns, {info['requests']} requests, {len(info['changes'])} context changes "
        f"(nia admitted {info['updates']} mid-conversation system messages, {info['epochs']} epoch), "
        f"first baseline {info['baseline_bytes'] / 1024:.0f} KiB; {info['seconds']:.1f} s"
    )
    return "\n".join(
        [
            header,
            "",
            "anthropic-messages lowering:",
            "",
            *rows,
            "",
            "nia / lower bound: "
            + ", ".join(f"{k} {percent(v)}" for k, v in ratios.items())
            + f" (target >= {percent(TARGET)}): {verdict}",
            f"naive / lower bound: bytes {percent(naive_ratios[0])}, cache reads {percent(naive_ratios[1])}",
            "",
            "openai-chat lowering (gpt-4.1), same script:",
            "",
            *chat_rows,
        ]
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=200, help="user turns in the session (default 200)")
    args = parser.parse_args(argv)
    if args.turns < 20:
        parser.error("--turns must be at least 20 (the script makes 20 context changes)")
    tallies, info = run(args.turns)
    print(table(tallies, info))
    print()
    print("changes, in order: " + "; ".join(info["changes"]))
    lower, nia = tallies[0], tallies[1]
    ok = min(nia.byte_fraction / lower.byte_fraction, nia.served_fraction / lower.served_fraction) >= TARGET
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
