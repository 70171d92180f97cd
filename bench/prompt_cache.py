"""A model of provider prompt caches, to measure what a lowering lets a provider reuse.

A provider caches the *prompt*, not the JSON body: the content blocks in the
order it reads them (tools, system, then each turn's blocks), with
``cache_control`` markers not part of the content. :func:`anthropic_prompt`
and :func:`chat_prompt` turn a lowered body into that sequence of blocks, each
serialized canonically, so "the byte-identical prefix shared with the previous
request" is well defined. :class:`AnthropicCache` follows the Messages API's
documented rules: a prefix is written at each breakpoint, and read back at a
later breakpoint, or at a block boundary up to 20 blocks before one.
:func:`chat_cached_tokens` follows OpenAI's: prefixes of 1024 tokens or more,
in 128-token steps.

Tokens are estimated, the same way for every request, like a BPE tokenizer
roughly would: a word with its leading space (cut every 8 letters), up to 3
digits, or one punctuation mark, each count one token.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

_TOKEN = re.compile(rb" ?[A-Za-z]{1,8}| ?[0-9]{1,3}| ?[^\sA-Za-z0-9]|\s+")

ANTHROPIC_LOOKBACK = 20
ANTHROPIC_MIN_TOKENS = 1024
OPENAI_MIN_TOKENS = 1024
OPENAI_STEP = 128
CACHE_WRITE = 1.25
CACHE_READ = 0.1


def estimate_tokens(data: bytes) -> int:
    """A tokenizer-free estimate, near BPE counts on English text and code (about 4 bytes per token)."""
    return len(_TOKEN.findall(data))


@functools.lru_cache(maxsize=1 << 16)
def _block_tokens(block: bytes) -> int:
    """Blocks repeat from request to request; estimate each distinct one once."""
    return estimate_tokens(block)


def _canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def _without_cache_control(block: Any) -> Any:
    if isinstance(block, dict):
        return {k: v for k, v in block.items() if k != "cache_control"}
    return block


@dataclass(frozen=True)
class Prompt:
    """A request as a prompt cache sees it: blocks in cache order; breakpoints by block index."""

    blocks: tuple[bytes, ...]
    breakpoints: tuple[int, ...] = ()
    key: str | None = None
    """OpenAI's ``prompt_cache_key``, which routes requests to a cache."""
    _ends: tuple[int, ...] = field(default=(), repr=False, compare=False)
    _tokens: tuple[int, ...] = field(default=(), repr=False, compare=False)

    def __post_init__(self) -> None:
        ends, tokens, offset, count = [], [], 0, 0
        for block in self.blocks:
            offset += len(block)
            count += _block_tokens(block)
            ends.append(offset)
            tokens.append(count)
        object.__setattr__(self, "_ends", tuple(ends))
        object.__setattr__(self, "_tokens", tuple(tokens))

    @property
    def data(self) -> bytes:
        return b"".join(self.blocks)

    @property
    def size(self) -> int:
        return self._ends[-1] if self._ends else 0

    @property
    def tokens(self) -> int:
        return self._tokens[-1] if self._tokens else 0

    def end_of(self, block: int) -> int:
        """Byte offset just after ``block`` (``-1``: the start)."""
        return self._ends[block] if block >= 0 else 0

    def tokens_to(self, offset: int) -> int:
        """Estimated tokens in the first ``offset`` bytes (blocks counted whole, the cut one estimated)."""
        if offset <= 0:
            return 0
        index = _bisect(self._ends, offset)
        before = self._tokens[index - 1] if index > 0 else 0
        start = self._ends[index - 1] if index > 0 else 0
        if index < len(self.blocks) and offset > start:
            before += estimate_tokens(self.blocks[index][: offset - start])
        return before

    def prefix_digests(self) -> list[bytes]:
        """``digests[i]``: a hash of the prompt up to the end of block ``i``."""
        running = hashlib.sha256()
        digests = []
        for block in self.blocks:
            running.update(len(block).to_bytes(8, "big"))
            running.update(block)
            digests.append(running.copy().digest())
        return digests


def _bisect(ends: Sequence[int], offset: int) -> int:
    """Index of the first block whose end is beyond ``offset``."""
    lo, hi = 0, len(ends)
    while lo < hi:
        mid = (lo + hi) // 2
        if ends[mid] <= offset:
            lo = mid + 1
        else:
            hi = mid
    return lo


