"""``proctui kill NAME...``: SIGKILL to the process's whole group now (at a decision:
the kill). Nothing restarts it.

Wire: {"op": "kill", "name": NAME}. Faults: UNKNOWN_NAME; NOT_RUNNING when it has no live
group."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from proctui.commands.base import Cli, Named
from proctui.core.life import inputs as i
from proctui.records import dataclass

if TYPE_CHECKING:
    from proctui.core.engine import Engine


@dataclass(frozen=True)
class Kill(Named):
    """Kill NAME... now: SIGKILL to its whole group (at a decision: kill).

    As the console's K; it also answers a decision that waits (kill). Nothing restarts
    it."""

    op = "kill"
    tool = "kill"
    decides = True  # an agent asks for it (request_decision), unless --allow kill
    cli: ClassVar[Cli | None] = Cli("NAME...", "kill")
    palette = "Kill the selected process now: SIGKILL to its whole group"

    def event(self, engine: Engine) -> object:
        return i.KillCmd()
