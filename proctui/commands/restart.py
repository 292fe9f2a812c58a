"""``proctui restart NAME...``: stop a process as ``stop`` does, then start it again
(at once if it is waiting to restart; started if it had ended).

Wire: {"op": "restart", "name": NAME}. Faults: UNKNOWN_NAME; REFUSED for a leftover of an
earlier run, or when everything is stopping."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from proctui.commands.base import Cli, Named
from proctui.core.life import machine as life
from proctui.records import dataclass

if TYPE_CHECKING:
    from proctui.core.engine import Engine


@dataclass(frozen=True)
class Restart(Named):
    """Restart NAME...

    As the console's r: the whole stop sequence, then a new run (its restart count goes
    up); one that had ended starts again."""

    op = "restart"
    tool = "restart"
    cli: ClassVar[Cli | None] = Cli("NAME...", "restart")
    palette = "Restart the selected process"

    def event(self, engine: Engine) -> object:
        return life.RestartCmd(left_running=engine.left_running(self.name))
