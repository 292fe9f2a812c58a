"""One run of one process: spawn, pump its output, watch its group, stop it.

Runs on the core's own asyncio loop. The exit is taken from the process itself (a pidfd
on Linux), never from pipe EOF: a grandchild holding stdout must not keep a dead process
"running". A run is over when its whole process group is gone.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import fcntl
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from proctui.config import OnTimeout, ProcessSpec
from proctui.core.lines import LineSplitter, OutputBuffer, Stream
from proctui.core.oslayer import OSLayer, read_cmdline, read_stat
from proctui.core.outcome import (
    ExitStatus,
    Outcome,
    OutcomeKind,
    Sent,
    seconds,
    setting,
    signal_name,
)
from proctui.core.state import Action, Phase

RUN_TOKEN_VAR = "PROCTUI_RUN"  # set in each child's environment, one value per run
PIPE_SIZE = 1 << 20  # fewer wake-ups under a flood, and more slack before a child blocks
READ_SIZE = 1 << 18  # per wake-up: small enough that a flood cannot hold off a deadline
GROUP_POLL_STOPPING = 0.05  # seconds between group checks once the leader is gone
GROUP_POLL_IDLE = 1.0
FD_RETRIES = 30  # times GROUP_POLL_IDLE: how long a lack of file descriptors is waited out
DRAIN_GRACE = 1.0  # how long to keep reading pipes after the group is gone

_GONE = "gone"
# Keeps the pipes of a process left running open after proctui exits (see
# Run.hand_over_output). Writes at most 16 MB, then discards.
_DRAINER = """
import os, select, sys
path, fds = sys.argv[1], [int(a) for a in sys.argv[2:]]
room = 16 << 20
try:
    out = open(path, "ab")
except OSError:
    out = None
while fds:
    for fd in select.select(fds, [], [])[0]:
        data = os.read(fd, 65536)
        if not data:
            fds.remove(fd)
        elif out is not None and room > 0:
            out.write(data[:room]); out.flush(); room -= len(data)
