"""The stop sequence with real processes: request, wait, timeout action, kill, give up."""

from __future__ import annotations

import os
import re
import signal
import time

import pytest

from proctui.commands.abandon import Abandon
from proctui.commands.extend import Extend
from proctui.commands.kill import Kill
from proctui.commands.restart import Restart
from proctui.commands.stop import Stop
from proctui.commands.stop_all import StopAll
from proctui.commands.wait import Wait
from proctui.config import OnTimeout
from proctui.core.life.outcome import OutcomeKind, exit_status_for
from proctui.core.life.stop import Phase
from proctui.core.os.procfs import read_stat
from tests.children import POLITE, SLOW, STUBBORN
from tests.conftest import PY, DeniedOS, UnkillableOS, alive, outcomes, pyspec, spec, wait_until


def test_clean_stop(harness):
    h = harness([pyspec("web", POLITE)])
    h.wait_output("web", "ready")
    h.sup.send(Stop("web"))
    outcome = h.outcome("web")
    assert outcome.kind is OutcomeKind.STOPPED
    assert re.fullmatch(r"stopped after \d+\.\ds: exit code 0", outcome.text), outcome.text
    assert outcome.clean
    assert outcome.sent[0].signal == signal.SIGTERM
    assert not alive(outcome.pid)
    assert exit_status_for([outcome]) == 0


def test_stop_by_the_stop_signal_itself_is_clean(harness):
    h = harness([spec("sleeper", "echo ready; exec sleep 60")])
    h.wait_output("sleeper", "ready")
    h.sup.send(Stop("sleeper"))
    outcome = h.outcome("sleeper")
    assert outcome.kind is OutcomeKind.STOPPED
    assert outcome.text.endswith(": terminated by SIGTERM"), outcome.text
    assert outcome.clean


def test_term_ignored_is_killed_at_the_deadline(harness):
    h = harness([pyspec("stub", STUBBORN, stop_timeout=1.0, kill_timeout=2.0)])
    h.wait_output("stub", "ready")
    h.sup.send(Stop("stub"))
    h.wait_notice("stub", "SIGTERM sent to process group")
    outcome = h.outcome("stub")
    view = h.view("stub")
    assert outcome.kind is OutcomeKind.KILLED
    assert outcome.text == "killed with SIGKILL after 1s stop timeout"
    waited = view.kill_sent_at - view.stop_requested_at
    assert 0.95 <= waited < 2.0, waited
    assert [s.signal for s in outcome.sent if s.signal != signal.SIGCONT] == [
        signal.SIGTERM, signal.SIGKILL]
    assert not alive(outcome.pid)
    assert exit_status_for([outcome]) == 1


@pytest.mark.slow
def test_extend_moves_the_deadline(harness):
    h = harness([pyspec("stub", STUBBORN, stop_timeout=3.0, extend_step=1.5)])
    h.wait_output("stub", "ready")
    h.sup.send(Stop("stub"))
    h.wait_notice("stub", "SIGTERM sent")
    before = h.view("stub").deadline
    assert h.sup.send(Extend("stub")).result(timeout=5).ok is True
    assert h.view("stub").deadline == pytest.approx(before + 1.5)
    h.wait_notice("stub", "deadline extended by 1.5s")
    outcome = h.outcome("stub")
    view = h.view("stub")
    assert outcome.text == "killed with SIGKILL after 4.5s stop timeout (extended by 1.5s)"
    waited = view.kill_sent_at - view.stop_requested_at
    assert 4.45 <= waited < 5.5, waited


@pytest.mark.slow
def test_extend_by_n_seconds_in_the_kill_phase(harness):
    h = harness([pyspec("stub", STUBBORN, stop_timeout=0.2, kill_timeout=2.0)],
                os_layer=UnkillableOS())
    h.wait_output("stub", "ready")
    h.sup.send(Stop("stub"))
    h.wait_notice("stub", "SIGKILL sent")
    assert h.view("stub").phase is Phase.KILLING
    h.sup.send(Extend("stub", 1.0)).result(timeout=5)
    outcome = h.outcome("stub")
    view = h.view("stub")
    assert outcome.kind is OutcomeKind.UNKILLABLE
    assert view.ended_at - view.kill_sent_at >= 2.95


