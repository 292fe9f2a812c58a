"""The built-in demo: its config, a headless run with the expected endings, and the
screenshot script."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib

import pytest

from proctui import demo
from proctui.config import OnTimeout, RestartPolicy
from tests.conftest import processes_with_token

# The real console on a pty, the wheel, ssh or hundreds of processes: the second
# CI stage (README: "Tests").
pytestmark = pytest.mark.slow


def test_demo_config_loads_and_validates():
    config = demo.config()
    names = [p.name for p in config.processes]
    assert names == ["clean-web", "slow-8s", "ignores-term", "crash-loop", "chatty",
                     "forks-child", "db", "web"]
    by_name = {p.name: p for p in config.processes}
    assert by_name["ignores-term"].on_timeout is OnTimeout.ASK
    assert by_name["crash-loop"].restart is RestartPolicy.ON_FAILURE
    assert by_name["db"].ready is not None and by_name["db"].ready.notify
    assert by_name["web"].depends_on == (("db", None),)
    assert all(p.stop_timeout == 5 and p.kill_timeout == 3 for p in config.processes)
    assert all(p.argv[0] == sys.executable for p in config.processes)


def test_print_config_is_a_usable_proctui_toml(tmp_path):
    result = subprocess.run([sys.executable, "-m", "proctui", "demo", "--print-config"],
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 0
    assert set(tomllib.loads(result.stdout)["processes"]) == {
        p.name for p in demo.config().processes}
    (tmp_path / "demo.toml").write_text(result.stdout)
    check = subprocess.run([sys.executable, "-m", "proctui", "check", "-f", "demo.toml"],
                           capture_output=True, text=True, cwd=tmp_path, timeout=30)
    assert check.returncode == 0, check.stderr
    assert "8 processes, OK" in check.stdout


def test_demo_headless_plays_every_ending(tmp_path, child_reaper):
    result = subprocess.run(
        [sys.executable, "-m", "proctui", "demo", "--headless", "--stop-after", "4",
         "--run-dir", str(tmp_path / "run")],
        capture_output=True, text=True, timeout=60)
    assert result.returncode == 1, result.stdout[-2000:]  # some were killed
    summary = result.stdout[result.stdout.index("proctui      | summary:"):]
    expected = {
        "clean-web": r"stopped after 0\.\ds: exit code 0",
        "slow-8s": r"killed with SIGKILL after 5s stop timeout",
        "ignores-term": r"killed with SIGKILL after 5s stop timeout",
        # Stopped in its backoff (last ending: exit 3) or in its second run (stopped).
        "crash-loop": r"(exited: exit code 3|stopped after .*) \(restarted once\)",
        "chatty": r"stopped after \d\.\ds: exit code 0",
        "forks-child": r"killed with SIGKILL after 5s stop timeout \(the leader ended, "
                       r"exit code 0; the rest of its group did not\)",
        # Ready by READY=1, stopped after web, in time thanks to its own extension.
        "db": r"stopped after [78]\.\ds: exit code 0",
        "web": r"stopped after 0\.\ds: exit code 0",
    }
    for name, pattern in expected.items():
        assert re.search(rf"\|   {name} +{pattern}", summary), (name, summary)
    assert "proctui      | crash-loop: exited: exit code 3" in result.stdout
    assert "grandchild" in result.stdout
    out = result.stdout
    assert re.search(r"db: ready after 1\.\ds \(READY=1\)", out)
    assert out.index("db: ready after") < out.index("| web: started (pid"), "web waits for db"
    assert "db: stops after web (stage 2 of 2)" in out
    assert out.index("| web: stopped after") < out.index("| db: SIGTERM sent"), "in stages"
    assert "db: extended by the process: SIGKILL in 6.0s" in out
    # Nothing of the demo is left, grandchild included.
    assert processes_with_token(child_reaper) == []


def test_screenshot_script_runs(tmp_path):
    result = subprocess.run([sys.executable, "screenshots/generate.py", str(tmp_path)],
                            capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, result.stderr[-3000:]
    for name in ("console", "quitting", "ask", "final", "timeline"):
        svg = (tmp_path / f"{name}.svg").read_text()
        assert svg.startswith("<svg") and "proctui" in svg
