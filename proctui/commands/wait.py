"""``wait``: wait for a stopping process with no deadline at all (the console's w at a
decision; ``proctui extend NAME --no-deadline``). Only the operator can bring a deadline
back, by extending or killing.

Wire: {"op": "wait", "name": NAME}. Faults: UNKNOWN_NAME; NOT_RUNNING; REFUSED when it is
not stopping."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from proctui.commands.base import Cli, Named
from proctui.core.life import inputs as i
from proctui.records import dataclass

if TYPE_CHECKING:
    from proctui.core.engine import Engine


@dataclass(frozen=True)
class Wait(Named):
    """Wait for NAME with no deadline (the console's w at a decision)."""

    op = "wait"
    cli: ClassVar[Cli | None] = None  # said as extend NAME --no-deadline

    def event(self, engine: Engine) -> object:
        return i.WaitCmd()