def test_abandon_leaves_it_running_with_its_pid_file(harness, run_dir):
    h = harness([pyspec("stub", STUBBORN, stop_timeout=30)], run_dir=run_dir)
    h.wait_output("stub", "ready")
    pid = h.view("stub").pid
    assert run_dir.pid_path("stub").exists()
    h.sup.send(Stop("stub"))
    h.wait_notice("stub", "SIGTERM sent")
    h.sup.send(Abandon("stub"))
    outcome = h.outcome("stub")
    assert outcome.kind is OutcomeKind.ABANDONED
    assert re.fullmatch(rf"abandoned after \d+\.\ds: pid {pid} left running", outcome.text)
    assert alive(pid)
    assert run_dir.pid_path("stub").exists()
    assert exit_status_for([outcome]) == 3
    h.wait_all_ended()
    os.kill(pid, signal.SIGKILL)


def test_kill_now_skips_the_wait(harness):
    h = harness([pyspec("stub", STUBBORN, stop_timeout=60)])
    h.wait_output("stub", "ready")
    h.sup.send(Stop("stub"))
    h.wait_notice("stub", "SIGTERM sent")
    h.sup.send(Kill("stub"))
    outcome = h.outcome("stub", timeout=10)
    assert outcome.kind is OutcomeKind.KILLED
    assert re.fullmatch(r"killed with SIGKILL by operator \d+\.\ds after the stop request",
                        outcome.text), outcome.text
    assert outcome.duration < 10


def test_kill_a_running_process_without_a_stop(harness):
    h = harness([pyspec("stub", STUBBORN)])
    h.wait_output("stub", "ready")
    h.sup.send(Kill("stub"))
    outcome = h.outcome("stub")
    assert outcome.text == "killed with SIGKILL by operator"
    assert [s.signal for s in outcome.sent] == [signal.SIGKILL]


def test_on_timeout_abandon(harness):
    h = harness([pyspec("stub", STUBBORN, stop_timeout=0.5, on_timeout=OnTimeout.ABANDON)])
    h.wait_output("stub", "ready")
    pid = h.view("stub").pid
    h.sup.send(Stop("stub"))
    outcome = h.outcome("stub")
    assert outcome.kind is OutcomeKind.ABANDONED
    assert outcome.text == f"abandoned after 0.5s stop timeout: pid {pid} left running"
    assert alive(pid)
    assert signal.SIGKILL not in [s.signal for s in outcome.sent]


def test_a_descendant_outside_the_group_keeps_the_run_open_and_is_stopped_with_it(harness):
    """The leader exits 0, its child left the group (setsid) and lives on holding stdout:
    the run is not over, and its stop reaches the escaped child too."""
    code = (
        "import os,time\n"
        "if os.fork() == 0:\n"
        "    os.setsid(); print('escaped', os.getpid(), flush=True); time.sleep(60)\n"
        "    os._exit(0)\n"
        "time.sleep(0.3); print('parent done', flush=True)\n"
    )
    h = harness([pyspec("daemon", code)])
    h.wait_notice("daemon", "still run; watching them")
    escaped = int(next(x for x in h.output("daemon") if x.startswith("escaped")).split()[1])
    view = h.view("daemon")
    assert view.phase is Phase.RUNNING and view.outcome is None
    assert view.escapees == (escaped,)
    assert "parent done" in h.output("daemon")
    h.sup.send(Stop("daemon"))
    outcome = h.outcome("daemon", timeout=10)
    assert outcome.kind is OutcomeKind.STOPPED, outcome.text
    assert re.fullmatch(r"stopped after \d+\.\ds: exit code 0", outcome.text), outcome.text
    assert not alive(escaped)


def test_grandchild_in_the_group_holding_stdout_is_stopped(harness):
    h = harness([spec("parent", "sleep 60 & echo ready; exit 0", stop_timeout=5)])
    h.wait_output("parent", "ready")
    leader = h.view("parent").pid
    wait_until(lambda: not alive(leader), what="the leader to exit")
    # Its group (the sleep) keeps the run going: look only after that was noticed.
    wait_until(lambda: h.sup._engine.table.get("parent").run.exit is not None)
    h.pump(0.2)
    assert h.view("parent").phase is Phase.RUNNING
    members = h.sup.os.group_members(h.view("parent").pgid)
    assert members, "the grandchild should still be in the group"
    h.sup.send(Stop("parent"))
    outcome = h.outcome("parent")
    assert outcome.kind is OutcomeKind.STOPPED
    assert outcome.text.endswith("exit code 0")
    assert not any(alive(m.pid) for m in members)


