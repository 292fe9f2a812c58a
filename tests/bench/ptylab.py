"""A command on a pseudo-terminal that the benchmark reads itself: every byte the command
writes to its terminal is counted, and nothing but Python is needed (no tmux), so the
same measurement runs on the host and inside an emulated riscv64 root."""

from __future__ import annotations

import contextlib
import fcntl
import os
import select
import signal
import struct
import subprocess
import termios
import threading
import time


class OnPty:
    def __init__(self, cmd: list[str], width: int = 80, height: int = 24,
                 env: dict[str, str] | None = None, cwd: str | None = None,
                 watch: tuple[bytes, ...] = ()) -> None:
        """``watch``: texts whose arrival the reader notes the moment it reads them, with
        the command's CPU time then (``arrival``)."""
        self._arrivals: dict[bytes, tuple[float, float] | None] = dict.fromkeys(watch)
        self.master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", height, width, 0, 0))
        self.started = time.monotonic()
        self.proc = subprocess.Popen(
            cmd, stdin=slave, stdout=slave, stderr=slave, cwd=cwd,
            env={**os.environ, "TERM": "xterm-256color", **(env or {})},
            start_new_session=True)
        os.close(slave)
        self.data = bytearray()
        self.total = 0  # bytes written to the terminal so far
        self._lock = threading.Lock()
        self._arrived = threading.Condition(self._lock)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while True:
            try:
                ready, _, _ = select.select([self.master], [], [], 0.2)
                if not ready:
                    if self.proc.poll() is not None:
                        return
                    continue
                chunk = os.read(self.master, 1 << 16)
            except OSError:
                return
            if not chunk:
                return
            with self._lock:
                self.total += len(chunk)
                self.data += chunk
                for needle, seen in self._arrivals.items():
                    if seen is None and needle in self.data[-len(chunk) - len(needle):]:
                        # Here, not in a polling loop: the command goes on working while
                        # a poller sleeps, and that work is not the frame's.
                        self._arrivals[needle] = (time.monotonic() - self.started,
                                                  cpu_seconds(self.proc.pid))
                if len(self.data) > 1 << 20:
                    del self.data[: len(self.data) - (1 << 19)]
                self._arrived.notify_all()

    def wait_for(self, needle: bytes, timeout: float = 120.0) -> float:
        """Seconds from the start until ``needle`` was seen on the terminal."""
        with self._arrived:
            if not self._arrived.wait_for(lambda: needle in self.data, timeout):
                raise TimeoutError(f"{needle!r} never appeared: {bytes(self.data[-300:])!r}")
            return time.monotonic() - self.started

    def arrival(self, needle: bytes, timeout: float = 120.0) -> tuple[float, float]:
        """(seconds from the start, the command's CPU seconds) when the reader read the
        bytes that completed ``needle``, one of those given as ``watch``."""
        with self._arrived:
            if not self._arrived.wait_for(lambda: self._arrivals[needle] is not None, timeout):
                raise TimeoutError(f"{needle!r} never appeared: {bytes(self.data[-300:])!r}")
            seen = self._arrivals[needle]
            assert seen is not None
            return seen

    def keys(self, text: bytes) -> None:
        os.write(self.master, text)

    def stop(self) -> None:
        """End it, its children and the terminal (by pid and process group)."""
        with contextlib.suppress(OSError):
            os.killpg(self.proc.pid, signal.SIGTERM)  # the console stops everything on it
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(OSError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        with contextlib.suppress(OSError):
            os.close(self.master)


def cpu_seconds(pid: int) -> float:
    """CPU time of every thread of ``pid`` so far, in nanoseconds' resolution where the
    kernel keeps schedstat (clock ticks are 10 ms: too coarse for an idle process)."""
    total, known = 0, False
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/schedstat", "rb") as f:
                total += int(f.read().split()[0])
                known = True
    except (OSError, ValueError, IndexError):
        known = False
    if known:
        return total / 1e9
    with open(f"/proc/{pid}/stat", "rb") as f:
        raw = f.read()
    fields = raw[raw.rindex(b")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
