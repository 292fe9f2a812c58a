"""``proctui stop NAME...``: the stop signal to the process's group, then the countdown
to its stop deadline (or its stop command, when it has one).

Wire: {"op": "stop", "name": NAME}. Faults: UNKNOWN_NAME; NOT_RUNNING when it has no live
group; REFUSED when it is stopping already."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from proctui.commands.base import Cli, Named
from proctui.core.life import machine as life
from proctui.records import dataclass

if TYPE_CHECKING:
    from proctui.core.engine import Engine


@dataclass(frozen=True)
class Stop(Named):
    """Stop NAME...: the stop signal, then the countdown.

    As the console's s: its stop signal (or stop_command), then its countdown to
    on_timeout; it is not restarted."""

    op = "stop"
    tool = "stop"
    cli: ClassVar[Cli | None] = Cli("NAME...", "stop")
    palette = "Stop the selected process: its stop signal, then the countdown"

    def event(self, engine: Engine) -> object:
        return life.StopCmd()
