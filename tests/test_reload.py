"""``proctui reload``: added processes start, removed ones stop (staged, with their
countdowns) and are forgotten, changed ones restart, the rest keep their pids; a config
that no longer parses changes nothing. The life machine decides; real processes show it."""

from __future__ import annotations

import json
from concurrent.futures import Future
from dataclasses import replace
from pathlib import Path

import pytest

from proctui.commands.kill import Kill
from proctui.commands.reload import Reload
from proctui.commands.stop import Stop
from proctui.commands.stop_all import StopAll
from proctui.config import ProcessSpec, RestartPolicy
from proctui.core.life import machine as life
from proctui.core.life.machine import Life, Stage
from proctui.core.life.stop import Phase
from proctui.core.reply import Done, Fault
from proctui.core.supervisor import Supervisor
from tests.children import POLITE
from tests.conftest import PY, alive, outcomes, pyspec, wait_until
from tests.test_detach import detached, toml_str  # noqa: F401 (a fixture)

# -- the machine ----------------------------------------------------------------------------


def test_removing_a_running_process_stops_it_then_forgets_it():
    running = Life("old", stage=Stage.RUNNING)
    after, effects = life.step(running, life.RemoveCmd())
    assert after.removed and after.stop_wanted
    assert life.RequestStop() in effects and life.Forget() not in effects
    ended, effects = life.step(after, life.RunEnded(True, True, False, 5.0))
    assert ended.stage is Stage.ENDED
    assert effects[-2:] == [life.Finished(), life.Forget()]


def test_a_removed_process_that_exits_is_not_restarted():
    running = Life("old", policy=RestartPolicy.ALWAYS, stage=Stage.RUNNING)
    after, _ = life.step(running, life.RemoveCmd())
    ended, effects = life.step(after, life.RunEnded(True, False, False, 5.0))
    assert ended.stage is Stage.ENDED and life.Forget() in effects


def test_removing_waits_for_removed_dependents_and_forgets_what_never_ran():
    after, effects = life.step(Life("db", stage=Stage.RUNNING), life.RemoveCmd(("web",)))
    assert after.stops_after == ("web",) and life.RequestStop() not in effects
    _, effects = life.step(after, life.DependentsLeft(()))
    assert life.RequestStop() in effects
    for stage in (Stage.WAITING, Stage.NEW, Stage.ENDED):
        _, effects = life.step(Life("x", stage=stage), life.RemoveCmd())
        assert life.Forget() in effects, stage
    _, effects = life.step(Life("x", stage=Stage.BACKOFF), life.RemoveCmd())
    assert life.CancelBackoff() in effects and life.Forget() in effects


def test_a_changed_process_restarts_by_the_machine():
    after, effects = life.step(Life("w", stage=Stage.RUNNING),
                               life.ChangedCmd(RestartPolicy.ALWAYS, False))
    assert after.restart_wanted and after.policy is RestartPolicy.ALWAYS
    assert life.RequestStop() in effects
    again, effects = life.step(after, life.RunEnded(False, True, False, 1.0))
    assert again.stage is Stage.RUNNING and life.Spawn() in effects
    _, effects = life.step(Life("w", stage=Stage.ENDED), life.ChangedCmd(RestartPolicy.NO,
                                                                         False))
    assert life.Spawn() in effects
    _, effects = life.step(Life("w", stage=Stage.RUNNING, shutdown=True),
                           life.ChangedCmd(RestartPolicy.NO, False))
    assert effects == [life.Answer(False, "not restarted: everything is stopping")]


# -- in process -----------------------------------------------------------------------------


class Config:
    """What the config file says now: the supervisor reads it again at each reload."""

    def __init__(self, specs: list[ProcessSpec]) -> None:
        self.specs = specs

    def load(self) -> list[ProcessSpec]:
        return list(self.specs)

    def reload(self, sup: Supervisor, specs: list[ProcessSpec]) -> Future[Done]:
        """The file now says ``specs``: reload, and the reply (once the removed ended)."""
        self.specs = specs
        return sup.send(Reload())


def test_reload_adds_removes_restarts_and_leaves_the_rest(harness):
    keep, change, old = pyspec("keep", POLITE), pyspec("change", POLITE), pyspec("old", POLITE)
    config = Config([keep, change, old])
    h = harness(config.specs, reload_from=config.load)
    for name in ("keep", "change", "old"):
        h.wait_output(name, "ready")
    before = {v.name: v.pid for v in h.sup.snapshot().views}
    new = pyspec("new", POLITE)
    reply = config.reload(h.sup, [keep, replace(change, stop_timeout=3.0), new]).result(15)
    assert reply.ok
    lines = reply.text.splitlines()
    assert lines[0] == "added new"
    assert lines[1].startswith("removed old: stopped after "), lines
    assert lines[1].endswith("s: exit code 0"), lines
    assert lines[2:] == ["changed change: restarting", "unchanged: keep"]
    assert not alive(before["old"])
    wait_until(lambda: {v.name for v in h.sup.snapshot().views} == {"keep", "change", "new"}, 10,
               "old forgotten")
    h.wait_output("new", "ready")
    wait_until(lambda: h.view("change").pid not in (None, before["change"]) and
               h.view("change").phase.value == "running", 10, "change restarted")
    assert h.view("keep").pid == before["keep"]
    assert h.view("change").restarts == 1
    # It is gone for commands too, and the reply to another reload says nothing changed.
    gone = h.sup.send(Stop("old")).result(5)
    assert not gone.ok and gone.fault is Fault.UNKNOWN_NAME, gone
    again = config.reload(h.sup, [keep, replace(change, stop_timeout=3.0), new]).result(5)
    assert again.text == "unchanged: keep, change, new"


