"""``proctui extend NAME [SECONDS]``: move a stopping process's deadline SECONDS later
(default: its extend_step); at a decision, extend is the answer. ``--no-deadline`` waits
for it with no deadline at all (``wait``).

Wire: {"op": "extend", "name": NAME, "by": SECONDS or null}. Faults: UNKNOWN_NAME;
NOT_RUNNING; BAD_VALUE unless 0 < by <= MAX_SECONDS; REFUSED when it is not stopping."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from proctui.commands.base import Cli, Named
from proctui.config.spec import MAX_SECONDS
from proctui.core.life import inputs as i
from proctui.core.reply import Done, Fault, failed

if TYPE_CHECKING:
    from proctui.core.engine import Engine


@dataclass(frozen=True)
class Extend(Named):
    """Move NAME's stop deadline SECONDS later (also: answer a decision with extend)."""

    op = "extend"
    by: float | None = None
    cli: ClassVar[Cli | None] = Cli("NAME [SECONDS]", "extend")

    def check(self) -> Done | None:
        if self.by is not None and not 0 < self.by <= MAX_SECONDS:
            return failed(Fault.BAD_VALUE, f"extend: {self.by!r} is not a number of seconds "
                                           f"(more than 0, at most {MAX_SECONDS:g})")
        return None

    def event(self, engine: Engine) -> object:
        return i.ExtendCmd(self.by)
