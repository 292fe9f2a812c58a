"""A run directory removed under a detached supervisor (what a logout does to
/run/user/UID): the supervisor makes it again, with its lock, PID files and control socket,
so that status finds it and the next up is refused instead of starting a second copy."""

from __future__ import annotations

import json
import shutil
import time

import pytest

from proctui.remote.heal import HEAL_EVERY
from tests.conftest import alive, wait_until
from tests.test_detach import detached, proctui, write_config  # noqa: F401


@pytest.mark.slow
def test_a_removed_run_directory_is_rebuilt_and_up_starts_no_second_copy(tmp_path,
                                                                         detached):  # noqa: F811
    config = write_config(tmp_path)
    d = detached(config)
    before = d.wait_for("svc", "running", lambda p: p["phase"] == "running")
    wait_until(lambda: len(list(d.run_dir.glob("*.pid"))) == 2, what="two PID files")
    pid_files = {p.name: json.loads(p.read_text()) for p in d.run_dir.glob("*.pid")}
    # A logout comes long after the start: by then the supervisor has seen its PID files
    # (it copies them on every change it notices, a few times a second; there is nothing
    # outside it to wait on for that).
    time.sleep(4 * HEAL_EVERY)

    shutil.rmtree(d.run_dir)

    # status finds the same supervisor and the same processes again.
    _found_again(d, before)
    # Its lock, its PID files, and the notice that says what happened.
    assert (d.run_dir / "lock").read_text().strip() == str(d.pid)
    assert {p.name: json.loads(p.read_text()) for p in d.run_dir.glob("*.pid")} == pid_files
    wait_until(lambda: "rebuilt it" in (d.run_dir / "supervisor.log").read_text(),
               what="the notice in the new supervisor.log")

    # A second up is refused: no second copy of anything.
    again = proctui("up", *d.where, cwd=tmp_path)
    assert again.returncode != 0 and f"pid {d.pid}" in again.stderr, (again.stdout,
                                                                     again.stderr)
    assert alive(before["pid"]) and d.status()["svc"]["pid"] == before["pid"]

    _down(d, before)


@pytest.mark.slow
def test_an_up_straight_after_the_removal_starts_no_second_copy(tmp_path,
                                                                detached):  # noqa: F811
    """``rm -rf RUN_DIR; proctui up`` at once: before the supervisor had rebuilt its
    directory, the new up took a fresh lock there and started a second copy of every
    process (3 supervisors of 6 tries). The name the supervisor holds outside the
    directory (namelock.py) refuses it, and the supervisor then rebuilds as before."""
    config = write_config(tmp_path)
    d = detached(config)
    before = d.wait_for("svc", "running", lambda p: p["phase"] == "running")
    for _ in range(3):
        shutil.rmtree(d.run_dir, ignore_errors=True)
        again = proctui("up", *d.where, cwd=tmp_path)
        # (refused by the name, or by the lock once the directory is rebuilt)
        assert again.returncode == 2 and f"pid {d.pid}" in again.stderr, (again.stdout,
                                                                         again.stderr)

    _found_again(d, before)
    assert (d.run_dir / "lock").read_text().strip() == str(d.pid)
    _down(d, before)


def _found_again(d, before) -> None:  # type: ignore[no-untyped-def]
    """status finds the same supervisor, and the same process, again."""
    def answers() -> bool:
        got = d.ctl("status", "--json")
        return got.returncode == 0 and json.loads(got.stdout)["supervisor"]["pid"] == d.pid

    wait_until(answers, timeout=20, what="status to find the supervisor again")
    assert d.status()["svc"]["pid"] == before["pid"]


def _down(d, before) -> None:  # type: ignore[no-untyped-def]
    down = d.ctl("down")
    assert down.returncode in (0, 1), down.stderr
    wait_until(lambda: not alive(d.pid), timeout=20, what="the supervisor to end")
    assert not alive(before["pid"])


@pytest.mark.slow
def test_the_journal_and_the_output_logs_go_on_in_the_rebuilt_directory(tmp_path,
                                                                        detached):  # noqa: F811
    """After the rebuild only the lock, PID files, socket and supervisor.log came back:
    the journal and every output log went on into the removed directory's files, and
    logs and timeline failed once the supervisor had ended."""
    from tests.test_detach import ticking

    d = ticking(tmp_path, detached)
    time.sleep(4 * HEAL_EVERY)
    shutil.rmtree(d.run_dir)
    wait_until(lambda: (d.run_dir / "lock").exists() and
               (d.run_dir / "logs" / "tick.log").exists(), timeout=20,
               what="the output log in the rebuilt directory")
    wait_until(lambda: (d.run_dir / "logs" / "tick.log").read_text().count("tick") >= 5,
               what="ticks written into it")
    kinds = [json.loads(line)["kind"] for line in
             (d.run_dir / "journal.jsonl").read_text().splitlines()]
    assert kinds[0] == "begin" and "start" in kinds  # what it still held
    down = d.ctl("down")
    assert down.returncode in (0, 1), down.stderr
    wait_until(lambda: not alive(d.pid), timeout=20, what="the supervisor to end")
    kinds = [json.loads(line)["kind"] for line in
             (d.run_dir / "journal.jsonl").read_text().splitlines()]
    assert "outcome" in kinds and kinds[-1] == "end"
    timeline = proctui("timeline", "--run-dir", str(d.run_dir), cwd=tmp_path)
    assert timeline.returncode == 0, timeline.stderr
    logs = proctui("logs", "tick", "-n", "3", "--run-dir", str(d.run_dir), cwd=tmp_path)
    assert logs.returncode == 0 and "tick" in logs.stdout, (logs.stdout, logs.stderr)
