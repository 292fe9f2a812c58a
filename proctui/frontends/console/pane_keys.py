"""What the keys that act on the selected pane do: following, wrapping, scrolling and
clearing it; and the screens read over the panes, the help and this run's timeline."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from textual.screen import Screen

from proctui.commands.api import Core
from proctui.commands.clear import Clear
from proctui.commands.journal_read import ReadJournal
from proctui.frontends.console.link import LinkWatch
from proctui.frontends.console.notices import Notices
from proctui.frontends.console.output import ProcessPane
from proctui.frontends.console.sending import Sender


class PaneKeys:
    def __init__(self, screen: Screen[Any], core: Core, sender: Sender, link: LinkWatch,
                 pane: Callable[[], ProcessPane], read_only: bool,
                 notices: Notices | None = None) -> None:
        self.screen = screen  # the help and the timeline go over it
        self.core = core
        self.sender = sender
        self.link = link
        self.pane = pane  # the selected process's pane
        self.read_only = read_only  # the help says so first
        self.notices = notices  # shown on the screens read over the panes too

    def follow(self) -> None:
        output = self.pane().output
        output.follow = not output.follow

    def wrap(self) -> None:
        output = self.pane().output
        output.wrap = not output.wrap
        self.screen.notify("wrap on: long lines wrap" if output.wrap else
                           "wrap off: long lines are cut with …", timeout=2, markup=False)

    def end(self) -> None:
        self.pane().output.end()

    def home(self) -> None:
        self.pane().output.home()

    def page(self, direction: int) -> None:
        self.pane().output.page(direction)

    def clear(self) -> None:
        if self.link.refused():  # (it clears the supervisor's scrollback, for every console)
            return
        pane = self.pane()
        self.sender.send(Clear(pane.proc_name), said=True)
        pane.output.end()

    def help(self) -> None:
        from proctui.frontends.console.reading import HelpScreen

        self.screen.app.push_screen(HelpScreen(self.read_only, notices=self.notices))

    async def timeline(self) -> None:
        """This run's timeline so far, from the journal, read a page at a time."""
        if self.link.refused_down():
            return
        entries: list[dict[str, object]] = []
        start = 0
        while True:
            page = await asyncio.wrap_future(self.core.send(ReadJournal(start)))
            if not page.ok:
                self.screen.notify(page.text, severity="warning", markup=False)
                return
            entries += page.entries
            if not page.more or page.next <= start:
                break
            start = page.next
        if not entries:
            self.screen.notify("Nothing in the journal yet", markup=False)
            return
        from proctui.frontends import timeline

        # A run still going is drawn up to now (a console on a finished run: to its end).
        picture = timeline.build(entries, None if self.core.snapshot().all_ended else
                                 time.time())
        from proctui.frontends.console.reading import TimelineScreen

        self.screen.app.push_screen(TimelineScreen(lambda width: timeline.text(picture, width),
                                                   notices=self.notices))
