"""``proctui up`` tells the truth (what started, what failed, what waits for what), its
hints run as printed, and ``status --json`` has a versioned schema: real processes under a
real detached supervisor."""

from __future__ import annotations

import json
import shlex
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import PY
from tests.terminal import Pty
from tests.test_detach import detached, proctui, toml_str  # noqa: F401 (a fixture)


def mixed(tmp_path: Path) -> Path:
    config = tmp_path / "mixed.toml"
    config.write_text(f"""
[processes.web]
cmd = "ngnix -g daemon"

[processes.db]
cmd = [{toml_str(PY)}, "-c", "import time; print('hello', flush=True); time.sleep(300)"]
ready = {{ log = "never printed" }}

[processes.worker]
cmd = [{toml_str(PY)}, "-c", "import time; time.sleep(300)"]
depends_on = ["db"]
""")
    return config


def test_up_names_each_failure_says_who_waits_and_exits_1(tmp_path, detached):  # noqa: F811
    d = detached(mixed(tmp_path), status=1)
    assert "1 of 3 processes started under a detached supervisor" in d.up.stdout
    assert "worker: waiting for db" in d.up.stdout
    assert d.up.stderr.strip() == (
        "web: failed to start: [Errno 2] No such file or directory: 'ngnix'")
    status = d.status()
    assert status["worker"]["state"] == "waiting"  # up did not leave it "starting"
    assert status["db"]["state"] == "running"


def test_up_does_not_count_what_never_started(tmp_path, detached):  # noqa: F811
    """A process whose dependency failed to start ends without starting: up counted it
    ("1 of 2 processes started" with none running) and said nothing of it."""
    config = tmp_path / "dep.toml"
    config.write_text("""
[processes.web]
cmd = ["ngnix"]

[processes.w2]
cmd = "sleep 300"
depends_on = ["web"]
""")
    d = detached(config, status=1)
    assert "0 of 2 processes started under a detached supervisor" in d.up.stdout, d.up.stdout
    assert "w2: not started" in d.up.stdout
    assert "web: failed to start" in d.up.stderr


def test_status_json_has_a_schema_and_fixed_states(tmp_path, detached):  # noqa: F811
    d = detached(mixed(tmp_path), status=1)
    got = json.loads(d.ctl("status", "--json").stdout)
    assert got["schema"] == 1
    by = {p["name"]: p for p in got["processes"]}
    web, db, worker = by["web"], by["db"], by["worker"]
    assert web["state"] == "failed"
    assert web["outcome"]["kind"] == "failed-to-start"
    assert web["outcome"]["exit_code"] is None and "ngnix" in web["outcome"]["text"]
    assert set(web["outcome"]) == {"kind", "exit_code", "signal", "after_s", "clean", "text"}
    assert db["ready"] is False and db["ready_check"] == "a line matching 'never printed'"
    assert worker["waiting_for"] == ["db"] and worker["ready"] is None
    assert all(p["state"] in ("waiting", "starting", "running", "stopping", "deciding",
                              "killing", "backoff", "held", "ended", "failed", "abandoned")
               for p in got["processes"])


@pytest.mark.slow
def test_every_hint_up_prints_runs_as_printed(tmp_path, detached):  # noqa: F811
    config = tmp_path / "elsewhere.toml"
    config.write_text(f"""
[processes.svc]
cmd = [{toml_str(PY)}, "-c", "import time; print('up', flush=True); time.sleep(300)"]
""")
    # -f FILE given and the default run directory: the hints then name the file.
    up = proctui("up", "-f", str(config), cwd=tmp_path)
    assert up.returncode == 0, up.stderr
    hints = [line.split("#")[0].strip() for line in up.stdout.splitlines()
             if line.strip().startswith("proctui ")]
    assert len(hints) == 4, up.stdout
    try:
        for hint in hints:
            argv = [a.replace("NAME", "svc") for a in shlex.split(hint)[1:]]
            if argv[0] == "attach":
                pty = Pty([PY, "-m", "proctui", *argv], tmp_path)
                pty.wait_for(b"attached to supervisor")
                pty.press(b"d")
                assert pty.finish() == 0, hint
            elif argv[0] == "logs":  # follows: it must print, not fail at once
                proc = subprocess.Popen([PY, "-m", "proctui", *argv], cwd=tmp_path,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        text=True)
                try:
                    out, err = proc.communicate(timeout=3)
                except subprocess.TimeoutExpired:
                    proc.terminate()
                    out, err = proc.communicate()
                    assert "up" in out, (hint, err)
                else:
                    raise AssertionError(f"{hint} ended: {proc.returncode} {err}")
            else:
                got = proctui(*argv, cwd=tmp_path)
                assert got.returncode == 0, (hint, got.stderr)
    finally:
        proctui("down", "--file", str(config), cwd=tmp_path)


# slow is ready only when the test says so (a flag file), never by the clock: on a busy
# machine a fixed delay could pass before the test has asked what it waits for.
SLOW = ("import os, sys, time\n"
        "while not os.path.exists(sys.argv[1]): time.sleep(0.02)\n"
        "print('listening', flush=True); time.sleep(300)")


