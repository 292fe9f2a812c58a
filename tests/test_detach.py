"""Supervision that outlives the terminal, as an operator over SSH meets it: the real
``proctui`` command, a detached supervisor, consoles attached on real pseudo-terminals
that hang up, and the control commands deciding what nobody was there to decide."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.children import POLITE, STUBBORN
from tests.conftest import PY, alive, wait_until
from tests.terminal import Pty, printed


def proctui(*args: str, cwd: Path | None = None, timeout: float = 60.0,
            check: bool = False) -> subprocess.CompletedProcess[str]:
    got = subprocess.run([PY, "-m", "proctui", *args], capture_output=True, text=True,
                         timeout=timeout, cwd=cwd, stdin=subprocess.DEVNULL)
    assert "Traceback" not in got.stderr, got.stderr
    if check:
        assert got.returncode == 0, (got.stdout, got.stderr)
    return got


def toml_str(text: str) -> str:
    return json.dumps(text)  # a JSON string is a TOML basic string


def write_config(tmp_path: Path, hung_timeout: float = 1.0, extra: str = "") -> Path:
    config = tmp_path / "proctui.toml"
    config.write_text(f"""
[defaults]
stop_timeout = 5
{extra}

[processes.svc]
cmd = [{toml_str(PY)}, "-c", {toml_str(POLITE)}]

