"""The console's main screen: the process table, the panes, the shutdown panel, the key
bar and the banner of an attached console, all drawn from one snapshot of the core per
tick; and its keys, each handed to the controller that holds what it does.

It pulls from the core at a steady rate (never one message per line): a tick comes when
the core says something changed (never more often than ``refresh_hz``) or when a figure
on screen (an age, a countdown) next moves, and there is no timer while nothing moves."""

from __future__ import annotations

import contextlib
import re
import sys
import time
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

from textual import events
from textual.app import ComposeResult
from textual.containers import Container
from textual.message import Message
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Static

from proctui.commands.abandon import Abandon
from proctui.commands.adopt import Adopt
from proctui.commands.api import Core
from proctui.commands.base import Request
from proctui.commands.clear import Clear
from proctui.commands.extend import Extend
from proctui.commands.kill import Kill
from proctui.commands.restart import Restart
from proctui.commands.start import Start
from proctui.commands.stop import Stop
from proctui.commands.stop_all import StopAll
from proctui.commands.usage import WantUsage
from proctui.core.life.stages import Why
from proctui.core.snapshot import CoreSnapshot
from proctui.core.view import ProcessView
from proctui.frontends.console import keys
from proctui.frontends.console.asking import Asking
from proctui.frontends.console.driver import stop_input
from proctui.frontends.console.link import LinkBanner, LinkWatch
from proctui.frontends.console.notices import NoticeLine, Notices
from proctui.frontends.console.output import PaneArea, Panes, ProcessPane
from proctui.frontends.console.pane_keys import PaneKeys
from proctui.frontends.console.panels import Hint, KeyBar, ShutdownPanel
from proctui.frontends.console.process_keys import ProcessKeys
from proctui.frontends.console.quitting import Quitting
from proctui.frontends.console.render import clock_face, next_change
from proctui.frontends.console.search import Search
from proctui.frontends.console.sending import Sender
from proctui.frontends.console.table import ProcessTable, Row
from proctui.frontends.console.type_ahead import TypeAhead
from proctui.frontends.hangup import watch_terminal

REFRESH_HZ = 10  # the design asks 10 to 20 Hz; every extra tick costs idle CPU
SETTLED_GAP = 0.02  # seconds between two draws when an attached console's news has ended
MIN_PANE = (40, 6)  # columns, rows: a border, a header and three lines of output
UNBOUND_QUIET = 2.0  # seconds: a held key (its repeats) is answered once
FUNCTION_KEY = re.compile(r"f\d+|ctrl\+[a-z]")  # answered when bound to nothing, as F5


