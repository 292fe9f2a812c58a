"""``proctui extend NAME [SECONDS]``: move a stopping process's deadline SECONDS later
(default: its extend_step); at a decision, extend is the answer. ``--no-deadline`` waits
for it with no deadline at all (``wait``).

Wire: {"op": "extend", "name": NAME, "by": SECONDS or null}. Faults: UNKNOWN_NAME;
NOT_RUNNING; BAD_VALUE unless 0 < by <= MAX_SECONDS; REFUSED when it is not stopping."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from proctui.commands.base import Cli, Named, Request
from proctui.config.spec import MAX_SECONDS
from proctui.core.life import inputs as i
from proctui.core.reply import Done, Fault, failed
from proctui.records import dataclass

if TYPE_CHECKING:
    from proctui.core.engine import Engine


@dataclass(frozen=True)
class Extend(Named):
    """Move NAME's stop deadline SECONDS later (also: answer a decision with extend).

    SECONDS is a duration: 10, 1.5, 10s, 2m, 1h30m, more than 0 and at most 100 days;
    anything else (-5, 0, nan, 1e300, 10x) is one line (extend: SECONDS '-5' is not a
    duration > 0 and at most 100 days (...)), exit status 2. --no-deadline is the
    console's w: wait for it with no deadline (or answer a decision so); neither or both
    is one line, exit status 2."""

    op = "extend"
    tool = "extend"
    tool_args = {"name": "the process, stopping (status lists them)",
                 "by": "seconds to add, more than 0 and at most 100 days (null: its "
                       "extend_step)"}
    by: float | None = None
    cli: ClassVar[Cli | None] = Cli("NAME [SECONDS | --no-deadline]", "extend")

    def check(self) -> Done | None:
        if self.by is not None and not 0 < self.by <= MAX_SECONDS:
            return failed(Fault.BAD_VALUE, f"extend: {self.by!r} is not a number of seconds "
                                           f"(more than 0, at most {MAX_SECONDS:g})")
        return None

    def event(self, engine: Engine) -> object:
        return i.ExtendCmd(self.by)

    @classmethod
    def from_words(cls, words: tuple[str, ...]) -> list[Request[Any]] | str:
        """NAME SECONDS, or NAME --no-deadline (wait for it with no deadline: the
        console's w)."""
        from proctui.commands.wait import Wait
        from proctui.config.values import duration_words, parse_duration

        rest = [w for w in words if w != "--no-deadline"]
        no_deadline = len(rest) != len(words)
        if not rest:
            return "give the name of the process"
        name, seconds = rest[0], rest[1:]
        if len(seconds) > 1:
            return f"give one SECONDS, not {len(seconds)}"
        if no_deadline == bool(seconds):
            return ("give SECONDS (10, 1.5, 10s, 2m, 1h30m) or --no-deadline"
                    + (", not both" if no_deadline else ""))
        if no_deadline:
            return [Wait(name)]
        # A word, not a number: "-5" must be a bad value, not an unknown option.
        by = parse_duration(seconds[0])
        if by is None or not 0 < by <= MAX_SECONDS:
            return f"SECONDS {duration_words(seconds[0])}"
        return [cls(name, by)]