[processes.hung]
cmd = [{toml_str(PY)}, "-c", {toml_str(STUBBORN)}]
stop_timeout = {hung_timeout}
on_timeout = "ask"
""")
    return config


TICKER = "import time\nfor i in range(10**6):\n    print('tick', i, flush=True)\n" \
         "    time.sleep(0.05)\n"


def ticking(tmp_path: Path, detached):  # type: ignore[no-untyped-def]
    """A detached supervisor of one process, tick, that prints a line every 50 ms."""
    config = tmp_path / "proctui.toml"
    config.write_text(f'[processes.tick]\ncmd = [{toml_str(PY)}, "-c", {toml_str(TICKER)}]\n')
    d = detached(config)
    d.wait_for("tick", "running", lambda p: p["phase"] == "running")
    return d


class Detached:
    """A supervisor started with ``proctui up``; ended (SIGKILL) at teardown if a test
    leaves it running, and its processes by the reaper fixture."""

    def __init__(self, tmp_path: Path, config: Path, status: int = 0) -> None:
        self.tmp_path = tmp_path
        self.run_dir = tmp_path / "run"
        self.where = ("-f", str(config), "--run-dir", str(self.run_dir))
        self.up = proctui("up", *self.where, cwd=tmp_path)
        assert self.up.returncode == status, (self.up.stdout, self.up.stderr)
        self.pid = int(self.up.stdout.split("(pid ")[1].split(")")[0])

    def ctl(self, *args: str) -> subprocess.CompletedProcess[str]:
        where = ("--run-dir", str(self.run_dir))
        return proctui(*args, *where, cwd=self.tmp_path)

    def status(self) -> dict[str, dict]:  # type: ignore[type-arg]
        got = self.ctl("status", "--json")
        assert got.returncode == 0, got.stderr
        return {p["name"]: p for p in json.loads(got.stdout)["processes"]}

    def wait_for(self, name: str, what: str, predicate, timeout: float = 20.0) -> dict:  # type: ignore[no-untyped-def,type-arg]
        return wait_until(lambda: (lambda p: p if predicate(p) else None)(
            self.status()[name]), timeout=timeout, what=f"{name} {what}")  # type: ignore[return-value]

    def kill(self) -> None:
        if alive(self.pid):
            with contextlib.suppress(OSError):
                os.kill(self.pid, signal.SIGKILL)


@pytest.fixture
def detached(tmp_path):  # type: ignore[no-untyped-def]
    made: list[Detached] = []

    def make(config: Path, status: int = 0) -> Detached:
        d = Detached(tmp_path, config, status)
        made.append(d)
        return d

    yield make
    for d in made:
        d.kill()


def attach_on_pty(d: Detached) -> Pty:
    pty = Pty([PY, "-m", "proctui", "attach", "--run-dir", str(d.run_dir)], d.tmp_path)
    pty.wait_for(b"attached to supervisor")
    return pty


# -- up, status, down --------------------------------------------------------------------


@pytest.mark.slow
def test_up_returns_once_everything_started_and_down_ends_it_as_run_would(tmp_path,
                                                                          detached):
    config = write_config(tmp_path, extra='on_timeout = "kill"')
    config.write_text(config.read_text().replace('on_timeout = "ask"', 'on_timeout = "kill"'))
    d = detached(config)
    assert "started under a detached supervisor" in d.up.stdout
    assert f"proctui attach -f {config}" in d.up.stdout or "proctui attach" in d.up.stdout
    # Started, in a session of its own, before `up` returned.
    assert os.getsid(d.pid) == d.pid
    status = d.status()
    assert {p["phase"] for p in status.values()} == {"running"}
    pids = {name: p["pid"] for name, p in status.items()}
    assert all(alive(pid) for pid in pids.values())
    text = d.ctl("status").stdout
    assert text.splitlines()[0].split() == ["NAME", "STATE", "PID"]
    assert f"supervisor pid {d.pid}" in text
    d.wait_for("hung", "ready", lambda p: True)
    wait_until(lambda: "ready" in d.ctl("logs", "hung").stdout, what="hung ready")

    got = d.ctl("down")
    assert "stopping everything" in got.stdout
    assert "svc: stopped after" in got.stdout
    assert "hung: killed with SIGKILL after 1s stop timeout" in got.stdout
    assert "summary:" in got.stdout
    # The same rule as run: a process that had to be killed makes the status 1.
    assert got.returncode == 1, got.stdout
    # down returns once the supervisor has gone: `proctui up` right after may start.
    assert not alive(d.pid)
    assert not any(alive(pid) for pid in pids.values())
    assert not (d.run_dir / "control.sock").exists()
    log = (d.run_dir / "supervisor.log").read_text()
    assert "summary:" in log and "killed with SIGKILL" in log
    again = d.ctl("status")
    assert again.returncode == 2
    assert again.stderr.count("\n") == 1 and "no supervisor is running" in again.stderr


def test_a_second_supervisor_on_the_same_run_directory_is_refused(tmp_path, detached):
    config = write_config(tmp_path)
    d = detached(config)
    second = proctui("up", *d.where, cwd=tmp_path)
    assert second.returncode == 2
    assert f"another proctui (pid {d.pid}) is running" in second.stderr
    run = proctui("run", "--headless", *d.where, cwd=tmp_path)
    assert run.returncode == 2 and "another proctui" in run.stderr
    assert alive(d.pid)


@pytest.mark.parametrize("args", [
    ("status",), ("status", "--json"), ("stop", "svc"), ("kill", "svc"),
    ("extend", "svc", "5"), ("abandon", "svc"), ("logs", "svc"), ("logs", "svc", "-f"),
    ("down",), ("attach",), ("restart", "svc"), ("start", "svc"),
])
def test_control_commands_without_a_supervisor_say_so_and_exit_2(tmp_path, args):
    got = proctui(*args, "--run-dir", str(tmp_path / "run"), cwd=tmp_path)
    assert got.returncode == 2, got
    assert got.stderr.count("\n") == 1, got.stderr
    assert "no supervisor is running" in got.stderr or "no run directory" in got.stderr


@pytest.mark.slow
def test_bad_names_and_bad_seconds_are_usage_errors(tmp_path, detached):
    d = detached(write_config(tmp_path))
    got = d.ctl("kill", "nope")
    assert got.returncode == 2 and "no process named 'nope'" in got.stderr
    for bad in ("nan", "-3", "0", "inf", "1e99"):
        got = d.ctl("extend", "svc", bad)
        assert got.returncode == 2 and got.stderr.count("\n") == 1, (bad, got.stderr)
    assert {p["phase"] for p in d.status().values()} == {"running"}


# -- the SSH story: attach, hang up, decide later ---------------------------------------


@pytest.mark.slow
def test_attach_hang_up_decide_from_the_next_console(tmp_path, detached):
    d = detached(write_config(tmp_path))
    pids = {name: p["pid"] for name, p in d.status().items()}
    wait_until(lambda: "ready" in d.ctl("logs", "hung").stdout, what="hung ready")

    first = attach_on_pty(d)
    first.wait_for(b"hung")
    first.hang_up()  # the SSH link drops: the pty closes under the console
    assert first.finish() == 0 or first.proc.returncode in (-signal.SIGHUP, 0)
    time.sleep(0.5)
    assert all(alive(pid) for pid in pids.values()), "a hangup stopped nothing"
    assert {p["phase"] for p in d.status().values()} == {"running"}

    # The stop runs while nobody is attached: the deadline arrives and waits.
    assert d.ctl("stop", "hung").returncode == 0
    d.wait_for("hung", "waiting for a decision", lambda p: p["state"] == "deciding")
    time.sleep(1.5)
    hung = d.status()["hung"]
    assert hung["state"] == "deciding" and alive(pids["hung"]), "nobody there: it waits"
    assert hung["decision_since_s"] >= 1.0, hung  # how long the decision has waited
    assert "waiting for a decision" in d.ctl("status").stdout

    second = attach_on_pty(d)
    second.wait_for(b"stop timeout reached,")  # the decision, in the next console
    second.wait_for(b"kill now")  # armed: it ignores keys for its first half second
    second.press(b"K")
    hung = d.wait_for("hung", "killed", lambda p: p["outcome"] is not None)
    assert "killed with SIGKILL by operator" in hung["outcome"]["text"]
    assert not alive(pids["hung"]) and alive(pids["svc"])
    second.press(b"d")
    assert second.finish() == 0
    assert b"detached" in second.screen
    # How to come back, from any directory: a plain `proctui attach` finds only the
    # run directory of the directory it is typed in.
    said = printed(second.screen)
    assert f"\nproctui |   proctui attach --run-dir {d.run_dir}\n" in said, said[-400:]
    assert d.status()["svc"]["phase"] == "running"

    got = d.ctl("down")
    assert "svc: stopped after" in got.stdout
    assert got.returncode == 1  # hung was killed
    wait_until(lambda: not alive(d.pid), what="the supervisor to exit")


@pytest.mark.slow
@pytest.mark.parametrize("decision", ["kill", "extend", "abandon"])
def test_a_decision_nobody_was_there_for_is_taken_by_a_control_command(tmp_path, detached,
                                                                       decision):
    d = detached(write_config(tmp_path))
    wait_until(lambda: "ready" in d.ctl("logs", "hung").stdout, what="hung ready")
    pid = d.status()["hung"]["pid"]
    assert d.ctl("stop", "hung").returncode == 0
    d.wait_for("hung", "waiting for a decision", lambda p: p["state"] == "deciding")
    args = ("extend", "hung", "2") if decision == "extend" else (decision, "hung")
    got = d.ctl(*args)
    assert got.returncode == 0, (got.stdout, got.stderr)
    if decision == "kill":
        hung = d.wait_for("hung", "killed", lambda p: p["outcome"] is not None)
        assert "killed with SIGKILL by operator" in hung["outcome"]["text"]
        assert not alive(pid)
    elif decision == "abandon":
        hung = d.wait_for("hung", "abandoned", lambda p: p["outcome"] is not None)
        assert hung["outcome"]["text"].startswith("abandoned after ")
        assert hung["outcome"]["text"].endswith(f": pid {pid} left running")
        assert alive(pid)
        os.kill(pid, signal.SIGKILL)  # ours to clean up now
    else:
        hung = d.status()["hung"]
        assert hung["phase"] == "stopping" and hung["decision"] is None
        assert 0.5 < hung["deadline_in_s"] <= 2.0
        d.wait_for("hung", "back at a decision", lambda p: p["state"] == "deciding")
        assert alive(pid)


@pytest.mark.slow
def test_a_detached_supervisor_handles_sigterm_like_the_headless_runner(tmp_path,
                                                                        detached):
    d = detached(write_config(tmp_path))
    pids = [p["pid"] for p in d.status().values()]
    wait_until(lambda: "ready" in d.ctl("logs", "hung").stdout, what="hung ready")
    os.kill(d.pid, signal.SIGHUP)  # no terminal to lose: noted and ignored
    time.sleep(0.5)
    assert alive(d.pid) and all(alive(p) for p in pids)
    os.kill(d.pid, signal.SIGTERM)
    # As headless: nobody to ask, so "ask" acts as a kill at the deadline.
    wait_until(lambda: not alive(d.pid), timeout=20, what="the supervisor to exit")
    assert not any(alive(p) for p in pids)
    log = (d.run_dir / "supervisor.log").read_text()
    assert "received SIGHUP" in log and "received SIGTERM" in log
    assert "hung  killed with SIGKILL after 1s stop timeout" in log


@pytest.mark.slow
def test_a_sigkilled_supervisor_leaves_its_processes_to_the_next_one(tmp_path, detached):
    d = detached(write_config(tmp_path))
    old = {name: p["pid"] for name, p in d.status().items()}
    os.kill(d.pid, signal.SIGKILL)
    wait_until(lambda: not alive(d.pid), what="the supervisor gone")
    assert all(alive(pid) for pid in old.values()), "its processes live on"
    assert proctui("status", "--run-dir", str(d.run_dir)).returncode == 2
    d2 = detached(tmp_path / "proctui.toml")
    # The PID files prove the old ones ours: the new supervisor stops them first.
    wait_until(lambda: not alive(old["svc"]), timeout=20, what="the old svc stopped")
    new = d2.status()
    assert new["svc"]["pid"] != old["svc"] and new["svc"]["phase"] == "running"


# -- on_hangup = "detach" for proctui run ---------------------------------------------------


@pytest.mark.slow
def test_run_with_on_hangup_detach_goes_on_after_the_terminal_is_lost(tmp_path):
    config = write_config(tmp_path, extra='on_hangup = "detach"')
    run_dir = tmp_path / "run"
    pty = Pty([PY, "-m", "proctui", "run", "-f", str(config), "--run-dir", str(run_dir)],
              tmp_path)
    try:
        pty.wait_for(b"hung")
        ctl = ("--run-dir", str(run_dir))
        pids = {p["name"]: p["pid"] for p in json.loads(
            proctui("status", "--json", *ctl).stdout)["processes"]}
        pty.hang_up()
        time.sleep(1.0)
        assert pty.proc.poll() is None, "proctui goes on"
        assert all(alive(pid) for pid in pids.values())
        status = json.loads(proctui("status", "--json", *ctl).stdout)
        assert status["supervisor"]["pid"] == pty.proc.pid
        # Its own console is gone: it said "its own console and 0 consoles attached".
        said = proctui("status", *ctl).stdout
        assert "0 consoles attached" in said and "its own console" not in said, said
        got = proctui("down", *ctl)
        assert "summary:" in got.stdout
        assert pty.proc.wait(20) == got.returncode
        assert not any(alive(pid) for pid in pids.values())
        log = (run_dir / "supervisor.log").read_text()
        assert "detached" in log and "summary:" in log
        assert "went away (the terminal went away)" not in log
    finally:
        pty.close()


# Ignores SIGTERM and says so every tenth of a second: its next write after proctui
# exits must find a reader, not a broken pipe.
TICKING_STUBBORN = (
    "import signal,time\n"
    "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    "print('ready', flush=True)\n"
    "while True:\n"
    "    print('tick', flush=True)\n"
    "    time.sleep(0.1)\n"
)


@pytest.mark.slow
def test_an_abandoned_process_outlives_a_console_that_detached_on_hangup(tmp_path,
                                                                       child_reaper):
    """The README's SSH steps: run with on_hangup = "detach", lose the terminal, stop,
    abandon at the decision, down. The summary said "left running" and the process died
    a second later of a broken pipe: the console's detached path gave it no drainer."""
    config = tmp_path / "proctui.toml"
    config.write_text(f"""
[defaults]
on_hangup = "detach"

[processes.probe]
cmd = [{toml_str(PY)}, "-c", {toml_str(TICKING_STUBBORN)}]
stop_timeout = 1
on_timeout = "ask"
""")
    run_dir = tmp_path / "run"
    ctl = ("--run-dir", str(run_dir))
    pty = Pty([PY, "-m", "proctui", "run", "-f", str(config), *ctl], tmp_path)
    try:
        pty.wait_for(b"probe")
        pid = json.loads(proctui("status", "--json", *ctl).stdout)["processes"][0]["pid"]
        pty.hang_up()
        wait_until(lambda: "0 consoles attached" in proctui("status", *ctl).stdout,
                   timeout=20, what="the console to detach")
        assert proctui("stop", "probe", *ctl).returncode == 0
        wait_until(lambda: json.loads(proctui("status", "--json", *ctl).stdout)
                   ["processes"][0]["state"] == "deciding", timeout=20, what="the decision")
        assert proctui("abandon", "probe", *ctl).returncode == 0
        got = proctui("down", *ctl)
        assert f"pid {pid} left running" in got.stdout, got.stdout
        assert got.returncode == 3, got.stdout
        assert pty.proc.wait(20) == 3
        out = run_dir / "probe.out"
        wait_until(lambda: out.exists() and out.read_text().count("tick") >= 5,
                   timeout=20, what="the drainer to take probe's ticks")
        assert alive(pid), "the abandoned process died after proctui exited"
    finally:
        pty.close()


