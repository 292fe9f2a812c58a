"""A command on a real pseudo-terminal, as a user's terminal runs it: the tests read its
screen, press keys and hang it up."""

from __future__ import annotations

import contextlib
import fcntl
import os
import select
import struct
import subprocess
import termios
import time
from pathlib import Path


def controlling_tty() -> None:
    """In the child: a session of its own whose controlling terminal is the pty, so that
    closing the master sends it SIGHUP."""
    os.setsid()
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


class Pty:
    """``argv`` on a new pty of ``size`` (rows, columns). ``controlling=False``: in a
    session of its own with no controlling terminal, so that losing the pty brings only
    EOF and EIO, never a SIGHUP."""

    def __init__(self, argv: list[str], cwd: Path, size: tuple[int, int] = (30, 110),
                 controlling: bool = True, env: dict[str, str] | None = None) -> None:
        rows, columns = size
        self.master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
        env = {**os.environ, "TERM": "xterm", "COLUMNS": str(columns), "LINES": str(rows),
               **(env or {})}
        self.proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env,
                                     cwd=cwd,
                                     preexec_fn=controlling_tty if controlling else None,
                                     start_new_session=not controlling)
        os.close(slave)
        self.screen = b""
        self.closed = False

    def read(self, timeout: float = 0.1) -> None:
        if self.closed:
            time.sleep(timeout)
            return
        ready, _, _ = select.select([self.master], [], [], timeout)
        if ready:
            try:
                self.screen += os.read(self.master, 1 << 16)
            except OSError:
                time.sleep(timeout)

    def wait_for(self, text: bytes, timeout: float = 30.0) -> None:
        start = len(self.screen)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.read()
            if text in self.screen[start:] or text in self.screen[-4000:]:
                return
        raise AssertionError(f"{text!r} never shown; screen ends {self.screen[-800:]!r}")

    def press(self, keys: bytes) -> None:
        os.write(self.master, keys)

    def hang_up(self) -> None:
        os.close(self.master)
        self.closed = True

    def finish(self, timeout: float = 20.0) -> int:
        deadline = time.monotonic() + timeout
        while self.proc.poll() is None and time.monotonic() < deadline:
            self.read(0.05)
        if self.proc.poll() is None:
            self.proc.kill()
            raise AssertionError(f"still running after {timeout}s: {self.screen[-800:]!r}")
        if not self.closed:
            self.hang_up()
        return self.proc.returncode

    def close(self) -> None:
        """After a test, passed or failed: nothing left running, no descriptor left."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        if not self.closed:
            with contextlib.suppress(OSError):
                self.hang_up()


def printed(screen: bytes) -> str:
    """What a program printed on a terminal, as text: its colours and other sequences
    taken out, lines ending in a plain newline."""
    import re

    text = re.sub(r"\x1b\[[0-9;?<>=]*[A-Za-z~]", "", screen.decode(errors="replace"))
    return text.replace("\r\n", "\n")
