"""``store_rebuilt``: the run directory was removed and made again (remote/heal.py): the
journal and the output logs go on in the new one. Not a wire command."""

from __future__ import annotations

from typing import TYPE_CHECKING

from proctui.commands.base import Request
from proctui.core.reply import Done
from proctui.records import dataclass

if TYPE_CHECKING:
    from proctui.core.engine import Engine


@dataclass(frozen=True)
class StoreRebuilt(Request[Done]):
    """The run directory was made again: the journal and output logs move there."""

    op = "store_rebuilt"
    wire_op = False

    def execute(self, engine: Engine) -> Done:
        engine.executor.store_rebuilt()
        return Done(True)
