"""Idle means idle: with nothing changing, nothing wakes (issue 42). Each test counts what an
idle supervisor does in a while, and proves the guarantee the removed timer kept still
holds, now driven by the event it waited for."""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import socket
import time
from types import SimpleNamespace

from proctui.core.life.stop import Phase
from proctui.core.os import housekeeping
from proctui.core.os.housekeeping import IDLE, QUIET_USAGE, Housekeeping
from proctui.core.os.procfs import ProcStat, ProcTable
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


class _Loop:
    """A fake clock with the two calls Housekeeping makes of its loop."""

    def __init__(self) -> None:
        self.now = 0.0
        self.delays: list[float] = []

    def time(self) -> float:
        return self.now

    def call_later(self, delay: float, _fn: object) -> SimpleNamespace:
        self.delays.append(delay)
        return SimpleNamespace(cancel=lambda: None)


def _sleeping_tree(silence: float | None = None) -> tuple[Housekeeping, _Loop]:
    """Housekeeping over one run whose leader sleeps: the tree never changes."""
    loop = _Loop()
    table = ProcTable()
    table.add(ProcStat(pid=4242, state="S", ppid=os.getpid(), pgid=4242, sid=4242,
                       start_ticks=7, cpu_ticks=3, rss_pages=100))
    run = SimpleNamespace(live=True, pid=4242, exit=None, leftover=False, number=1,
                          started_at=0.0, stop=SimpleNamespace(phase=Phase.RUNNING))
    proc = SimpleNamespace(name="sleepy", run=run, silent_since=None,
                           spec=SimpleNamespace(silence_warning=silence))
    lineage = SimpleNamespace(update=lambda *_a, **_k: table, strays={},
                              members=lambda _run: list(table.stats.values()))
    os_layer = SimpleNamespace(reap_orphans=lambda *_a: None, one_walk=contextlib.nullcontext)
    hk = Housekeeping(loop, os_layer, lineage, lambda: [proc], set,  # type: ignore[arg-type]
                      lambda *_a: None, lambda *_a: None, lambda _n: None, lambda _n: 0)
    return hk, loop


def _walk_for(hk: Housekeeping, loop: _Loop, seconds: float) -> list[float]:
    """Each walk at the time the one before scheduled; the times of the walks."""
    walks = []
    hk.schedule()
    while loop.now + loop.delays[-1] <= seconds:
        loop.now += loop.delays[-1]
        walks.append(loop.now)
        hk.walk()
    return walks


def test_an_unchanged_tree_is_walked_seldom():
    """It was walked every 4 s for ever (5 walks a second apart, 5 at 2 s, then 4 s): the
    pace now halves with each walk that finds it as it was, to one walk an IDLE."""
    hk, loop = _sleeping_tree()
    walks = _walk_for(hk, loop, 120.0)
    assert len(walks) <= 1 + 4 + 120 / IDLE, walks
    assert loop.delays[-1] == IDLE
    hk.changed()  # a spawn, an ending, a stop: a walk within a second
    assert loop.delays[-1] == 1.0


def test_while_usage_is_shown_it_is_walked_as_before(monkeypatch):
    """Its figures move with the walks: every QUIET_USAGE, as before."""
    monkeypatch.setattr(housekeeping, "usage_of", lambda *_a: None)
    hk, loop = _sleeping_tree()
    hk.want_usage = True
    _walk_for(hk, loop, 60.0)
    assert loop.delays[-1] == QUIET_USAGE


def test_a_silence_warning_is_never_later_than_its_deadline():
    """A walk is due when the first silence warning is: the slow pace would make it late
    by up to an IDLE."""
    hk, loop = _sleeping_tree(silence=30.0)
    walks = _walk_for(hk, loop, 31.0)
    assert 30.0 in walks, walks


def test_the_consoles_input_thread_sleeps_until_input_comes(monkeypatch):
    """Textual's input thread waited in select(0.1): ten wakes a second, 0.1 % of a core
    by itself. Now it waits without a timeout once input is no longer recent; a key still
    arrives, a lone escape still comes out of the parser, and the exit still wakes it."""
    import asyncio
    import selectors
    import signal
    import threading

    from textual import events

    from proctui.frontends.console.driver import QUICK_FOR, console_driver

    waits: list[float | None] = []
    real = selectors.SelectSelector.select

    def counted(self, timeout=None):  # type: ignore[no-untyped-def]
        waits.append(timeout)
        return real(self, timeout)

    monkeypatch.setattr(selectors.SelectSelector, "select", counted)
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGTSTP, signal.SIGCONT)}
    keys: list[str] = []
    read, write = os.pipe()

    async def made():  # type: ignore[no-untyped-def]
        return console_driver()(SimpleNamespace())  # type: ignore[misc]

    try:
        driver = asyncio.run(made())
        driver.fileno = read
        driver.process_message = lambda m: keys.append(m.key) if isinstance(
            m, events.Key) else None
        thread = threading.Thread(target=driver.run_input_thread, daemon=True)
        thread.start()
        time.sleep(QUICK_FOR + 0.3)
        before = len(waits)
        time.sleep(1.0)
        assert len(waits) - before <= 1, waits[before:]
        os.write(write, b"a")
        wait_until(lambda: keys == ["a"], timeout=2, what="the key")
        time.sleep(QUICK_FOR + 0.3)
        os.write(write, b"\x1b")  # a lone escape, after a quiet while
        wait_until(lambda: keys == ["a", "escape"], timeout=2, what="the escape")
        driver.exit_event.set()
        thread.join(2)
        assert not thread.is_alive()
    finally:
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
        os.close(read)
        os.close(write)
