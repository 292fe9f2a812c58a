"""``proctui start NAME...``: start a process again once it has ended (with its
dependencies looked at as at start-up).

Wire: {"op": "start", "name": NAME}. Faults: UNKNOWN_NAME; REFUSED when it has not ended,
when everything is stopping, or while a pid of its last run is still alive."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from proctui.commands.base import Cli, Named
from proctui.core.life import machine as life
from proctui.records import dataclass

if TYPE_CHECKING:
    from proctui.core.engine import Engine


@dataclass(frozen=True)
class Start(Named):
    """Start NAME... again, once it has ended.

    As the console's S; refused while a pid of its last run is left running, or while
    everything stops."""

    op = "start"
    tool = "start"
    cli: ClassVar[Cli | None] = Cli("NAME...", "start")
    palette = "Start the selected process again, once it has ended"

    def event(self, engine: Engine) -> object:
        return life.StartCmd(left_running=engine.left_running(self.name))
