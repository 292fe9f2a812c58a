"""Idle means idle: with nothing changing, nothing wakes (issue 42). Each test counts what an
idle supervisor does in a while, and proves the guarantee the removed timer kept still
holds, now driven by the event it waited for."""

from __future__ import annotations

import itertools
import os
import shutil
import socket
import time

from proctui.core.store import namelock
from proctui.protocol import wire
from proctui.remote.heal import HEAL_EVERY, SAFETY, SETTLE, Pace
from tests.conftest import spec, wait_until
from tests.test_control_socket import served  # noqa: F401


def _counting(obj: object, name: str) -> list[float]:
    """Each call of ``obj.name`` from now on, noted (monotonic)."""
    calls: list[float] = []
    real = getattr(obj, name)

    def counted(*args: object, **kw: object) -> object:
        calls.append(time.monotonic())
        return real(*args, **kw)

    setattr(obj, name, counted)
    return calls


def _answers(path: object) -> bool:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(str(path))
        return True
    except OSError:
        return False
    finally:
        s.close()


def test_an_idle_control_server_does_not_look_at_its_run_directory(served):  # noqa: F811
    """It looked four times a second (two stat calls and a wake of its thread each)."""
    s = served([spec("idle", "exec sleep 100")])
    time.sleep(6 * HEAL_EVERY)  # (the look that follows the start, the PID file rewritten)
    looks = _counting(s.server.healer, "check")
    time.sleep(8 * HEAL_EVERY)
    assert looks == [], f"{len(looks)} looks at an unchanged run directory in 2 s"


def test_a_removed_run_directory_is_still_rebuilt_at_once(served):  # noqa: F811
    """What the timer was for: the removal is what wakes the healer now (its lock file goes
    first), so the directory, its lock, its PID file and its socket are back as soon."""
    s = served([spec("idle", "exec sleep 100")])
    wait_until(lambda: list(s.run_dir.path.glob("*.pid")), what="the PID file")
    time.sleep(6 * HEAL_EVERY)  # (rewritten once its members were looked at)
    pid_files = {p.name: p.read_bytes() for p in s.run_dir.path.glob("*.pid")}
    looks = _counting(s.server.healer, "check")
    removed = time.monotonic()
    shutil.rmtree(s.run_dir.path)
    wait_until(lambda: _answers(s.path), timeout=5, what="the socket bound again")
    assert time.monotonic() - removed < 4 * HEAL_EVERY
    assert (s.run_dir.path / "lock").read_text().strip() == str(os.getpid())
    assert {p.name: p.read_bytes() for p in s.run_dir.path.glob("*.pid")} == pid_files
    assert 1 <= len(looks) <= 3  # the removal's events, coalesced: not one per file


def test_a_run_directory_moved_away_with_its_parent_is_rebuilt(served, tmp_path):  # noqa: F811
    """No entry of the run directory changes when a directory above it is renamed: the
    watch on that one wakes the healer."""
    s = served([spec("idle", "exec sleep 100")], place=tmp_path / "above")
    time.sleep(2 * HEAL_EVERY)
    os.rename(tmp_path / "above", tmp_path / "moved")
    wait_until(lambda: (tmp_path / "above" / s.run_dir.path.name / wire.SOCKET).exists()
               and _answers(s.path), timeout=4 * HEAL_EVERY + 1, what="the rebuild")


def test_everyone_who_asks_for_the_run_directorys_name_gets_an_answer(served):  # noqa: F811
    """The askers' connections were let go by the timer (64 at most between two looks):
    more in a burst found the queue full and were told nobody held the name. They are let
    go as they come now."""
    s = served([spec("idle", "exec sleep 100")])
    answers: list[int | None] = []
    for _ in range(4):  # bursts that each fit the queue, closer than the timer's looks
        answers += [namelock.holder(s.run_dir.path) for _ in range(namelock.BACKLOG)]
        time.sleep(0.03)
    assert answers.count(os.getpid()) == len(answers), answers.count(None)


def test_the_healers_looks_follow_changes_and_never_crowd():
    """On a fake clock: nothing seen, one look a SAFETY; a change, looked at once it has
    settled; a steady stream of changes (PID files rewritten through a long stop), a look
    every SETTLE, not one per change; no inotify, or a directory that could not be made
    again, every HEAL_EVERY as before."""
    pace = Pace(0.0)
    assert pace.due(watched=True, broken=False) == SAFETY
    assert pace.due(watched=False, broken=False) == HEAL_EVERY
    assert pace.due(watched=True, broken=True) == HEAL_EVERY
    pace.seen(10.0)
    assert pace.due(True, False) == 10.0 + HEAL_EVERY
    pace.seen(10.1)
    assert pace.due(True, False) == 10.1 + HEAL_EVERY  # (still settling)
    looks, now = [], 20.0
    pace.looked(now)
    while now < 30.0:  # a change every 50 ms for ten seconds
        now = round(now + 0.05, 2)
        pace.seen(now)
        if now >= pace.due(True, False):
            looks.append(now)
            pace.looked(now)
    assert len(looks) <= 10 / SETTLE + 1, looks
    assert all(b - a >= HEAL_EVERY for a, b in itertools.pairwise(looks))
