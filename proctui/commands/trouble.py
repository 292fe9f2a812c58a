"""``trouble``: something outside the core keeps proctui from keeping a promise (its own
output cannot be written: a full disk), or no longer does (``text`` null): said once as
it begins and as it ends, shown by ``status`` until then. Nothing is stopped for it.
Not a wire command."""

from __future__ import annotations

from typing import TYPE_CHECKING

from proctui.commands.base import Request
from proctui.core.reply import Done
from proctui.records import dataclass

if TYPE_CHECKING:
    from proctui.core.engine import Engine


@dataclass(frozen=True)
class Trouble(Request[Done]):
    """What keeps a promise of proctui's from being kept, by area (None: no longer)."""

    op = "trouble"
    wire_op = False
    area: str = ""
    text: str | None = None

    def execute(self, engine: Engine) -> Done:
        engine.trouble(self.area, self.text)
        return Done(True)
