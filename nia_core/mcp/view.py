"""What ``nia mcp`` serves: each source's current rendering, and the context they make up.

A view is computed from one observation (the one the reload reconciled), so
every resource read between two changes is served from memory and never runs
a plugin. Comparing two views says exactly which resources changed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from nia_core.context import SEPARATOR, Assembly, Observation
from nia_core.context.system import encode
from nia_core.errors import RenderError

CONTEXT_URI = "nia://context"
SOURCE_PREFIX = "nia://source/"


def source_uri(key: str) -> str:
    return SOURCE_PREFIX + key


@dataclass(frozen=True)
class SourceState:
    """One source as last observed: its baseline rendering, or why there is none."""

    key: str
    plugin: str | None
    status: str
    """``ok``, or why not: ``unavailable``, ``timeout``, ``error``."""
    reason: str = ""
    text: str | None = None
    description: str = ""
    encoded: str | None = field(default=None, compare=False)
    """The value's canonical JSON, to skip rendering an unchanged value again."""

    @property
    def uri(self) -> str:
        return source_uri(self.key)

    @property
    def available(self) -> bool:
        return self.text is not None

    def why(self) -> str:
        """One line saying why the source cannot be read."""
        how = {"timeout": "timed out", "error": "failed", "unavailable": "is unavailable"}.get(self.status, self.status)
        detail = f": {self.reason}" if self.reason else ""
        return f"source {self.key} {how}{detail}"


@dataclass(frozen=True)
class ContextView:
    """Every source's state, in composition order, and the baseline they render together."""

    sources: Mapping[str, SourceState] = field(default_factory=dict)

    @property
    def baseline(self) -> str:
        """The baseline as ``nia context show`` prints it: the available sources' texts, in order."""
        return SEPARATOR.join(s.text for s in self.sources.values() if s.text is not None)

    def changed(self, newer: ContextView) -> tuple[list[str], bool]:
        """The URIs whose reading differs in ``newer`` (``nia://context`` first when any), and whether the list did."""
        uris = [state.uri for key, state in newer.sources.items() if key in self.sources and self.sources[key] != state]
        listed = list(self.sources) != list(newer.sources) or any(
            self.sources[k].plugin != newer.sources[k].plugin for k in newer.sources if k in self.sources
        )
        if newer.baseline != self.baseline:
            uris.insert(0, CONTEXT_URI)
        return uris, listed


def build_view(
    assembly: Assembly, observations: Sequence[Observation], previous: ContextView | None = None
) -> ContextView:
    """Render each observed source's baseline (reusing ``previous`` where the value is the same).

    A renderer that raises or returns no text makes only its own source an
    error, as ``nia context show`` leaves it out.
    """
    by_key = {o.key: o for o in observations}
    old = previous.sources if previous is not None else {}
    states: dict[str, SourceState] = {}
    for source in assembly.context.sources:
        key = source.key
        plugin = assembly.owners.get(key) or assembly.contributors.get(key) or None
        obs = by_key.get(key)
        if obs is None:
            states[key] = SourceState(key, plugin, "unavailable", "not observed yet", description=source.description)
            continue
        if not obs.available:
            states[key] = SourceState(key, plugin, obs.status, obs.reason, description=source.description)
            continue
        try:
            encoded = encode(source, obs.value)
        except Exception as exc:  # noqa: BLE001 - a custom codec may raise anything
            states[key] = SourceState(key, plugin, "error", f"codec could not encode the value: {exc}")
            continue
        before = old.get(key)
        if before is not None and before.encoded == encoded and before.available and before.plugin == plugin:
            states[key] = before
            continue
        try:
            text = _render(source.baseline, obs.value, key)
            if source.removal is not None:
                _render(source.removal, obs.value, key)
        except RenderError as exc:
            states[key] = SourceState(key, plugin, "error", str(exc), description=source.description)
            continue
        states[key] = SourceState(key, plugin, "ok", "", text, source.description, encoded)
    return ContextView(states)


def _render(renderer: object, value: object, key: str) -> str:
    try:
        text = renderer(value)  # type: ignore[operator]
    except Exception as exc:
        raise RenderError(key, "baseline", f"raised {type(exc).__name__}: {exc}") from exc
    if not isinstance(text, str) or not text.strip():
        raise RenderError(key, "baseline", "returned no text")
    return text