def test_grandchild_ignoring_term_is_killed_with_the_group(harness):
    inner = STUBBORN.replace("'", "\\'").replace("\n", "\\n")
    script = f"{PY} -c \"exec('{inner}')\" & wait"
    h = harness([spec("tree", script, stop_timeout=1.0)])
    h.wait_output("tree", "ready")
    pgid = h.view("tree").pgid
    members = h.sup.os.group_members(pgid)
    assert len(members) == 2
    h.sup.send(Stop("tree"))
    outcome = h.outcome("tree")
    assert outcome.kind is OutcomeKind.KILLED
    assert outcome.text.startswith("killed with SIGKILL after 1s stop timeout")
    assert "(the leader ended, terminated by SIGTERM; the rest of its group did not)" \
        in outcome.text
    assert not any(alive(m.pid) for m in members)


@pytest.mark.parametrize(
    ("script", "expected", "clean"),
    [
        ("exit 0", "exited: exit code 0", True),
        ("exit 3", "exited: exit code 3", False),
        ("kill -USR1 $$", "exited: killed by SIGUSR1", False),
        (f"exec {PY} -c 'import os; os.abort()'", "exited: killed by SIGABRT", False),
    ],
)
def test_exits_by_itself(harness, script, expected, clean):
    h = harness([spec("p", script)])
    outcome = h.outcome("p")
    assert outcome.kind is OutcomeKind.EXITED
    assert outcome.text.startswith(expected), outcome.text
    assert outcome.clean is clean


def test_exit_143_after_sigterm_is_an_exit_code(harness):
    code = POLITE.replace("sys.exit(0)", "sys.exit(143)")  # as a shell's 128+15 would
    h = harness([pyspec("shell", code)])
    h.wait_output("shell", "ready")
    h.sup.send(Stop("shell"))
    outcome = h.outcome("shell")
    assert outcome.kind is OutcomeKind.STOPPED
    assert outcome.text.endswith(": exit code 143"), outcome.text
    assert "SIGTERM" not in outcome.text.split(":", 1)[1]


def test_failed_to_start_and_the_others_keep_running(harness, tmp_path):
    not_exec = tmp_path / "script.sh"
    not_exec.write_text("#!/bin/sh\necho hi\n")
    from dataclasses import replace

    missing = replace(pyspec("ngnix", ""), argv=("ngnix",), cmd="ngnix")
    noexec = replace(pyspec("noexec", ""), argv=(str(not_exec),), cmd=str(not_exec))
    nocwd = pyspec("nocwd", "print(1)", cwd=tmp_path / "no-such-dir")
    h = harness([missing, noexec, nocwd, pyspec("web", POLITE)])
    assert h.outcome("ngnix").text == \
        "failed to start: [Errno 2] No such file or directory: 'ngnix'"
    assert h.outcome("ngnix").kind is OutcomeKind.FAILED_TO_START
    assert h.outcome("noexec").text.startswith("failed to start: [Errno 13] Permission denied")
    assert h.outcome("nocwd").kind is OutcomeKind.FAILED_TO_START
    assert "no-such-dir" in h.outcome("nocwd").text
    h.wait_output("web", "ready")
    assert h.view("web").phase is Phase.RUNNING


def test_unkillable_through_a_fake_os(harness, run_dir):
    h = harness([pyspec("stuck", STUBBORN, stop_timeout=0.3, kill_timeout=0.5)],
                os_layer=UnkillableOS(), run_dir=run_dir)
    h.wait_output("stuck", "ready")
    pid = h.view("stuck").pid
    h.sup.send(Stop("stuck"))
    outcome = h.outcome("stuck")
    assert outcome.kind is OutcomeKind.UNKILLABLE
    assert outcome.text == \
        f"still running 0.5s after SIGKILL (disk-sleep): pid {pid} left running"
    assert run_dir.pid_path("stuck").exists()
    assert exit_status_for([outcome]) == 3


def test_eperm_on_the_stop_signal(harness):
    h = harness([pyspec("guarded", POLITE)], os_layer=DeniedOS(frozenset({signal.SIGTERM})))
    h.wait_output("guarded", "ready")
    pid = h.view("guarded").pid
    h.sup.send(Stop("guarded"))
    outcome = h.outcome("guarded")
    assert outcome.kind is OutcomeKind.STOP_FAILED
    assert outcome.text == \
        f"stop request failed: [Errno 1] Operation not permitted: pid {pid} left running"
    assert alive(pid)


