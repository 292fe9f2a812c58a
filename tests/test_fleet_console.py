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
from proctui.frontends.fleet import FleetRow, LinkState, ordered, row_of
from tests.conftest import PY
from tests.test_detach import Detached, write_config


def view(name: str, phase: Phase, **kw: object) -> ProcessView:
    return ProcessView(name=name, phase=phase, cmd="x", **kw)  # type: ignore[arg-type]


def snap(*views: ProcessView, **kw: object) -> CoreSnapshot:
    return CoreSnapshot(views=views, **kw)  # type: ignore[arg-type]


def test_a_row_counts_a_box_and_says_the_worst_it_has_to_say():
    failed = Outcome(OutcomeKind.EXITED, "exited: exit code 3", ExitStatus(code=3))
    s = snap(view("web", Phase.RUNNING, ready_at=1.0, ready_check="log"),
             view("worker", Phase.RUNNING, ready_check="tcp"),
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


def test_an_agents_request_waiting_is_a_decision_on_top_with_when_it_lapses():
    from proctui.core.life.asks import Ask

    ask = Ask(1, "kill", "web", "it hangs", "an agent through proctui mcp", 4.0, 304.0)
    r = row_of("boxa", snap(view("web", Phase.RUNNING), asks=(ask,)), 10.0, 0.0,
               LinkState.UP, "up 1m")
    assert r.worst == "an agent's request to kill web waits for your decision: lapses " \
                      "in 4m54s" and r.rank == 0
    assert r.due is not None and r.due <= 11.0  # its countdown moves: looked at again
    answered = Ask(1, "kill", "web", "it hangs", "an agent", 4.0, 304.0, state="denied")
    r = row_of("boxa", snap(view("web", Phase.RUNNING), asks=(answered,)), 10.0, 0.0,
               LinkState.UP, "up 1m")
    assert r.worst == "all well"


def test_a_crash_loop_is_trouble_on_its_row_while_it_waits_and_while_it_runs_again():
    """demo --fleet's edge-3 (a crash loop) read "all well"; and its ready processes with
    no ready check were not counted ready (is-ready counts them)."""
    crashed = Outcome(OutcomeKind.EXITED, "exited: exit code 3", ExitStatus(code=3))
    waits = view("crash-loop", Phase.BACKOFF, outcome=crashed, restarts=4, worst=1)
    again = view("crash-loop", Phase.RUNNING, restarts=5, worst=1)
    calm = view("web", Phase.RUNNING)
    r = row_of("edge-3", snap(waits, calm), 10.0, 0.0, LinkState.UP, "up 1m")
    assert (r.worst, r.rank) == ("crash-loop: exited: exit code 3; restarting (restarts: 4)", 3)
    r = row_of("edge-3", snap(again, calm), 10.0, 0.0, LinkState.UP, "up 1m")
    assert (r.worst, r.rank) == (
        "crash-loop: running again after a failed run (restarts: 5)", 3)
    assert (r.running, r.ready) == (2, 2)
    # Restarted by the operator, never failed: all well.
    r = row_of("edge-1", snap(view("web", Phase.RUNNING, restarts=2)), 10.0, 0.0,
               LinkState.UP, "up 1m")
    assert (r.worst, r.rank) == ("all well", 6)
    checked = view("db", Phase.RUNNING, ready_check="notify")
    assert row_of("edge-1", snap(checked), 10.0, 0.0, LinkState.UP, "up 1m").ready == 0


def test_abandoned_and_ended_say_so_without_outranking_trouble():
    gone = Outcome(OutcomeKind.ABANDONED, "abandoned: pid 4121 left running",
                   ExitStatus(known=False))
    r = row_of("boxa", snap(view("x", Phase.ENDED, outcome=gone)), 1.0, 0.0, LinkState.UP, "up")
    assert (r.abandoned, r.failed, r.rank) == (1, 0, 4)
    assert r.worst == "1 abandoned, left running"


def test_a_row_says_when_its_words_next_change_with_the_clock():
    """The fleet looks again when a word of a row would read otherwise (an age, a
    countdown), not every second."""
    deciding = view("db", Phase.DECIDING, deadline=22.25, decision_since=5.0,
                    deadline_action=DeadlineAction.KILL)
    asks = row_of("boxb", snap(deciding, link=Link(started=400.0)), now=10.0, wall=1000.0,
                  link=LinkState.UP, link_words="up 1m")
    assert asks.worst == "db waits for your decision: SIGKILL in 13s"
    assert asks.due == pytest.approx(10.25)  # then "12s"
    idle = row_of("boxa", snap(view("web", Phase.RUNNING), link=Link(started=400.0)),
                  now=10.0, wall=1005.0, link=LinkState.UP, link_words="up 1m", due=50.0)
    assert idle.age == "up 10m" and idle.due == pytest.approx(50.0)  # the link's, sooner
    idle = row_of("boxa", snap(view("web", Phase.RUNNING), link=Link(started=400.0)),
                  now=10.0, wall=1005.0, link=LinkState.UP, link_words="up 1m")
    assert idle.due == pytest.approx(65.0 + 6.0)  # 11m at 660 s of age, up to 6 s late
    assert idle == row_of("boxa", snap(view("web", Phase.RUNNING), link=Link(started=400.0)),
                          now=11.0, wall=1006.0, link=LinkState.UP, link_words="up 1m")


@pytest.mark.parametrize(("value", "words", "changes"), [
    (12.25, "13s", 0.25), (12.0, "12s", 1.0), (0.5, "1s", 0.5), (0.0, "0s", None),
    (-3.0, "0s", None), (125.5, "2m06s", 0.5)])
def test_a_fleet_countdown_is_in_whole_seconds(value, words, changes):
    from proctui.frontends.fleet import left, left_changes

    assert left(value) == words
    assert left_changes(value) == (pytest.approx(changes) if changes is not None else None)


def _rows(link_words: str = "up 4s", worst: str = "all well") -> tuple[FleetRow, ...]:
    return tuple(FleetRow(f"box{i}", LinkState.UP, link_words, "up 3m", 3, 0, 0, 0, 0, (),
                          worst, rank=6) for i in range(3))


def test_the_fleet_s_columns_stay_put_while_the_ages_move():
    """A link's age that goes from 9s to 10s must not move every column (every box's
    line would be drawn again)."""
    from proctui.frontends.console.fleet_table import columns

    for width in (60, 80, 120, 200):
        assert columns(_rows("up 4s"), width) == columns(_rows("up 10s"), width) == \
            columns(_rows("up 3h05m"), width)


def test_a_long_reason_is_folded_on_the_box_s_lines_never_cut():
    from rich.console import Console

    from proctui.frontends.console.fleet_table import columns, header, row_lines

    why = ("ssh: connect to host greenhouse.example.org port 22: Connection refused "
           "(and then some more words to read)")
    rows = (*_rows(), FleetRow("greenhouse", LinkState.UNREACHABLE,
                               "unreachable · 3 tries, next try in 8s", worst=why, rank=1))
    console = Console(width=80)
    for width in (60, 80, 120):
        cols = columns(rows, width)
        lines = row_lines(rows[-1], True, cols, console)
        assert len(lines) > 1
        assert all(line.cell_len <= width for line in [header(cols), *lines])
        said = " ".join(line.plain[-cols.needs:].strip() for line in lines)
        assert "".join(why.split()) in "".join(said.split())  # (a long word folded)
        assert lines[0].plain.startswith("▸  greenhouse")


def test_at_60_columns_what_a_box_needs_has_the_room_the_counts_took():
    """At 60 columns the counts' header alone took 23 cells: a box that could not be
    reached folded its reason over ten lines, and the table showed one box."""
    from rich.console import Console

    from proctui.frontends.console.fleet_table import columns, header, row_lines

    why = ("boxd: bash: line 1: /nonexistent/bin/proctui: No such file or directory "
           "(set PROCTUI_REMOTE to proctui's path on boxd)")
    rows = (row_of("boxd", None, 10.0, 0.0, LinkState.UNREACHABLE,
                   "unreachable · 3 tries, next try in 1s", why),)
    cols = columns(rows, 60)
    assert cols.counts == () and "RUN" not in header(cols).plain
    lines = row_lines(rows[0], True, cols, Console(width=60))
    assert len(lines) <= 5 and all(line.cell_len <= 60 for line in lines)
    assert "RUN/RDY/STOP/FAIL/ABAND" in header(columns(rows, 80)).plain  # (room there)


class StillCore:
    """A box's core that says what it is told: its snapshot, changed by the test, which
    rings its bell as a box's link does on news."""

    def __init__(self, snapshot: CoreSnapshot) -> None:
        from proctui.core.output.reader import OutputReader

        self.snap, self.seq = snapshot, 0
        self.output = OutputReader({}, lambda: self.seq)

    def snapshot(self) -> CoreSnapshot:
        return self.snap

    def send(self, request: object) -> object:
        from concurrent.futures import Future

        from proctui.core.reply import Done

        done: Future[Done] = Future()
        done.set_result(Done())
        return done

    def change(self, snapshot: CoreSnapshot) -> None:
        self.snap, self.seq = snapshot, self.seq + 1
        self.output.bell.ring()

    def close(self) -> None:
        pass


async def test_an_idle_fleet_looks_only_when_a_word_is_due_and_a_box_s_news_wakes_it():
    """Nothing wakes an idle fleet but the next age to change; a box's news is looked at
    at once, and only that box's line is drawn again."""
    import time

    from proctui.frontends.console.fleet import LOOK_GAP, FleetApp
    from proctui.frontends.console.fleet_table import FleetTable
    from proctui.frontends.fleet import Fleet, FleetBox

    now, wall = time.monotonic(), time.time()
    running = snap(view("web", Phase.RUNNING), link=Link(started=wall - 3 * 3600 - 5))
    cores = [StillCore(running) for _ in range(4)]
    boxes = [FleetBox(f"box{i}", dial=lambda: None) for i in range(4)]  # type: ignore[arg-type,return-value]
    fleet = Fleet(boxes)
    looks: list[float] = []
    real_rows = fleet.rows

    def counted() -> list[FleetRow]:
        looks.append(time.monotonic())
        return real_rows()

    fleet.rows = counted  # type: ignore[method-assign]
    app = FleetApp(fleet)
    for box, core in zip(boxes, cores, strict=True):
        fleet.linked(box, core)  # type: ignore[arg-type]
        box.linked_at = now - 2 * 3600 - 5  # "up 2h00m", the next word 55 s away
    async with app.run_test(size=(120, 20)) as pilot:
        table = app.table.query_one(FleetTable)
        await pilot.pause(0.5)  # (the first looks: mounted, shown, the links made)
        looks.clear()
        await pilot.pause(1.5)
        assert looks == []  # (it looked every second)
        before = list(table._shown)
        assert "box2" in before[3].text and "all well" in before[3].text
        deciding = view("web", Phase.DECIDING, decision_since=now,
                        deadline_action=DeadlineAction.KILL)
        changed_at = time.monotonic()
        cores[2].change(snap(deciding, link=Link(started=wall - 3 * 3600 - 5)))
        while "waits for your decision" not in table._shown[1].text:
            assert time.monotonic() - changed_at < LOOK_GAP + 2, table._shown[1].text
            await pilot.pause(0.02)
        shown = table._shown
        assert "box2" in shown[1].text  # on top: it needs the operator
        # box0 and box1 moved one line down; box3 stayed where it was, drawn as it was.
        assert shown[4] is before[4] and shown[0] is before[0]
        assert "box2: web waits for your decision" in app.table.note


async def test_a_decision_is_said_with_its_countdown_as_it_moves_and_its_box_selected():
    """The answer line said a decision's countdown as it was when first said ("waiting
    0s", never moving) and let it go after 8 s while the decision still waited; and the
    operator's selection stayed on another box while the new decision's went on top."""
    import time

    from proctui.frontends.console.fleet import FleetApp
    from proctui.frontends.fleet import Fleet, FleetBox

    wall = time.time()
    running = snap(view("web", Phase.RUNNING), link=Link(started=wall - 60))
    cores = [StillCore(running) for _ in range(3)]
    boxes = [FleetBox(f"box{i}", dial=lambda: None) for i in range(3)]  # type: ignore[arg-type,return-value]
    fleet = Fleet(boxes)
    app = FleetApp(fleet)
    for box, core in zip(boxes, cores, strict=True):
        fleet.linked(box, core)  # type: ignore[arg-type]
    async with app.run_test(size=(120, 20)) as pilot:
        await pilot.pause(0.3)
        await pilot.press("down")  # the operator's choice: box1
        assert app.table.selected == "box1" and app.table.chosen
        # Waiting with no deadline for 8.8 s: "waiting 8s", then "waiting 9s" at 9 s.
        deciding = view("web", Phase.DECIDING, decision_since=time.monotonic() - 8.8,
                        deadline_action=DeadlineAction.KILL)
        cores[2].change(snap(deciding, link=Link(started=wall - 60)))
        said_at = time.monotonic()
        while "box2: web waits for your decision (waiting 8s)" not in app.table.note:
            assert time.monotonic() - said_at < 2, app.table.note
            await pilot.pause(0.02)
        assert app.table.selected == "box2"  # on top, and selected
        while "(waiting 9s)" not in app.table.note:
            assert time.monotonic() - said_at < 3, app.table.note  # (it stayed at 8s)
            await pilot.pause(0.05)
        cores[2].change(running)  # answered elsewhere: the words go
        while app.table.note:
            assert time.monotonic() - said_at < 5, app.table.note
            await pilot.pause(0.05)


def test_a_box_s_link_made_again_is_up_since_then():
    """After its core made the link again, the row said "up 2m": the first link's age."""
    import time

    from proctui.frontends.fleet import Fleet, FleetBox

    core = StillCore(snap(view("web", Phase.RUNNING), link=Link(started=1.0, links=1)))
    box = FleetBox("box0", dial=lambda: None)  # type: ignore[arg-type,return-value]
    Fleet([box]).linked(box, core)  # type: ignore[arg-type]
    box.linked_at = time.monotonic() - 120
    assert box.row(time.monotonic(), time.time()).link_words == "up 2m"
    core.snap = snap(view("web", Phase.RUNNING), link=Link(started=1.0, links=2))
    assert box.row(time.monotonic(), time.time()).link_words == "up 0s"


async def test_a_box_console_made_again_after_a_detach_leaves_no_listener_behind():
    """Each console of a box listened on its bell for as long as the fleet ran: a box
    detached from and opened again twenty times rang twenty dead consoles."""
    from proctui.core.output.lines import OutputBuffer
    from proctui.frontends.console.fleet import FleetApp
    from proctui.frontends.fleet import Fleet, FleetBox

    core = StillCore(snap(view("web", Phase.RUNNING), link=Link(started=1.0)))
    core.output._buffers["web"] = OutputBuffer()  # (its pane's lines: none yet)
    box = FleetBox("box0", dial=lambda: None)  # type: ignore[arg-type,return-value]
    fleet = Fleet([box])
    app = FleetApp(fleet)
    fleet.linked(box, core)  # type: ignore[arg-type]
    async with app.run_test(size=(120, 20)) as pilot:
        await pilot.pause(0.2)
        before = len(core.output.bell._listeners)
        for _ in range(3):
            app.open("box0")
            await pilot.pause(0.2)
            assert len(core.output.bell._listeners) == before + 1
            app.back("box0", forget=True)  # as d does: the next Enter makes a new one
            await pilot.pause(0.2)
        assert len(core.output.bell._listeners) == before


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


@pytest.mark.slow
def test_demo_fleet_puts_its_crash_loop_on_its_row_and_stops_its_boxes_on_leaving(
        tmp_path, child_reaper):
    """Tried as a user: demo --fleet's edge-3 (a crash loop) read "all well", and edge-1
    showed 4 running, 1 ready (its three running processes without a ready check were
    not counted ready). Leaving stops the three boxes, with one summary."""
    from tests.screen import Screen

    def row(name: str, lines: list[str]) -> str:
        return next((line for line in lines if f" {name} " in line), "")

    def counts(line: str) -> tuple[int, ...]:
        found = re.search(r"(\d+) +(\d+) +(\d+) +(\d+) +(\d+) ", line)
        return tuple(int(n) for n in found.groups()) if found else ()

    screen = Screen([PY, "-m", "proctui", "demo", "--fleet"], tmp_path, 30, 120)
    try:
        screen.wait(lambda lines: "3 boxes · 3 up" in "\n".join(lines), timeout=90,
                    what="the demo's three boxes up")
        screen.wait(lambda lines: "crash-loop: " in row("edge-3", lines), timeout=30,
                    what="edge-3's crash loop on its row")
        screen.wait(lambda lines: counts(row("edge-1", lines))[:2] == (4, 4), timeout=30,
                    what="edge-1's four processes running and ready")
        screen.press(b"q")
        assert screen.finish(90) == 0
        said = screen.pty.screen.decode(errors="replace")
        assert "proctui | summary:" in said
        assert re.search(r"edge-3 +crash-loop +exited: exit code 3", said), said[-2000:]
    finally:
        screen.close()
