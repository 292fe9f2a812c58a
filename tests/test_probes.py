"""Readiness probes are processes of their run: a probe that hangs is killed with its
group when its run ends and when proctui closes, never left running with ppid 1
(issue 17)."""

from __future__ import annotations

import os

from proctui.commands.stop import Stop
from proctui.config import ReadyCheck
from proctui.core.life.outcome import OutcomeKind
from tests.conftest import processes_with_token, pyspec, spec, wait_until

MARK = "proctui-probe-that-hangs"


def probes(token: str) -> list[int]:
    """Our hanging probes and their children, by the test token and their command."""
    found = []
    for pid in processes_with_token(token):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmdline = f.read()
            if MARK.encode() in cmdline or cmdline == b"sleep\x001000\x00":
                found.append(pid)
        except OSError:
            continue
    return found


# The probe runs a shell that runs a child: the whole group must go, not the shell only.
HANGS = ReadyCheck(exec=("/bin/sh", "-c", f"sleep 1000; echo {MARK}"), interval=0.2)


def test_a_hanging_probe_is_killed_when_its_run_ends(harness, child_reaper):
    h = harness([spec("svc", "exec sleep 60", ready=HANGS, stop_timeout=2)])
    wait_until(lambda: probes(child_reaper), what="the probe to run")
    h.sup.send(Stop("svc"))
    assert h.outcome("svc").kind is OutcomeKind.STOPPED
    wait_until(lambda: not probes(child_reaper), timeout=5, what="the probe to be killed")
    h.wait_all_ended()


def test_a_hanging_probe_is_killed_when_proctui_closes(harness, child_reaper):
    """proctui's core closes while the run is still running (close() leaves processes
    as they are): the probe is proctui's, not the run's, and goes."""
    h = harness([pyspec("svc", "import time; time.sleep(60)", ready=HANGS)])
    wait_until(lambda: probes(child_reaper), what="the probe to run")
    leader = h.view("svc").pid
    h.sup.close()
    wait_until(lambda: not probes(child_reaper), timeout=5, what="the probe to be killed")
    assert leader is not None and os.path.exists(f"/proc/{leader}"), "the run was left"
