"""``stop_all``: stop everything (``proctui down``; the console's q and S): every stop
sequence at once, in stages where processes depend on others (``ordered``), or all now.
Nothing that has not started yet starts.

Wire: {"op": "stop_all", "ordered": true, "why": "proctui down"}: ``why`` is journaled
(one of the shutdown reasons, else "operator")."""

from __future__ import annotations

from typing import TYPE_CHECKING

from proctui.commands.base import Command
from proctui.core.life import world
from proctui.core.life.stages import Why
from proctui.core.reply import Done
from proctui.records import dataclass

if TYPE_CHECKING:
    from proctui.core.engine import Engine


@dataclass(frozen=True)
class StopAll(Command):
    """Stop everything (``down``; the console's S)."""

    op = "stop_all"
    # As an agent's tool: proctui down's stop, said to be the agent's (--allow down).
    tool = "down"
    decides = True
    tool_fixed = {"why": Why.AGENT.value}
    tool_args = {"ordered": "in dependency order, dependents first (false: everything "
                            "at once)"}
    ordered: bool = True
    why: str = Why.OPERATOR.value
    palette = "Stop everything, in dependency order, with countdowns"

    def execute(self, engine: Engine) -> Done:
        already = engine.world.shutting_down
        reasons = {w.value: w for w in Why}
        engine.post(None, world.StopAll(reasons.get(self.why, Why.OPERATOR), self.ordered))
        if not self.ordered and engine.deps.any:
            return Done(True, "stopping everything now, regardless of order")
        # (X during q said nothing at all: everything was stopping already.)
        return Done(True, "everything is already stopping" if already else
                    "stopping everything")
