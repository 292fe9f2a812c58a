"""``proctui answer ID grant|deny``: an operator's answer to an agent's request for a
decision (``request_decision``): granted, it is carried out at once as the operator's
own command (kill, abandon, or stop everything); denied, the agent is told so. As the
console's keys at its question. The journal keeps who answered. An agent may ask, never
answer: refused from an agent's door (``proctui mcp``).

Wire: {"op": "answer", "ask": ID, "grant": BOOL} (not "id": that is the wire's own
request number); the reply's ``ask`` is the request as it
stands. Faults: BAD_VALUE for an id below 1; REFUSED when the request no longer waits
(answered already, lapsed, moot) or the answer comes from an agent."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from proctui.commands.base import Cli, Command, Request, Said
from proctui.commands.request_decision import ask_from_wire
from proctui.core.life import asks
from proctui.core.reply import AskReply, Done, Fault, done_from_wire, failed
from proctui.records import dataclass

if TYPE_CHECKING:
    from proctui.core.engine import Engine


@dataclass(frozen=True)
class AnswerAsk(Command):
    """Grant or deny an agent's request ID (proctui status lists those that wait).

    Granted, it is carried out at once as your own command (kill, abandon, or stop
    everything); denied, the agent is told so. As the console's keys at its question."""

    op = "answer"
    journaled = False  # the journal's answer entry says who answered
    cli: ClassVar[Cli | None] = Cli("ID grant|deny", "answer")
    ask: int
    grant: bool = False

    def check(self) -> Done | None:
        if self.ask < 1:
            return failed(Fault.BAD_VALUE, f"answer: {self.ask} is not a request's number")
        return None

    def answer(self, d: Mapping[str, Any]) -> AskReply:
        return AskReply(**done_from_wire(d).__dict__, ask=ask_from_wire(d.get("ask")))

    def execute(self, engine: Engine) -> Done | None:
        who = engine.sender
        if who is not None and who.get("client") == "mcp":
            return failed(Fault.REFUSED, "answer: an agent may ask, never answer: an "
                                         "operator decides")
        engine.post(None, asks.Answered(self.ask, self.grant,
                                        asks.who_words(who, answering=True), engine.clock()))
        return None  # the requests' step answers

    @classmethod
    def from_words(cls, words: tuple[str, ...]) -> list[Request[Any]] | str:
        if len(words) != 2 or words[1] not in ("grant", "deny") or \
                not re.fullmatch(r"[0-9]{1,9}", words[0]):
            return "give the request's number and grant or deny (proctui answer 3 deny)"
        return [cls(int(words[0]), words[1] == "grant")]

    def said(self, reply: Done) -> Said:
        return Said(out=(reply.text or f"answer {self.ask}: done",), status=0 if reply.ok
                    else 1)
