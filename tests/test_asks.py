"""An agent may ask, only an operator decides (issue 43): the requests for a decision, as
event histories on the real engine over a fake OS and clock (tests/scenario.py), so that
a request's whole life (asked, granted or denied, lapsed, made moot by the process's end
or by a shutdown, flooded) runs in milliseconds; and over a real control socket, where
the journal says who asked and who answered."""

from __future__ import annotations

import signal

import pytest

from proctui.commands.answer import AnswerAsk
from proctui.commands.kill import Kill
from proctui.commands.request_decision import RequestDecision
from proctui.commands.stop import Stop
from proctui.commands.stop_all import StopAll
from proctui.core.life import asks
from proctui.core.life.stop import Phase
from proctui.core.reply import Fault
from tests.scenario import Behaviour, Scenario, spec

AGENT = {"uid": 1000, "pid": 42, "client": "mcp"}
CONSOLE = {"uid": 1000, "pid": 43, "ssh": "10.0.0.5 50000", "client": "console"}


@pytest.fixture
def s():
    scenario = Scenario([spec("web"), spec("db"), spec("worker")], interactive=True,
                        behaviour={"web": Behaviour(ends_after=None)}).start()
    yield scenario
    scenario.close()


def ask(s: Scenario, choice: str, name: str = "", why: str = "it hangs"):
    return s.send(RequestDecision(choice, why, name), who=AGENT)


def entries(s: Scenario, kind: str) -> list[dict[str, object]]:
    return [e for e in s.engine.journal.entries if e["kind"] == kind]


def test_a_request_waits_and_nothing_is_done_until_an_operator_grants_it(s):
    reply = ask(s, "kill", "web", "the dev server\nhangs on :8000 \x1b]2;pwned\x07\u202e")
    assert reply.ok and reply.ask["state"] == "waiting" and reply.ask["id"] == 1
    (waiting,) = s.snapshot.waiting_asks
    # The reason, as one plain line: no escape, no control, no bidi override.
    assert waiting.why == "the dev server hangs on :8000"
    assert waiting.asker == "an agent through proctui mcp (uid 1000, pid 42)"
    assert waiting.pid == s.view("web").pid and s.signals == []
    s.advance(60)
    assert s.signals == [] and s.view("web").phase is Phase.RUNNING

    got = s.send(AnswerAsk(1, True), who=CONSOLE)
    assert got.ok and "granted by the operator at an attached console" in got.text
    assert [(n, sig) for _, n, sig in s.signals] == [("web", signal.SIGKILL)]
    s.advance(1)
    assert s.view("web").outcome.text == "killed with SIGKILL by operator"
    assert s.snapshot.waiting_asks == ()
    (done,) = [a for a in s.snapshot.asks if a.id == 1]
    assert done.state == "granted" and "ssh 10.0.0.5 port 50000" in done.answer
    # The journal: who asked (the socket's uid and pid, and that it came through mcp),
    # and who answered, before what the grant did.
    (asked,) = entries(s, "ask")
    assert (asked["name"], asked["choice"], asked["why"], asked["uid"], asked["pid"],
            asked["client"]) == ("web", "kill", waiting.why, 1000, 42, "mcp")
    (answered,) = entries(s, "answer")
    assert (answered["answer"], answered["client"], answered["pid"], answered["ssh"]) == \
        ("granted", "console", 43, "10.0.0.5 50000")
    # Said in the process's pane too, for whoever looks at it (and headless output).
    said = [text for _, name, text in s.notices if name == "web"]
    assert any("asks to kill web (request 1): the dev server" in t for t in said), said
    assert any(t.startswith("request 1 (kill web): granted by") for t in said), said


def test_a_denial_is_said_to_the_agent_and_the_same_request_waits_30s_before_again(s):
    ask(s, "abandon", "db")
    got = s.send(AnswerAsk(1, False), who=CONSOLE)
    assert got.ok and got.ask["state"] == "denied"
    assert s.signals == [] and s.view("db").phase is Phase.RUNNING
    again = ask(s, "abandon", "db")
    assert again.fault is Fault.REFUSED and "denied abandon db 0s ago" in again.text
    assert ask(s, "kill", "db").ok  # another request is another question
    s.advance(asks.REASK_AFTER)
    assert ask(s, "abandon", "db").ok
    # Answered once: a second answer (another console, a double key) changes nothing.
    late = s.send(AnswerAsk(1, True), who=CONSOLE)
    assert late.fault is Fault.REFUSED and "no longer waits: denied by" in late.text
    assert s.signals == []


def test_nobody_answers_it_lapses(s):
    ask(s, "down")
    s.advance(asks.LIFETIME - 1)
    assert [a.state for a in s.snapshot.asks] == ["waiting"]
    s.advance(1)
    (a,) = s.snapshot.asks
    assert a.state == "expired" and a.answer == "lapsed: nobody answered within 300s"
    assert not s.snapshot.shutting_down
    assert entries(s, "answer")[0]["answer"] == "expired"
    assert s.send(AnswerAsk(1, True), who=CONSOLE).fault is Fault.REFUSED


def test_the_process_ending_meanwhile_makes_a_request_moot(s):
    ask(s, "kill", "db")
    ask(s, "abandon", "worker")
    s.exits("db")
    s.send(Kill("worker"))  # the operator killed it with K, the request still waiting
    s.advance(1)
    moot = {a.name: a for a in s.snapshot.asks}
    assert moot["db"].state == "moot" and \
        moot["db"].answer == "moot: db ended meanwhile (exited: exit code 0): nothing " \
                             "left to decide"
    assert moot["worker"].state == "moot" and "killed with SIGKILL by operator" in \
        moot["worker"].answer
    assert s.snapshot.waiting_asks == ()
    assert s.send(AnswerAsk(1, True), who=CONSOLE).fault is Fault.REFUSED


