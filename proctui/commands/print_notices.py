"""``print_notices``: from now on proctui's notices go to this queue too (a console whose
terminal went away, going on as the detached supervisor, prints them to its log). Not a
wire command."""

from __future__ import annotations

from typing import TYPE_CHECKING

from proctui.commands.base import Request
from proctui.core.output.events import EventQueue
from proctui.core.reply import Done
from proctui.records import dataclass

if TYPE_CHECKING:
    from proctui.core.engine import Engine


@dataclass(frozen=True)
class PrintNotices(Request[Done]):
    """Send proctui's notices to ``queue`` from now on (the line printer's)."""

    op = "print_notices"
    wire_op = False
    queue: EventQueue | None = None

    def execute(self, engine: Engine) -> Done:
        engine.executor.events = self.queue
        engine.events = self.queue
        return Done(True)
