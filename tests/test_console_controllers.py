"""The console over a fake core (tests/fake_core.py), in milliseconds: each key sends the
command table's request, the palette offers the table's commands (a new one by itself),
a tick draws one snapshot, answers are shown, and an attached console's link (read-only,
down, gone) is read from the snapshot. The real core and real processes: test_console.py."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, replace
from typing import Any

from proctui.commands.abandon import Abandon
from proctui.commands.adopt import Adopt
from proctui.commands.base import Named
from proctui.commands.clear import Clear
from proctui.commands.extend import Extend
from proctui.commands.journal_read import ReadJournal
from proctui.commands.kill import Kill
from proctui.commands.kill_all import KillAll
from proctui.commands.restart import Restart
from proctui.commands.start import Start
from proctui.commands.stop import Stop
from proctui.commands.stop_all import StopAll
from proctui.commands.usage import WantUsage
from proctui.core.life.stop import Phase
from proctui.core.output.lines import Stream
from proctui.core.snapshot import CoreSnapshot, Link
from proctui.frontends.console.app import ProctuiApp
from proctui.frontends.console.dialogs import ConfirmScreen
from proctui.frontends.console.link import LinkBanner
from tests import fake_core
from tests.fake_core import NOW, FakeCore

SIZE = (100, 30)


def console(core: FakeCore, **kw: Any) -> ProctuiApp:
    return ProctuiApp(core, clock=lambda: NOW, **kw)


def said(app: ProctuiApp) -> list[str]:
    notice = app.main.notices.current  # the one answer on screen (notices.py)
    return [notice.text] if notice is not None else []


def sent(core: FakeCore) -> list[object]:
    return [r for r in core.requests if not isinstance(r, WantUsage)]


async def test_each_key_sends_the_command_tables_request_for_the_selected_process():
    core = FakeCore(fake_core.running())
    app = console(core)
    async with app.run_test(size=SIZE) as pilot:
        assert core.requests == [WantUsage(True)]  # CPU and memory, for the table
        await pilot.press("s", "S", "r", "K", "e", "A", "c")
        await pilot.press("j", "s")  # the next process
        await pilot.pause(0.1)
        assert sent(core) == [Stop("web"), Start("web"), Restart("web"), Kill("web"),
                              Extend("web"), Adopt("web"), Clear("web"), Stop("worker")]
        await pilot.press("a")  # abandon asks first: nothing is sent before the answer
        assert isinstance(app.screen, ConfirmScreen) and sent(core)[-1] == Stop("worker")
        await pilot.press("y")
        await pilot.pause(0.1)
        assert sent(core)[-1] == Abandon("worker")
        await pilot.press("q")  # stop everything, as the quit key
        await pilot.pause(0.1)
        assert sent(core)[-1] == StopAll(why="quit key") and app.main.quit.quitting
        await pilot.press("X")
        await pilot.pause(0.1)
        assert sent(core)[-1] == StopAll(ordered=False)
        await pilot.press("q", "y")  # again: kill all (asks first)
        await pilot.pause(0.1)
        assert sent(core)[-1] == KillAll()


@dataclass(frozen=True)
class Nudge(Named):
    """Nudge NAME: a command that exists only in this test."""

    op = "nudge"
    palette = "Nudge the selected process"


async def test_the_palette_offers_the_command_tables_commands_a_new_one_by_itself(
        monkeypatch):  # type: ignore[no-untyped-def]
    import proctui.commands
    from proctui.commands import COMMANDS

    # The table as a new module in the package would make it (the palette reads it).
    monkeypatch.setattr(proctui.commands, "COMMANDS", {**COMMANDS, Nudge.op: Nudge})
    core = FakeCore(fake_core.running())
    core.answers[Nudge.op] = {"ok": True, "text": "web nudged"}
    app = console(core)
    async with app.run_test(size=SIZE) as pilot:
        commands = {c.title: c for c in app.get_system_commands(app.screen)}
        offered = {cls.palette for cls in COMMANDS.values() if cls.palette}
        assert offered and offered <= set(commands), sorted(commands)
        assert Stop.palette in commands and not Extend.palette and not Adopt.palette
        # The console's own ways out, layout and help stay; Detach only when attached.
        assert {"Quit", "Abandon all", "Stop all now", "Layout", "Help"} <= set(commands)
        assert "Detach" not in commands
        nudge = commands[Nudge.palette]
        assert nudge.help.startswith("web")  # on the selected process
        nudge.callback()
        await pilot.pause(0.1)
        assert sent(core)[-1] == Nudge("web")
        assert "web nudged" in said(app), said(app)  # its answer, whatever it says
        commands[Stop.palette].callback()  # as the key does it
        await pilot.pause(0.1)
        assert sent(core)[-1] == Stop("web")
        commands[Abandon.palette].callback()  # as the key does it: it asks first
        await pilot.pause(0.1)
        assert isinstance(app.screen, ConfirmScreen) and sent(core)[-1] == Stop("web")
        await pilot.press("n")
        commands[StopAll.palette].callback()  # as q does: the panel and its countdowns
        await pilot.pause(0.1)
        assert sent(core)[-1] == StopAll(why="operator") and app.main.quit.quitting


class Flickering(FakeCore):
    """A core whose every snapshot is another moment: web alternately running and
    stopping."""

    def __init__(self) -> None:
        super().__init__(fake_core.running())
        stopping = replace(self._snapshot.views[0], phase=Phase.STOPPING,
                           stop_requested_at=NOW - 1, deadline=NOW + 9, window_start=NOW - 1)
        self.moments = [self._snapshot,
                        replace(self._snapshot, views=(stopping, *self._snapshot.views[1:]))]
        self.asked = 0

    def snapshot(self) -> CoreSnapshot:
        self.asked += 1
        self.output.news += 1  # every moment is news
        return self.moments[self.asked % 2]


async def test_a_tick_draws_everything_from_one_snapshot():
    core = Flickering()
    app = console(core)
    async with app.run_test(size=SIZE) as pilot:
        for _ in range(6):
            app.main.tick()
            await pilot.pause(0.02)
            snap = app.main.snap
            assert [row.view for row in app.main.table.rows] == list(snap.views)
            assert app.main.panes["web"].header.view is snap.view("web")


async def test_an_answer_that_says_why_nothing_happened_is_shown():
    core = FakeCore(fake_core.running())
    core.answers[Stop.op] = {"ok": False, "text": "web has already ended",
                             "fault": "NOT_RUNNING"}
    app = console(core)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("s")
        await pilot.pause(0.2)
        assert "web has already ended" in said(app), said(app)


def attached(core: FakeCore, read_only: bool = False) -> ProctuiApp:
    return console(core, attached="supervisor pid 4100", read_only=read_only,
                   hint=("attached to supervisor pid 4100",))


async def test_a_read_only_console_refuses_what_acts_and_sends_nothing():
    core = FakeCore(fake_core.running(), link=Link(where="supervisor pid 4100",
                                                   read_only=True))
    app = attached(core, read_only=True)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("s", "K", "c")
        await pilot.pause(0.2)
        assert sent(core) == [], sent(core)
        assert any(m.startswith("read-only") for m in said(app)), said(app)
        assert "Detach" in {c.title for c in app.get_system_commands(app.screen)}
        await pilot.press("q")  # read-only: q detaches
        await pilot.pause(0.1)
        assert app.main.quit.detached == "detached" and not app.is_running


async def test_a_link_down_greys_the_picture_refuses_keys_and_comes_back():
    link = Link(where="supervisor pid 4100")
    core = FakeCore(fake_core.running(), link=link)
    app = attached(core)
    async with app.run_test(size=SIZE) as pilot:
        banner = app.main.query_one(LinkBanner)
        assert not banner.display
        core.show(link=replace(link, down_since=time.monotonic() - 2,
                               down_why="the connection closed",
                               next_try=time.monotonic() + 3))
        await pilot.pause(0.3)
        assert banner.display and app.main.has_class("-stale")
        words = " · ".join(banner.items)
        assert re.search(r"reconnecting · link lost [23]s ago · next try in [23]s", words), words
        await pilot.press("s")
        await pilot.pause(0.1)
        assert sent(core) == [] and "not connected: reconnecting" in said(app), said(app)
        core.show(link=replace(link, links=2))
        await pilot.pause(0.3)
        assert not banner.display and not app.main.has_class("-stale")
        await pilot.press("s")
        await pilot.pause(0.1)
        assert sent(core) == [Stop("web")]


async def test_an_attached_console_leaves_when_the_supervisor_is_gone():
    link = Link(where="supervisor pid 4100")
    core = FakeCore(fake_core.running(), link=link)
    app = attached(core)
    async with app.run_test(size=SIZE) as pilot:
        core.show(link=replace(link, gone="the supervisor has gone away"))
        await pilot.pause(0.3)
        assert not app.is_running
        assert app.main.quit.detached == "the supervisor has gone away"


async def test_a_shutdown_from_another_terminal_shows_the_panel():
    core = FakeCore(fake_core.running())
    app = console(core)
    async with app.run_test(size=SIZE) as pilot:
        core.show(shutting_down=True, shutdown_why="proctui down")
        await pilot.pause(0.3)
        assert app.main.quit.quitting and app.main.panel.display
        assert any("proctui down (from another terminal)" in m for m in said(app))
        core.show(all_ended=True)
        await pilot.pause(0.3)
        assert not app.is_running  # everything ended: the console leaves


class Journal(FakeCore):
    """A journal of two pages."""

    PAGES = {0: ([{"t": 0.0, "wall": 1.0, "kind": "started", "name": "alpha", "pid": 1}],
                 1, True),
             1: ([{"t": 1.0, "wall": 2.0, "kind": "started", "name": "beta", "pid": 2}],
                 2, False)}

    def send(self, request):  # type: ignore[no-untyped-def]
        if isinstance(request, ReadJournal):
            entries, following, more = self.PAGES[request.start]
            self.answers[ReadJournal.op] = {"ok": True, "entries": entries,
                                            "next": following, "more": more}
        return super().send(request)


async def test_the_timeline_reads_the_journal_page_by_page():
    from proctui.frontends.console.reading import TimelineScreen

    core = Journal(fake_core.running())
    app = console(core)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("t")
        await pilot.pause(0.3)
        assert isinstance(app.screen, TimelineScreen)
        assert [r for r in core.requests if isinstance(r, ReadJournal)] == \
            [ReadJournal(0), ReadJournal(1)]
        text = str(app.screen.body(80))
        assert "alpha" in text and "beta" in text, text


async def test_nothing_in_the_journal_says_so():
    app = console(FakeCore(fake_core.running()))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("t")
        await pilot.pause(0.2)
        assert "Nothing in the journal yet" in said(app)



async def test_processes_a_reload_adds_and_removes_come_and_go_with_their_panes():
    core = FakeCore(fake_core.running())
    app = console(core)
    async with app.run_test(size=SIZE) as pilot:
        views = core.snapshot().views
        extra = fake_core.view("extra", Phase.RUNNING, 4200, buffer=fake_core.buffer(
            [(Stream.STDOUT, "extra's first line")]))
        core.show(views=(*views, extra))
        await pilot.pause(0.2)
        await pilot.press("5")
        await pilot.pause(0.2)
        assert app.main.selected_view.name == "extra"
        assert "extra's first line" in app.main.panes["extra"].output.text()
        core.show(views=views)
        await pilot.pause(0.2)
        assert "extra" not in app.main.panes and app.main.selected_view.name == "chatty"
        await pilot.press("1")
        assert app.main.selected_view.name == "web"