def test_eperm_on_sigkill(harness):
    h = harness([pyspec("guarded", STUBBORN, stop_timeout=0.3)],
                os_layer=DeniedOS(frozenset({signal.SIGKILL})))
    h.wait_output("guarded", "ready")
    h.sup.send(Stop("guarded"))
    outcome = h.outcome("guarded")
    assert outcome.kind is OutcomeKind.KILL_FAILED
    assert outcome.text.startswith("SIGKILL failed: [Errno 1] Operation not permitted")


def test_ask_parks_at_the_deadline_and_headless_acts_as_kill(harness):
    stub = pyspec("stub", STUBBORN, stop_timeout=0.3, on_timeout=OnTimeout.ASK)
    h = harness([stub], interactive=False)
    h.wait_output("stub", "ready")
    h.sup.send(Stop("stub"))
    assert h.outcome("stub").text == "killed with SIGKILL after 0.3s stop timeout"


def test_the_view_is_published_before_the_words_about_it(harness):
    """Whoever reads a notice finds the state it speaks of: "waiting for a decision" came
    while the published view still said stopping (seen under load). The queue below
    reads the published view at the instant each notice is put, on the core's thread."""
    from proctui.core.output.events import EventQueue

    seen: dict[str, Phase] = {}

    class Watching(EventQueue):
        sup = None

        def put_notice(self, name: str | None, text: str) -> None:
            if self.sup is not None and name == "stub" and "waiting for a decision" in text:
                seen[text] = next(v for v in self.sup.snapshot().views if v.name == name).phase
            super().put_notice(name, text)

    stub = pyspec("stub", STUBBORN, stop_timeout=0.3, kill_timeout=0.3,
                  on_timeout=OnTimeout.ASK)
    h = harness([stub], interactive=True)
    h.events.__class__ = Watching
    h.events.sup = h.sup
    h.wait_output("stub", "ready")
    h.sup.send(Stop("stub"))
    h.wait_notice("stub", "waiting for a decision")
    assert list(seen.values()) == [Phase.DECIDING], seen


@pytest.mark.parametrize("choice", ["kill", "extend", "abandon", "wait"])
def test_ask_choices(harness, choice):
    stub = pyspec("stub", STUBBORN, stop_timeout=0.3, on_timeout=OnTimeout.ASK)
    h = harness([stub], interactive=True)
    h.wait_output("stub", "ready")
    h.sup.send(Stop("stub"))
    h.wait_notice("stub", "waiting for a decision")
    assert h.view("stub").phase is Phase.DECIDING
    assert h.view("stub").deadline is None
    pid = h.view("stub").pid
    if choice == "kill":
        h.sup.send(Kill("stub"))
        assert h.outcome("stub").kind is OutcomeKind.KILLED
    elif choice == "extend":
        assert h.view("stub").decisions == 1
        h.sup.send(Extend("stub", 0.5)).result(timeout=5)
        assert h.view("stub").phase is Phase.STOPPING
        # The extension ends in a second decision: the new deadline asks again.
        wait_until(lambda: h.view("stub").decisions == 2, timeout=5,
                   what="the second decision")
        assert h.view("stub").phase is Phase.DECIDING and h.view("stub").deadline is None
        asked = [e for e in h.log if getattr(e, "text", "").endswith("abandon or wait)")]
        h.pump(0.1)
        asked = [e for e in h.log if getattr(e, "text", "").endswith("abandon or wait)")]
        assert len(asked) == 2, asked
        h.sup.send(Kill("stub"))
        assert h.outcome("stub").kind is OutcomeKind.KILLED
    elif choice == "abandon":
        h.sup.send(Abandon("stub"))
        assert h.outcome("stub").kind is OutcomeKind.ABANDONED
        assert alive(pid)
    else:
        h.sup.send(Wait("stub")).result(timeout=5)
        h.wait_notice("stub", "waiting without a deadline")
        assert h.view("stub").phase is Phase.STOPPING
        assert h.view("stub").deadline is None
        assert h.view("stub").outcome is None
        h.sup.send(Kill("stub"))
        assert h.outcome("stub").kind is OutcomeKind.KILLED


