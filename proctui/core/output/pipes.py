"""A run's stdout and stderr pipes: read in big chunks, split into lines by our own code,
appended to the ring buffer. Never blocks the child: the core reads whatever is there.

A pipe is read until its last writer is gone, even after the run has its outcome (a
descendant that escaped may still write to it). When proctui exits with a writer still
there, the pipes go to a small drainer process so that the writer never gets EPIPE.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import subprocess
import sys
from collections.abc import Callable

from proctui.core.output.lines import Chunk, LineSplitter, OutputBuffer, Stream
from proctui.core.store.logfiles import LogFile

PIPE_SIZE = 1 << 20  # fewer wake-ups under a flood, and more slack before a child blocks
READ_SIZE = 1 << 18  # per wake-up: small enough that a flood cannot hold off a deadline
DRAINER_ROOM = 16 << 20

# Keeps the pipes of a process left running open after proctui exits. Appends at most
# 16 MB to the descriptor it is given (opened by proctui, never through a symlink).
_DRAINER = """
import os, select, sys
out, room, fds = int(sys.argv[1]), int(sys.argv[2]), [int(a) for a in sys.argv[3:]]
while fds:
    for fd in select.select(fds, [], [])[0]:
        data = os.read(fd, 65536)
        if not data:
            fds.remove(fd)
        elif out >= 0 and room > 0:
            try:
                os.write(out, data[:room])
            except OSError:
                out = -1
            room -= len(data)
"""


class Pipes:
    def __init__(self, loop: asyncio.AbstractEventLoop, buffer: OutputBuffer, max_len: int,
                 deliver: Callable[[int, Chunk], None] | None,
                 log: LogFile | None = None) -> None:
        self.loop = loop
        self.log = log
        self.buffer = buffer
        self.max_len = max_len
        self._deliver_to = deliver
        self._open: dict[int, tuple[int, LineSplitter]] = {}
        self.on_closed: Callable[[], None] | None = None
        self.paused = False  # not read while a line printer takes what is queued
        self.pauses = 0

    def create(self) -> tuple[int, int]:
        """Make both pipes; returns the write ends for the child. Raises OSError (with
        everything closed) when the system is out of descriptors."""
        made: list[int] = []
        try:
            r_out, w_out = os.pipe2(os.O_CLOEXEC)
            made += [r_out, w_out]
            r_err, w_err = os.pipe2(os.O_CLOEXEC)
            made += [r_err, w_err]
        except OSError:
            for fd in made:
                os.close(fd)
            raise
        for w in (w_out, w_err):
            with contextlib.suppress(OSError, AttributeError):
                fcntl.fcntl(w, fcntl.F_SETPIPE_SZ, PIPE_SIZE)
        for fd, stream in ((r_out, Stream.STDOUT), (r_err, Stream.STDERR)):
            os.set_blocking(fd, False)
            self._open[fd] = (stream, LineSplitter(self.max_len))
        return w_out, w_err

    def start(self) -> None:
        for fd in self._open:
            self.loop.add_reader(fd, self._read_once, fd)

    def pause(self) -> None:
        """Read no more until ``resume``: the child waits on its full pipe meanwhile.
        (``read_now`` still reads: output written before the outcome is taken.)"""
        if not self.paused:
            self.paused = True
            self.pauses += 1
            for fd in self._open:
                self.loop.remove_reader(fd)

    def resume(self) -> None:
        if self.paused:
            self.paused = False
            self.start()

    @property
    def open(self) -> bool:
        return bool(self._open)

    def _read_once(self, fd: int) -> int:
        """One read into the buffer. Returns the bytes read, 0 at EOF (the pipe is then
        closed), -1 when it is empty for now."""
        stream, splitter = self._open[fd]
        try:
            data = os.read(fd, READ_SIZE)
        except BlockingIOError:
            return -1
        except OSError:
            data = b""
        if data:
            if self.log is not None:
                self.log.write(data)
            lines = splitter.feed_chunk(data)
        else:
            lines = Chunk(splitter.finish())
            self._close(fd)
        self._deliver(stream, lines, splitter.partial)
        return len(data)

    def _deliver(self, stream: int, lines: Chunk, partial: str) -> None:
        self.buffer.append(stream, lines, partial)
        if self._deliver_to is not None:
            self._deliver_to(stream, lines)  # even none: a progress bar moved

    def read_now(self, limit: int = 64 << 20) -> None:
        """Read every pipe until it is empty for now (or ``limit`` bytes in all): output
        already written belongs before the outcome."""
        budget = limit
        for fd in list(self._open):
            while fd in self._open and budget > 0:
                got = self._read_once(fd)
                if got < 0:
                    break
                budget -= got

    def _close(self, fd: int) -> None:
        if self._open.pop(fd, None) is not None:
            if not self.paused:
                self.loop.remove_reader(fd)
            os.close(fd)
            if not self._open and self.on_closed is not None:
                self.on_closed()

    def close(self) -> None:
        for fd in list(self._open):
            stream, splitter = self._open[fd]
            self._close(fd)
            self._deliver(stream, Chunk(splitter.finish()), "")

    def hand_over(self, out_fd: int | None) -> int | None:
        """proctui is exiting and something still holds these pipes: if they just closed,
        its next write would kill it (SIGPIPE) or fail. Hand them to a drainer, in its
        own session, that appends what comes to ``out_fd`` and ends by itself at EOF.
        Returns the drainer's pid."""
        if not self._open:
            return None
        self.read_now()
        fds = list(self._open)
        for fd in fds:
            self.loop.remove_reader(fd)
            os.set_blocking(fd, True)
        passed = [*fds, out_fd] if out_fd is not None else fds
        try:
            drainer = subprocess.Popen(
                [sys.executable, "-c", _DRAINER, str(out_fd if out_fd is not None else -1),
                 str(DRAINER_ROOM), *map(str, fds)],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL, pass_fds=passed, start_new_session=True,
            )
        except OSError:
            return None
        finally:
            for fd in fds:
                self._open.pop(fd, None)
                os.close(fd)
        # Not ours to wait for after we exit; the orphan reaper takes it if it ends first.
        drainer.returncode = 0
        return drainer.pid
