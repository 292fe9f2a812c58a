"""A full file system under the run directory: proctui runs and stops its processes
anyway, says once what it cannot keep, and leaves no half-written file behind."""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import PY, processes_with_token


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
