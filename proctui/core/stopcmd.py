"""A run's stop command (``stop_command``, as systemd's ExecStop): started when the stop
begins, instead of the stop signal or before it. It is a child of proctui in a session
of its own, with a token of its own in its environment; its output goes to the run's
pane and log file, each line marked; it is bounded by the run's deadline. When it ends
(or is killed at the deadline, at a kill, or when proctui closes) its whole group goes,
and whatever it left outside its group with its token too, named in the run's pane: a
stop command never leaves an orphan behind.

Executor-side: it reports what happened as facts (StopCommandStarted, StopCommandEnded,
StopCommandFailed) and decides nothing about the run."""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
from collections.abc import Callable

from proctui.config import ProcessSpec
from proctui.core.life import inputs as i
from proctui.core.life.outcome import ExitStatus
from proctui.core.os.oslayer import OSLayer
from proctui.core.output.lines import LineSplitter
from proctui.core.speak.readiness import HELPER_VAR, end_helper, helper_escapees

MARK = "stop command | "  # in front of each of its lines, in the pane and the log file
MAX_LINES = 200  # of its output shown; the rest is counted, not shown
READ_SIZE = 1 << 16
POLL = 0.05  # seconds between looks when no pidfd can be had


class StopCommand:
    def __init__(self, loop: asyncio.AbstractEventLoop, os_layer: OSLayer,
                 spec: ProcessSpec, number: int, main_pid: int | None,
                 post: Callable[[object], None], show: Callable[[str], None],
                 log: Callable[[bytes], None], helpers: set[int],
                 leaders: Callable[[int], bool]) -> None:
        self.loop = loop
        self.os = os_layer
        self.spec = spec
        self.number = number
        self.main_pid = main_pid
        self.post = post  # facts about the run, to the step function
        self.show = show  # a line in the run's pane
        self.log = log  # bytes for the run's log file
        self.helpers = helpers  # our own children: not a run's, not for the orphan reaper
        self.leaders = leaders
        self.proc: subprocess.Popen[bytes] | None = None
        self.token = os.urandom(12).hex()
        self._fd: int | None = None  # the read end of its stdout and stderr
        self._pidfd: int | None = None
        self._splitter = LineSplitter(spec.max_line_length)
        self._shown = 0
        self._hidden = 0
        self._timer: asyncio.TimerHandle | None = None
        self._deadline: float | None = None
        self._killed = ""  # why proctui killed it ("": it was not)
        self._done = False

    def start(self) -> None:
        spec = self.spec
        env = spec.environ()
        env["MAINPID"] = str(self.main_pid or "")  # as systemd gives ExecStop
        env[HELPER_VAR] = self.token
        try:
            r, w = os.pipe2(os.O_CLOEXEC)
        except OSError as e:
            self._failed(e)
            return
        try:
            self.proc = subprocess.Popen(
                spec.stop_command, cwd=str(spec.cwd), env=env, stdin=subprocess.DEVNULL,
                stdout=w, stderr=w, start_new_session=True, close_fds=True)
        except (OSError, ValueError, subprocess.SubprocessError) as e:
            os.close(r)
            self._failed(e)
            return
        finally:
            with contextlib.suppress(OSError):
                os.close(w)
        pid = self.proc.pid
        self.helpers.add(pid)
        self.post(i.StopCommandStarted(self.number, pid))
        os.set_blocking(r, False)
        self._fd = r
        self.loop.add_reader(r, self._read)
        try:
            self._pidfd = os.pidfd_open(pid)
            self.loop.add_reader(self._pidfd, self._look)
        except OSError:
            self._poll()

    def _failed(self, e: BaseException) -> None:
        self._done = True
        self.post(i.StopCommandFailed(self.number, str(e)))

    def bound(self, deadline: float | None) -> None:
        """Kill it at this instant (the run's deadline in force): it never outlives it."""
        if self._done or self.proc is None or deadline is None or deadline == self._deadline:
            return
        self._deadline = deadline
        self._cancel_timer()
        self._timer = self.loop.call_at(deadline, self.kill, "its deadline came")

    def kill(self, why: str) -> None:
        """End it now (SIGKILL to its whole tree); its end is reported as usual."""
        self._cancel_timer()
        if self._done or self.proc is None:
            return
        self._killed = why
        self._end()

    def _poll(self) -> None:
        if not self._look():
            self.loop.call_later(POLL, self._poll)

    def _look(self) -> bool:
        """Has it ended? Then what is left of its tree goes, it is reaped and reported."""
        proc = self.proc
        if proc is None or self._done:
            return True
        try:
            info = os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            info = None
            self._end(ExitStatus(known=False))
            return True
        if info is None:
            return False
        self._end()
        return True

    def _end(self, status: ExitStatus | None = None) -> None:
        proc = self.proc
        assert proc is not None
        self._done = True
        self._cancel_timer()
        if self._pidfd is not None:
            self.loop.remove_reader(self._pidfd)
            os.close(self._pidfd)
            self._pidfd = None
        left = helper_escapees(self.token, proc.pid, self.os, self.leaders)
        code = end_helper(proc, self.token, self.os, self.leaders)
        self.helpers.discard(proc.pid)
        if status is None:
            status = ExitStatus(known=False) if code is None else \
                ExitStatus(code=code) if code >= 0 else ExitStatus(signal=-code)
        self._drain()
        self.post(i.StopCommandEnded(self.number, status, self._killed, tuple(left)))

    # -- its output -------------------------------------------------------------------

    def _read(self) -> None:
        fd = self._fd
        if fd is None:
            return
        try:
            data = os.read(fd, READ_SIZE)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if data:
            self._show(self._splitter.feed(data))
        else:
            self._close_pipe()

    def _drain(self) -> None:
        """What it wrote before it ended; then the pipe is closed (whatever of it could
        still hold the pipe is gone with its tree)."""
        fd = self._fd
        for _ in range(256):  # at most 16 MB: a flood cannot hold the loop
            if fd is None:
                return
            try:
                data = os.read(fd, READ_SIZE)
            except OSError:
                break
            if not data:
                break
            self._show(self._splitter.feed(data))
        self._close_pipe()

    def _close_pipe(self) -> None:
        if self._fd is None:
            return
        self.loop.remove_reader(self._fd)
        os.close(self._fd)
        self._fd = None
        self._show(self._splitter.finish())
        if self._hidden:
            self.show(f"stop command: {self._hidden} more lines not shown")
            self._hidden = 0

    def _show(self, lines: list[str]) -> None:
        for line in lines:
            if self._shown >= MAX_LINES:
                self._hidden += 1
                continue
            self._shown += 1
            self.show(MARK + line)
            self.log((MARK + line + "\n").encode("utf-8", "backslashreplace"))

    def close(self) -> list[int] | None:
        """The run is over (or proctui is closing): it goes now. Returns None when it had
        already ended, else what of it had left its group (killed with it), for the
        caller to name: its end is no longer reported as a fact of the run."""
        left: list[int] | None = None
        if not self._done and self.proc is not None:
            self._killed = "proctui is closing"
            self._done = True
            self._cancel_timer()
            left = helper_escapees(self.token, self.proc.pid, self.os, self.leaders)
            end_helper(self.proc, self.token, self.os, self.leaders)
            self.helpers.discard(self.proc.pid)
        if self._pidfd is not None:
            self.loop.remove_reader(self._pidfd)
            os.close(self._pidfd)
            self._pidfd = None
        if self._fd is not None:
            self.loop.remove_reader(self._fd)
            os.close(self._fd)
            self._fd = None
        return left

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
