"""The fleet console: one row a box (its link, its supervisor's age, its processes
counted, the decisions it waits for, the worst it has to say), what needs the operator
on top. Enter opens that box's console (the one ``attach --host`` opens), Esc comes back
to the table; the box's link is the same one throughout (no reconnect).

Each box's console is a mode of the app with its own screen stack: its questions and
dialogs stay with it, and a console not shown draws nothing. A decision waiting on any
box is said wherever the operator is, and is taken in that box's console."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Static

from proctui.frontends.console.app import ConsoleFrame
from proctui.frontends.console.fleet_table import FleetTable
from proctui.frontends.console.keys import fit
from proctui.frontends.console.screen import REFRESH_HZ, ConsoleScreen
from proctui.frontends.fleet import Fleet, FleetBox, FleetRow, LinkState
from proctui.protocol.link import Watch

FLEET = "fleet"  # the mode of the fleet's own table, the first
NOTE_FOR = 5.0  # seconds an answer on the fleet's line stays
DECISION_FOR = 86400.0  # a decision's words stay until it is answered (said again as
# its countdown moves, and taken back once answered)
LOOK_GAP = 0.25  # seconds at least between two looks: a box's burst of news is one look
DUE_LATE = 0.005  # seconds after a word's change is due that it is looked at (its clock
# must have passed the instant for the word to read the new value)
KEYS = (("↑↓", "Select"), ("⏎", "Open its console"))
LEAVING = "Leave (everything keeps running)"


class FleetScreen(Screen[None]):
    BINDINGS = [Binding("up,k", "move(-1)", "Up"), Binding("down,j", "move(1)", "Down"),
                Binding("enter", "open", "Open"), Binding("q", "leave", "Leave")]

    DEFAULT_CSS = """
    FleetScreen { layout: vertical; }
    #fleet-title { height: 1; background: $panel; }
    #fleet-note { height: auto; max-height: 3; color: $warning; }
    #fleet-keys { height: 1; background: $panel; }
    """

    def __init__(self, fleet: Fleet, leaving: str = LEAVING) -> None:
        super().__init__()
        self.fleet = fleet
        self.leaving = leaving  # what q does, in the key bar
        self.selected: str | None = None
        self.chosen = False  # the operator moved: until then the top row is selected
        self.rows: list[FleetRow] = []
        self.note = ""
        self._unsay: Timer | None = None
        self._stale = True  # the rows changed while another mode showed: draw on return
        self._said: dict[str, Text] = {}  # what each line of words shows now

    def compose(self) -> ComposeResult:
        yield Static(id="fleet-title")
        yield FleetTable(id="fleet-table")
        yield Static(id="fleet-note")
        yield Static(id="fleet-keys")

    def on_mount(self) -> None:
        self.look()

    def on_screen_resume(self) -> None:
        self.look()

    def on_resize(self) -> None:
        self.draw()

    def look(self) -> list[FleetRow]:
        """Every box's row now; drawn when something on screen changes (an idle fleet
        draws nothing), and only while the table shows (else on its return)."""
        rows = self.fleet.rows()
        selected = rows[0].box if not self.chosen and rows else self.selected
        if (rows, selected) != (self.rows, self.selected):
            self.rows, self.selected = rows, selected  # (not chosen: the top row, what
            self._stale = True  # needs the operator most, is what Enter opens)
        if self._stale and self.is_current:
            self.draw()
        return rows

    def _words(self, id: str, text: Text) -> None:
        """A line of words, updated only when what it says changes."""
        if self._said.get(id) != text:
            self._said[id] = text
            self.query_one(f"#{id}", Static).update(text)

    def draw(self) -> None:
        if not self.is_mounted:
            return
        self._stale = False
        width = self.size.width or 80
        rows = self.rows
        up = sum(1 for r in rows if r.link is LinkState.UP)
        asks = sum(len(r.decisions) for r in rows)
        title = Text(" proctui fleet", style="bold")
        title.append(f" · {len(rows)} box{'es' if len(rows) != 1 else ''} · {up} up")
        for state in (LinkState.RECONNECTING, LinkState.LOST, LinkState.UNREACHABLE,
                      LinkState.ENDED):  # (what is not up, said: "5 boxes · 3 up" hid it)
            if (n := sum(1 for r in rows if r.link is state)):
                title.append(f" · {n} {state.value}", style="bold red" if state in
                             (LinkState.LOST, LinkState.UNREACHABLE) else "")
        if asks:
            title.append(f" · {asks} decision{'s' if asks != 1 else ''} waiting",
                         style="bold magenta")
        self._words("fleet-title", title)
        self.query_one(FleetTable).show(rows, self.selected)
        self._words("fleet-note", Text(self.note))
        bar = Text(" ")
        items = fit([f"{k} {w}" for k, w in (*KEYS, ("q", self.leaving))], width - 2)
        for i, item in enumerate(items.split("  ") if items else []):
            key, _, label = item.partition(" ")
            if i:
                bar.append("  ")
            bar.append(key, style="bold reverse")
            bar.append(" " + label)
        self._words("fleet-keys", bar)

    def say(self, text: str, timeout: float | None) -> None:
        """The fleet's own answer line (a box's console has its own)."""
        self.note = text
        self.draw()
        if self._unsay is not None:
            self._unsay.stop()
        self._unsay = self.set_timer(timeout or NOTE_FOR, lambda: self.unsay(text))

    def unsay(self, text: str | None = None) -> None:
        if text is None or self.note == text:
            self.note = ""
            self.draw()

    def action_move(self, step: int) -> None:
        names = [r.box for r in self.rows]
        if not names:
            return
        i = names.index(self.selected) if self.selected in names else 0
        self.selected = names[max(0, min(len(names) - 1, i + step))]
        self.chosen = True
        self.draw()

    def action_open(self) -> None:
        if self.selected is not None:
            app = self.app
            assert isinstance(app, FleetApp)
            app.open(self.selected)

    def action_leave(self) -> None:
        self.app.exit()


class FleetApp(ConsoleFrame):
    """The fleet's table, and a console a box, each in a mode of its own."""

    BINDINGS = [*ConsoleFrame.BINDINGS, Binding("escape", "fleet", "Fleet", show=False)]
    DEFAULT_MODE = FLEET  # (Textual's own first mode cannot be switched back to)

    def __init__(self, fleet: Fleet, *, read_only: bool = False,
                 refresh_hz: float = REFRESH_HZ, driver_class: type | None = None,
                 again: Callable[[str], str] = lambda box: f"proctui attach --host {box}",
                 clock: Callable[[], float] = time.monotonic, leaving: str = LEAVING) -> None:
        super().__init__(driver_class=driver_class)
        self.fleet = fleet
        self.read_only = read_only
        self.refresh_hz = refresh_hz
        self.again = again
        self.clock = clock
        self.table = FleetScreen(fleet, leaving)
        self.add_mode(FLEET, lambda: self.table)
        self._consoles: dict[str, tuple[int, ConsoleScreen]] = {}  # box: (generation, its)
        # The decision said now (its box, process and since when; its words; where it
        # was said), and every decision seen waiting.
        self._saying: tuple[tuple[str, str, float | None], str, str | None] | None = None
        self._seen: set[tuple[str, str, float | None]] = set()
        self._next: Timer | None = None  # the next look, when it is due (_next_at)
        self._next_at = 0.0
        self._looked = -LOOK_GAP  # when the last look was
        fleet.changed = self.poke  # a box's link made or lost, its views or state changed

    def notify(self, message: str, *, title: str = "", severity: str = "information",
               timeout: float | None = None, markup: bool = True) -> None:
        """On the answer line of what shows: the fleet's, or the box console's."""
        if self.keys_to is None:
            self.table.say(message, timeout)
        else:
            super().notify(message, severity=severity, timeout=timeout)

    def _unsay(self, said: set[str]) -> None:
        """Decisions said and since answered: their words go, wherever they show."""
        if self.table.note in said:
            self.table.unsay()
        for _generation, console in self._consoles.values():
            current = console.notices.current
            if current is not None and current.text in said:
                console.notices.clear()

    @property
    def keys_to(self) -> ConsoleScreen | None:
        if self.current_mode == FLEET:
            return None
        entry = self._consoles.get(self.current_mode.removeprefix("box:"))
        return entry[1] if entry is not None else None

    # -- when to look: news from a box, or the next word the clock changes -------------

    class Poke(Message):
        """A box changed (its views, its state, its link); many pokes in a row are one."""

        def can_replace(self, message: Message) -> bool:
            return isinstance(message, FleetApp.Poke)

    def poke(self) -> None:
        """From any thread (a box's link): something changed. Only posts (thread-safe)."""
        with contextlib.suppress(Exception):  # (an app not yet running, or gone)
            self.post_message(self.Poke())

    def on_fleet_app_poke(self, _message: Poke) -> None:
        self.soon()

    def on_mount(self) -> None:
        self._look()

    def soon(self, at: float | None = None) -> None:
        """A look at ``at`` (on self.clock; None: now), never sooner than LOOK_GAP after
        the last, unless one is due sooner already."""
        at = max(self._looked + LOOK_GAP, self.clock() if at is None else at)
        if self._next is not None:
            if self._next_at <= at:
                return
            self._next.stop()
        # (never 0: a Textual timer of no length divides by it when it starts late)
        self._next, self._next_at = self.set_timer(max(0.001, at - self.clock()),
                                                   self._look), at

    def _look(self) -> None:
        """Every box, now: the table (when it shows), and the first decision waiting said
        wherever the operator is, its countdown as it moves, until it is answered (not
        in the console of its own box, which asks); a new decision's box selected.
        Then the next look is when a word on a row changes with the clock alone (an age,
        a countdown), if none of the boxes has news before."""
        if self._next is not None:
            self._next.stop()
        self._next, self._looked = None, self.clock()
        rows = self.table.look()
        due = min((r.due for r in rows if r.due is not None), default=None)
        if due is not None:
            self.soon(due + DUE_LATE)
        here = None if self.current_mode == FLEET else self.current_mode.removeprefix("box:")
        # The first decision waiting (what needs the operator most, as the rows are
        # ordered), said with its countdown as it moves, where the operator is now,
        # until it is answered (not in its own box's console, which asks it itself).
        waiting = [((row.box, d.process, d.since), row.box, d) for row in self.table.rows
                   for d in row.decisions]
        new = {key for key, _box, _d in waiting} - self._seen
        self._seen = {key for key, _box, _d in waiting}
        top = next(((key, box, d) for key, box, d in waiting if box != here), None)
        if top is None:
            if self._saying is not None:
                self._unsay({self._saying[1]})  # answered, here or elsewhere: stale now
            self._saying = None
        else:
            key, box, d = top
            words = (f"{box}: {d.process} waits for your decision ({d.words})"
                     + (": Esc, then ⏎ on it" if here is not None else ": ⏎ on it"))
            if self._saying != (key, words, here):
                if self._saying is not None and self._saying[1] != words:
                    self._unsay({self._saying[1]})  # its older words, wherever they are
                self._saying = (key, words, here)
                self.notify(words, severity="warning", timeout=DECISION_FOR)
        if new:
            self.table.chosen = False  # a new decision's box is on top: selected
            self.table.look()

    def open(self, name: str) -> None:
        """That box's console: the one already made for its link, or a new one."""
        box = self.fleet.box(name)
        if box is None:
            return
        core = box.core
        if core is None:
            words = box.row(self.clock(), time.time()).link_words
            self.notify(f"{name}: no console to open ({words})", severity="warning",
                        markup=False)
            return
        mode = f"box:{name}"
        entry = self._consoles.get(name)
        if entry is not None and entry[0] != box.generation:
            self._forget(name)  # a new supervisor there: a new console
            entry = None
        if self._saying is not None and self._saying[0][0] == name:
            self._unsay({self._saying[1]})  # (its console asks it)
            self._saying = None
        if entry is None:
            core.send(Watch("all", None, acks=True))  # its output, now that it is seen
            screen = self._console(box, core)
            self._consoles[name] = (box.generation, screen)
            self.add_mode(mode, lambda: screen)
        self.switch_mode(mode)

    def _console(self, box: FleetBox, core: Any) -> ConsoleScreen:
        link = core.snapshot().link
        where = link.where if link is not None else box.name
        name = box.name
        hint = (f"{name}: attached to {where}", "Esc: back to the fleet",
                "d detaches from this box (the fleet stays)")
        return ConsoleScreen(core, hint=hint, refresh_hz=self.refresh_hz, attached=where,
                             read_only=self.read_only, again=self.again(name),
                             leave=lambda: self.back(name, forget=True),
                             place=f"{name} · Esc fleet")

    def back(self, name: str | None = None, forget: bool = False) -> None:
        """The fleet's table again; ``forget``: that box's console is done (detached, or
        everything there ended): the next Enter makes a new one."""
        if self.current_mode != FLEET:
            self.switch_mode(FLEET)
        if forget and name is not None:
            self.call_later(self._forget, name)

    def _forget(self, name: str) -> None:
        if self._consoles.pop(name, None) is not None and self.current_mode != f"box:{name}":
            self.remove_mode(f"box:{name}")

    def action_fleet(self) -> None:
        """Esc where nothing else takes it (a box's console, no dialog): the fleet."""
        if self.current_mode != FLEET and len(self.screen_stack) == 1:
            self.back()


def run_fleet(boxes: list[FleetBox], *, refresh_hz: float | None = None,
              read_only: bool = False,
              again: Callable[[str], str] = lambda box: f"proctui attach --host {box}",
              leaving: str = LEAVING) -> int:
    """The fleet console on ``boxes`` until the operator leaves; every box goes on."""
    import sys

    from proctui.frontends.console.driver import console_driver

    fleet = Fleet(boxes)  # (the app looks when told: never a box's thread waiting)
    app = FleetApp(fleet, read_only=read_only, refresh_hz=refresh_hz or REFRESH_HZ,
                   driver_class=console_driver(), again=again, leaving=leaving)
    fleet.start()
    try:
        app.run()
    finally:
        fleet.close()
    if leaving == LEAVING:
        sys.stdout.write(f"left the fleet; every box goes on ({len(boxes)} boxes)\n")
    return 0
