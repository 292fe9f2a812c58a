"""`proctui down` against a console run: the supervisor goes down, so the console leaves
once everything has ended (with its summary), and down returns then, not after its
wait for the supervisor to exit runs out."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time

from proctui.protocol import wire
from tests.children import POLITE
from tests.conftest import PY, alive
from tests.test_hangup import OnPty, py


def test_down_from_another_terminal_ends_the_console_and_returns_promptly(tmp_path):
    console = OnPty(tmp_path, "--stop-timeout", "5", f"polite={py(POLITE)}", "b=sleep 60")
    pids: list[int] = []
    try:
        pids = console.pids(2)
        console.wait_for(b"running")
        started = time.monotonic()
        down = subprocess.Popen([PY, "-m", "proctui", "down", "--run-dir",
                                 str(console.run_dir)], stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT)
        try:
            while down.poll() is None and time.monotonic() - started < 30:
                console.read(0.05)  # the console must never block on a full terminal
            took = time.monotonic() - started
            out = down.communicate(timeout=30)[0].decode()
        finally:
            if down.poll() is None:
                down.kill()
        status = console.finish(20)
        assert down.returncode == 0, out
        assert "polite" in out and "stopped after" in out, out
        # The supervisor exits once everything has ended: down waits no longer (it gave
        # up after 10 s while the console stayed open).
        assert took < 8.0, f"down took {took:.1f}s\n{out}"
        assert status == 0
        assert b"summary:" in console.screen, console.screen[-800:]
        assert not any(alive(pid) for pid in pids)
        assert not (console.run_dir / wire.SOCKET).exists()
    finally:
        console.close()
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
