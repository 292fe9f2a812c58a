"""``interrupt``: a signal to proctui itself, on the ladder every frontend shares. The
first (SIGINT, SIGTERM or SIGHUP) stops everything with nobody asked; a second SIGINT
kills what is still stopping; a third abandons what is left, names every pid left
running, and proctui exits (status 3). Decided in the core, whatever moment of a start
of thousands it comes at.

Wire: {"op": "interrupt", "signal": "SIGINT"}."""

from __future__ import annotations

from typing import TYPE_CHECKING

from proctui.commands.base import Command
from proctui.core.life import world
from proctui.core.reply import Done
from proctui.records import dataclass

if TYPE_CHECKING:
    from proctui.core.engine import Engine


@dataclass(frozen=True)
class Interrupt(Command):
    """A signal to proctui: the first stops everything, more SIGINTs kill, then abandon."""

    op = "interrupt"
    signal: str = "SIGINT"

    def execute(self, engine: Engine) -> Done:
        left = ", ".join(f"{p.name} pid {p.run.pid}" for p in engine.table.all()
                         if p.live and p.run is not None and p.run.pid)
        engine.post(None, world.Interrupt(self.signal, climbs=self.signal == "SIGINT",
                                          left=left))
        return Done(True)
