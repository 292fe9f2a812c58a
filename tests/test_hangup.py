"""The console on a real pseudo-terminal: the terminal goes away (SIGHUP) or proctui gets
SIGTERM; every child ends per policy, proctui exits, nothing is orphaned."""

from __future__ import annotations

import json
import os
import shlex
import signal
import sys
import time
from pathlib import Path

import pytest

from proctui.core.store.rundir import RunDir
from tests.children import POLITE, SLOW, STUBBORN
from tests.conftest import PY, alive, wait_until
from tests.terminal import Pty


class OnPty(Pty):
    """``proctui run ARGS`` on a pty that is its controlling terminal."""

    def __init__(self, tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> None:
        self.run_dir = tmp_path / "run"
        super().__init__([sys.executable, "-m", "proctui", "run", "--run-dir",
                          str(self.run_dir), *args], tmp_path, size=(30, 100), env=env)

    def pids(self, count: int, timeout: float = 60.0) -> list[int]:
        """The children's pids, from their PID files, once all ``count`` have started."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.read()
            entries = RunDir(self.run_dir).scan() if self.run_dir.exists() else []
            records = [e.record for e in entries if e.record is not None]
            if len(records) == count:
                return [r.pid for r in records]
        raise AssertionError(f"{count} processes did not start: {self.screen[-500:]!r}")

    def wait(self, timeout: float = 30.0) -> int:
        return self.proc.wait(timeout)


def handles_term(pid: int) -> bool:
    """The child has set its SIGTERM disposition (ignored or caught): it is ready."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    masks = dict(line.split(":\t", 1) for line in status.splitlines() if ":\t" in line)
    bit = 1 << (signal.SIGTERM - 1)
    return bool((int(masks["SigIgn"], 16) | int(masks["SigCgt"], 16)) & bit)


def py(code: str) -> str:
    return f"{PY} -c {shlex.quote(code)}"


@pytest.fixture
def on_pty(tmp_path):
    made: list[OnPty] = []

    def start(*args: str) -> OnPty:
        console = OnPty(tmp_path, *args)
        made.append(console)
        return console

    yield start
    for console in made:
        console.close()


@pytest.mark.slow
def test_terminal_hangup_stops_everything_and_exits(on_pty):
    console = on_pty("--stop-timeout", "1", f"web={py(POLITE)}", f"stub={py(STUBBORN)}",
                     f"slow={py(SLOW.format(seconds=0.5))}")
    pids = console.pids(3)
    wait_until(lambda: all(handles_term(pid) for pid in pids), what="SIGTERM handlers")
    console.hang_up()
    status = console.wait(timeout=30)
    assert status == 1  # stub had to be killed
    for pid in pids:
        assert not alive(pid), f"pid {pid} was orphaned"
    assert list((console.run_dir).glob("*.pid")) == []


def test_hangup_with_ask_does_not_wait_for_an_answer(on_pty):
    console = on_pty("--stop-timeout", "0.5", "--on-timeout", "ask", f"stub={py(STUBBORN)}")
    (pid,) = console.pids(1)
    wait_until(lambda: handles_term(pid), what="the SIGTERM handler")
    console.hang_up()
    assert console.wait(timeout=30) == 1
    assert not alive(pid)


def test_sigterm_to_the_console_stops_everything_and_exits(on_pty):
    console = on_pty("--stop-timeout", "1", f"web={py(POLITE)}", f"stub={py(STUBBORN)}")
    pids = console.pids(2)
    wait_until(lambda: all(handles_term(pid) for pid in pids), what="SIGTERM handlers")
    console.proc.send_signal(signal.SIGTERM)
    assert console.finish(timeout=30) == 1
    for pid in pids:
        assert not alive(pid)
    assert b"killed with SIGKILL after 1s stop timeout" in console.screen


# Holds `import textual.app` until the file "go" exists in the working directory: the
# window between the processes starting and the console existing, made as long as a
# test needs (on a slow board it is seconds long by itself).
HOLD_TEXTUAL = """
import os, sys, time
class Hold:
    def find_spec(self, name, path=None, target=None):
        if name == "textual.app":
            deadline = time.monotonic() + 60
            while not os.path.exists("go") and time.monotonic() < deadline:
                time.sleep(0.02)
        return None
sys.meta_path.insert(0, Hold())
"""


def test_sigterm_before_the_console_exists_still_quits_it_and_prints_the_summary(tmp_path):
    """SIGTERM while Textual is still loading (the processes already run): the stop
    begins at once, and the console, once it exists, quits as after any SIGTERM and
    prints the summary, rather than sitting there until the guard's last resort."""
    hold = tmp_path / "hold"
    hold.mkdir()
    (hold / "sitecustomize.py").write_text(HOLD_TEXTUAL)
    console = OnPty(tmp_path, "--stop-timeout", "1", f"web={py(POLITE)}",
                    env={"PYTHONPATH": str(hold)})
    try:
        (pid,) = console.pids(1)
        wait_until(lambda: handles_term(pid), what="the SIGTERM handler")
        console.proc.send_signal(signal.SIGTERM)
        wait_until(lambda: not alive(pid), what="web to be stopped before the console exists")
        (tmp_path / "go").touch()
        assert console.finish(timeout=30) == 0
        assert b"summary:" in console.screen and b"web" in console.screen
    finally:
        (tmp_path / "go").touch()
        console.close()


def _cpu_seconds(pid: int) -> float:
    raw = Path(f"/proc/{pid}/stat").read_bytes()
    fields = raw[raw.rindex(b")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@pytest.mark.slow
def test_a_terminal_gone_without_a_sighup_is_a_hangup_not_a_busy_loop(tmp_path):
    """The console's pty is closed while proctui is not in the pty's session: no SIGHUP
    comes, only EOF and EIO. proctui must stop everything per policy (ask acting as
    kill) and exit, without spinning meanwhile."""
    run_dir = tmp_path / "run"
    pty = Pty([sys.executable, "-m", "proctui", "run", "--run-dir", str(run_dir),
               "--stop-timeout", "2", "--on-timeout", "ask", f"stub={py(STUBBORN)}"],
              tmp_path, size=(24, 80), controlling=False)  # no controlling terminal
    proc = pty.proc
    try:
        pty.wait_for(b"running", timeout=20)
        (pid,) = [json.loads(p.read_text())["pid"] for p in run_dir.glob("*.pid")]
        wait_until(lambda: handles_term(pid), what="the SIGTERM handler")
        pty.hang_up()
        time.sleep(0.5)  # let it notice; then measure it while it waits out the stop
        before = _cpu_seconds(proc.pid)
        time.sleep(1.0)
        spent = _cpu_seconds(proc.pid) - before
        assert spent < 0.3, f"{spent:.2f}s of CPU in 1s after the terminal went away"
        assert proc.wait(timeout=30) == 1  # ask acted as kill: nobody could answer
        assert not alive(pid)
    finally:
        pty.close()