def test_stop_all_runs_in_parallel(harness):
    specs = [pyspec(f"stub{i}", STUBBORN, stop_timeout=1.0) for i in range(4)]
    h = harness(specs)
    for s in specs:
        h.wait_output(s.name, "ready")
    started = time.monotonic()
    h.sup.send(StopAll())
    h.wait_all_ended()
    assert time.monotonic() - started < 3.5  # one timeout, not four in a row
    assert all(o.kind is OutcomeKind.KILLED for _, o in h.sup.snapshot().final())


@pytest.mark.slow
def test_deadline_holds_while_the_frontend_stalls(harness):
    h = harness([pyspec("stub", STUBBORN, stop_timeout=1.0)])
    h.wait_output("stub", "ready")
    h.sup.send(Stop("stub"))
    # The frontend (this thread) stalls, reading nothing: the core keeps the deadline.
    time.sleep(2.5)
    view = h.view("stub")
    assert view.outcome is not None and view.outcome.kind is OutcomeKind.KILLED
    assert view.kill_sent_at - view.stop_requested_at < 1.5


@pytest.mark.slow
def test_a_deadline_is_not_held_up_by_a_long_batch_of_looks(harness, monkeypatch):
    """The looks after many processes ended are one batch on the core's loop; a deadline
    that came meanwhile waited for the whole batch (the last of 500 SIGKILLs landed half
    a second late). Here each look is made slow on purpose (0.4 s): the kill must wait
    for one look at most, not for all of them."""
    from proctui.core.executor import Executor

    look = Executor._look

    def slow_look(self, p, run, h, newer_than):  # type: ignore[no-untyped-def]
        if p.name.startswith("quick"):
            time.sleep(0.4)
        return look(self, p, run, h, newer_than)

    quick = [pyspec(f"quick{n}", POLITE) for n in range(8)]
    h = harness([*quick, pyspec("stub", STUBBORN, stop_timeout=0.3)])
    for name in [q.name for q in quick] + ["stub"]:
        h.wait_output(name, "ready")
    monkeypatch.setattr(Executor, "_look", slow_look)
    h.sup.send(StopAll())
    outcome = h.outcome("stub")
    view = h.view("stub")
    assert outcome.kind is OutcomeKind.KILLED, outcome.text
    late = view.kill_sent_at - (view.stop_requested_at + 0.3)
    assert late < 0.75, f"SIGKILL {late:.2f}s after its deadline"


@pytest.mark.slow
def test_a_deadline_is_not_held_up_by_the_bookkeeping_of_kills_sent_before_it(harness,
                                                                              monkeypatch):
    """Deadlines that come together have their signals sent first, then their bookkeeping
    (journal, the next deadline, notices). A deadline that came during that bookkeeping
    waited for all of it (2,000 groups: the last SIGKILLs 130 ms late). Here the
    bookkeeping of eight kills is made slow on purpose (0.1 s each): a deadline due in
    the middle of it must wait for one piece at most, not for all eight."""
    from proctui.core.engine import Engine
    from proctui.core.life import effects as fx

    effect = Engine._effect

    def slow_effect(self, p, e):  # type: ignore[no-untyped-def]
        if p.name.startswith("many") and type(e) is fx.Journal and \
                dict(e.data).get("signal") == "SIGKILL":
            time.sleep(0.1)  # the journal entry of a kill already sent
        return effect(self, p, e)

    many = [pyspec(f"many{n}", STUBBORN, stop_timeout=0.3) for n in range(8)]
    h = harness([*many, pyspec("stub", STUBBORN, stop_timeout=0.6)])
    for name in [m.name for m in many] + ["stub"]:
        h.wait_output(name, "ready")
    monkeypatch.setattr(Engine, "_effect", slow_effect)
    loop = h.sup._loop
    assert loop is not None
    h.sup.send(StopAll())
    # The loop busy across the eight deadlines: they are taken together, one batch.
    loop.call_soon_threadsafe(loop.call_later, 0.25, time.sleep, 0.1)
    outcome = h.outcome("stub")
    view = h.view("stub")
    assert outcome.kind is OutcomeKind.KILLED, outcome.text
    late = view.kill_sent_at - (view.stop_requested_at + 0.6)
    assert late < 0.3, f"SIGKILL {late:.2f}s after its deadline"


