"""How a run learns that it is over, and how its ending is gathered.

The leader's exit starts the checks; the run is over once its whole group is gone and
every descendant that left the group too. Then the machine's decision (stopped, killed,
abandoned...) is checked against what is really left and put into a record, whose words
``outcome.describe`` writes. A run has one ``EndWatch``; the run carries out its stop
machine's effects, the watch looks for the end and gathers it.
"""

from __future__ import annotations

import asyncio
import errno
import time
from typing import TYPE_CHECKING

from proctui.core.life import stop as m
from proctui.core.life.outcome import EndKind, ExitStatus, RunRecord, describe, pids_phrase

if TYPE_CHECKING:
    from proctui.core.run import Run

POLL_STOPPING = 0.05  # seconds between group checks once the leader is gone
POLL_IDLE = 1.0
FD_RETRIES = 30  # times POLL_IDLE: how long a lack of file descriptors is waited out
DYING_LOOK, DYING_LOOKS = 0.05, 20  # an abandoned group a sent signal is ending: 1 s at most
_LEFT_RUNNING_ENDS = (EndKind.ABANDONED, EndKind.UNKILLABLE, EndKind.STOP_FAILED,
                      EndKind.KILL_FAILED)


class EndWatch:
    def __init__(self, run: Run) -> None:
        self.run = run
        self._poll: asyncio.TimerHandle | None = None
        self._fd_failures = 0
        self._said_escapees = False
        self._looked_again = False  # the group outlived the leader's exit at least once
        self._dying_looks = DYING_LOOKS

    def close(self) -> None:
        if self._poll is not None:
            self._poll.cancel()
        self._poll = None

    def leader_ended(self) -> None:
        run = self.run
        status = run.exit
        if run.popen is not None and status is not None and status.known:
            # Keep subprocess from ever waiting on this pid again.
            run.popen.returncode = status.code if status.code is not None \
                else -int(status.signal or 0)
        # Many leaders end at once when everything stops: the host checks them together,
        # with one walk of the process tree.
        run.host.check_soon(run)

    def schedule_check(self, delay: float) -> None:
        run = self.run
        if run.exit is None or run.outcome is not None:
            return  # the leader's exit starts the checks
        if self._poll is not None:
            self._poll.cancel()
        self._poll = run.loop.call_later(delay, self.check_gone)

    def check_gone(self) -> None:
        """Is everything of the run gone? Then it ends; else look again a little later."""
        run = self.run
        self._poll = None
        if run.outcome is not None or run.group is None:
            return
        try:
            group = run.group.group_alive()
        except OSError as e:
            if e.errno in (errno.EMFILE, errno.ENFILE) and self._fd_failures < FD_RETRIES:
                self._fd_failures += 1  # a passing state of the machine, not an answer
                self.schedule_check(POLL_IDLE)
                return
            run.feed(m.WaitFailed(time.monotonic(), str(e)))
            return
        if not group:
            # Orphans of the leader are re-parented to us when it dies: look after that.
            self.find_escapees(newer_than=run.leader_exited_at)
        outside = run.group.outside
        if not group and not outside:
            # Nothing outlived the leader (this is the first look since it ended): it
            # all ended when the leader did, however long the look took to come.
            first_look = not self._looked_again and not run.escapees
            self._gone(run.leader_exited_at if first_look else None)
            return
        self._looked_again = True
        if group:
            run.host.members_changed(run)
        elif not self._said_escapees:
            self._said_escapees = True
            # The snapshot first: whoever reads the notice finds the escapees in the view.
            run.host.members_changed(run)
            run.host.changed(run)
            run.host.notice(run, f"its group has ended ({self._status_text()}), but "
                                   f"{pids_phrase([e.pid for e in outside])} it started "
                                   "outside the group still run; watching them")
        self.schedule_check(POLL_STOPPING if run.state.phase.stopping else POLL_IDLE)

    def _gone(self, at: float | None = None) -> None:
        run = self.run
        now = time.monotonic()
        run.ended_at = at if at is not None else now
        # Output already in the pipes belongs before the outcome.
        run.pipes.read_now()
        run.feed(m.GroupGone(now))

    def find_escapees(self, newer_than: float | None = None) -> None:
        run = self.run
        assert run.group is not None
        for st in run.host.escapees_of(run, newer_than):
            run.group.track(st, self.escapee_ended)

    def escapee_ended(self) -> None:
        run = self.run
        if run.exit is not None:
            self.schedule_check(0)

    def _status_text(self) -> str:
        run = self.run
        status = run.exit or ExitStatus(known=False)
        stop_sig = run.spec.stop_signal if run.state.stop_requested_at is not None else None
        return status.describe(stop_sig)

    def conclude(self, end: EndKind) -> None:
        """The machine has decided: gather the facts, word them, tell the host."""
        run = self.run
        if run.outcome is not None:
            return
        left: tuple[int, ...] = ()
        state_word = ""
        group = run.group
        if end in _LEFT_RUNNING_ENDS and group is not None:
            left = tuple(group.live_pids())
            if end is EndKind.ABANDONED and left and self._dying_looks > 0 and \
                    all(run.os.dying(pid) for pid in left):
                # Abandoned just after the stop signal, which is about to end them all
                # (a busy machine has not run them yet): "left running" would be false.
                # Look again shortly; the ending is then worded from its exit status.
                self._dying_looks -= 1
                run.loop.call_later(DYING_LOOK, self.conclude, end)
                return
            if not left:
                # Nothing is left running after all: it ended just before the deadline
                # or the decision, and the look that would have said so had not come yet.
                end = EndKind.GONE
                group.reap_now()
                run.pipes.read_now()
            elif end is EndKind.UNKILLABLE:
                state_word = group.describe()
        if run.ended_at is None:
            run.ended_at = time.monotonic()
        s = run.state
        escapees = run.escapees
        record = RunRecord(
            end=end, pid=run.pid, ended_at=run.ended_at, started_at=run.started_at,
            stop_requested_at=s.stop_requested_at, stop_signal=run.spec.stop_signal,
            stop_timeout=run.spec.stop_timeout, kill_timeout=run.spec.kill_timeout,
            kill_sent_at=s.kill_sent_at, kill_reason=s.kill_reason,
            timeout_total=s.timeout_total, extended=s.extended,
            extended_by_process=s.extended_by_process, abandoned_by=s.abandoned_by,
            status=run.exit, kill_reached=run.kill_reached, sent=tuple(run.sent),
            left_running=tuple(p for p in left if p not in escapees),
            left_behind=tuple(p for p in left if p in escapees),
            state_word=state_word, error=s.error, watchdog_sec=s.watchdog_sec,
            ready_timeout=s.ready_timeout, stop_reached=run.stop_reached,
            success_codes=run.spec.success_exit_codes)
        outcome = describe(record)
        run.stop_watching(keep_leader=end is not EndKind.GONE)
        # The bookkeeping (PID file, history) happens before the outcome is visible to
        # frontends, so whoever sees the outcome also sees its consequences.
        run.host.ended(run, outcome)
        run.outcome = outcome