def anthropic_prompt(body: dict[str, Any]) -> Prompt:
    """Messages API order: tools, system, then each turn (its role, then its blocks)."""
    blocks: list[bytes] = []
    breakpoints: list[int] = []

    def add(block: Any) -> None:
        if isinstance(block, dict) and "cache_control" in block:
            breakpoints.append(len(blocks))
        blocks.append(_canonical(_without_cache_control(block)))

    for tool in body.get("tools") or []:
        add(tool)
    system = body.get("system")
    for block in [{"type": "text", "text": system}] if isinstance(system, str) else system or []:
        add(block)
    for turn in body.get("messages") or []:
        content = turn.get("content")
        items = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        for position, block in enumerate(items):
            if position == 0:
                blocks.append(_canonical({"role": turn.get("role")}))
            add(block)
    return Prompt(tuple(blocks), tuple(breakpoints))


def chat_prompt(body: dict[str, Any]) -> Prompt:
    """Chat Completions order: tools, then each message whole."""
    blocks = [_canonical(tool) for tool in body.get("tools") or []]
    blocks += [_canonical(message) for message in body.get("messages") or []]
    key = body.get("prompt_cache_key")
    return Prompt(tuple(blocks), (), key if isinstance(key, str) else None)


def common_prefix(a: bytes, b: bytes) -> int:
    """Length of the longest common prefix of ``a`` and ``b`` (binary search over C-speed slice compares)."""
    limit = min(len(a), len(b))
    if a[:limit] == b[:limit]:
        return limit
    equal, differ = 0, limit  # a[:equal] == b[:equal]; a[:differ] != b[:differ]
    while differ - equal > 1:
        middle = (equal + differ) // 2
        if a[:middle] == b[:middle]:
            equal = middle
        else:
            differ = middle
    return equal


@dataclass(frozen=True)
class CacheUsage:
    """Input tokens of one request by how they are billed."""

    read: int = 0
    written: int = 0
    uncached: int = 0

    @property
    def total(self) -> int:
        return self.read + self.written + self.uncached

    def cost(self, *, write: float = CACHE_WRITE, read: float = CACHE_READ) -> float:
        """In base-input-token units: uncached 1x, cache writes ``write``x, cache reads ``read``x."""
        return self.uncached + self.written * write + self.read * read


class AnthropicCache:
    """The prompt cache of one organisation, as the Messages API documents it (time-to-live ignored)."""

    def __init__(self, *, min_tokens: int = ANTHROPIC_MIN_TOKENS, lookback: int = ANTHROPIC_LOOKBACK) -> None:
        self.min_tokens = min_tokens
        self.lookback = lookback
        self._written: set[bytes] = set()

    def serve(self, prompt: Prompt) -> CacheUsage:
        """Bill ``prompt``: read the longest cached prefix at a breakpoint, write up to the last breakpoint."""
        if not prompt.breakpoints:
            return CacheUsage(uncached=prompt.tokens)
        digests = prompt.prefix_digests()
        read_block = -1
        for point in prompt.breakpoints:
            for block in range(point, max(point - self.lookback, 0) - 1, -1):
                if block > read_block and digests[block] in self._written:
                    read_block = block
                    break
        read = prompt.tokens_to(prompt.end_of(read_block))
        last = max(prompt.breakpoints)
        to_last = prompt.tokens_to(prompt.end_of(last))
        for point in prompt.breakpoints:
            if prompt.tokens_to(prompt.end_of(point)) >= self.min_tokens:
                self._written.add(digests[point])
        written = max(0, to_last - read) if to_last >= self.min_tokens else 0
        return CacheUsage(read=read, written=written, uncached=prompt.tokens - read - written)


def chat_cached_tokens(previous: Prompt | None, current: Prompt) -> int:
    """OpenAI's automatic caching: the shared prefix, if 1024 tokens or more, in 128-token steps."""
    if previous is None or previous.key != current.key:
        return 0
    shared = current.tokens_to(prompt_common_prefix(previous, current))
    if shared < OPENAI_MIN_TOKENS:
        return 0
    return shared - (shared - OPENAI_MIN_TOKENS) % OPENAI_STEP


def prompt_common_prefix(previous: Prompt, current: Prompt) -> int:
    """Bytes the prompts share from the start: whole equal blocks, then bytes of the first block that differs."""
    offset = 0
    for mine, theirs in zip(previous.blocks, current.blocks, strict=False):
        if mine == theirs:
            offset += len(mine)
            continue
        return offset + common_prefix(mine, theirs)
    return offset


def shared_prefix(previous: Prompt | None, current: Prompt) -> tuple[int, int]:
    """``(bytes, tokens)`` of ``current`` that are a byte-identical prefix of ``previous``."""
    if previous is None:
        return 0, 0
    size = prompt_common_prefix(previous, current)
    return size, current.tokens_to(size)


def total(usages: Iterable[CacheUsage]) -> CacheUsage:
    read = written = uncached = 0
    for usage in usages:
        read += usage.read
        written += usage.written
        uncached += usage.uncached
    return CacheUsage(read, written, uncached)
