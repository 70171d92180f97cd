"""What the host knows about one plugin: where it came from and how it is doing."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

Origin = Literal["built-in", "entry point", "local file"]


@dataclass
class PluginInfo:
    name: str
    origin: Origin
    version: str | None = None
    module: str | None = None
    path: str | None = None
    distribution: str | None = None
    namespace: str | None = None
    enabled: bool = True
    disabled_by: str | None = None
    """The switch that turned it off (``NIA_DISABLE_PLUGINS``, ``-p no:NAME``, project config)."""
    error: str | None = None
    raised_at: tuple[str, int] | None = field(default=None, repr=False)
    """Where the exception behind ``error`` was raised (``file``, ``line``), when one was: data for tools
    (``nia dev`` points at it); the text of ``error`` is for people."""
    hooks: list[str] = field(default_factory=list)
    source_keys: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    """Problems that leave the plugin working (a hook-named function without ``@hookimpl``)."""

    @property
    def broken(self) -> bool:
        return self.error is not None

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        del data["raised_at"]
        data["broken"] = self.broken
        return data


@dataclass(frozen=True)
class HookProblem:
    """One plugin's hook implementation that raised or answered nonsense: the data, rendered only at the edge."""

    plugin: str
    hook: str
    problem: str
    """What it did, without the plugin's name: ``raised RuntimeError: boom``."""
    error: BaseException | None = field(default=None, compare=False, repr=False)
    """The exception it raised, when it raised: for callers that report where (reload) or pass it on (producers)."""
    worded: str = field(default="", compare=False, repr=False)
    """``Type: message`` of :attr:`error`, made where it was raised: its ``__str__`` is the plugin's code."""

    @property
    def message(self) -> str:
        """The text ``PluginInfo.error`` and ``nia plugins list`` show."""
        return f"{self.hook} {self.problem}"