def test_removed_processes_stop_in_dependency_order(harness):
    db = pyspec("db", POLITE)
    web = pyspec("web", POLITE, depends_on=(("db", None),))
    other = pyspec("other", POLITE)
    config = Config([db, web, other])
    h = harness(config.specs, reload_from=config.load)
    for name in ("db", "web", "other"):
        h.wait_output(name, "ready")
    reply = config.reload(h.sup, [other]).result(15)
    assert "removed db: stopped after" in reply.text and "removed web: stopped" in reply.text
    h.wait_notice("db", "removed from the config: stops after web")
    ended = [name for name, _ in outcomes(h.sup)]
    assert ended.index("web") < ended.index("db"), ended


def test_no_reload_while_everything_stops(harness):
    a = pyspec("a", POLITE)
    config = Config([a])
    h = harness(config.specs, reload_from=config.load)
    h.wait_output("a", "ready")
    h.sup.send(StopAll())
    reply = config.reload(h.sup, [a, pyspec("b", POLITE)]).result(5)
    assert not reply.ok and reply.text == "not reloaded: everything is stopping"


def test_a_reload_too_slow_to_read_is_refused_and_never_applied(harness, monkeypatch):
    """A config that takes longer to read than the bound (a pathological file, a hung
    NFS mount): the reply says nothing changed, and when the read ends later its result
    is dropped (it was applied 30 s after the client had given up)."""
    import threading

    from proctui.commands import reload as reload_command

    monkeypatch.setattr(reload_command, "READ_LIMIT", 0.3)
    a = pyspec("a", POLITE)
    release = threading.Event()
    read = threading.Event()

    def slow() -> list[ProcessSpec]:
        release.wait(30)
        read.set()
        return [a, pyspec("b", POLITE)]

    h = harness([a], reload_from=slow)
    h.wait_output("a", "ready")
    reply = h.sup.send(Reload()).result(10)
    assert not reply.ok and reply.text == ("reload: reading the config took more than "
                                           "0.3s: nothing changed"), reply
    release.set()
    assert read.wait(10)
    # The engine would take the late read's result in a later pass: look after one more
    # command has been answered, and a moment more.
    assert h.sup.send(Stop("nope")).result(10).fault is Fault.UNKNOWN_NAME
    h.pump(0.3)
    assert [v.name for v in h.sup.snapshot().views] == ["a"]


# -- the command, against a detached supervisor -------------------------------------------


def config_text(*names: str, extra: dict[str, str] | None = None) -> str:
    out = []
    for name in names:
        out.append(f"[processes.{name}]\ncmd = [{toml_str(PY)}, \"-c\", {toml_str(POLITE)}]\n"
                   f"{(extra or {}).get(name, '')}\n")
    return "\n".join(out)


@pytest.mark.slow
def test_an_attached_core_follows_what_a_reload_adds_and_removes(tmp_path: Path,
                                                                 detached):  # noqa: F811
    """An attached console kept a removed process (its last view) for ever, and never
    showed the one the reload added, nor its output."""
    from proctui.remote.client import Connection, RemoteCore

    config = tmp_path / "proctui.toml"
    config.write_text(config_text("db", "old"))
    d = detached(config)
    core = RemoteCore(Connection.open(d.run_dir))
    try:
        assert core.snapshot().names == ["db", "old"]
        config.write_text(config_text("db", "web"))
        assert d.ctl("reload").returncode == 0
        wait_until(lambda: core.snapshot().names == ["db", "web"], 20,
                   f"the reload's changes on the attached core: {core.snapshot().names}")
        wait_until(lambda: "ready" in core.output.buffer("web").read(0).lines, 20,
                   "web's output on the attached core")
    finally:
        core.close()
        d.ctl("down")


