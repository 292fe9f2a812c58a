"""The Textual console: a frontend over the core's command API and snapshots.

It pulls views and output from the core at a steady rate (never one message per line),
sends it commands, shows their replies, and never signals a process itself. Every way
out (q, ctrl+c, ctrl+q, the palette's Quit, SIGHUP, SIGTERM) goes through the stop
sequence.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING

from textual.app import App, ComposeResult, SystemCommand
from textual.containers import Container
from textual.message import Message
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Static

from proctui.core.api import Core
from proctui.core.life.stages import Why
from proctui.core.life.stop import Phase
from proctui.core.view import ProcessView, Usage
from proctui.frontends.console import keys
from proctui.frontends.console.actions import PaneActions, ProcessActions, QuitActions
from proctui.frontends.console.driver import stop_input
from proctui.frontends.console.link import LinkActions, LinkBanner
from proctui.frontends.console.output import PaneArea, Panes, ProcessPane
from proctui.frontends.console.panels import Hint, KeyBar, ShutdownPanel
from proctui.frontends.console.picker import ProcessPicker, system_commands
from proctui.frontends.console.questions import Questions
from proctui.frontends.console.render import clock_face, next_change
from proctui.frontends.console.search import SearchActions
from proctui.frontends.console.table import ProcessTable, Row
from proctui.frontends.hangup import watch_terminal

if TYPE_CHECKING:
    from textual.widgets import Input

    from proctui.frontends.console.dialogs import AskScreen, Decision

REFRESH_HZ = 10  # the design asks 10 to 20 Hz; every extra tick costs idle CPU
SETTLED_GAP = 0.02  # seconds between two draws when an attached console's news has ended
MIN_PANE = (40, 6)  # columns, rows: a border, a header and three lines of output


def _css_path() -> Path:
    """Inside the package (proctui/styles, in the wheel), else the source tree's styles/.
    A path, not importlib.resources: that import costs a zipfile before the first frame."""
    here = Path(__file__).resolve()
    for path in (here.parents[2] / "styles" / "proctui.tcss",
                 here.parents[3] / "styles" / "proctui.tcss"):
        if path.is_file():
            return path
    return path


class ProctuiApp(LinkActions, QuitActions, PaneActions, SearchActions, ProcessActions,
                 App[None]):
    CSS_PATH = _css_path()
    TITLE = "proctui"
    ENABLE_COMMAND_PALETTE = True
    COMMANDS = App.COMMANDS | {ProcessPicker}
    AUTO_FOCUS = None  # keys belong to the app; the search box takes focus only when opened
    BINDINGS = keys.bindings(keys.MAIN)

    def __init__(self, core: Core, *, clock: Callable[[], float] = time.monotonic,
                 usage: Callable[[Iterable[int]], dict[int, Usage]] | None = None,
                 hint: tuple[str, ...] = (), refresh_hz: float = REFRESH_HZ,
                 stop_after: float | None = None,
                 on_terminal_lost: Callable[[str], None] | None = None,
                 driver_class: type | None = None, attached: str | None = None,
                 read_only: bool = False, again: str = "proctui attach",
                 first_frame: Callable[[], object] | None = None) -> None:
        super().__init__(driver_class=driver_class)
        self.core = core
        self.clock = clock
        self.usage = usage  # a test's fixed figures; else the core's, in each view
        self.hint = hint
        self.refresh_hz = refresh_hz
        self.stop_after = stop_after
        self.on_terminal_lost = on_terminal_lost
        self.first_frame = first_frame  # called once the first frame is drawn
        self.views: list[ProcessView] = core.views()
        self.selected = 0
        self.grid = False
        self.quitting = False
        self.hangup: str | None = None
        # Attached to a supervisor elsewhere (its description): q asks, d detaches.
        self.attached = attached
        self.read_only = read_only  # attached to look: every key that acts says so
        self.again = again  # the command that attaches here again, from anywhere
        self.detached: str | None = None  # why the console left with everything running
        self.questions = Questions()
        self._question: AskScreen | None = None  # the question on screen, if any
        self._seen: dict[str, int] = {v.name: 0 for v in self.views}
        self._active: set[str] = set()
        self._tick_key: tuple[object, ...] = ()
        self._layout_seq = 0  # a pane shown since the last tick is drawn at the next
        self._next: Timer | None = None
        self._next_due = self._last_tick = 0.0
        self._bar_keys = keys.MAIN  # the console's kind of bar; the tick fits it to now
        self.panes = Panes(self._make_pane)

    # -- layout -----------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield LinkBanner(id="link")
        yield ProcessTable(id="table")
        if self.hint:
            yield Hint(id="hint")
        yield Static(id="grid-info")
        with PaneArea(id="panes"):
            # The selected process's pane; the others are made when first shown (or
            # asked for): 25 panes mounted, styled and hidden cost the first frame.
            if self.views:
                name = self.views[0].name
                pane = self.panes[name] = ProcessPane(name, self.core.buffer(name),
                                                      classes="pane")
                yield pane
        yield ShutdownPanel(id="shutdown")
        yield KeyBar(id="keys")

    def _make_pane(self, name: str) -> ProcessPane:
        """A pane made on first use, hidden until the layout shows it, mounted in the
        processes' order (the grid places panes in that order)."""
        pane = ProcessPane(name, self.core.buffer(name), classes="pane")
        pane.display = False
        names = [v.name for v in self.views]
        after = names[names.index(name) + 1:] if name in names else []
        self.query_one("#panes", Container).mount(
            pane, before=next((self.panes[n] for n in after if n in self.panes), None))
        return pane

    def on_mount(self) -> None:
        self._table = self.query_one(ProcessTable)
        self._panel = self.query_one(ShutdownPanel)
        self._search: Input | None = None  # made on the first / (not before the first frame)
        if self.hint:
            self.query_one(Hint).items = self.hint
        self._close_search()
        self._bar = self.query_one(KeyBar)
        if self.attached is not None:
            self._bar_keys = keys.read_only_bar() if self.read_only else keys.attached_bar()
            self._bar.note = "read-only view" if self.read_only else ""
            self._panel.read_only = self.read_only
        self._layout()
        self.core.listen(self._poked)
        self.tick()
        if self.first_frame is not None:
            self.call_after_refresh(self.first_frame)
        if self.on_terminal_lost is not None and not self.is_headless and \
                sys.__stdin__ is not None:
            # The terminal Textual reads (its Linux driver's fileno is stdin's), named
            # without reaching into the app's private driver.
            terminal = SimpleNamespace(fileno=sys.__stdin__.fileno())
            watch_terminal(terminal, lambda why: self.call_from_thread(
                self._terminal_lost, why))
        if self.usage is None:
            self.core.want_usage(True)
        if self.stop_after is not None:
            self.set_timer(self.stop_after, lambda: self.quitting or self._begin_quit(
                Why.STOP_AFTER, f"--stop-after {self.stop_after:g}s"))

    def _relayout(self) -> None:
        """The panes' room changed size (PaneArea): the grid's page again, drawn."""
        self._layout()
        self.tick()

    def _layout(self) -> None:
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

    # -- the steady pull from the core ------------------------------------------------

    # The tick: pulled by news from the core (never more often than refresh_hz) and by
    # the clock when what the screen shows of it moves; no timer while nothing moves.

    class Poke(Message):
        """Something changed in the core; many pokes in a row are one."""

        def can_replace(self, message: Message) -> bool:
            return isinstance(message, ProctuiApp.Poke)

    def _poked(self) -> None:
        """On the core's thread: something changed. Only posts (which is thread-safe)."""
        with contextlib.suppress(Exception):
            self.post_message(self.Poke())

    def on_proctui_app_poke(self, _message: Poke) -> None:
        self._soon()

    def _soon(self, delay: float | None = None) -> None:
        if delay is None:
            # Output still coming waits for the next tick (at most refresh_hz draws a
            # second); a burst the supervisor says has ended is drawn at once.
            gap = SETTLED_GAP if getattr(self.core, "settled", False) else 1 / self.refresh_hz
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
        """Pull from the core and draw what changed."""
        gone = getattr(self.core, "gone", None)
        if gone is not None and self.detached is None:
            self.detached = gone  # the supervisor ended (or dropped us): nothing to show
        if self.detached is not None:
            self.exit()
            return
        if not self.screen_stack:
            return  # a timer that fired while the app shuts down: nothing to draw on
        # One reading of the clock per tick, used unrounded by the table, every pane and
        # the panel: a figure rounded here (to the step of the finest figure on screen)
        # made an age jump back when that step grew from 1 s to 10 s.
        # While the link is down the picture stays at the moment it was lost (link.py).
        now = self._link_tick(self.clock())
        self._last_tick = time.monotonic()
        if self._frozen is None:
            self._soon(next_change(self.views, now))  # when a figure on screen next moves
        key = (self.core.changes(), clock_face(self.views, now), self.selected,
               self.quitting, self.hangup, len(self.screen_stack), self._frozen,
               self._layout_seq)
        if key == self._tick_key and not self.questions.since:
            return
        self._tick_key = key
        self.views = views = self.with_panes(self.core.views())
        if self._frozen is None:
            self._soon(next_change(views, now))  # what the fresh views show of the clock
        selected = self.selected_view.name if views else ""
        for view in views:
            total = self.core.buffer(view.name).output_total
            if total != self._seen.get(view.name, 0):
                self._seen[view.name] = total
                if view.name != selected:
                    self._active.add(view.name)
        fixed = self.usage(v.pgid for v in views if v.pgid) if self.usage else {}
        self._table.rows = tuple(
            Row(v, fixed.get(v.pgid) if self.usage and v.pgid else v.usage,
                v.name in self._active, i + 1 if i < 9 else 0)
            for i, v in enumerate(views))
        self._table.selected = self.selected
        self._table.now = now
        for view in views:
            pane = self.panes.get(view.name)
            if pane is not None and pane.display:
                pane.show(view, now)
        self._panel.display = self.quitting
        if self.quitting:
            self._panel.show(views, now)
        self._ask(views, now)
        # Under a dialog, its own keys (a question's, a yes/no's): the main ones did nothing.
        modal = getattr(self.screen, "bar", None) or getattr(self._question, "bar", None)
        self._bar.keys = modal(self.attached is not None) if callable(modal) else \
            keys.bar_now(self._bar_keys, self.selected_view if views else None,
                         self.quitting, self._frozen is not None)
        if len(self.screen_stack) > 2:
            # Under two modals (the palette over a question) Textual composites the main
            # screen's changes only when the top one redraws: its table froze until then.
            for screen in self.screen_stack:
                screen.refresh()
        if self.hangup is not None and not self.quitting:
            self._begin_quit(Why.HANGUP, f"received {self.hangup}"
                             if self.hangup.startswith("SIG") else self.hangup)
        self._shutdown_elsewhere()
        if self.quitting and self.core.all_ended():
            self.exit()

    def _terminal_lost(self, why: str) -> None:
        """A terminal can go away with no SIGHUP (a pty closed while proctui was not in
        its session): only EOF or EIO arrive, and Textual's input thread would spin on
        them for ever. Treat it as a hangup, and stop that thread."""
        stop_input(self.driver_class)
        if self.attached is not None:
            self.detach(why)  # an attached console only ever detaches by itself
            return
        if self.on_terminal_lost is not None:
            self.on_terminal_lost(why)
        self.tick()

    # -- questions at a deadline --------------------------------------------------------

    def _ask(self, views: list[ProcessView], now: float) -> None:
        screen = self._question
        if screen is not None and screen is self.screen:
            current = next((v for v in views if v.name == screen.view.name), None)
            if current is None or current.phase is not Phase.DECIDING or \
                    current.decisions != screen.view.decisions:
                screen.dismiss(None)  # answered elsewhere (a key, another console, the end)
                self.questions.done(screen.key, now)
                return
            screen.show(current, *self.questions.place(current, views, now), now)
            return
        if len(self.screen_stack) > 1 or self._frozen is not None:
            # Another screen is open: one question at a time. Said over a text that hides
            # the table, not over a dialog's text, nor the question the help came from.
            if self._frozen is None and getattr(self.screen, "HIDES_ALL", False) and \
                    screen not in self.screen_stack and \
                    (words := self.questions.newly_due(views, now)):
                self.notify(words, severity="warning", markup=False, timeout=8)
            return  # (or the link is down)
        upcoming = self.questions.next(views, now)
        if upcoming is None:
            return
        # The dialogs (and Textual's buttons) load at the first question, not before it.
        from proctui.frontends.console.dialogs import AskScreen

        view, position, count = upcoming
        question = self._question = AskScreen(view, position, count, now)
        if self.questions.arrived():  # its toast stayed 8 s over the buttons at 60x15
            self.clear_notifications()  # (here, from the screen under the question)

        def answered(decision: Decision | None) -> None:
            if self._question is question:
                self._question = None
            self.questions.done(question.key, self.clock())
            if decision is not None:
                self._decide(view.name, decision)

        self.push_screen(question, answered)

    # -- selection --------------------------------------------------------------------

    @property
    def selected_view(self) -> ProcessView:
        return self.views[min(self.selected, len(self.views) - 1)]

    @property
    def selected_pane(self) -> ProcessPane:
        return self.panes[self.selected_view.name]

    def action_select(self, delta: int) -> None:
        # No wrapping round: k on the first row going to the last is a jump nobody sees.
        index = self.selected + delta
        if not 0 <= index < len(self.views):
            self.notify(f"{self.selected_view.name} is the {'first' if delta < 0 else 'last'}"
                        " process", timeout=2, markup=False)
            return
        self.action_select_index(index)

    def action_select_index(self, index: int) -> None:
        if not 0 <= index < len(self.views):
            count = len(self.views)
            self.notify(f"no process {index + 1}: there {'is' if count == 1 else 'are'} "
                        f"{count} ({keys.shown('pick')} picks one by name)", timeout=2,
                        markup=False)
            return
        self.selected = index
        self._active.discard(self.views[index].name)
        self._forget_search()
        self._layout()
        self.tick()

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from system_commands(self, super().get_system_commands(screen))
