"""``proctui abandon NAME...``: leave the process running, never signal it again; its
outcome names every pid left running.

Wire: {"op": "abandon", "name": NAME}. Faults: UNKNOWN_NAME; NOT_RUNNING when it has no
live group."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from proctui.commands.base import Cli, Named
from proctui.core.life import inputs as i
from proctui.records import dataclass

if TYPE_CHECKING:
    from proctui.core.engine import Engine


@dataclass(frozen=True)
class Abandon(Named):
    """Abandon NAME...: leave it running, never signal it again.

    As the console's a; it also answers a decision that waits (abandon). Its outcome
    names every pid left running (abandoned: pid 4121 left running)."""

    op = "abandon"
    tool = "abandon"
    decides = True  # an agent asks for it (request_decision), unless --allow abandon
    cli: ClassVar[Cli | None] = Cli("NAME...", "abandon")
    palette = "Abandon the selected process: leave it running, never signal it again"

    def event(self, engine: Engine) -> object:
        return i.AbandonCmd()
