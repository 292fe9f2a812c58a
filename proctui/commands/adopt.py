"""``adopt``: take a held leftover of an earlier run (not proven ours) as this run's own:
it is watched, and stopped on quit (the console).

Wire: {"op": "adopt", "name": NAME}. Faults: UNKNOWN_NAME; REFUSED unless it is a held
leftover."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from proctui.commands.base import Cli, Named
from proctui.core.life import machine as life
from proctui.records import dataclass

if TYPE_CHECKING:
    from proctui.core.engine import Engine


@dataclass(frozen=True)
class Adopt(Named):
    """Adopt NAME, a leftover of an earlier run, into this one (the console)."""

    op = "adopt"
    cli: ClassVar[Cli | None] = None

    def event(self, engine: Engine) -> object:
        return life.AdoptCmd()