def test_two_requests_at_once_are_two_questions_and_the_same_one_twice_is_one(s):
    first, second = ask(s, "kill", "web"), ask(s, "abandon", "db")
    assert (first.ask["id"], second.ask["id"]) == (1, 2)
    again = ask(s, "kill", "web", "asking louder")
    assert again.ok and again.ask["id"] == 1 and "already waits" in again.text
    assert [a.id for a in s.snapshot.waiting_asks] == [1, 2]
    assert len(entries(s, "ask")) == 2


def test_a_flood_is_bounded_in_waiting_requests_and_in_what_is_remembered():
    names = [f"p{n}" for n in range(40)]
    s = Scenario([spec(n) for n in names], interactive=True).start()
    try:
        for name in names[:asks.MAX_WAITING]:
            assert ask(s, "kill", name).ok
        refused = ask(s, "kill", names[asks.MAX_WAITING])
        assert refused.fault is Fault.REFUSED and "already wait" in refused.text
        assert len(s.snapshot.waiting_asks) == asks.MAX_WAITING
        for n in range(1, 30):  # denied, asked again, denied: only the latest are kept
            s.send(AnswerAsk(n, False), who=CONSOLE)
            ask(s, "kill", names[asks.MAX_WAITING + n])
        assert len(s.snapshot.waiting_asks) <= asks.MAX_WAITING
        assert len(s.snapshot.asks) <= asks.MAX_WAITING + asks.KEPT
    finally:
        s.close()


def test_down_is_asked_granted_and_carried_out_as_a_shutdown_said_so(s):
    ask(s, "down", why="the tests are done")
    assert not s.snapshot.shutting_down
    s.send(AnswerAsk(1, True), who=CONSOLE)
    snap = s.snapshot
    assert snap.shutting_down and snap.shutdown_why == "an agent's request, granted"
    assert entries(s, "shutdown")[0]["why"] == "an agent's request, granted"
    # Stopping already: down means nothing more, and a kill is still a fair question.
    assert ask(s, "down").fault is Fault.REFUSED
    assert ask(s, "kill", "web").ok


def test_a_shutdown_makes_a_waiting_down_moot_but_not_a_kill(s):
    ask(s, "down")
    ask(s, "kill", "web")  # web ignores SIGTERM: killing it is still a decision
    s.send(StopAll())
    states = {a.choice: a for a in s.snapshot.asks}
    assert states["down"].state == "moot" and "everything is already stopping" in \
        states["down"].answer
    assert states["kill"].state == "waiting"
    s.send(AnswerAsk(2, True), who=CONSOLE)
    s.advance(1)
    assert s.view("web").outcome.text.startswith("killed with SIGKILL by operator")


def test_an_agent_may_ask_never_answer(s):
    ask(s, "kill", "web")
    got = s.send(AnswerAsk(1, True), who=AGENT)
    assert got.fault is Fault.REFUSED and "an agent may ask, never answer" in got.text
    assert s.signals == [] and s.snapshot.waiting_asks[0].id == 1


def test_bad_requests_are_refused_with_their_fault(s):
    assert ask(s, "kill", "nope").fault is Fault.UNKNOWN_NAME
    assert ask(s, "kill", "web", why=" \n\x1b[0m ").fault is Fault.BAD_VALUE
    assert ask(s, "kill", "").fault is Fault.BAD_VALUE
    s.send(Stop("db"))
    s.advance(1)
    got = ask(s, "kill", "db")
    assert got.fault is Fault.NOT_RUNNING and "db is not running" in got.text
    assert s.send(AnswerAsk(99, True), who=CONSOLE).fault is Fault.REFUSED
    assert s.snapshot.asks == () and entries(s, "ask") == []


def test_the_supervisors_own_console_answers_as_the_operator_there(s):
    ask(s, "kill", "web")
    got = s.send(AnswerAsk(1, False))  # no who: the supervisor's own console
    assert got.text.endswith("denied by the operator at this supervisor's own console")


def test_requests_go_to_every_client_in_the_state_and_what_a_supervisor_sends_is_bounded(s):
    from proctui.protocol import pushes, wire
    from proctui.protocol.pushes import State

    ask(s, "kill", "web")
    ask(s, "down")
    s.send(AnswerAsk(2, False), who=CONSOLE)
    state = State.of(s.snapshot, 1)
    sent = wire.loads(wire.dumps(state.to_dict()))
    got = pushes.decode(sent)
    assert isinstance(got, State) and got.asks == s.snapshot.asks
    assert [a.state for a in got.snapshot((), 1).asks] == ["waiting", "denied"]
    # On another machine the times move into the client's clock, as a view's do.
    wire.shift_ask_times(sent, 10.0)
    assert pushes.decode(sent).asks[0].expires_at == s.snapshot.asks[0].expires_at + 10.0
    hostile = {**sent, "asks": [None, {"id": "1"}, {"id": 3, "state": "nope"},
                                {**sent["asks"][0], "why": "x" * 10**5, "pid": True,
                                 "asked_at": float("inf")},
                                {**sent["asks"][0], "why": "x" * 10**5, "pid": "1"},
                                *[sent["asks"][0]] * 500]}
    kept = pushes.decode(hostile).asks
    assert len(kept) <= pushes.MAX_ASKS and len(kept[0].why) == 1024 and kept[0].pid is None