"""
_DEADLINE = "deadline"


class Run:
    """A spawned (or adopted) process group and its stop sequence."""

    def __init__(
        self,
        spec: ProcessSpec,
        name: str,
        os_layer: OSLayer,
        buffer: OutputBuffer,
        notify: Callable[[str], None],
        output: Callable[[int, list[str]], None] | None,
        on_end: Callable[[Run, Outcome], None],
        interactive: bool,
    ) -> None:
        self.spec = spec
        self.name = name
        self.os = os_layer
        self.buffer = buffer
        self._notify = notify
        self._output = output
        self._on_end = on_end
        self.interactive = interactive
        self.loop = asyncio.get_running_loop()

        self.pid: int | None = None
        self.pgid: int | None = None
        self.popen: subprocess.Popen[bytes] | None = None
        self.leftover = False
        self.started_at: float | None = None  # monotonic
        self.ended_at: float | None = None
        self.exit: ExitStatus | None = None
        self.phase = Phase.STARTING
        self.deadline: float | None = None
        self.stop_requested_at: float | None = None
        self.kill_sent_at: float | None = None
        self.kill_reason = ""
        self.timeout_total = 0.0  # the stop timeout, with every extension added
        self.extended = 0.0
        self.sent: list[Sent] = []
        self.outcome: Outcome | None = None

        self._gone = asyncio.Event()
        self._wake = asyncio.Event()
        self._pending: Action | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._stop_task: asyncio.Task[None] | None = None
        self._pipes: dict[int, tuple[int, LineSplitter]] = {}
        self._wake_watch: asyncio.Event | None = None
        # Inherited by every descendant: finds the ones that leave the process group.
        self.token = uuid.uuid4().hex
        self.left_behind: tuple[int, ...] = ()

    # -- starting ---------------------------------------------------------------------

    def spawn(self) -> bool:
        """Start the process. False (with a failed-to-start outcome) when it cannot be."""
        spec = self.spec
        fds: list[int] = []
        try:
            r_out, w_out = os.pipe2(os.O_CLOEXEC)
            fds += [r_out, w_out]
            r_err, w_err = os.pipe2(os.O_CLOEXEC)
            fds += [r_err, w_err]
            for w in (w_out, w_err):
                with contextlib.suppress(OSError, AttributeError):
                    fcntl.fcntl(w, fcntl.F_SETPIPE_SZ, PIPE_SIZE)
            env = spec.environ()
            env[RUN_TOKEN_VAR] = self.token
            self.popen = subprocess.Popen(
                spec.argv, cwd=str(spec.cwd), env=env, stdin=subprocess.DEVNULL,
                stdout=w_out, stderr=w_err, start_new_session=True, close_fds=True,
            )
        except (OSError, ValueError, subprocess.SubprocessError) as e:
            for fd in fds:
                os.close(fd)
            self.started_at = self.ended_at = time.monotonic()
            self._finish(OutcomeKind.FAILED_TO_START, f"failed to start: {e}")
            return False
        os.close(w_out)
        os.close(w_err)
        self.started_at = time.monotonic()
        self.pid = self.pgid = self.popen.pid  # own session: the group id is the pid
        self.phase = Phase.RUNNING
        for fd, stream in ((r_out, Stream.STDOUT), (r_err, Stream.STDERR)):
            os.set_blocking(fd, False)
            self._pipes[fd] = (stream, LineSplitter(spec.max_line_length))
            self.loop.add_reader(fd, self._on_readable, fd)
        self._start_task(self._watch())
        return True

    def adopt(self, pid: int, pgid: int) -> None:
        """Take over a leftover from an earlier run: not our child, no pipes."""
        self.leftover = True
        self.pid, self.pgid = pid, pgid
        self.started_at = time.monotonic()
        self.phase = Phase.RUNNING
        self._start_task(self._watch())

    def identity(self) -> tuple[int, list[str]] | None:
        """(start ticks, cmdline) of the leader, read from /proc, for its PID file."""
        if self.pid is None:
            return None
        try:
            st = read_stat(self.pid)
            cmdline = read_cmdline(self.pid)
        except OSError:  # e.g. out of file descriptors: no PID file this time
            return None
        if st is None or cmdline is None:
            return None
        return st.start_ticks, cmdline

    def _start_task(self, coro) -> asyncio.Task[None]:  # type: ignore[no-untyped-def]
        task = self.loop.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    # -- output -----------------------------------------------------------------------

    def _on_readable(self, fd: int) -> None:
        self._read_once(fd)

    def _read_once(self, fd: int) -> int:
        """One read from a pipe into the buffer (and the event queue). Returns the bytes
        read, 0 at EOF (the pipe is then closed), -1 when it is empty for now."""
        stream, splitter = self._pipes[fd]
        try:
            data = os.read(fd, READ_SIZE)
        except BlockingIOError:
            return -1
        except OSError:
            data = b""
        if data:
            lines = splitter.feed(data)
        else:
            lines = splitter.finish()
            self._close_pipe(fd)
        self._deliver(stream, lines, splitter.partial)
        return len(data)

    def _deliver(self, stream: int, lines: list[str], partial: str) -> None:
        self.buffer.append(stream, lines, partial)
        if lines and self._output is not None:
            self._output(stream, lines)

    def _read_what_is_there(self, limit: int = 64 << 20) -> None:
        """Read every pipe until it is empty for now (or ``limit`` bytes in all)."""
        budget = limit
        for fd in list(self._pipes):
            while fd in self._pipes and budget > 0:
                got = self._read_once(fd)
                if got < 0:
                    break
                budget -= got

    def _close_pipe(self, fd: int) -> None:
        if self._pipes.pop(fd, None) is not None:
            self.loop.remove_reader(fd)
            os.close(fd)

    def _drain_and_close(self) -> None:
        """Read what is left, then close the pipes even if someone still holds them."""
        self._read_what_is_there()
        for fd in list(self._pipes):
            stream, splitter = self._pipes[fd]
            lines = splitter.finish()
            self._close_pipe(fd)
            self._deliver(stream, lines, "")

    def hand_over_output(self, log: Path | None) -> int | None:
        """proctui is exiting and this process was left running (abandoned, unkillable):
        if its pipes just closed, its next write would kill it (SIGPIPE) or fail. Hand
        them to a small drainer, in its own session, that appends what comes to ``log``
        and ends by itself at EOF, when the process does. Returns the drainer's pid."""
        if not self._pipes:
            return None
        fds = list(self._pipes)
        for fd in fds:
            self.loop.remove_reader(fd)
            os.set_blocking(fd, True)
        try:
            drainer = subprocess.Popen(
                [sys.executable, "-c", _DRAINER, str(log) if log else os.devnull,
                 *map(str, fds)],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL, pass_fds=fds, start_new_session=True,
            )
        except OSError:
            return None
        finally:
            for fd in fds:
                self._pipes.pop(fd, None)
                os.close(fd)
        # Not ours to wait for after we exit; reap it if it ends while we still run.
        drainer.returncode = 0
        return drainer.pid

    # -- watching ---------------------------------------------------------------------

    async def _watch(self) -> None:
        try:
            await self._wait_leader()
            while await self._group_alive():
                if self.outcome is not None:
                    return  # abandoned or given up: stop watching
                poll = GROUP_POLL_IDLE if self.stop_requested_at is None else GROUP_POLL_STOPPING
                self._wake_watch = asyncio.Event()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake_watch.wait(), poll)
        except OSError as e:
            if self.outcome is None:
                self.ended_at = time.monotonic()
                self._finish(OutcomeKind.WAIT_FAILED, f"wait failed: {e}")
            return
        if self.outcome is not None:
            return
        self.ended_at = time.monotonic()
        if not self.leftover:
            self.left_behind = tuple(self.os.processes_with_env(RUN_TOKEN_VAR, self.token))
        self._gone.set()
        self._wake.set()
        # Output still in the pipes belongs before the outcome: read all that is there
        # now (the writers are gone, so it is finite), then close them a little later.
        if self._pipes:
            self.loop.call_later(DRAIN_GRACE, self._drain_and_close)
            self._read_what_is_there()
        if self._stop_task is None:
            self._finish(OutcomeKind.EXITED, f"exited: {self._status_text()}")

    async def _group_alive(self) -> bool:
        """Ask the OS layer; out of file descriptors (EMFILE) is a passing state of the
        machine, not an answer: try again for a while before calling it a failure."""
        for attempt in range(FD_RETRIES):
            try:
                return self.os.group_alive(self.pgid)  # type: ignore[arg-type]
            except OSError as e:
                if e.errno not in (errno.EMFILE, errno.ENFILE) or attempt == FD_RETRIES - 1:
                    raise
                await asyncio.sleep(GROUP_POLL_IDLE)
        raise AssertionError("unreachable")

    async def _wait_leader(self) -> None:
        pid = self.pid
        assert pid is not None
        try:
            pidfd = os.pidfd_open(pid)
        except ProcessLookupError:
            pidfd = None
            if self.leftover:
                self.exit = ExitStatus(known=False)
                return
        except (AttributeError, OSError):
            pidfd = -1  # no pidfd on this system: poll
        if pidfd is not None and pidfd >= 0:
            done = self.loop.create_future()
            self.loop.add_reader(pidfd, lambda: done.done() or done.set_result(None))
            try:
                await done
            finally:
                self.loop.remove_reader(pidfd)
                os.close(pidfd)
        if self.leftover:
            while pidfd == -1:
                st = read_stat(pid)
                if st is None or st.state in "ZXx":
                    break
                await asyncio.sleep(GROUP_POLL_STOPPING)
            self.exit = ExitStatus(known=False)
            return
        while True:
            wpid, status = os.waitpid(pid, os.WNOHANG)
            if wpid == pid:
                break
            await asyncio.sleep(GROUP_POLL_STOPPING)
        self.exit = ExitStatus.from_wait_status(status)
        if self.popen is not None:
            # Keep subprocess from ever waiting on this pid again.
            self.popen.returncode = os.waitstatus_to_exitcode(status)

    def _status_text(self) -> str:
        status = self.exit or ExitStatus(known=False)
        stop_sig = self.spec.stop_signal if self.stop_requested_at is not None else None
        return status.describe(stop_sig)

    # -- stopping ---------------------------------------------------------------------

    def request_stop(self) -> None:
        if self.outcome is None and self._stop_task is None and self.pid is not None:
            self._stop_task = self._start_task(self._stop_sequence(kill_now=False))

    def act(self, action: Action) -> None:
        """An operator decision: kill now, abandon, or wait without a deadline."""
        if self.outcome is not None or self.pid is None:
            return
        if self._stop_task is None:
            if action is Action.KILL:
                self._stop_task = self._start_task(self._stop_sequence(kill_now=True))
            elif action is Action.ABANDON:
                self._abandon(by_policy=False)
            return
        self._pending = action
        self._wake.set()

    def extend(self, by: float) -> bool:
        """Move the current deadline ``by`` seconds later (from now, if parked)."""
        if self.outcome is not None or not self.phase.stopping:
            return False
        now = time.monotonic()
        if self.phase is Phase.DECIDING or self.deadline is None:
            self.deadline = now + by
            if self.phase is Phase.DECIDING:
                self.phase = Phase.STOPPING
        else:
            self.deadline += by
        if self.phase is Phase.STOPPING:
            self.timeout_total += by
            self.extended += by
        action = self.deadline_action()
        self._notify(f"deadline extended by {setting(by)}: {action} in "
                     f"{seconds(self.deadline - now)}")
        self._wake.set()
        return True

    async def _stop_sequence(self, kill_now: bool) -> None:
        self.stop_requested_at = time.monotonic()
        self._wake_group_watch()
        if kill_now:
            reason = "operator"
        else:
            sig = self.spec.stop_signal
            if not self._send(sig, "stop request"):
                return
            if sig not in (signal.SIGCONT, signal.SIGKILL):
                # A stopped (SIGSTOP) process would never see the stop signal.
                with contextlib.suppress(OSError):
                    self.os.signal_group(self.pgid, signal.SIGCONT)  # type: ignore[arg-type]
            self.timeout_total = self.spec.stop_timeout
            self.deadline = self.stop_requested_at + self.spec.stop_timeout
            self.phase = Phase.STOPPING
            self._notify(f"{signal_name(sig)} sent to process group {self.pgid}; "
                         f"{self.deadline_action()} in {setting(self.spec.stop_timeout)}")
            reason = await self._stop_wait()
            if reason is None:
                return
        await self._kill(reason)

    def deadline_action(self) -> str:
        """What happens at the current deadline: "SIGKILL", "abandon", "decision" or
        "giving up"."""
        if self.phase is Phase.KILLING:
            return "giving up"
        policy = self._policy()
        return {OnTimeout.KILL: "SIGKILL", OnTimeout.ABANDON: "abandon",
                OnTimeout.ASK: "decision"}[policy]

    def _policy(self) -> OnTimeout:
        policy = self.spec.on_timeout
        # Nobody can answer a question in headless mode: ask acts as kill there.
        if policy is OnTimeout.ASK and not self.interactive:
            return OnTimeout.KILL
        return policy

    async def _stop_wait(self) -> str | None:
        """Wait in the stop phase. Returns the kill reason, or None when it is over."""
        while True:
            event = await self._wait_phase()
            if event == _GONE:
                self._finish_gone()
                return None
            if event is Action.ABANDON:
                self._abandon(by_policy=False)
                return None
            if event is Action.KILL:
                return "operator"
            if event is Action.WAIT:
                self.phase, self.deadline = Phase.STOPPING, None
                self._notify("waiting without a deadline")
                continue
            policy = self._policy()  # the deadline has come
            if policy is OnTimeout.KILL:
                return "timeout"
            if policy is OnTimeout.ABANDON:
                self._abandon(by_policy=True)
                return None
            self.phase, self.deadline = Phase.DECIDING, None
            self._notify(f"stop timeout ({setting(self.timeout_total)}) reached: waiting for "
                         "a decision (kill, extend, abandon or wait)")

    async def _kill(self, reason: str) -> None:
        now = time.monotonic()
        if self.outcome is not None:
            return  # the deadline's SIGKILL could not be sent (see _on_deadline)
        already = reason == "timeout" and self.kill_sent_at is not None
        if not already and not self._send(signal.SIGKILL, reason,
                                          failure=OutcomeKind.KILL_FAILED):
            return
        self.phase = Phase.KILLING
        self.deadline = now + self.spec.kill_timeout
        if self.kill_sent_at is not None:
            why = (f"stop timeout ({setting(self.timeout_total)}) reached: "
                   if reason == "timeout" else "")
            self._notify(f"{why}SIGKILL sent to process group {self.pgid}; giving up in "
                         f"{setting(self.spec.kill_timeout)}")
        while True:
            event = await self._wait_phase()
            if event == _GONE:
                self._finish_gone()
                return
            if event is Action.ABANDON:
                self._abandon(by_policy=False)
                return
            if event is Action.KILL:
                if not self._send(signal.SIGKILL, "operator", failure=OutcomeKind.KILL_FAILED):
                    return
                continue
            if event is Action.WAIT:
                self.deadline = None
                continue
            self._give_up()
            return

    async def _wait_phase(self) -> object:
        """Until the group is gone, the operator acts, or the (movable) deadline comes."""
        while True:
            if self._gone.is_set():
                return _GONE
            if self._pending is not None:
                action, self._pending = self._pending, None
                return action
            deadline = self.deadline
            if deadline is not None and self.loop.time() >= deadline - 0.0005:
                return _DEADLINE
            self._wake.clear()
            timer = self.loop.call_at(deadline, self._on_deadline) if deadline is not None \
                else None
            try:
                await self._wake.wait()
            finally:
                if timer is not None:
                    timer.cancel()

    def _on_deadline(self) -> None:
        """The stop deadline's timer. When the answer is SIGKILL, send it right here:
        under a flood every pass of the loop reads every busy pipe, and waking the task
        first would cost another pass before the kill."""
        if (self.phase is Phase.STOPPING and self.deadline is not None
                and self.loop.time() >= self.deadline - 0.0005 and self._pending is None
                and not self._gone.is_set() and self.kill_sent_at is None
                and self._policy() is OnTimeout.KILL):
            self._send(signal.SIGKILL, "timeout", failure=OutcomeKind.KILL_FAILED)
        self._wake.set()

    def _wake_group_watch(self) -> None:
        if self._wake_watch is not None:
            self._wake_watch.set()

    def _send(self, sig: signal.Signals, reason: str,
              failure: OutcomeKind = OutcomeKind.STOP_FAILED) -> bool:
        """Signal the whole group. False when the run is over because sending failed."""
        try:
            self.os.signal_group(self.pgid, sig)  # type: ignore[arg-type]
        except ProcessLookupError:
            # Nothing left in the group: it ended between our decision and the signal.
            return True
        except OSError as e:
            self.ended_at = time.monotonic()
            what = "stop request" if failure is OutcomeKind.STOP_FAILED else "SIGKILL"
            self._finish(failure, f"{what} failed: {e}: pid {self.pid} left running")
            return False
        now = time.monotonic()
        self.sent.append(Sent(sig, now - (self.started_at or now), reason))
        if sig == signal.SIGKILL and self.kill_sent_at is None:
            self.kill_sent_at = now
            self.kill_reason = reason
        return True

    # -- endings ----------------------------------------------------------------------

    def _finish_gone(self) -> None:
        end = self.ended_at or time.monotonic()
        if self.kill_sent_at is None:
            took = end - (self.stop_requested_at or end)
            self._finish(OutcomeKind.STOPPED, f"stopped after {seconds(took)}: "
                                             f"{self._status_text()}")
            return
        if self.kill_reason == "timeout":
            text = f"killed with SIGKILL after {setting(self.timeout_total)} stop timeout"
            if self.extended:
                text += f" (extended by {setting(self.extended)})"
        else:
            text = "killed with SIGKILL by operator"
            if any(s.reason == "stop request" for s in self.sent):
                after = self.kill_sent_at - (self.stop_requested_at or self.kill_sent_at)
                text += f" {seconds(after)} after the stop request"
        if self.exit is not None and self.exit.known and self.exit.signal != signal.SIGKILL:
            # The leader ended on its own; other members of its group had to be killed.
            text += f" (the leader ended, {self._status_text()}; the rest of its group did not)"
        self._finish(OutcomeKind.KILLED, text)

    def _left_running(self) -> str:
        members = self.os.group_members(self.pgid) if self.pgid else []
        pids = [m.pid for m in members] or [self.pid]
        if len(pids) == 1:
            return f"pid {pids[0]} left running"
        return f"pids {', '.join(map(str, pids[:8]))}{'...' if len(pids) > 8 else ''} " \
               "left running"

    def _abandon(self, by_policy: bool) -> None:
        now = time.monotonic()
        self.ended_at = now
        if by_policy:
            text = f"abandoned after {setting(self.timeout_total)} stop timeout"
        elif self.stop_requested_at is not None:
            text = f"abandoned after {seconds(now - self.stop_requested_at)}"
        else:
            text = "abandoned while running (no signal sent)"
        self._finish(OutcomeKind.ABANDONED, f"{text}: {self._left_running()}")

    def _give_up(self) -> None:
        self.ended_at = time.monotonic()
        state = self.os.describe(self.pgid)  # type: ignore[arg-type]
        self._finish(OutcomeKind.UNKILLABLE,
                     f"still running {setting(self.spec.kill_timeout)} after SIGKILL ({state}): "
                     f"{self._left_running()}")

    def _finish(self, kind: OutcomeKind, text: str) -> None:
        if self.outcome is not None:
            return
        end = self.ended_at or time.monotonic()
        since = self.stop_requested_at if self.stop_requested_at is not None else self.started_at
        if self.left_behind and kind in (OutcomeKind.EXITED, OutcomeKind.STOPPED,
                                         OutcomeKind.KILLED):
            pids = ", ".join(map(str, self.left_behind[:8]))
            word = "pid" if len(self.left_behind) == 1 else "pids"
            text += f"; {word} {pids} left behind (outside its process group)"
        outcome = Outcome(
            kind=kind, text=text, pid=self.pid, status=self.exit,
            duration=None if since is None else end - since, sent=tuple(self.sent),
            left_behind=self.left_behind,
        )
        # The bookkeeping (PID file, history) happens before the outcome is visible to
        # frontends, so whoever sees the outcome also sees its consequences.
        self._on_end(self, outcome)
        self.outcome = outcome
        self.phase = Phase.ENDED
        self.deadline = None
        self._wake_group_watch()

    def cancel(self) -> None:
        """Drop every task and pipe of this run (at shutdown, after its outcome)."""
        for task in list(self._tasks):
            task.cancel()
        for fd in list(self._pipes):
            self._close_pipe(fd)
