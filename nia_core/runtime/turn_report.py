"""What a turn hands back to its door (``nia session send``, the workflows): the reply, and the warnings as data.

Apart from :mod:`nia_core.runtime.reports` because it speaks the provider's
reply, which a door without a model call (an agent hook) never loads.
"""

from __future__ import annotations

from dataclasses import dataclass

from nia_core.sessions import Admission, AwaitingTools, Blocked, Idle, Replied


@dataclass(frozen=True)
class TurnReport:
    """One turn: the boundary, the provider call and the stored reply (see :meth:`Runtime.turn`)."""

    result: Replied | Blocked | AwaitingTools | Idle
    warnings: tuple[str, ...] = ()

    @property
    def reply(self) -> str | None:
        return self.result.reply.text if isinstance(self.result, Replied) else None

    @property
    def admission(self) -> Admission | None:
        return self.result.boundary.admission if isinstance(self.result, Replied) else None
