"""``set_interactive``: whether an operator is there to answer ``ask`` at a deadline.
Without one (``down``, a terminal that hung up, headless), ``ask`` acts as kill, and a
process already waiting for a decision is killed now.

Wire: {"op": "set_interactive", "interactive": BOOL}."""

from __future__ import annotations

from typing import TYPE_CHECKING

from proctui.commands.base import Command
from proctui.core.life import world
from proctui.core.reply import Done
from proctui.records import dataclass

if TYPE_CHECKING:
    from proctui.core.engine import Engine


@dataclass(frozen=True)
class SetInteractive(Command):
    """Say whether an operator is there to answer ``ask`` (``down`` says no: ask kills)."""

    op = "set_interactive"
    journaled = False
    interactive: bool = False

    def execute(self, engine: Engine) -> Done:
        engine.post(None, world.SetInteractive(self.interactive))
        return Done(True)
