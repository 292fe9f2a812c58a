"""``logs -f`` marks where one run ends and the next begins, and the timeline (text and
SVG) says why the shutdown began: the real CLI on a real detached supervisor."""

from __future__ import annotations

import subprocess
import threading

import pytest

from tests.conftest import PY, wait_until
from tests.test_detach import detached, proctui, ticking, toml_str  # noqa: F401 (a fixture)

CRASH = "import time; print('up', flush=True); time.sleep(0.5); raise SystemExit(3)"


@pytest.mark.slow
def test_logs_follow_marks_restarts_and_the_timeline_says_why_it_stopped(tmp_path,
                                                                         detached):  # noqa: F811
    config = tmp_path / "crash.toml"
    config.write_text(f"""
[processes.crash]
cmd = [{toml_str(PY)}, "-c", {toml_str(CRASH)}]
restart = "on-failure"
""")
    d = detached(config)
    follow = subprocess.Popen([PY, "-m", "proctui", "logs", "crash", "-f", "--run-dir",
                               str(d.run_dir)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
    lines: list[str] = []

    def read() -> None:
        assert follow.stdout is not None
        for line in follow.stdout:
            lines.append(line.rstrip("\n"))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        wait_until(lambda: any(line.startswith("── crash: restarted (pid ")
                               for line in lines), timeout=30, what="a restart in logs -f")
        again = next(i for i, line in enumerate(lines) if line.startswith("── crash: restarted"))
        assert "up" in lines[:again], lines
        wait_until(lambda: "up" in lines[again + 1:], what="the next run's output")
        wait_until(lambda: "── crash: exited: exit code 3 ──" in lines[again + 1:],
                   what="the next run's end marked")
        assert proctui("down", "--run-dir", str(d.run_dir), cwd=tmp_path).returncode in (0, 1)
        assert follow.wait(30) == 0
    finally:
        if follow.poll() is None:
            follow.kill()
            follow.wait()
    text = proctui("timeline", "--run-dir", str(d.run_dir), "--width", "100", cwd=tmp_path)
    assert text.returncode == 0, text.stderr
    assert any(line.startswith("the shutdown began at ") and line.endswith(": proctui down")
               for line in text.stdout.splitlines()), text.stdout
    picture = tmp_path / "run.svg"
    got = proctui("timeline", "--run-dir", str(d.run_dir), "-o", str(picture), cwd=tmp_path)
    assert got.returncode == 0, got.stderr
    assert "the shutdown began: proctui down" in picture.read_text()


def test_logs_follow_into_head_ends_cleanly(tmp_path, detached):  # noqa: F811
    """``logs NAME -f | head -2``: exit status 130, as for a ctrl+c, which failed a
    script's ``set -o pipefail``; logs -n and status exit 0 there. Now 0, and quiet."""
    d = ticking(tmp_path, detached)
    got = subprocess.run(
        ["bash", "-c", f"set -o pipefail; {PY} -m proctui logs tick -f --run-dir "
                       f"{d.run_dir} | head -2"],
        capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert got.returncode == 0, (got.stdout, got.stderr)
    assert len(got.stdout.splitlines()) == 2 and got.stderr == ""
