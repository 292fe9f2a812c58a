"""``usage``: whether a client shows CPU and memory; the core samples them only while
at least one does (each True counts once, until the same client says False).

Wire: {"op": "usage", "wanted": BOOL}."""

from __future__ import annotations

from typing import TYPE_CHECKING

from proctui.commands.base import Request
from proctui.core.reply import Done
from proctui.records import dataclass

if TYPE_CHECKING:
    from proctui.core.engine import Engine


@dataclass(frozen=True)
class WantUsage(Request[Done]):
    """Whether this client shows CPU and memory (the core samples only while one does).
    Per connection: the server counts it and takes it back when the client leaves."""

    op = "usage"
    wanted: bool = False

    def execute(self, engine: Engine) -> Done:
        engine.want_usage(self.wanted)
        return Done(True)
