"""What a boundary hands back to its door: the session layer's result, and its warnings as data.

Doors render these (the CLI prints, the hooks log, the MCP server answers);
nothing here prints. A warning is one line that names its culprit (plugin,
source key), collected while the boundary ran. A turn's report, which speaks
the provider's reply, is :mod:`nia_core.runtime.turn_report`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Literal

from nia_core.context import Change, Observation, SystemContext
from nia_core.context.registry import Assembly
from nia_core.errors import RenderError
from nia_core.plugin_host import PluginHost
from nia_core.sessions import Admission, Admitted, AwaitingTools, Blocked

Outcome = Literal["initialized", "updated", "unchanged", "replaced", "replacement-blocked", "blocked", "awaiting-tools"]
"""``initialized``: a new epoch started here (its baseline is the text). ``replacement-blocked``: a
replacement was due but admitted sources are unavailable; the old baseline stays. ``blocked``: no
baseline could be rendered at all; nothing was stored."""


@dataclass(frozen=True)
class BoundaryReport:
    """One boundary without a provider call (see :meth:`Runtime.boundary`)."""

    result: Admitted | Blocked | AwaitingTools
    warnings: tuple[str, ...] = ()

    @property
    def session_id(self) -> str:
        return self.result.session_id

    @property
    def text(self) -> str | None:
        """What to show the model now: a new epoch's baseline, the admitted update, or ``None``."""
        return self.result.text if isinstance(self.result, Admitted) else None

    @property
    def outcome(self) -> Outcome:
        result = self.result
        if isinstance(result, Blocked):
            return "blocked"
        if isinstance(result, AwaitingTools):
            return "awaiting-tools"
        if result.admission is None:
            return "initialized" if result.baseline is not None else "unchanged"
        if result.admission.outcome == "blocked":
            return "replacement-blocked"
        return result.admission.outcome

    @property
    def changes(self) -> tuple[Change, ...]:
        """Each source added, updated or removed by the admitted update, in message order."""
        admission = self.result.admission if isinstance(self.result, Admitted) else None
        return admission.changes if admission is not None else ()

    @property
    def blocked_on(self) -> tuple[str, ...]:
        """Unavailable keys that blocked the baseline, or held back a replacement (the old baseline stays)."""
        if isinstance(self.result, Blocked):
            return self.result.keys
        admission = self.result.admission if isinstance(self.result, Admitted) else None
        return admission.blocked_on if admission is not None else ()

    @property
    def epoch(self) -> int | None:
        return self.result.epoch if isinstance(self.result, Admitted) else None


@dataclass
class Watch:
    """Collects the warnings of one boundary while the runtime assembles contexts for it."""

    assemblies: list[Assembly] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    hosts: list[PluginHost] = field(default_factory=list)
    """The plugin hosts the boundary assembled with, in order (its broken plugins are theirs to say)."""

    def assembled(self, assembly: Assembly) -> SystemContext:
        """``assembly``'s context, its problems noted and its render failures too."""
        self.assemblies.append(assembly)
        self.note(str(problem) for problem in assembly.problems)
        context = assembly.context
        return SystemContext(
            context.sources,
            on_render_error=self._on_render_error(assembly, context.on_render_error),
            on_unavailable=self._on_unavailable(assembly, context.on_unavailable),
            withheld=context.withheld,  # what could not be listed stays unavailable, never removed
        )

    def _on_unavailable(
        self, assembly: Assembly, then: Callable[[Observation], None] | None
    ) -> Callable[[Observation], None]:
        def handle(obs: Observation) -> None:
            self.observed([obs])
            if then is not None:
                then(obs)

        return handle

    def _on_render_error(
        self, assembly: Assembly, then: Callable[[RenderError], None] | None
    ) -> Callable[[RenderError], None]:
        def handle(error: RenderError) -> None:
            contributor = assembly.contributors.get(error.key)
            said = f"{error} (left out until it renders)"  # worded as the plugin host logs it: a door says it once
            self.note([f"{contributor}: {said}" if contributor else said])
            if then is not None:
                then(error)

        return handle

    def note(self, lines: Iterable[str]) -> None:
        for line in lines:
            if line not in self.lines:
                self.lines.append(line)

    def observed(self, observations: Iterable[Observation]) -> None:
        for obs in observations:
            if obs.available:
                continue
            contributor = next((a.contributors[obs.key] for a in self.assemblies if obs.key in a.contributors), "")
            why = obs.reason or obs.status
            if obs.status in ("error", "timeout"):  # worded as the plugin host logs it, so a door says it once
                line = f"context source {obs.key!r}: {why}; counted unavailable"
            else:
                line = f"context source {obs.key!r} is unavailable ({why})"
            self.note([f"{contributor}: {line}" if contributor else line])

    def admitted(self, admission: Admission | None) -> None:
        if admission is not None:
            self.observed(admission.observations)

    def broken_plugins(self, host: PluginHost) -> None:
        """Plugins the host knows are broken (failed to load, say) that this boundary did not mention."""
        for info in host.infos():
            label = f"plugin {info.name!r}"
            if info.error and not any(line.startswith(label) for line in self.lines):
                self.note([f"{label}: {info.error}"])

    def warnings(self) -> tuple[str, ...]:
        return tuple(self.lines)
