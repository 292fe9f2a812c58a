"""The summary outlives the terminal: RUN_DIR/summary.txt at the end of every supervised run,
and supervisor.log too when the terminal was lost (a real pty hang-up with on_hangup =
"stop", as an SSH drop is)."""

from __future__ import annotations

import subprocess

import pytest

from tests.children import POLITE, STUBBORN
from tests.conftest import PY, alive, wait_until
from tests.test_detach import proctui, toml_str
from tests.test_hangup import handles_term, on_pty, py  # noqa: F401 (a fixture)


@pytest.mark.slow
def test_a_hangup_leaves_the_summary_in_the_run_directory_and_its_log(on_pty):  # noqa: F811
    console = on_pty("--stop-timeout", "1", f"web={py(POLITE)}", f"stub={py(STUBBORN)}")
    pids = console.pids(2)
    wait_until(lambda: all(handles_term(pid) for pid in pids), what="SIGTERM handlers")
    console.hang_up()
    assert console.wait(timeout=30) == 1
    assert not any(alive(pid) for pid in pids)
    summary = (console.run_dir / "summary.txt").read_text()
    lines = summary.splitlines()
    assert "exit status 1 (the shutdown began: hangup)" in lines[0], summary
    assert lines[1] == "summary:"
    assert any(line.split()[:2] == ["stub", "killed"] for line in lines), summary
    assert any(line.split()[:2] == ["web", "stopped"] for line in lines), summary
    log = (console.run_dir / "supervisor.log").read_text()
    assert "proctui | the terminal went away; the summary it was not shown:" in log
    assert "proctui | summary:" in log and "proctui |   stub  killed with SIGKILL" in log


@pytest.mark.slow
def test_every_run_keeps_its_summary_and_a_quiet_end_writes_no_log(tmp_path):
    run_dir = tmp_path / "run"
    got = subprocess.run([PY, "-m", "proctui", "run", "--headless", "--run-dir", str(run_dir),
                          "--stop-after", "0.5", f"web={py(POLITE)}"],
                         capture_output=True, text=True, timeout=60, cwd=tmp_path,
                         stdin=subprocess.DEVNULL)
    assert got.returncode == 0, got.stderr
    summary = (run_dir / "summary.txt").read_text()
    assert "exit status 0 (the shutdown began: --stop-after)" in summary
    assert "web  stopped after" in summary
    assert not (run_dir / "supervisor.log").exists()  # the terminal saw it
    # A detached supervisor ended by down: the file is replaced by this run's.
    config = tmp_path / "one.toml"
    config.write_text(f'[processes.svc]\ncmd = [{toml_str(PY)}, "-c", {toml_str(POLITE)}]\n')
    assert proctui("up", "-f", str(config), "--run-dir", str(run_dir),
                   cwd=tmp_path).returncode == 0
    assert proctui("down", "--run-dir", str(run_dir), cwd=tmp_path).returncode == 0
    wait_until(lambda: "svc" in (run_dir / "summary.txt").read_text(), what="the summary")
    summary = (run_dir / "summary.txt").read_text()
    assert "(the shutdown began: proctui down)" in summary and "web" not in summary


def test_a_console_quit_keeps_its_summary_and_writes_no_log(on_pty):  # noqa: F811
    console = on_pty("--stop-timeout", "1", f"web={py(POLITE)}")
    (pid,) = console.pids(1)
    wait_until(lambda: handles_term(pid), what="the SIGTERM handler")
    console.wait_for(b"running", timeout=20)
    console.press(b"q")
    assert console.finish(timeout=30) == 0
    summary = (console.run_dir / "summary.txt").read_text()
    assert "exit status 0 (the shutdown began: quit key)" in summary, summary
    assert not (console.run_dir / "supervisor.log").exists()
