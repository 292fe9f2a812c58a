"""``clear``: clear a process's pane (the console's c); its scrollback is forgotten,
its log file keeps every line.

Wire: {"op": "clear", "name": NAME}. Faults: UNKNOWN_NAME."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from proctui.commands.base import Cli, Named
from proctui.core.reply import Done, Fault, failed
from proctui.records import dataclass

if TYPE_CHECKING:
    from proctui.core.engine import Engine


@dataclass(frozen=True)
class Clear(Named):
    """Clear NAME's scrollback (the console)."""

    op = "clear"
    journaled = False
    cli: ClassVar[Cli | None] = None

    def execute(self, engine: Engine) -> Done | None:
        p = engine.table.get(self.name)
        if p is None:
            return failed(Fault.UNKNOWN_NAME, f"no process named {self.name!r}")
        engine.executor.buffers[self.name].clear()  # output, not the process's state
        engine.output_changed(self.name)
        name = p.spec.name
        return Done(True, f"{name}'s pane cleared (proctui logs {name} still has its lines)")
