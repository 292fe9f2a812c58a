"""How a run learns that it is over, and how its ending is gathered.

The leader's exit starts the checks; the run is over once its whole group is gone and
every descendant that left the group too. Then the machine's decision (stopped, killed,
abandoned...) is checked against what is really left and put into a record, whose words
``outcome.describe`` writes. ``Ending`` is one half of ``Run`` (run.py carries out the
machine's effects); it uses the run's fields, set in ``Run.__init__``.
"""

from __future__ import annotations

import errno
import time
from typing import TYPE_CHECKING

from proctui.core import machine as m
from proctui.core.outcome import EndKind, ExitStatus, RunRecord, describe, pids_phrase

if TYPE_CHECKING:
    from proctui.core.run import Run

POLL_STOPPING = 0.05  # seconds between group checks once the leader is gone
POLL_IDLE = 1.0
FD_RETRIES = 30  # times POLL_IDLE: how long a lack of file descriptors is waited out
DYING_LOOK, DYING_LOOKS = 0.05, 20  # an abandoned group a sent signal is ending: 1 s at most
_LEFT_RUNNING_ENDS = (EndKind.ABANDONED, EndKind.UNKILLABLE, EndKind.STOP_FAILED,
                      EndKind.KILL_FAILED)


class Ending:
    def _leader_ended(self: Run) -> None:
        status = self.exit
        if self.popen is not None and status is not None and status.known:
            # Keep subprocess from ever waiting on this pid again.
            self.popen.returncode = status.code if status.code is not None \
                else -int(status.signal or 0)
        # Many leaders end at once when everything stops: the host checks them together,
        # with one walk of the process tree.
        self.host.check_soon(self)

    def _schedule_check(self: Run, delay: float) -> None:
        if self.exit is None or self.outcome is not None:
            return  # the leader's exit starts the checks
        if self._poll is not None:
            self._poll.cancel()
        self._poll = self.loop.call_later(delay, self.check_gone)

    def check_gone(self: Run) -> None:
        """Is everything of the run gone? Then it ends; else look again a little later."""
        self._poll = None
        if self.outcome is not None or self.group is None:
            return
        try:
            group = self.group.group_alive()
        except OSError as e:
            if e.errno in (errno.EMFILE, errno.ENFILE) and self._fd_failures < FD_RETRIES:
                self._fd_failures += 1  # a passing state of the machine, not an answer
                self._schedule_check(POLL_IDLE)
                return
            self.feed(m.WaitFailed(time.monotonic(), str(e)))
            return
        if not group:
            # Orphans of the leader are re-parented to us when it dies: look after that.
            self._find_escapees(newer_than=self.leader_exited_at)
        outside = self.group.outside
        if not group and not outside:
            # Nothing outlived the leader (this is the first look since it ended): it
            # all ended when the leader did, however long the look took to come.
            first_look = not self._looked_again and not self.escapees
            self._gone(self.leader_exited_at if first_look else None)
            return
        self._looked_again = True
        if group:
            self.host.members_changed(self)
        elif not self._said_escapees:
            self._said_escapees = True
            # The snapshot first: whoever reads the notice finds the escapees in the view.
            self.host.members_changed(self)
            self.host.changed(self)
            self.host.notice(self, f"its group has ended ({self._status_text()}), but "
                                   f"{pids_phrase([e.pid for e in outside])} it started "
                                   "outside the group still run; watching them")
        self._schedule_check(POLL_STOPPING if self.state.phase.stopping else POLL_IDLE)

    def _gone(self: Run, at: float | None = None) -> None:
        now = time.monotonic()
        self.ended_at = at if at is not None else now
        # Output already in the pipes belongs before the outcome.
        self.pipes.read_now()
        self.feed(m.GroupGone(now))

    def _find_escapees(self: Run, newer_than: float | None = None) -> None:
        assert self.group is not None
        for st in self.host.escapees_of(self, newer_than):
            self.group.track(st, self._escapee_ended)

    def _escapee_ended(self: Run) -> None:
        if self.exit is not None:
            self._schedule_check(0)

    def _status_text(self: Run) -> str:
        status = self.exit or ExitStatus(known=False)
        stop_sig = self.spec.stop_signal if self.state.stop_requested_at is not None else None
        return status.describe(stop_sig)

    def _conclude(self: Run, end: EndKind) -> None:
        """The machine has decided: gather the facts, word them, tell the host."""
        if self.outcome is not None:
            return
        left: tuple[int, ...] = ()
        state_word = ""
        group = self.group
        if end in _LEFT_RUNNING_ENDS and group is not None:
            left = tuple(group.live_pids())
            if end is EndKind.ABANDONED and left and self._dying_looks > 0 and \
                    all(self.os.dying(pid) for pid in left):
                # Abandoned just after the stop signal, which is about to end them all
                # (a busy machine has not run them yet): "left running" would be false.
                # Look again shortly; the ending is then worded from its exit status.
                self._dying_looks -= 1
                self.loop.call_later(DYING_LOOK, self._conclude, end)
                return
            if not left:
                # Nothing is left running after all: it ended just before the deadline
                # or the decision, and the look that would have said so had not come yet.
                end = EndKind.GONE
                group.reap_now()
                self.pipes.read_now()
            elif end is EndKind.UNKILLABLE:
                state_word = group.describe()
        if self.ended_at is None:
            self.ended_at = time.monotonic()
        s = self.state
        escapees = self.escapees
        record = RunRecord(
            end=end, pid=self.pid, ended_at=self.ended_at, started_at=self.started_at,
            stop_requested_at=s.stop_requested_at, stop_signal=self.spec.stop_signal,
            stop_timeout=self.spec.stop_timeout, kill_timeout=self.spec.kill_timeout,
            kill_sent_at=s.kill_sent_at, kill_reason=s.kill_reason,
            timeout_total=s.timeout_total, extended=s.extended,
            extended_by_process=s.extended_by_process, abandoned_by=s.abandoned_by,
            status=self.exit, kill_reached=self.kill_reached, sent=tuple(self.sent),
            left_running=tuple(p for p in left if p not in escapees),
            left_behind=tuple(p for p in left if p in escapees),
            state_word=state_word, error=s.error, watchdog_sec=s.watchdog_sec,
            ready_timeout=s.ready_timeout, stop_reached=self.stop_reached)
        outcome = describe(record)
        self._stop_watching(keep_leader=end is not EndKind.GONE)
        # The bookkeeping (PID file, history) happens before the outcome is visible to
        # frontends, so whoever sees the outcome also sees its consequences.
        self.host.ended(self, outcome)
        self.outcome = outcome
