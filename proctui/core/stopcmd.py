"""A run's stop command (``stop_command``, as systemd's ExecStop): started when the stop
begins, instead of the stop signal or before it. It is a child of proctui in a session
of its own; its output goes to the run's pane and log file, each line marked; it is
bounded by the run's deadline (killed with its whole group there, at a kill, or when
proctui closes). Nothing waits for it: the run ends when its own processes are gone,
and the stop command's end is only reported (and, with ``stop_command_then_signal``,
followed by the stop signal)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import time
from typing import TYPE_CHECKING

from proctui.core.life import stop as m
from proctui.core.life.outcome import ExitStatus, signal_name
from proctui.core.output.lines import LineSplitter
from proctui.core.store.kinds import Kind

if TYPE_CHECKING:
    from proctui.core.run import Run

MARK = "stop command | "  # in front of each of its lines, in the pane and the log file
MAX_LINES = 200  # of its output shown; the rest is counted, not shown
READ_SIZE = 1 << 16
POLL = 0.05  # seconds between looks when no pidfd can be had


class StopCommand:
    def __init__(self, run: Run, helpers: set[int]) -> None:
        self.run = run
        self.helpers = helpers  # our own children: not a run's, not for the orphan reaper
        self.proc: subprocess.Popen[bytes] | None = None
        self._fd: int | None = None  # the read end of its stdout and stderr
        self._pidfd: int | None = None
        self._splitter = LineSplitter(run.spec.max_line_length)
        self._shown = 0
        self._hidden = 0
        self._timer: asyncio.TimerHandle | None = None
        self._deadline: float | None = None
        self.killed = ""  # why proctui killed it ("": it was not)
        self.status: ExitStatus | None = None

    @property
    def running(self) -> bool:
        return self.proc is not None and self.status is None

    def start(self) -> None:
        run = self.run
        env = run.spec.environ()
        env["MAINPID"] = str(run.pid or "")  # as systemd gives ExecStop
        try:
            r, w = os.pipe2(os.O_CLOEXEC)
        except OSError as e:
            self._not_started(e)
            return
        try:
            self.proc = subprocess.Popen(
                run.spec.stop_command, cwd=str(run.spec.cwd), env=env,
                stdin=subprocess.DEVNULL, stdout=w, stderr=w, start_new_session=True,
                close_fds=True)
        except (OSError, ValueError, subprocess.SubprocessError) as e:
            os.close(r)
            self._not_started(e)
            return
        finally:
            with contextlib.suppress(OSError):
                os.close(w)
        pid = self.proc.pid
        self.helpers.add(pid)
        run.host.journal_run(run, Kind.STOP_COMMAND, pid=pid)
        os.set_blocking(r, False)
        self._fd = r
        run.loop.add_reader(r, self._read)
        try:
            self._pidfd = os.pidfd_open(pid)
            run.loop.add_reader(self._pidfd, self._look)
        except OSError:
            self._poll()

    def _not_started(self, e: BaseException) -> None:
        run = self.run
        self.status = ExitStatus(known=False)
        run.host.notice(run, f"stop command failed to start: {e}")
        run.host.journal_run(run, Kind.STOP_COMMAND, error=str(e))
        run.feed(m.StopCommandEnded(time.monotonic()))

    def bound(self, deadline: float) -> None:
        """Kill it at this instant (the run's deadline in force): it never outlives it."""
        if not self.running or deadline == self._deadline:
            return
        self._deadline = deadline
        self._cancel_timer()
        self._timer = self.run.loop.call_at(deadline, self.kill)

    def kill(self, why: str = "its deadline came") -> None:
        """SIGKILL its whole group, while its leader is unreaped (so the group id is
        still its own)."""
        self._cancel_timer()
        proc = self.proc
        if proc is None or self.status is not None or proc.returncode is not None:
            return
        self.killed = why
        with contextlib.suppress(OSError):
            os.killpg(proc.pid, signal.SIGKILL)

    def _poll(self) -> None:
        if self._look():
            return
        self.run.loop.call_later(POLL, self._poll)

    def _look(self) -> bool:
        """Has it ended? Then what is left of its group goes, it is reaped and reported."""
        proc = self.proc
        if proc is None or self.status is not None:
            return True
        try:
            info = os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:  # reaped already: its status is lost
            self.status = ExitStatus(known=False)
        else:
            if info is None:
                return False
            # A zombie still holds its group id: the rest of its group goes with it.
            with contextlib.suppress(OSError):
                os.killpg(proc.pid, signal.SIGKILL)
            code = proc.poll()
            self.status = ExitStatus(known=False) if code is None else \
                ExitStatus(code=code) if code >= 0 else ExitStatus(signal=-code)
        self.helpers.discard(proc.pid)
        self._ended()
        return True

    def _ended(self) -> None:
        run = self.run
        self._cancel_timer()
        if self._pidfd is not None:
            run.loop.remove_reader(self._pidfd)
            os.close(self._pidfd)
            self._pidfd = None
        self._drain()
        status = self.status or ExitStatus(known=False)
        run.host.journal_run(run, Kind.STOP_COMMAND, pid=self.proc.pid if self.proc else None,
                             code=status.code,
                             signal=signal_name(status.signal) if status.signal else None,
                             killed=self.killed or None)
        if self.killed:
            run.host.notice(run, f"stop command killed (SIGKILL to its group): {self.killed}")
        elif status.code != 0:
            run.host.notice(run, f"stop command {_words(status)}")
        run.feed(m.StopCommandEnded(time.monotonic()))

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
        still hold the pipe was in its group, and is gone)."""
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
        self.run.loop.remove_reader(self._fd)
        os.close(self._fd)
        self._fd = None
        self._show(self._splitter.finish())
        if self._hidden:
            self.run.host.notice(self.run, f"stop command: {self._hidden} more lines not "
                                           "shown")
            self._hidden = 0

    def _show(self, lines: list[str]) -> None:
        run = self.run
        for line in lines:
            if self._shown >= MAX_LINES:
                self._hidden += 1
                continue
            self._shown += 1
            run.host.notice(run, MARK + line)
            log = run.pipes.log
            if log is not None:
                log.write((MARK + line + "\n").encode("utf-8", "backslashreplace"))

    def close(self) -> None:
        """proctui is closing: it goes now."""
        self.kill("proctui is closing")
        if self._pidfd is not None:
            self.run.loop.remove_reader(self._pidfd)
            os.close(self._pidfd)
            self._pidfd = None
        if self._fd is not None:
            self.run.loop.remove_reader(self._fd)
            os.close(self._fd)
            self._fd = None

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None


def _words(status: ExitStatus) -> str:
    if status.signal is not None:
        return f"killed by {signal_name(status.signal)}"
    return f"exited {status.code}" if status.known else "ended (exit status unknown)"
