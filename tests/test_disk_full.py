"""A full file system under the run directory: proctui runs and stops its processes
anyway, says once what it cannot keep, and leaves no half-written file behind."""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import PY, alive, processes_with_token, wait_until


@pytest.fixture
def full_disk(tmp_path: Path) -> Iterator[Path]:
    where = tmp_path / "full"
    where.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(where)],
                             capture_output=True)
    if mounted.returncode != 0:
        pytest.skip("cannot mount a small tmpfs here (needs root)")
    try:
        with contextlib.suppress(OSError), open(where / "fill", "wb") as f:
            while True:
                f.write(b"\0" * 4096)
                f.flush()
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


def test_a_full_disk_under_the_run_directory_is_no_traceback(full_disk, tmp_path,
                                                            child_reaper):
    run_dir = full_disk / "run"
    os.makedirs(run_dir, mode=0o700, exist_ok=True)
    got = subprocess.run([PY, "-m", "proctui", "run", "--headless", "--stop-after", "1",
                          "--run-dir", str(run_dir), "a=sleep 30"], capture_output=True,
                         text=True, timeout=60, cwd=tmp_path)
    assert "Traceback" not in got.stderr + got.stdout, got.stderr
    assert got.returncode == 0, (got.stdout, got.stderr)
    assert "cannot write PID file" in got.stdout and "No space left" in got.stdout
    assert "a: stopped after" in got.stdout
    assert not processes_with_token(child_reaper)
    assert not [p for p in run_dir.iterdir() if ".tmp-" in p.name]


# -- the supervisor's own output on a full disk stops nothing -------------------------------


