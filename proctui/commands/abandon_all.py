"""``abandon_all``: leave everything still running or stopping as it is, never signal it
again, and end: each outcome names the pids left running (``down``'s second ctrl+c).

Wire: {"op": "abandon_all"}."""

from __future__ import annotations

from typing import TYPE_CHECKING

from proctui.commands.base import Command
from proctui.core.life import world
from proctui.core.reply import Done
from proctui.records import dataclass

if TYPE_CHECKING:
    from proctui.core.engine import Engine


@dataclass(frozen=True)
class AbandonAll(Command):
    """Abandon everything still stopping (``down``, ctrl+c twice)."""

    op = "abandon_all"

    def execute(self, engine: Engine) -> Done:
        engine.post(None, world.AbandonAll())
        return Done(True, "abandoning what is left")
