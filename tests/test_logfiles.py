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
    # Rotated at line boundaries: each older file is whole lines, as near the limit as
    # a line allows, and never over it.
    assert all(48_000 < len(p) <= 50_000 and p.endswith(b"\n") for p in parts[:-1])
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


def test_a_line_is_never_cut_across_files_but_one_longer_than_the_limit(tmp_path):
    from proctui.core.store.logfiles import LogFile

    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        log = LogFile(fd, "x", 4096, 5)
        lines = [(f"line {i} " + "x" * (i * 37 % 300)).encode() + b"\n" for i in range(200)]
        for i in range(0, len(lines), 3):  # chunks that end mid-line too
            chunk = b"".join(lines[i:i + 3])
            log.write(chunk[:50])
            log.write(chunk[50:])
        log.write(b"y" * 10_000 + b"\n")  # longer than the whole limit: the one exception
        log.close()
        names = sorted((p for p in os.listdir(tmp_path)), reverse=True)
        parts = [(tmp_path / n).read_bytes() for n in names if n != "x.log"] + [
            (tmp_path / "x.log").read_bytes()]
        short = [p for p in parts if b"y" * 100 not in p]
        # Over the limit by at most the rest of a line that began below it.
        assert all(p.endswith(b"\n") and len(p) <= 4096 + 310 for p in short[:-1])
        assert all(not p or p.startswith(b"line ") or p.startswith(b"y") for p in parts)
    finally:
        os.close(fd)