class ConsoleScreen(Screen[None]):
    # The main keys but the one that quits from every screen (the app's: ctrl+c, ctrl+q).
    BINDINGS = keys.bindings(tuple(k for k in keys.MAIN if not k.priority))

    def __init__(self, core: Core, *, clock: Callable[[], float] = time.monotonic,
                 hint: tuple[str, ...] = (), refresh_hz: float = REFRESH_HZ,
                 stop_after: float | None = None,
                 on_terminal_lost: Callable[[str], None] | None = None,
                 attached: str | None = None, read_only: bool = False,
                 again: str = "proctui attach",
                 first_frame: Callable[[], object] | None = None,
                 leave: Callable[[], None] | None = None, place: str = "") -> None:
        super().__init__()
        self.core = core
        # Where the console goes once it is done (detached, everything ended): the app
        # exits, or (a box of the fleet) the fleet's table shows again.
        self.leave = leave or (lambda: self.app.exit())
        self.place = place  # where this console is, first in the key bar ("boxb · Esc fleet")
        self.clock = clock
        self.hint = hint
        self.refresh_hz = refresh_hz
        self.stop_after = stop_after
        self.on_terminal_lost = on_terminal_lost
        self.first_frame = first_frame  # called once the first frame is drawn
        # Attached to a supervisor elsewhere (its description): q asks, d detaches.
        self.attached = attached
        self.read_only = read_only  # attached to look: every key that acts says so
        self.snap = core.snapshot()  # the snapshot on screen: everything drawn comes from it
        self.selected = 0
        self.grid = False
        self.panes = Panes(self._make_pane)
        self._seen: dict[str, int] = {v.name: 0 for v in self.views}
        self._active: set[str] = set()  # printed something since last selected
        self._tick_key: tuple[object, ...] = ()
        self._layout_seq = 0  # a pane shown since the last tick is drawn at the next
        self._next: Timer | None = None
        self._next_due = self._last_tick = 0.0
        self._bar_keys = keys.MAIN  # the console's kind of bar; the tick fits it to now
        self._unbound: tuple[str, float] = ("", 0.0)  # the last unbound key said, and when
        self.notices = Notices()  # the one answer on screen, on the line above the key bar
        # What the keys do, each kind held by its own controller.
        self.sender = Sender(core, self, self.notices, draw=self.tick)
        self.link = LinkWatch(self, core, attached=attached is not None, read_only=read_only,
                              banner=lambda: self.query_one(LinkBanner), soon=self.soon,
                              new_link=lambda: self.asking.questions.answered.clear())
        self.type_ahead = TypeAhead()
        self.search = Search(self, core, self.type_ahead, lambda: self.selected_pane)
        self.process = ProcessKeys(self, core, self.sender, self.link,
                                   lambda: self.selected_view)
        self.pane_keys = PaneKeys(self, core, self.sender, self.link,
                                  lambda: self.selected_pane, read_only, self.notices)
        self.quit = Quitting(self, self.sender, self.link, attached=attached,
                             read_only=read_only, again=again, views=lambda: self.views,
                             tick=self.tick, leave=lambda: self.leave())
        self.asking = Asking(self, self.notices, clock=clock, refused=self.link.refused,
                             help=self.pane_keys.help,
                             detach=(lambda: self.quit.detach("detached"))
                             if attached is not None else None,
                             resumed=self.tick, decide=self.process.decide,
                             answer=self.process.answer)

    # -- layout -----------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield LinkBanner(id="link")
        yield ProcessTable(id="table")
        if self.hint:
            yield Hint(id="hint")
        yield Static(id="grid-info")
        with PaneArea(self._relayout, id="panes"):
            # The selected process's pane; the others are made when first shown (or
            # asked for): 25 panes mounted, styled and hidden cost the first frame.
            if self.views:
                name = self.views[0].name
                pane = self.panes[name] = ProcessPane(name, self.core.output.buffer(name),
                                                      classes="pane")
                yield pane
        yield ShutdownPanel(id="shutdown")
        yield NoticeLine(self.notices, id="notice")
        yield KeyBar(id="keys")

    def _make_pane(self, name: str) -> ProcessPane:
        """A pane made on first use, hidden until the layout shows it, mounted in the
        processes' order (the grid places panes in that order)."""
        pane = ProcessPane(name, self.core.output.buffer(name), classes="pane")
        pane.display = False
        names = [v.name for v in self.views]
        after = names[names.index(name) + 1:] if name in names else []
        self.query_one("#panes", Container).mount(
            pane, before=next((self.panes[n] for n in after if n in self.panes), None))
        return pane

    def on_unmount(self) -> None:
        # A fleet makes a box's console again after a detach: the old one must not stay
        # on the box's bell (a listener a screen, for as long as the fleet runs).
        self.core.output.unlisten(self.poke)

    def on_mount(self) -> None:
        self.table = self.query_one(ProcessTable)
        self.panel = self.query_one(ShutdownPanel)
        self.key_bar = self.query_one(KeyBar)
        if self.hint:
            self.query_one(Hint).items = self.hint
        self.search.close()
        if self.attached is not None:
            self._bar_keys = keys.read_only_bar() if self.read_only else keys.attached_bar()
            self.key_bar.note = " · ".join(
                w for w in (self.place, "read-only view" if self.read_only else "") if w)
            self.panel.read_only = self.read_only
        self.show_panes()
        self.core.output.listen(self.poke)
        self.tick()
        app = self.app
        if self.first_frame is not None:
            app.call_after_refresh(self.first_frame)
        if self.on_terminal_lost is not None and not app.is_headless and \
                sys.__stdin__ is not None:
            # The terminal Textual reads (its Linux driver's fileno is stdin's), named
            # without reaching into the app's private driver.
            terminal = SimpleNamespace(fileno=sys.__stdin__.fileno())
            watch_terminal(terminal, lambda why: app.call_from_thread(
                self._terminal_lost, why))
        self.core.send(WantUsage(True))
        if self.stop_after is not None:
            self.set_timer(self.stop_after, self._stop_after)

    def _stop_after(self) -> None:
        """--stop-after: everything stops then, unless it already does."""
        if not self.quit.quitting:
            self.quit.begin(Why.STOP_AFTER, f"--stop-after {self.stop_after:g}s")

    def _relayout(self) -> None:
        """The panes' room changed size (PaneArea): the grid's page again, drawn."""
        self.show_panes()
        self.tick()

    def show_panes(self) -> None:
        """Which panes show: the selected one, or the page of the grid that holds it
        (never a pane too small for its header and three lines)."""
        panes = self.query_one("#panes", Container)
        panes.set_class(self.grid, "grid")
        names = [v.name for v in self.views]
        selected = self.selected_view.name if self.views else None
        shown = {selected}
        info = ""
        if self.grid and names:
            width, height = panes.size if panes.size.height else self.size
            cols = max(1, min(2, width // MIN_PANE[0]))
            rows = max(1, height // MIN_PANE[1])
            page = cols * rows
            first = (self.selected // page) * page
            shown = set(names[first:first + page])
            panes.styles.grid_size_columns = min(cols, len(shown))
            panes.styles.grid_size_rows = -(-len(shown) // cols)
            if len(names) > page:
                which = f"pane {first + 1}" if len(shown) == 1 else \
                    f"panes {first + 1}-{first + len(shown)}"  # (not "panes 15-15")
                info = (f" {which} of {len(names)} · "
                        f"{keys.shown('select(1)')}/{keys.shown('select(-1)')} move through "
                        "them")
        grid_info = self.query_one("#grid-info", Static)
        grid_info.update(info)
        grid_info.display = bool(info)
        for name in names:
            if name in shown:
                self.panes[name]  # made now if it never showed before
        for name, pane in self.panes.items():
            pane.display = name in shown
            pane.set_class(self.grid and name == selected, "-selected")
        self._layout_seq += 1  # the next tick draws every pane now shown

    def _take(self, snap: CoreSnapshot) -> None:
        """The snapshot this tick draws. A reload adds and removes processes: the panes of
        those removed go (those added get theirs when first shown)."""
        before, self.snap = self.snap.names, snap
        if not snap.views or snap.names == before:
            return
        names = set(snap.names)
        for name in [n for n in self.panes if n not in names]:
            self.panes.pop(name).remove()
        self.show_panes()

    # -- the steady pull from the core ------------------------------------------------

    class Poke(Message):
        """Something changed in the core; many pokes in a row are one."""

        def can_replace(self, message: Message) -> bool:
            return isinstance(message, ConsoleScreen.Poke)

    def poke(self) -> None:
        """From any thread (the core's): something changed. Only posts (thread-safe)."""
        with contextlib.suppress(Exception):
            self.post_message(self.Poke())

    def on_console_screen_poke(self, _message: Poke) -> None:
        self.soon()

    def soon(self, delay: float | None = None) -> None:
        """A tick in ``delay`` seconds (None: as soon as the refresh rate allows), unless
        one is due sooner."""
        if delay is None:
            # Output still coming waits for the next tick (at most refresh_hz draws a
            # second); a burst the supervisor says has ended is drawn at once.
            link = self.core.snapshot().link
            gap = SETTLED_GAP if link is not None and link.settled else 1 / self.refresh_hz
            delay = max(0.0, self._last_tick + gap - time.monotonic())
        due = time.monotonic() + delay
        if self._next is not None:
            if self._next_due <= due:
                return
            self._next.stop()
        delay = max(0.001, delay)  # (a Textual timer cannot be due at once)
        self._next, self._next_due = self.set_timer(delay, self._run_tick), due

    def _run_tick(self) -> None:
        self._next = None
        self.tick()

    def tick(self) -> None:
        """Pull one snapshot from the core and draw what changed, all of it from that
        snapshot (and the output buffers): never two moments mixed on one screen."""
        app = self.app
        news = self.core.output.changes()  # first: anything after it rings again
        snap = self.core.snapshot()
        gone = snap.link.gone if snap.link is not None else None
        if gone is not None and self.quit.detached is None:
            self.quit.detached = gone  # the supervisor ended (or dropped us): nothing to show
        if self.quit.detached is not None:
            self.leave()
            return
        if not app.screen_stack:
            return  # a timer that fired while the app shuts down: nothing to draw on
        if self not in app.screen_stack:
            return  # a box of the fleet not shown now: it draws when shown again
        # One reading of the clock per tick, used unrounded by the table, every pane and
        # the panel: a figure rounded here (to the step of the finest figure on screen)
        # made an age jump back when that step grew from 1 s to 10 s.
        # While the link is down the picture stays at the moment it was lost (link.py).
        now = self.link.tick(self.clock(), snap)
        frozen = self.link.frozen
        self._last_tick = time.monotonic()
        if frozen is None:
            self.soon(next_change(self.views, now))  # when a figure on screen next moves
        key = (news, clock_face(self.views, now), self.selected, self.quit.quitting,
               self.quit.hangup, len(app.screen_stack), frozen, self._layout_seq)
        if key == self._tick_key and not self.asking.questions.since:
            return
        self._tick_key = key
        self._take(snap)
        views = snap.views
        self.notices.check(views)
        if frozen is None:
            self.soon(next_change(views, now))  # what the fresh views show of the clock
        selected = self.selected_view.name if views else ""
        for view in views:
            total = self.core.output.buffer(view.name).output_total
            if total != self._seen.get(view.name, 0):
                self._seen[view.name] = total
                if view.name != selected:
                    self._active.add(view.name)
        self.table.rows = tuple(Row(v, v.usage, v.name in self._active, i + 1 if i < 9 else 0)
                                for i, v in enumerate(views))
        self.table.selected = self.selected
        self.table.now = now
        for view in views:
            pane = self.panes.get(view.name)
            if pane is not None and pane.display:
                pane.show(view, now)
        self.panel.display = self.quit.quitting
        if self.quit.quitting:
            self.panel.show(views, now)
        self.asking.ask(views, now, frozen is not None, snap.asks)
        if frozen is None and self.asking.question is not None and snap.waiting_asks:
            self.soon(1.0)  # an agent's request on screen: its age and lapse move
        # Under a dialog, its own keys (a question's, a yes/no's): the main ones did nothing.
        modal: Callable[[bool], tuple[keys.Key, ...]] | None = \
            getattr(app.screen, "bar", None) or getattr(self.asking.question, "bar", None)
        self.key_bar.keys = modal(self.attached is not None) if callable(modal) else \
            keys.bar_now(self._bar_keys, self.selected_view if views else None,
                         self.quit.quitting, frozen is not None)
        if len(app.screen_stack) > 2:
            # Under two modals (the palette over a question) Textual composites the main
            # screen's changes only when the top one redraws: its table froze until then.
            for screen in app.screen_stack:
                screen.refresh()
        hangup = self.quit.hangup
        if hangup is not None and not self.quit.quitting:
            self.quit.begin(Why.HANGUP, f"received {hangup}" if hangup.startswith("SIG")
                            else hangup)
        self.quit.elsewhere(snap)
        if self.quit.quitting and snap.all_ended:
            self.leave()

    def _terminal_lost(self, why: str) -> None:
        """A terminal can go away with no SIGHUP (a pty closed while proctui was not in
        its session): only EOF or EIO arrive, and Textual's input thread would spin on
        them for ever. Treat it as a hangup, and stop that thread."""
        stop_input(self.app.driver_class)
        if self.attached is not None:
            self.quit.detach(why)  # an attached console only ever detaches by itself
            return
        if self.on_terminal_lost is not None:
            self.on_terminal_lost(why)
        self.tick()

    # -- selection --------------------------------------------------------------------

    @property
    def views(self) -> tuple[ProcessView, ...]:
        """The processes on screen, in the snapshot's order."""
        return self.snap.views

    @property
    def selected_view(self) -> ProcessView:
        return self.views[min(self.selected, len(self.views) - 1)]

    @property
    def selected_pane(self) -> ProcessPane:
        return self.panes[self.selected_view.name]

    def select_index(self, index: int) -> None:
        if not 0 <= index < len(self.views):
            count = len(self.views)
            self.notify(f"no process {index + 1}: there {'is' if count == 1 else 'are'} "
                        f"{count} ({keys.shown('pick')} picks one by name)", timeout=2,
                        markup=False)
            return
        self.selected = index
        self._active.discard(self.views[index].name)
        self.search.forget()
        self.show_panes()
        self.tick()

    def command(self, cls: type[Request[Any]], make: Callable[[str], Request[Any]]) -> None:
        """A command of the table chosen in the palette: as the console's own key does
        it, where one does (abandon asks first; stop_all quits as q does, the panel and
        its countdowns shown); any other sent as it is (picker.py)."""
        own: dict[str, Callable[[], object]] = {
            Stop.op: self.process.stop, Start.op: self.process.start,
            Restart.op: self.process.restart, Kill.op: self.process.kill,
            Extend.op: self.process.extend, Abandon.op: self.process.abandon,
            Adopt.op: self.process.adopt, Clear.op: self.pane_keys.clear,
            StopAll.op: self.quit.stop_everything}
        way = own.get(cls.op)
        if way is not None:
            way()
        else:
            self.process.command(cls, make)

    # -- keys -------------------------------------------------------------------------

    def on_key(self, event: events.Key) -> None:
        if self.type_ahead.catch(event):
            return
        if event.key == "escape" and self.search.is_open:
            self.search.close()
            event.stop()
            return
        # A key bound to nothing (0, x, space...) did nothing and said nothing: the operator
        # could not tell a dead key from a slow console. Said once per burst of repeats.
        # Tab is Textual's (focus the next widget), and the main screen has nothing to
        # focus: it did nothing and said nothing too.
        tab = event.key in ("tab", "shift+tab") and not self.focus_chain
        if ((event.is_printable or FUNCTION_KEY.fullmatch(event.key) or tab)
                and len(self.app.screen_stack) == 1
                and (tab or event.key not in self.active_bindings)
                and (self.search.box is None or self.focused is not self.search.box)):
            shown = event.key if event.key == "space" or not event.is_printable else \
                event.character or event.key
            now = time.monotonic()
            last_key, last_at = self._unbound
            if shown != last_key or now - last_at >= UNBOUND_QUIET:
                self.notify(f"{shown}: no key does that here · {keys.shown('help')} lists "
                            "every key", timeout=3, markup=False)
            self._unbound = (shown, now)

    def on_input_submitted(self, event: Any) -> None:
        if event.input.id == "search":
            self.search.submitted(event.value)

    # Each key of the key table (keys.MAIN), to what does it.

    def action_select(self, delta: int) -> None:
        # No wrapping round: k on the first row going to the last is a jump nobody sees.
        index = self.selected + delta
        if not 0 <= index < len(self.views):
            self.notify(f"{self.selected_view.name} is the {'first' if delta < 0 else 'last'}"
                        " process", timeout=2, markup=False)
            return
        self.select_index(index)

    def action_select_index(self, index: int) -> None:
        self.select_index(index)

    def action_pick(self) -> None:
        """The process picker: Textual's command palette over the processes' names."""
        from textual.command import CommandPalette

        from proctui.frontends.console.picker import ProcessPicker

        self.type_ahead.arm()
        self.app.push_screen(CommandPalette(providers=[ProcessPicker],
                                            placeholder="pick a process by name…"))

    def action_stop(self) -> None:
        self.process.stop()

    def action_start(self) -> None:
        self.process.start()

    def action_restart(self) -> None:
        self.process.restart()

    def action_kill(self) -> None:
        self.process.kill()

    def action_extend(self) -> None:
        self.process.extend()

    def action_abandon(self) -> None:
        self.process.abandon()

    def action_adopt(self) -> None:
        self.process.adopt()

    def action_quit(self) -> None:
        self.quit.quit()

    def action_abandon_and_exit(self) -> None:
        self.quit.abandon_everything()

    def action_detach(self) -> None:
        self.quit.detach_key()

    def action_stop_all_now(self) -> None:
        self.quit.stop_all_now()

    def action_zoom(self) -> None:
        self.grid = not self.grid
        self.show_panes()
        self.tick()

    def action_follow(self) -> None:
        self.pane_keys.follow()

    def action_wrap(self) -> None:
        self.pane_keys.wrap()

    async def action_search(self) -> None:
        await self.search.open()

    def action_next_match(self, direction: int) -> None:
        self.search.next_match(direction)

    def action_clear(self) -> None:
        self.pane_keys.clear()

    def action_scroll_up_page(self) -> None:
        self.pane_keys.page(-1)

    def action_scroll_down_page(self) -> None:
        self.pane_keys.page(1)

    def action_home(self) -> None:
        self.pane_keys.home()

    def action_end(self) -> None:
        self.pane_keys.end()

    async def action_timeline(self) -> None:
        await self.pane_keys.timeline()

    def action_help(self) -> None:
        self.pane_keys.help()
