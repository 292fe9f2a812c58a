"""``kill_all``: SIGKILL now to everything still stopping (``down``'s first ctrl+c; a
second ctrl+c in the console's quit panel). A stop waiting for its dependents is
released and killed too.

Wire: {"op": "kill_all"}."""

from __future__ import annotations

from typing import TYPE_CHECKING

from proctui.commands.base import Command
from proctui.core.life import world
from proctui.core.reply import Done
from proctui.records import dataclass

if TYPE_CHECKING:
    from proctui.core.engine import Engine


@dataclass(frozen=True)
class KillAll(Command):
    """Kill everything still stopping (``down``, ctrl+c once)."""

    op = "kill_all"

    def execute(self, engine: Engine) -> Done:
        engine.post(None, world.KillAll())
        return Done(True, "killing what is still stopping")