@pytest.mark.slow
def test_run_stops_everything_on_hangup_by_default(tmp_path):
    config = write_config(tmp_path)
    config.write_text(config.read_text().replace('on_timeout = "ask"', ""))
    run_dir = tmp_path / "run"
    pty = Pty([PY, "-m", "proctui", "run", "-f", str(config), "--run-dir", str(run_dir)],
              tmp_path)
    try:
        pty.wait_for(b"hung")
        pids = [p["pid"] for p in json.loads(proctui(
            "status", "--json", "--run-dir", str(run_dir)).stdout)["processes"]]
        pty.hang_up()
        pty.proc.wait(30)
        assert not any(alive(pid) for pid in pids)
    finally:
        pty.close()


def test_the_supervisor_log_rotates_while_it_runs(tmp_path):
    """Past its limit supervisor.log becomes supervisor.log.1 and a fresh file takes
    proctui's stdout and stderr, without a restart (run in a child: it moves fd 1 and 2)."""
    code = f"""
import os, sys
from pathlib import Path
from proctui.core.store.rundir import RunDir
from proctui.daemon.log import open_log, rotate_log
d = RunDir(Path({str(tmp_path / 'run')!r})); d.open()
fd = open_log(d); os.dup2(fd, 1); os.dup2(fd, 2); os.close(fd)
os.write(1, b"old " * 40)
assert not rotate_log(d, limit=1000)
assert rotate_log(d, limit=100)
os.write(1, b"new\\n"); os.write(2, b"err\\n")
"""
    got = subprocess.run([PY, "-c", code], capture_output=True, text=True, timeout=60)
    assert got.returncode == 0, got.stderr
    run = tmp_path / "run"
    assert (run / "supervisor.log.1").read_text() == "old " * 40
    assert (run / "supervisor.log").read_text() == "new\nerr\n"


