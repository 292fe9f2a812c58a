"""The console's small widgets: the shutdown panel while quitting, the key bar, and the
hint line. Each draws from reactives, so it is redrawn only when what it shows changes."""

from __future__ import annotations

from collections.abc import Sequence

from rich.cells import cell_len
from rich.text import Text
from textual.geometry import Size
from textual.reactive import reactive
from textual.widget import Widget

from proctui.core.life.stop import Phase
from proctui.core.view import ProcessView
from proctui.frontends.console.keys import MAIN, Key, bar_items, find, fit, shown
from proctui.frontends.console.render import bar_column, countdown_text, name_cells
from proctui.frontends.words import countdown, look

COUNTDOWN_ROOM = 26  # columns a row keeps for its countdown and bar before its name


class ShutdownPanel(Widget):
    """While the console quits: every process still stopping, with its countdown."""

    DEFAULT_CSS = "ShutdownPanel { height: auto; display: none; }"

    views: reactive[tuple[ProcessView, ...]] = reactive((), layout=True)
    now: reactive[float] = reactive(0.0)  # the tick's one reading of the clock
    read_only = False  # a read-only console's panel offers no key that acts
    elsewhere = False  # the shutdown began elsewhere: q was never pressed here

    def show(self, views: Sequence[ProcessView], now: float) -> None:
        # A process still running is being stopped too: its stop request is on its way
        # (the first frame after q came before the core had sent one, and said
        # "0 stopping" beside rows that all still said running).
        self.views = tuple(v for v in views if v.phase.stopping or v.stops_after or
                           v.phase in (Phase.RUNNING, Phase.STARTING, Phase.WAITING,
                                       Phase.HELD))
        self.now = now

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        # As many rows as the screen has room for beside the rows around it (and a pane's
        # header): "max-height: 50%" alone let an attached console's extra line push the
        # key bar off a 60x15 screen, which then scrolled.
        wanted = len(self.views) + 1
        parent = self.parent
        if not isinstance(parent, Widget):
            return wanted
        # (The container: the screen less our border and any docked rows.)
        others = sum(w.outer_size.height for w in parent.children
                     if w is not self and w.display and w.id != "panes" and
                     w.styles.dock == "none")
        room = container.height - others - 1
        return max(1, min(wanted, room))

    def render(self) -> Text:
        text = Text()
        count = len(self.views)
        width = self.size.width
        again, abandon = shown("quit"), shown("abandon_and_exit")
        title = (f"Quitting: waiting for {count} process{'es' if count != 1 else ''} to stop"
                 f" · {again}{'' if self.elsewhere else ' again'}: kill all (asks) · "
                 f"{abandon}: abandon all and exit")
        if len(title) > width:  # one line, always: the rows below must all stay in view
            title = f"Quitting: {count} stopping · {again}: kill all · {abandon}: abandon all"
        if self.read_only:  # q only detaches there, and Q is refused
            title = f"Quitting: {count} stopping · {shown('detach')} detaches"
        text.append(title[:width], style="bold")
        # A long name gives way to the countdown, cut with "…": a 34-column name at 60
        # columns left its row "20850  19s", with no "SIGKILL in" and no bar.
        longest = max((cell_len(v.name) for v in self.views), default=4)
        name_w = max(4, min(longest, width - 14 - COUNTDOWN_ROOM))
        now = self.now
        shown_views = self.views
        room_rows = self.size.height - 1  # under the title
        if 0 < room_rows < count:  # the panel is capped: the last row counts the rest
            shown_views = self.views[: max(0, room_rows - 1)]
        room = max(0, width - 3 - name_w - 11)
        countdowns = {v.name: cd for v in shown_views if (cd := countdown(v, now))}
        column = bar_column((cd, room, len(cd.text) + 10 > room)
                               for cd in countdowns.values())
        for view in shown_views:
            text.append("\n")
            lk = look(view)
            text.append(f" {lk.mark} ", style=lk.style)
            text.append(name_cells(view.name, name_w), style="bold")
            text.append(f"  {view.pid or '-':>7}  ")
            cd = countdowns.get(view.name)
            if cd is not None:
                text.append_text(countdown_text(cd, room, short=len(cd.text) + 10 > room,
                                                column=column))
            elif view.stops_after:
                text.append(f"stage {view.stage}/{view.stages} · stops after "
                            f"{', '.join(view.stops_after)}"[:room], style="yellow")
            elif view.phase is Phase.RUNNING:
                text.append("stop requested"[:room], style="yellow")
            elif view.phase is Phase.HELD:
                text.append(f"held, not proven ours: {shown('stop')} stops it, "
                            f"{shown('abandon')} leaves it"[:room], style="yellow")
        if len(shown_views) < count:
            rest = self.views[len(shown_views):]
            text.append("\n")
            # Names whole, as many as fit, then "…": a name cut in half ("p…") read as
            # another process's.
            words = f" +{len(rest)} more: "
            for i, v in enumerate(rest):
                last = i == len(rest) - 1
                piece = v.name if last else f"{v.name}, "
                if cell_len(words) + cell_len(piece) + (0 if last else 1) > width:
                    room = width - cell_len(words) - (0 if last else 3)
                    if i == 0 and room >= 8:
                        # Not even the first whole: it cut in the middle ("+22 more: …"
                        # named no one at 60x15 beside long names).
                        words += name_cells(v.name, room).rstrip() + ("" if last else ", …")
                    else:
                        words += "…"
                    break
                words += piece
            more = Text(words, style="dim")
            more.truncate(max(1, width), overflow="ellipsis")
            text.append_text(more)
        return text


class KeyBar(Widget):
    """The most used keys, as many as fit, never a word cut in half."""

    DEFAULT_CSS = "KeyBar { height: 1; background: $panel; }"

    keys: reactive[tuple[Key, ...]] = reactive(MAIN)
    note: reactive[str] = reactive("")  # first, before the keys ("read-only view")

    def render(self) -> Text:
        items = [f"{key} {label}" for key, label in bar_items(self.keys)]
        # "? Help" always shows, at the end: it leads to every key the bar has no room for
        # (not under a yes/no question, where ? does nothing).
        help_item = f"{shown('help')} {find('help').label}" \
            if any(k.action == "help" for k in self.keys) else ""
        others = [item for item in items if item != help_item]
        room = self.size.width - 1 - (len(self.note) + 2 if self.note else 0)
        line = fit(others, room - len(help_item) - 2)
        if help_item:
            line = f"{line}  {help_item}" if line else fit([help_item], room)
        text = Text(" ")
        if self.note:
            text.append(self.note, style="bold yellow")
            text.append("  ")
        for i, item in enumerate(line.split("  ") if line else []):
            key, _, label = item.partition(" ")
            if i:
                text.append("  ")
            text.append(key, style="bold reverse")
            text.append(" " + label)
        return text


class Hint(Widget):
    """A line of advice (the demo's), fitted to the width: items drop from the end."""

    DEFAULT_CSS = "Hint { height: 1; }"

    items: reactive[tuple[str, ...]] = reactive(())

    def render(self) -> Text:
        return Text(" " + fit(list(self.items), self.size.width - 2, " · "), style="dim")
