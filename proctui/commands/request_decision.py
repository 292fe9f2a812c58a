"""``request_decision``: an agent asks an operator for a decision that only an operator
takes (kill a process, abandon it, or stop everything), with its reason. Nothing is done
now: the request waits, shown in every attached console as a question with the reason,
until an operator grants it (then it is carried out as the operator's own command) or
denies it, it lapses (5 minutes), or it no longer means anything (the process ended,
everything began to stop). The journal keeps who asked and who answered
(``core/life/asks.py`` holds the rules).

Wire: {"op": "request_decision", "choice": "kill" | "abandon" | "down", "name": NAME,
"why": TEXT}; the reply's ``ask`` is the request as it stands (its ``id`` and ``state``).
Faults: BAD_VALUE without a reason, or without a process for kill and abandon (down
ignores one);
UNKNOWN_NAME; NOT_RUNNING when the process has no live run; REFUSED when
too many requests wait, the operator denied the same one moments ago, or everything is
already stopping (down)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from proctui.commands.base import Request
from proctui.core.life import asks
from proctui.core.reply import AskReply, Done, Fault, done_from_wire
from proctui.records import dataclass

if TYPE_CHECKING:
    from proctui.core.engine import Engine


@dataclass(frozen=True)
class RequestDecision(Request[AskReply]):
    """Ask an operator to kill a process, abandon it (leave it running, never signal it
    again), or stop everything and end the supervisor (down), and say why.

    Only an operator takes these decisions: the request waits, shown in every attached
    console with your reason, until an operator grants it (it is then carried out) or
    denies it, or it lapses after 5 minutes or no longer means anything (the process
    ended). The reply gives the request's id; the decision tool says what became of it."""

    op = "request_decision"
    acts = True  # refused on a read-only connection: it puts a question to the operator
    tool = "request_decision"
    tool_args = {
        "choice": "kill (SIGKILL to its whole group now), abandon (leave it running, never "
                  "signal it again) or down (stop everything and end the supervisor)",
        "why": "your reason, shown to the operator word for word (one line, at most "
               f"{asks.MAX_WHY} characters)",
        "name": "the process, for kill and abandon (down ignores it)"}
    choice: Literal["kill", "abandon", "down"]
    why: str
    name: str = ""

    def check(self) -> Done | None:
        if not asks.plain(self.why):
            return refused(Fault.BAD_VALUE, "request_decision: give a reason (why): the "
                                            "operator reads it")
        if self.choice != "down" and not self.name:
            return refused(Fault.BAD_VALUE, f"request_decision: give the name of the "
                                            f"process to {self.choice}")
        return None

    def answer(self, d: Mapping[str, Any]) -> AskReply:
        return AskReply(**done_from_wire(d).__dict__, ask=ask_from_wire(d.get("ask")))

    def execute(self, engine: Engine) -> AskReply | None:
        pid, number = None, 0
        if self.choice != "down":
            p = engine.table.get(self.name)
            if p is None:
                return refused(Fault.UNKNOWN_NAME, f"no process named {self.name!r}")
            run = p.run
            if not p.active or run is None or run.pid is None:
                return refused(Fault.NOT_RUNNING, f"request_decision: {self.name} is not "
                                                  f"running: nothing to {self.choice}")
            pid, number = run.pid, run.number
        engine.post(None, asks.Asked(self.choice, "" if self.choice == "down" else self.name,
                                     asks.plain(self.why),
                                     asks.who_words(engine.sender), engine.clock(), pid,
                                     number))
        return None  # the requests' step answers


def refused(fault: Fault, text: str) -> AskReply:
    return AskReply(False, text, fault)


_KEYS = {"id": int, "choice": str, "name": str, "why": str, "asker": str, "state": str,
         "answer": str, "pid": int, "run": int, "asked_at": float, "expires_at": float,
         "answered_at": float}


def ask_from_wire(value: object) -> dict[str, object]:
    """A request as a reply carries it, keeping only what it should hold: its known keys,
    each of its type, strings cut short (what a supervisor sends may be anything)."""
    out: dict[str, object] = {}
    if not isinstance(value, dict):
        return out
    for key, kind in _KEYS.items():
        v = value.get(key)
        if isinstance(v, bool) or v is None:
            continue
        if kind is str and isinstance(v, str):
            out[key] = v[:4 * asks.MAX_WHY]
        elif kind is int and isinstance(v, int) and abs(v) < 1 << 53:
            out[key] = v
        elif kind is float and isinstance(v, int | float) and abs(v) < 1 << 53:
            out[key] = float(v)
    return out