@pytest.mark.slow
def test_is_ready_and_why_with_real_processes(tmp_path, detached):  # noqa: F811
    config = tmp_path / "ready.toml"
    flag = tmp_path / "slow-may-listen"
    config.write_text(f"""
[processes.plain]
cmd = [{toml_str(PY)}, "-c", "import time; time.sleep(300)"]

[processes.slow]
cmd = [{toml_str(PY)}, "-c", {toml_str(SLOW)}, {toml_str(str(flag))}]
ready = {{ log = "listening" }}

[processes.after]
cmd = [{toml_str(PY)}, "-c", "import time; time.sleep(300)"]
depends_on = ["slow"]

[processes.web]
cmd = "ngnix -g daemon"

[processes.front]
cmd = [{toml_str(PY)}, "-c", "import time; time.sleep(300)"]
depends_on = ["web"]
""")
    d = detached(config, status=1)
    plain = d.ctl("is-ready", "plain")
    assert plain.returncode == 0 and plain.stdout.strip() == "ready: plain"
    now = d.ctl("is-ready", "slow", "after")
    assert now.returncode == 1
    assert "slow: running" in now.stdout and "not ready yet: waiting for a line matching" \
        in now.stdout and "after: waiting for slow before it starts" in now.stdout
    assert d.ctl("why", "after").stdout.strip() == "after: waiting for slow before it starts"
    assert d.ctl("why", "web").stdout.strip() == (
        "web: ended: failed to start: [Errno 2] No such file or directory: 'ngnix'")
    flag.touch()
    waited = d.ctl("is-ready", "slow", "after", "--wait", "--timeout", "20")
    assert waited.returncode == 0, waited.stdout
    # What has ended will not become ready: said at once, not after the whole wait.
    began = time.monotonic()
    timed_out = d.ctl("is-ready", "--wait", "--timeout", "30")
    assert timed_out.returncode == 1 and time.monotonic() - began < 20
    assert timed_out.stdout.startswith("not ready (it has ended: no use waiting): web: "
                                       "ended: failed"), timed_out.stdout
    # A dependent of what failed says why it never started (it said "never started").
    assert d.ctl("why", "front").stdout.strip() == (
        "front: not started: web failed to start: [Errno 2] No such file or directory: "
        "'ngnix'")
    unknown = d.ctl("why", "nope")
    assert unknown.returncode == 2 and "no process named 'nope'" in unknown.stderr


@pytest.mark.parametrize("bad", ["-5", "0", "nan", "inf", "1e300", "10x", "1m2h", ""])
def test_a_bad_extend_value_is_one_line_naming_it(tmp_path, bad):
    got = proctui("extend", "--run-dir", str(tmp_path / "none"), "stubborn", bad)
    assert got.returncode == 2 and got.stderr.count("\n") == 1, got.stderr
    assert got.stderr == (f"proctui: error: extend: SECONDS {bad!r} is not a duration > 0 "
                          "and at most 100 days (10, 1.5, 10s, 2m, 1h30m)\n")
    assert "press w" not in got.stderr


@pytest.mark.parametrize(("text", "seconds"), [("10", 10.0), ("1.5", 1.5), ("10s", 10.0),
                                               ("2m", 120.0), ("1h30m", 5400.0)])
def test_durations_take_a_unit(tmp_path, text, seconds):
    from proctui.config.values import parse_duration

    assert parse_duration(text) == seconds
    got = proctui("extend", "--run-dir", str(tmp_path / "none"), "stubborn", text)
    assert "no supervisor is running" in got.stderr  # the value itself was fine


def test_logs_reads_the_log_file_once_the_supervisor_has_ended(tmp_path):
    config = tmp_path / "once.toml"
    config.write_text(f"""
[processes.once]
cmd = [{toml_str(PY)}, "-c", "print('first'); print('second')"]
""")
    run_dir = tmp_path / "run"
    got = proctui("run", "--headless", "-f", str(config), "--run-dir", str(run_dir),
                  cwd=tmp_path)
    assert got.returncode == 0, got.stderr
    logs = proctui("logs", "once", "--run-dir", str(run_dir), cwd=tmp_path)
    assert logs.returncode == 0, logs.stderr
    assert logs.stdout == "first\nsecond\n"
    assert logs.stderr.startswith("proctui: no supervisor is running; ")
    last = proctui("logs", "once", "-n", "1", "--run-dir", str(run_dir), cwd=tmp_path)
    assert last.stdout == "second\n"
    missing = proctui("logs", "nope", "--run-dir", str(run_dir), cwd=tmp_path)
    assert missing.returncode == 2 and missing.stderr.count("\n") == 1


def test_up_counts_its_own_processes_not_an_earlier_runs_leftover():
    """After a SIGKILLed supervisor, the next up adopts the survivor to stop it: "3 of 2
    processes started" counted it among the config's own."""
    from proctui.core.life.outcome import OutcomeKind
    from proctui.core.life.stop import Phase
    from proctui.frontends.status import up_report
    from tests.fake_core import outcome, view

    views = [view("quiet (leftover)", Phase.ENDED, leftover=True,
                  outcome=outcome(OutcomeKind.STOPPED, "stopped after 0.0s: exit code 0")),
             view("quiet", Phase.RUNNING), view("chatty", Phase.RUNNING, pid=4122)]
    started, lines, failures = up_report(views)
    assert started == 2 and not failures
    assert lines == ["quiet (leftover): stopped after 0.0s: exit code 0"]
