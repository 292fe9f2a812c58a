"""Output kept on disk while nobody watches: every byte a process wrote, rotated by size,
in files nobody else can swap."""

from __future__ import annotations

import os
import stat

from tests.conftest import pyspec

# 20,000 numbered lines and "done" (108,895 bytes), then waits to be stopped.
NUMBERS = ("import sys,time\nsys.stdout.write(''.join(f'{i}\\n' for i in range(20000)))\n"
           "sys.stdout.flush()\nprint('done', flush=True)\ntime.sleep(60)\n")
EXPECTED = "".join(f"{i}\n" for i in range(20000)) + "done\n"


def log_files(run_dir, name: str) -> list[str]:  # type: ignore[no-untyped-def]
    logs = run_dir.path / "logs"
    return sorted(p.name for p in logs.iterdir() if p.name.startswith(f"{name}.log"))


def test_every_byte_is_kept_in_rotated_files(harness, run_dir):
    h = harness([pyspec("n", NUMBERS, log_max_size=50_000, log_keep=10)], run_dir=run_dir)
    h.wait_output("n", "done")
    files = log_files(run_dir, "n")
    assert files == ["n.log", "n.log.1", "n.log.2"]
    logs = run_dir.path / "logs"
    parts = [(logs / f).read_bytes() for f in ["n.log.2", "n.log.1", "n.log"]]
    assert all(len(p) == 50_000 for p in parts[:-1])
    assert b"".join(parts).decode() == EXPECTED
    for f in files:
        assert stat.S_IMODE(os.stat(logs / f).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(logs).st_mode) == 0o700


def test_only_log_keep_older_files_are_kept(harness, run_dir):
    h = harness([pyspec("n", NUMBERS, log_max_size=20_000, log_keep=2)], run_dir=run_dir)
    h.wait_output("n", "done")
    assert log_files(run_dir, "n") == ["n.log", "n.log.1", "n.log.2"]
    logs = run_dir.path / "logs"
    tail = b"".join((logs / f).read_bytes() for f in ["n.log.2", "n.log.1", "n.log"])
    assert EXPECTED.encode().endswith(tail)


def test_log_max_size_0_keeps_no_file(harness, run_dir):
    h = harness([pyspec("n", NUMBERS, log_max_size=0)], run_dir=run_dir)
    h.wait_output("n", "done")
    assert log_files(run_dir, "n") == []


def test_a_symlink_planted_as_a_log_is_not_followed(harness, run_dir, tmp_path):
    target = tmp_path / "victim"
    target.write_text("precious\n")
    (run_dir.path / "logs").mkdir(mode=0o700)
    os.symlink(target, run_dir.path / "logs" / "n.log")
    h = harness([pyspec("n", NUMBERS)], run_dir=run_dir)
    h.wait_output("n", "done")
    h.wait_notice("n", "output log n.log")
    assert target.read_text() == "precious\n"
    assert h.output("n")[-1] == "done"  # the process is supervised all the same