@pytest.mark.slow
def test_a_deadline_is_not_held_up_by_a_publication_of_many_views(harness, monkeypatch):
    """A publication makes again the view of every process that changed: at a shutdown
    of 2,000, all of them (70 ms). A deadline that came meanwhile waited for the whole
    publication. Here each view of the others is made slow on purpose (0.1 s): the kill
    must wait for one view at most, not for all eight."""
    from proctui.core import engine

    view_of = engine.view_of

    def slow_view(p, *args):  # type: ignore[no-untyped-def]
        if p.name.startswith("many") and p.run is not None and p.run.stop.stop_requested_at:
            time.sleep(0.1)
        return view_of(p, *args)

    many = [pyspec(f"many{n}", STUBBORN, stop_timeout=5) for n in range(8)]
    h = harness([*many, pyspec("stub", STUBBORN, stop_timeout=0.3)])
    for name in [m.name for m in many] + ["stub"]:
        h.wait_output(name, "ready")
    monkeypatch.setattr(engine, "view_of", slow_view)
    monkeypatch.setattr(engine, "PUBLISH_BETWEEN", 1)
    h.sup.send(StopAll())
    outcome = h.outcome("stub")
    view = h.view("stub")
    assert outcome.kind is OutcomeKind.KILLED, outcome.text
    late = view.kill_sent_at - (view.stop_requested_at + 0.3)
    assert late < 0.25, f"SIGKILL {late:.2f}s after its deadline"


def test_stopped_process_gets_sigcont(harness):
    h = harness([pyspec("frozen", POLITE, stop_timeout=5)])
    h.wait_output("frozen", "ready")
    pid = h.view("frozen").pid
    os.kill(pid, signal.SIGSTOP)
    wait_until(lambda: read_stat(pid).state == "T", what="the child to be stopped")
    h.sup.send(Stop("frozen"))
    outcome = h.outcome("frozen")
    assert outcome.kind is OutcomeKind.STOPPED, outcome.text


def test_slow_shutdown_is_a_stop_not_a_kill(harness):
    h = harness([pyspec("slow", SLOW.format(seconds=1.0), stop_timeout=5)])
    h.wait_output("slow", "ready")
    h.sup.send(Stop("slow"))
    outcome = h.outcome("slow")
    assert outcome.kind is OutcomeKind.STOPPED
    assert 0.9 <= outcome.duration < 4


def test_restart_on_failure_with_backoff_and_stop_cancels_it(harness):
    from proctui.config import RestartPolicy

    h = harness([spec("crash", "echo run; exit 2", restart=RestartPolicy.ON_FAILURE)])
    h.wait_notice("crash", "restarting in 1s")
    h.wait_notice("crash", "restarting in 2s", timeout=10)
    assert h.view("crash").restarts >= 1
    assert h.view("crash").phase is Phase.BACKOFF
    h.sup.send(Stop("crash"))
    h.wait_notice("crash", "restart cancelled")
    h.wait_all_ended()
    ended = [o for n, o in outcomes(h.sup) if n == "crash"]
    assert len(ended) >= 2
    assert all(o.text == "exited: exit code 2" for o in ended)


def test_restart_on_failure_does_not_restart_a_clean_exit(harness):
    from proctui.config import RestartPolicy

    h = harness([spec("once", "exit 0", restart=RestartPolicy.ON_FAILURE)])
    h.wait_all_ended()
    assert len(outcomes(h.sup)) == 1


def test_operator_restart_of_a_running_process(harness):
    h = harness([pyspec("web", POLITE)])
    h.wait_output("web", "ready")
    first = h.view("web").pid
    h.sup.send(Restart("web"))
    wait_until(lambda: h.view("web").pid != first and h.view("web").phase is Phase.RUNNING)
    assert h.view("web").restarts == 1
    assert outcomes(h.sup)[0][1].kind is OutcomeKind.STOPPED
    assert not alive(first)


def test_exactly_one_outcome_per_run(harness):
    h = harness([pyspec("stub", STUBBORN, stop_timeout=0.3)])
    h.wait_output("stub", "ready")
    h.sup.send(Stop("stub"))
    h.sup.send(Kill("stub"))
    h.sup.send(Abandon("stub"))
    h.wait_all_ended()
    # Every command above has been answered by now: nothing more can come.
    h.sup.send(Stop("stub")).result(timeout=5)
    assert len(outcomes(h.sup)) == 1