@pytest.mark.slow
def test_the_reload_command(tmp_path: Path, detached):  # noqa: F811
    config = tmp_path / "proctui.toml"
    config.write_text(config_text("db", "cache", "worker", "old"))
    d = detached(config)
    pids = {n: p["pid"] for n, p in d.status().items()}
    config.write_text(config_text("db", "cache", "worker", "web",
                                  extra={"worker": "stop_timeout = 3"}))
    got = d.ctl("reload")
    assert got.returncode == 0, got.stderr
    lines = got.stdout.splitlines()
    assert lines[0] == "added web"
    assert lines[1].startswith("removed old: stopped after ") and \
        lines[1].endswith(": exit code 0"), lines
    assert lines[2:] == ["changed worker: restarting", "unchanged: db, cache"]
    status = d.wait_for("web", "running", lambda p: p["state"] == "running")
    assert status is not None
    now = d.status()
    assert set(now) == {"db", "cache", "worker", "web"}
    assert now["db"]["pid"] == pids["db"] and now["cache"]["pid"] == pids["cache"]
    # A config that no longer parses: the one-line error, exit 2, nothing changed.
    config.write_text(config_text("db") + "\n[processes.db2]\ncmd = 5\n")
    bad = d.ctl("reload")
    assert bad.returncode == 2, bad
    assert bad.stdout == ""
    assert bad.stderr.splitlines() == [
        f"proctui: error: {config}: process 'db2': key 'cmd': expected a string or a list "
        "of strings, got 5"]
    assert set(d.status()) == {"db", "cache", "worker", "web"}
    assert d.status()["db"]["pid"] == pids["db"]
    journal = [json.loads(line) for line in
               (d.run_dir / "journal.jsonl").read_text().splitlines()]
    reloads = [e for e in journal if e["kind"] == "reload"]
    assert len(reloads) == 1 and reloads[0]["added"] == ["web"]
    assert d.ctl("down").returncode == 0


@pytest.mark.parametrize("named", [("-f", "proctui.toml"), ()], ids=["relative -f", "found"])
def test_a_config_named_relatively_or_found_here_reloads_as_unchanged(tmp_path: Path, named,
                                                                      child_reaper):
    """The first reload restarted everything: the spec's source was "proctui.toml" at
    start and an absolute path when read again."""
    from tests.test_detach import proctui

    (tmp_path / "proctui.toml").write_text(config_text("a", "b"))
    where = ("--run-dir", str(tmp_path / "run"))
    up = proctui("up", *named, *where, cwd=tmp_path)
    assert up.returncode == 0, up.stderr
    try:
        got = proctui("reload", *where, cwd=tmp_path)
        assert got.returncode == 0, got.stderr
        assert got.stdout.splitlines() == ["unchanged: a, b"]
    finally:
        proctui("down", *where, cwd=tmp_path)


def test_reload_of_commands_is_refused(tmp_path: Path):
    import subprocess
    import sys

    run_dir = tmp_path / "run"
    up = subprocess.run([sys.executable, "-m", "proctui", "up", "--run-dir", str(run_dir),
                         "sleep 60"], capture_output=True, text=True, timeout=60,
                        cwd=tmp_path)
    assert up.returncode == 0, up
    try:
        got = subprocess.run([sys.executable, "-m", "proctui", "reload", "--run-dir",
                              str(run_dir)], capture_output=True, text=True, timeout=60)
        assert got.returncode == 1
        assert "started from commands, not from a file" in got.stderr
    finally:
        subprocess.run([sys.executable, "-m", "proctui", "down", "--run-dir", str(run_dir)],
                       capture_output=True, timeout=60)


async def test_the_console_shows_a_process_a_reload_added():
    from tests.test_console import console, pane_text, screen, until

    a = pyspec("alpha", POLITE)
    config = Config([a])
    async with console(config.specs, reload_from=config.load) as (app, pilot, sup):
        await until(pilot, lambda: "ready" in sup.output.buffer("alpha").read(0).lines)
        assert config.reload(sup, [a, pyspec("beta", POLITE)]).result(15).ok
        await until(pilot, lambda: "beta" in screen(app), what="beta's row")
        await pilot.press("2")
        await until(pilot, lambda: "ready" in pane_text(app), what="beta's output")
        assert app.main.selected_view.name == "beta"
        assert config.reload(sup, [a]).result(15).ok
        await until(pilot, lambda: "beta" not in screen(app), what="beta gone")
        await pilot.press("1")
        assert app.main.selected_view.name == "alpha"


def test_a_name_still_stopping_from_the_last_reload_is_not_added_again(harness):
    from tests.children import STUBBORN

    keep, slow = pyspec("keep", POLITE), pyspec("slow", STUBBORN, stop_timeout=30)
    config = Config([keep, slow])
    h = harness(config.specs, reload_from=config.load)
    h.wait_output("slow", "ready")
    first = config.reload(h.sup, [keep])  # the answer waits; slow keeps stopping
    wait_until(lambda: h.view("slow").phase is Phase.STOPPING, what="slow stopping")
    second = config.reload(h.sup, [keep, slow]).result(5)
    assert not second.ok
    assert second.text == ("not reloaded: slow is still stopping after the last reload; "
                           "reload again once it has ended")
    third = config.reload(h.sup, [keep]).result(5)
    assert third.text == "unchanged: keep"
    h.sup.send(Kill("slow"))
    assert first.result(10).text.startswith("removed slow: killed with SIGKILL by operator")
