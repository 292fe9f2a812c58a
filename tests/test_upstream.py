"""proctui under a manager that speaks sd_notify: here the manager is proctui itself, a
real receiver with a stop timeout shorter than the inner proctui's staged stop. The
inner one says when it is ready and what it runs, and asks for time while it stops, so
it is never killed in the middle of its stop."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import time
from pathlib import Path

import pytest

from proctui.frontends.upstream import Upstream
from tests.children import SLOW
from tests.conftest import PY, processes_with_token, wait_until
from tests.test_detach import toml_str


@pytest.mark.slow
def test_a_proctui_under_proctui_is_ready_says_its_status_and_is_never_killed_mid_stop(
        tmp_path: Path, child_reaper: str) -> None:
    inner = tmp_path / "inner.toml"
    inner.write_text(f"""
[defaults]
stop_timeout = 10

[processes.db]
cmd = [{toml_str(PY)}, "-c", {toml_str(SLOW.format(seconds=1.5))}]
ready = {{ log = "ready" }}

[processes.web]
cmd = [{toml_str(PY)}, "-c", {toml_str(SLOW.format(seconds=2.5))}]
depends_on = ["db"]
""")
    outer = tmp_path / "outer.toml"
    outer.write_text(f"""
[processes.inner]
cmd = [{toml_str(PY)}, "-m", "proctui", "run", "--headless", "-f", {toml_str(str(inner))},
       "--run-dir", {toml_str(str(tmp_path / "inner-run"))}]
ready = {{ notify = true }}
stop_timeout = 2
kill_timeout = 2
""")
    proc = subprocess.Popen([PY, "-m", "proctui", "run", "--headless", "-f", str(outer),
                             "--run-dir", str(tmp_path / "outer-run")], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            if "inner: ready after" in line:
                break
        out = "".join(lines)
        # READY=1 only once web (which waits for db to be ready) has started.
        assert out.index("web: started (pid") < out.index("inner: ready after"), out
        began = time.monotonic()
        proc.send_signal(2)  # SIGINT: the outer one stops inner with SIGTERM
        rest, err = proc.communicate(timeout=60)
        took = time.monotonic() - began
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    out = "".join(lines) + rest
    assert "Traceback" not in err, err
    # Its staged stop takes 2.5 s (web) then 1.5 s (db): longer than the 2 s it was given.
    assert re.search(r"inner: extended by the process", out), out
    assert re.search(r"\|   inner +stopped after [3-9]\.\ds: exit code 0", out), out
    assert "killed" not in out.split("summary:")[-1], out
    assert took < 4 + 2 + 10
    journal = (tmp_path / "outer-run" / "journal.jsonl").read_text()
    assert '"STATUS": "2 running"' in journal or "2 running" in journal
    assert not processes_with_token(child_reaper)


def test_the_managers_variables_are_proctuis_own_and_bad_ones_are_ignored() -> None:
    env = {"NOTIFY_SOCKET": "@proctui-test-x", "WATCHDOG_USEC": "2000000",
           "WATCHDOG_PID": str(os.getpid()), "OTHER": "1"}
    up = Upstream.from_environ(env)
    assert up is not None and up.watchdog == 2.0
    assert env == {"OTHER": "1"}  # children never see the manager's socket
    up.close()
    for bad in ({"NOTIFY_SOCKET": "relative"}, {"NOTIFY_SOCKET": "@x\0y"},
                {"NOTIFY_SOCKET": "/" + "x" * 200}):
        assert Upstream.from_environ(dict(bad)) is None
    for usec, pid in (("²", ""), ("9" * 40, ""), ("1000", "1")):
        got = Upstream.from_environ({"NOTIFY_SOCKET": "@x", "WATCHDOG_USEC": usec,
                                     "WATCHDOG_PID": pid})
        assert got is not None and got.watchdog is None
        got.close()


def test_the_watchdog_is_fed_on_a_steady_beat(tmp_path: Path, child_reaper: str) -> None:
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    address = str(tmp_path / "notify.sock")
    listener.bind(address)
    listener.settimeout(10)
    env = {**os.environ, "NOTIFY_SOCKET": address, "WATCHDOG_USEC": "400000"}
    proc = subprocess.Popen([PY, "-m", "proctui", "run", "--headless", "--run-dir",
                             str(tmp_path / "run"), "a=sleep 30"], env=env, cwd=tmp_path,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        got: list[str] = []
        wait_until(lambda: got.append(listener.recv(4096).decode()) or
                   sum("WATCHDOG=1" in g for g in got) >= 4, timeout=20,
                   what="four watchdog pings")
        assert any("READY=1" in g for g in got)
        assert any("STATUS=1 running" in g for g in got)
        # WATCHDOG_USEC never reaches the child.
        child = next(p for p in processes_with_token(child_reaper) if p != proc.pid)
        environ = Path(f"/proc/{child}/environ").read_bytes().split(b"\0")
        assert not any(e.startswith((b"WATCHDOG_USEC=", b"NOTIFY_SOCKET=" +
                                     address.encode())) for e in environ)
    finally:
        proc.terminate()
        proc.wait(30)
        listener.close()
