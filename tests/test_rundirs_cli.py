"""``proctui ls`` and ``proctui clean`` on real run directories: a live supervisor, a
stale directory, one with a PID file left, a symlink, another user's directory and a
directory still being made. clean removes only the stale one, never through a link."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import PY, alive
from tests.test_detach import toml_str


def run(xdg: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    got = subprocess.run([PY, "-m", "proctui", *args], capture_output=True, text=True,
                         cwd=cwd, timeout=60, stdin=subprocess.DEVNULL,
                         env={**os.environ, "XDG_RUNTIME_DIR": str(xdg)})
    assert "Traceback" not in got.stderr, got.stderr
    return got


@pytest.mark.slow
def test_ls_and_clean_tell_live_from_stale_and_remove_only_the_stale(tmp_path):
    xdg = tmp_path / "xdg"
    xdg.mkdir(mode=0o700)
    root = xdg / "proctui"
    live, old = tmp_path / "live.toml", tmp_path / "old.toml"
    for path in (live, old):
        path.write_text(f"""
[processes.a]
cmd = [{toml_str(PY)}, "-c", "import time; time.sleep(300)"]
[processes.b]
cmd = [{toml_str(PY)}, "-c", "import time; time.sleep(300)"]
""")
    up = run(xdg, "up", "-f", str(old), cwd=tmp_path)
    assert up.returncode == 0, up.stderr
    assert run(xdg, "down", "--file", str(old), cwd=tmp_path).returncode == 0
    up = run(xdg, "up", "-f", str(live), cwd=tmp_path)
    assert up.returncode == 0, up.stderr
    pid = int(up.stdout.split("(pid ")[1].split(")")[0])
    try:
        stale = next(p for p in root.iterdir() if p.name.startswith("old.toml-"))
        kept = root / "left-behind"
        kept.mkdir(mode=0o700)
        (kept / "lock").write_text("")
        (kept / "web.pid").write_text("{}")  # a process left running: keep its record
        outside = tmp_path / "precious"
        outside.mkdir()
        (outside / "lock").write_text("")
        (outside / "data").write_text("keep me")
        (root / "a-link").symlink_to(outside)
        theirs = root / "someone-else"
        theirs.mkdir(mode=0o700)
        (theirs / "lock").write_text("")
        os.chown(theirs, 65534, 65534)
        young = root / "starting"
        young.mkdir(mode=0o700)  # no lock file yet

        listed = run(xdg, "ls", "--json", cwd=tmp_path)
        assert listed.returncode == 0, listed.stderr
        by = {Path(d["path"]).name: d for d in json.loads(listed.stdout)["run_dirs"]}
        assert "a-link" not in by and "someone-else" not in by
        mine = next(d for name, d in by.items() if name.startswith("live.toml-"))
        assert (mine["state"], mine["pid"], mine["processes"]) == ("live", pid, 2)
        assert mine["source"] == str(live)
        assert by[stale.name]["state"] == "stale" and by[stale.name]["processes"] == 2
        assert by["left-behind"]["pid_files"] == 1
        text = run(xdg, "ls", cwd=tmp_path).stdout
        assert text.splitlines()[0].split() == ["RUN", "DIR", "STATE", "PID", "STARTED",
                                                "PROCS", "CONFIG"]
        hint = text.splitlines()[-1]
        assert hint == ("3 stale: proctui clean removes them (proctui clean --dry-run says "
                        "which)"), text

        dry = run(xdg, "clean", "--dry-run", cwd=tmp_path)
        assert dry.returncode == 0, dry.stderr
        assert f"would remove {stale}" in dry.stdout
        assert stale.exists()
        cleaned = run(xdg, "clean", cwd=tmp_path)  # the hint, run as printed
        assert cleaned.returncode == 0, cleaned.stderr
        assert f"removed {stale}" in cleaned.stdout
        assert "1 stale run directory removed, 2 kept" in cleaned.stdout, cleaned.stdout
        assert f"kept {kept}: it holds PID files" in cleaned.stdout
        assert f"kept {young}: no lock file yet" in cleaned.stdout
        assert not stale.exists()
        assert kept.exists() and theirs.exists() and young.exists()
        assert (outside / "data").read_text() == "keep me" and (root / "a-link").is_symlink()
        assert alive(pid)
        status = run(xdg, "status", "--file", str(live), cwd=tmp_path)
        assert status.returncode == 0, status.stderr
    finally:
        run(xdg, "down", "--file", str(live), cwd=tmp_path)


def test_ls_and_clean_with_nothing_there(tmp_path):
    xdg = tmp_path / "xdg"
    xdg.mkdir(mode=0o700)
    assert run(xdg, "ls", cwd=tmp_path).stdout == f"no run directories in {xdg / 'proctui'}\n"
    got = run(xdg, "clean", cwd=tmp_path)
    assert got.returncode == 0 and "nothing to clean" in got.stdout