def _proctui(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    got = subprocess.run([PY, "-m", "proctui", *args], capture_output=True, text=True,
                         timeout=60, cwd=cwd, stdin=subprocess.DEVNULL)
    assert "Traceback" not in got.stderr + got.stdout, got.stderr
    return got


def _status(run_dir: Path, cwd: Path) -> dict:
    import json

    got = _proctui("status", "--json", "--run-dir", str(run_dir), cwd=cwd)
    assert got.returncode == 0, got.stderr
    return json.loads(got.stdout)


def _fill(where: Path) -> None:
    with contextlib.suppress(OSError), open(where / "fill", "ab") as f:
        while True:
            f.write(b"\0" * 4096)
            f.flush()


SMALL_DISK = [("chatty", "i=0; while :; do i=$((i+1)); echo chatty line $i; sleep 0.02; done"),
              ("victim", "trap '' TERM; while :; do sleep 1; done")]


def _small_disk_config(tmp_path: Path) -> None:
    (tmp_path / "proctui.toml").write_text("[defaults]\nstop_timeout = 2\n" + "".join(
        f'[processes.{name}]\ncmd = ["sh", "-c", "{script}"]\n' for name, script in SMALL_DISK))


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """An empty 1 MB tmpfs: the run directory goes there, and fills up on demand."""
    where = tmp_path / "small"
    where.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m,mode=0700", "tmpfs",
                              str(where)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip("cannot mount a small tmpfs here (needs root)")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


@pytest.mark.slow
def test_a_full_disk_under_supervisor_log_stops_nothing(small_disk, tmp_path, child_reaper):
    """The attack: up, fill the disk, restart chatty until the supervisor's log cannot
    be written. Its writes failing once read as a hangup, and every process was stopped,
    a TERM-ignoring one SIGKILLed. Now the same pids run on, status names the trouble,
    and once there is room again it is written again."""
    _small_disk_config(tmp_path)
    run_dir = small_disk / "run"
    got = _proctui("up", "--run-dir", str(run_dir), cwd=tmp_path)
    try:
        assert got.returncode == 0, got.stderr
        before = {p["name"]: p["pid"] for p in _status(run_dir, tmp_path)["processes"]}
        _fill(small_disk)

        def log_trouble() -> list[str]:
            # Each restart writes a few notices; the log's last page fills and then fails.
            _proctui("restart", "chatty", "--run-dir", str(run_dir), cwd=tmp_path)
            status = _status(run_dir, tmp_path)
            assert not status["supervisor"]["shutting_down"], status
            assert alive(before["victim"])
            return [t for t in status["supervisor"].get("troubles", [])
                    if t.startswith("supervisor.log not written")]

        (said,) = wait_until(log_trouble, timeout=60, what="supervisor.log to fail")
        assert "No space left on device" in said
        status = _status(run_dir, tmp_path)
        assert not status["supervisor"]["shutting_down"], status
        pids = {p["name"]: (p["pid"], p["state"]) for p in status["processes"]}
        assert pids["victim"] == (before["victim"], "running"), pids
        assert alive(before["victim"])
        text = _proctui("status", "--run-dir", str(run_dir), cwd=tmp_path).stdout
        assert "warning: supervisor.log not written: [Errno 28] No space left on device" \
            in text, text

        os.unlink(small_disk / "fill")  # room again: the next lines are written
        wait_until(lambda: not _proctui("restart", "chatty", "--run-dir", str(run_dir),
                                        cwd=tmp_path).returncode and not
                   _status(run_dir, tmp_path)["supervisor"]["troubles"], timeout=30,
                   what="the troubles to clear")
        log = (run_dir / "supervisor.log").read_text(errors="replace")
        assert "lines of output not written: [Errno 28] No space left on device" in log
        assert "supervisor.log: written again" in log
        assert alive(before["victim"])
        # A write the disk cut short left half a line, and the timeline refused it all.
        timeline = _proctui("timeline", "--run-dir", str(run_dir), cwd=tmp_path)
        assert timeline.returncode == 0, timeline.stderr
    finally:
        down = _proctui("down", "--run-dir", str(run_dir), cwd=tmp_path)
    assert "victim: killed with SIGKILL after 2s stop timeout" in down.stdout, down.stdout
    assert not processes_with_token(child_reaper)


@pytest.mark.slow
def test_up_on_a_full_disk_starts_everything_and_names_the_error(small_disk, tmp_path,
                                                                child_reaper):
    _small_disk_config(tmp_path)
    run_dir = small_disk / "run"
    run_dir.mkdir(mode=0o700)
    _fill(small_disk)
    got = _proctui("up", "--run-dir", str(run_dir), cwd=tmp_path)
    try:
        assert "2 of 2 processes started" in got.stdout, (got.stdout, got.stderr)
        assert "No space left on device" in got.stderr, got.stderr
        status = _status(run_dir, tmp_path)
        assert [p["state"] for p in status["processes"]] == ["running", "running"], status
        assert not status["supervisor"]["shutting_down"]
        assert any("No space left on device" in t for t in status["supervisor"]["troubles"])
    finally:
        os.unlink(small_disk / "fill")
        _proctui("down", "--run-dir", str(run_dir), cwd=tmp_path)
    assert not processes_with_token(child_reaper)


@pytest.mark.slow
def test_headless_output_to_a_full_file_stops_nothing(tmp_path, child_reaper):
    """run --headless > /dev/full: every write fails with ENOSPC. That is no reader gone
    (no hangup): the run goes on to its own end, and stderr says what was lost."""
    with open("/dev/full", "w") as full:
        got = subprocess.run(
            [PY, "-m", "proctui", "run", "--headless", "--stop-after", "1.5",
             "--run-dir", str(tmp_path / "run"), "--stop-timeout", "1",
             "victim=sh -c \"trap '' TERM; while :; do echo x; sleep 0.05; done\""],
            stdout=full, stderr=subprocess.PIPE, text=True, timeout=60, cwd=tmp_path)
    assert "Traceback" not in got.stderr
    assert "stopping everything" not in got.stderr, got.stderr
    assert "proctui: standard output not written: [Errno 28] No space left on device" \
        in got.stderr, got.stderr
    assert "lines of standard output not written" in got.stderr, got.stderr
    assert got.returncode == 1  # what it promised to print is lost
    journal = (tmp_path / "run" / "journal.jsonl").read_text()
    assert '"why": "--stop-after"' in journal, journal  # not a hangup
    assert not processes_with_token(child_reaper)


def test_the_writer_counts_lines_a_full_disk_took_and_says_so_when_it_has_room():
    from proctui.frontends.writer import Writer

    troubles: list[str | None] = []
    full = os.open("/dev/full", os.O_WRONLY)
    read_end, write_end = os.pipe()
    writer = Writer(full, on_trouble=troubles.append)
    try:
        writer.note_prefix = "proctui | "
        for i in range(3):
            writer.write(f"line {i}\n")
            assert writer.drain(5.0)
        assert writer.broken is None  # no reader gone: nothing is to stop
        assert writer.failing == "[Errno 28] No space left on device"
        assert writer.lost == 3 and writer.failed
        assert troubles == ["[Errno 28] No space left on device"]  # said once
        writer.fd = write_end  # room again
        writer.write("line 3\n")
        assert writer.drain(5.0)
        assert os.read(read_end, 4096) == (
            b"proctui | 3 lines of output not written: [Errno 28] No space left on device\n"
            b"line 3\n")
        assert writer.failing is None and troubles[-1] is None
    finally:
        for fd in (full, read_end, write_end):
            os.close(fd)


def test_the_journal_goes_on_after_a_full_disk_and_says_how_many_entries_it_lost(tmp_path):
    from proctui.core.store.journal import Journal, read_file
    from proctui.core.store.kinds import Kind

    journal = Journal(None)
    troubles: list[str | None] = []
    journal.on_trouble = troubles.append
    journal.fd = os.open("/dev/full", os.O_WRONLY)
    journal.write(Kind.NOTICE, text="lost one")
    journal.write(Kind.NOTICE, text="lost two")
    assert troubles == ["[Errno 28] No space left on device"]
    os.close(journal.fd)
    journal.fd = os.open(tmp_path / "journal.jsonl", os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    journal.write(Kind.NOTICE, text="kept")
    journal.close()
    entries = list(read_file(tmp_path / "journal.jsonl"))
    assert [(e["kind"], e.get("lost"), e.get("text")) for e in entries] == [
        (Kind.JOURNAL_GAP, 2, None), (Kind.NOTICE, None, "kept")]
    assert troubles[-1] is None
