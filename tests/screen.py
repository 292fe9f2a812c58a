"""The console as the operator sees it: the installed program on a real pseudo-terminal,
its bytes fed to a terminal emulator (pyte), and the tests read the screen's cells.
What the operator must see is asserted here, never on a view drawn by hand."""

from __future__ import annotations

import time
from pathlib import Path

import pyte

from tests.terminal import Pty


class Screen:
    """``argv`` on a pty of ``rows`` x ``columns``, read through a VT emulator."""

    def __init__(self, argv: list[str], cwd: Path, rows: int, columns: int,
                 env: dict[str, str] | None = None, controlling: bool = False) -> None:
        """``controlling``: the pty is its controlling terminal (ctrl+c, pressed as
        ``\x03``, is echoed as "^C" and sends SIGINT, as in the operator's terminal)."""
        self.rows, self.columns = rows, columns
        self.pty = Pty(argv, cwd, size=(rows, columns), controlling=controlling, env=env)
        self.vt = pyte.Screen(columns, rows)
        self.stream = pyte.ByteStream(self.vt)
        self._fed = 0

    def pump(self, timeout: float = 0.05) -> None:
        self.pty.read(timeout)
        new = self.pty.screen[self._fed:]
        self._fed = len(self.pty.screen)
        if new:
            self.stream.feed(new)

    def resize(self, rows: int, columns: int) -> None:
        """The terminal window made ``rows`` x ``columns``, as a user drags it: the pty's
        size, then SIGWINCH (the program has no controlling terminal to send it)."""
        import fcntl
        import os
        import signal
        import struct
        import termios

        self.pump()
        fcntl.ioctl(self.pty.master, termios.TIOCSWINSZ,
                    struct.pack("HHHH", rows, columns, 0, 0))
        self.rows, self.columns = rows, columns
        self.vt.resize(rows, columns)
        os.kill(self.pty.proc.pid, signal.SIGWINCH)

    def lines(self) -> list[str]:
        return [line.rstrip() for line in self.vt.display]

    def text(self) -> str:
        return "\n".join(self.lines())

    def wait(self, predicate, timeout: float = 30.0, what: str = "the screen") -> None:
        """Read until ``predicate(lines)`` holds; on failure, show the screen."""
        deadline = time.monotonic() + timeout
        while True:
            self.pump()
            if predicate(self.lines()):
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}; screen:\n{self.text()}")

    def wait_text(self, text: str, timeout: float = 30.0) -> None:
        self.wait(lambda lines: any(text in line for line in lines), timeout, repr(text))

    def settle(self, quiet: float = 0.4, timeout: float = 10.0) -> None:
        """Read until nothing new has arrived for ``quiet`` seconds."""
        deadline = time.monotonic() + timeout
        last = time.monotonic()
        while time.monotonic() < deadline:
            before = self._fed
            self.pump()
            if self._fed != before:
                last = time.monotonic()
            elif time.monotonic() - last >= quiet:
                return

    def press(self, keys: bytes) -> None:
        self.pty.press(keys)

    def finish(self, timeout: float = 30.0) -> int:
        return self.pty.finish(timeout)

    def close(self) -> None:
        self.pty.close()


def together(*plays) -> None:
    """Play several screens at once, each by its own script: a generator that presses
    keys on its screen and yields ``(predicate, what, timeout)`` to wait for. Every
    screen is read in turn, so none waits behind another (a countdown seen on one is
    not missed while another is being waited for). Long waits (a demo's pace) overlap
    instead of adding up."""
    active = []
    for screen, script in plays:
        active.append([screen, script, next(script), time.monotonic()])
    while active:
        for play in list(active):
            screen, script, (predicate, what, timeout), since = play
            screen.pump(0.01)
            if predicate(screen.lines()):
                try:
                    play[2], play[3] = next(script), time.monotonic()
                except StopIteration:
                    active.remove(play)
            elif time.monotonic() - since > timeout:
                raise AssertionError(f"{screen.columns}x{screen.rows}: timed out waiting for "
                                     f"{what}; screen:\n{screen.text()}")


KEYS = {"up": b"\x1b[A", "down": b"\x1b[B", "pgup": b"\x1b[5~", "pgdn": b"\x1b[6~",
        "home": b"\x1b[H", "end": b"\x1b[F", "escape": b"\x1b", "enter": b"\r",
        "tab": b"\t"}
