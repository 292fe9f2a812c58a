"""``notice``: a line of proctui's own about itself, from a frontend (a signal it got, the
terminal gone): in the journal and the line printer's output, in order with the core's.
Not a wire command."""

from __future__ import annotations

from typing import TYPE_CHECKING

from proctui.commands.base import Request
from proctui.core.reply import Done
from proctui.records import dataclass

if TYPE_CHECKING:
    from proctui.core.engine import Engine


@dataclass(frozen=True)
class Notice(Request[Done]):
    """A line of proctui's own, about itself (the journal and headless output)."""

    op = "notice"
    wire_op = False
    text: str = ""

    def execute(self, engine: Engine) -> Done:
        engine.notice(self.text)
        return Done(True)