def test_a_detached_supervisor_whose_processes_all_ended_still_stops_on_sigterm(
        tmp_path, detached):
    """It stays once every process has ended by itself, until someone stops it: a
    SIGTERM then must still stop it (a signal after everything ended only hurries a
    plain headless run's exit)."""
    config = tmp_path / "once.toml"
    config.write_text('[processes.once]\ncmd = "true"\n')
    d = detached(config)
    wait_until(lambda: d.status()["once"]["phase"] == "ended", what="once to end")
    time.sleep(0.5)
    assert alive(d.pid)  # it stays
    os.kill(d.pid, signal.SIGTERM)
    wait_until(lambda: not alive(d.pid), timeout=20, what="the supervisor to exit")
    assert "received SIGTERM" in (d.run_dir / "supervisor.log").read_text()


def test_down_says_each_stop_in_the_order_it_happened(tmp_path, detached):
    """A staged stop: web (which needs db) first, then db. down printed db's SIGTERM
    before web's while the journal had web's first."""
    config = tmp_path / "proctui.toml"
    config.write_text(f"""
[processes.db]
cmd = [{toml_str(PY)}, "-c", {toml_str(POLITE)}]

[processes.web]
cmd = [{toml_str(PY)}, "-c", {toml_str(POLITE)}]
depends_on = ["db"]
""")
    d = detached(config)
    d.wait_for("web", "running", lambda p: p["state"] == "running")
    got = d.ctl("down")
    assert got.returncode == 0, got.stdout
    said = [line.split(":")[0].split()[-1] for line in got.stdout.splitlines()
            if "SIGTERM sent" in line]
    journal = [json.loads(line) for line in
               (d.run_dir / "journal.jsonl").read_text().splitlines()]
    sent = [e["name"] for e in journal if e["kind"] == "signal" and e["signal"] == "SIGTERM"]
    assert sent == ["web", "db"], sent
    assert said == sent, got.stdout
