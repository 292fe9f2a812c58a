"""The fleet console (``proctui attach --fleet`` / ``--host`` repeated): its rows from
each box's snapshot, what needs the operator on top, and the console itself on a real
pty over three supervisors of this machine (boxes without ssh: a run directory each).
The same console over real sshd is in tests/test_ssh.py."""

from __future__ import annotations

import os
import re
import signal
from pathlib import Path

import pytest

from proctui.core.life.outcome import ExitStatus, Outcome, OutcomeKind
from proctui.core.life.stop import DeadlineAction, Phase
from proctui.core.snapshot import CoreSnapshot, Link
from proctui.core.view import ProcessView
from proctui.frontends.fleet import LinkState, ordered, row_of
from tests.conftest import PY
from tests.test_detach import Detached, write_config


def view(name: str, phase: Phase, **kw: object) -> ProcessView:
    return ProcessView(name=name, phase=phase, cmd="x", **kw)  # type: ignore[arg-type]


def snap(*views: ProcessView, **kw: object) -> CoreSnapshot:
    return CoreSnapshot(views=views, **kw)  # type: ignore[arg-type]


def test_a_row_counts_a_box_and_says_the_worst_it_has_to_say():
    failed = Outcome(OutcomeKind.EXITED, "exited: exit code 3", ExitStatus(code=3))
    s = snap(view("web", Phase.RUNNING, ready_at=1.0), view("worker", Phase.RUNNING),
             view("db", Phase.STOPPING), view("flaky", Phase.ENDED, outcome=failed),
             link=Link(started=400.0))
    r = row_of("boxa", s, now=10.0, wall=1000.0, link=LinkState.UP, link_words="up 3s")
    assert (r.running, r.ready, r.stopping, r.failed, r.abandoned) == (2, 1, 1, 1, 0)
    assert r.worst == "1 stopping" and r.rank == 2
    assert r.age == "up 10m"


def test_a_decision_is_on_top_with_its_countdown_and_a_lost_box_after_it():
    deciding = view("db", Phase.DECIDING, deadline=22.0, decision_since=5.0,
                    deadline_action=DeadlineAction.KILL)
    waiting = view("db", Phase.DECIDING, decision_since=5.0)
    asks = row_of("boxb", snap(deciding), 10.0, 0.0, LinkState.UP, "up 1m")
    asks_long = row_of("boxe", snap(waiting), 10.0, 0.0, LinkState.UP, "up 1m")
    lost = row_of("boxc", snap(view("api", Phase.RUNNING), link=Link(heard=4.0)), 10.0, 0.0,
                  LinkState.LOST, "lost 6s · try 2, next try in 1s",
                  "link lost: the connection closed")
    fine = row_of("boxa", snap(view("web", Phase.RUNNING)), 10.0, 0.0, LinkState.UP, "up 1m")
    never = row_of("boxd", None, 10.0, 0.0, LinkState.UNREACHABLE,
                   "unreachable · 3 tries, next try in 2s", "ssh: connect refused")
    assert asks.worst == "db waits for your decision: SIGKILL in 12s"
    assert asks_long.worst == "db waits for your decision: waiting 5s"
    assert lost.worst == "link lost: the connection closed"
    assert lost.stale == "as of 6s ago"  # its counts are from before the link dropped
    assert never.worst == "ssh: connect refused"
    got = [r.box for r in ordered([fine, never, lost, asks, asks_long])]
    assert got == ["boxb", "boxe", "boxd", "boxc", "boxa"]


def test_abandoned_and_ended_say_so_without_outranking_trouble():
    gone = Outcome(OutcomeKind.ABANDONED, "abandoned: pid 4121 left running",
                   ExitStatus(known=False))
    r = row_of("boxa", snap(view("x", Phase.ENDED, outcome=gone)), 1.0, 0.0, LinkState.UP, "up")
    assert (r.abandoned, r.failed, r.rank) == (1, 0, 4)
    assert r.worst == "1 abandoned, left running"


def _fleet_file(tmp: Path, boxes: dict[str, Path]) -> Path:
    fleet = tmp / "fleet.toml"
    fleet.write_text("".join(f'[boxes.{n}]\nrun_dir = "{d}"\n' for n, d in boxes.items()))
    return fleet


@pytest.mark.slow
def test_the_fleet_console_drills_in_decides_comes_back_and_sees_a_box_end(tmp_path,
                                                                          child_reaper):
    """Three supervisors, one row each; a stop that reaches a decision on boxb is said in
    the fleet and put on top; Enter opens boxb's console, where the question is asked and
    K kills; Esc is the fleet again (the same link); boxc's supervisor dies and its row
    says so while the others stay up; q leaves with everything running."""
    from tests.screen import Screen

    made = {}
    for name in ("boxa", "boxb", "boxc"):
        where = tmp_path / name
        where.mkdir()
        made[name] = Detached(where, write_config(where))
    try:
        fleet = _fleet_file(tmp_path, {n: d.run_dir for n, d in made.items()})
        screen = Screen([PY, "-m", "proctui", "attach", "--fleet", str(fleet)], tmp_path, 30,
                        120)
        try:
            screen.wait(lambda lines: sum(" up " in line for line in lines) >= 3, timeout=60,
                        what="three boxes up")
            assert "proctui fleet · 3 boxes · 3 up" in screen.text()
            got = made["boxb"].ctl("stop", "hung")
            assert got.returncode == 0, got.stderr
            screen.wait_text("hung waits for your decision", timeout=30)
            # On top, selected, and said in the notification.
            rows = [line for line in screen.lines() if " box" in line and "fleet" not in line
                    and "BOX" not in line]
            assert rows[0].lstrip().startswith("▸") and "boxb" in rows[0], rows
            screen.press(b"\r")
            screen.wait_text("attached to supervisor", timeout=30)
            screen.wait_text("kill now", timeout=30)  # the question, armed as ever
            screen.press(b"K")
            made["boxb"].wait_for("hung", "killed", lambda p: p["state"] != "deciding",
                                  timeout=30)
            screen.wait_text("killed with SIGKILL by operator", timeout=30)
            # The box's output came once its console opened (the table had only views).
            screen.wait(lambda lines: any(re.fullmatch(r"[\s│┃|]*ready[\s│┃|]*", line)
                                          for line in lines), timeout=30,
                        what="the box's output in its pane")
            screen.press(b"\x1b")
            screen.wait(lambda lines: "Open its console" in "\n".join(lines) and
                        "hung waits for your decision" not in "\n".join(lines), timeout=30,
                        what="the fleet again, the decision no longer said")
            os.kill(made["boxc"].pid, signal.SIGKILL)
            screen.wait(lambda lines: any("boxc" in line and ("lost" in line or
                                                               "reconnecting" in line or
                                                               "unreachable" in line or
                                                               "ended" in line)
                                          for line in lines), timeout=10,
                        what="boxc's row saying its link is gone")
            assert "2 up" in screen.text()
            screen.press(b"q")
            assert screen.finish(30) == 0
        finally:
            screen.close()
        for name in ("boxa", "boxb"):
            assert made[name].status()["svc"]["state"] in ("running", "ready")
    finally:
        for d in made.values():
            d.kill()
