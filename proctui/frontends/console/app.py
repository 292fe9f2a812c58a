"""The Textual console: a frontend over the core's three doors (its snapshots, the
requests it is sent, its output).

The app is the frame: the stylesheet, the main screen (screen.py, which draws from the
core and holds the keys), and what belongs to the terminal rather than to a screen: the
keys that quit from anywhere, an Esc read together with the next key, keys typed ahead of
a box that is opening, and one answer on screen at a time. It never signals a process
itself, and every way out (q, ctrl+c, ctrl+q, the palette's Quit, SIGHUP, SIGTERM) goes
through the stop sequence.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from textual import events
from textual.app import App, SystemCommand
from textual.screen import Screen

from proctui.commands.api import Core
from proctui.frontends.console import keys
from proctui.frontends.console.picker import ProcessPicker, system_commands
from proctui.frontends.console.screen import REFRESH_HZ, ConsoleScreen

__all__ = ["REFRESH_HZ", "ConsoleFrame", "ConsoleScreen", "ProctuiApp"]


def _css_path() -> Path:
    """Inside the package (proctui/styles, in the wheel), else the source tree's styles/.
    A path, not importlib.resources: that import costs a zipfile before the first frame."""
    here = Path(__file__).resolve()
    for path in (here.parents[2] / "styles" / "proctui.tcss",
                 here.parents[3] / "styles" / "proctui.tcss"):
        if path.is_file():
            return path
    return path


class ConsoleFrame(App[None]):
    """What a console's app is around its screens: the stylesheet, the keys that quit
    from anywhere, an Esc read together with the next key, keys typed ahead of a box
    that is opening. ``keys_to``: the console screen the keys now reach (the fleet's
    app has one a box, and none while its own table shows)."""

    CSS_PATH = _css_path()
    TITLE = "proctui"
    ENABLE_COMMAND_PALETTE = True
    COMMANDS = App.COMMANDS | {ProcessPicker}
    AUTO_FOCUS = None  # keys belong to the screen; the search box takes focus when opened
    # The keys that quit from every screen, a dialog's too (the main screen has the rest).
    BINDINGS = keys.bindings(tuple(k for k in keys.MAIN if k.priority))

    @property
    def keys_to(self) -> ConsoleScreen | None:
        raise NotImplementedError

    async def action_quit(self) -> None:
        """ctrl+c, ctrl+q (and Textual's own ways to quit): as q does."""
        console = self.keys_to
        if console is not None:
            console.quit.quit()
        else:
            self.exit()

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        console = self.keys_to
        if console is None:
            yield from super().get_system_commands(screen)
        else:
            yield from system_commands(console, super().get_system_commands(screen))

    # -- the terminal's keys ----------------------------------------------------------

    async def on_event(self, event: events.Event) -> None:
        from textual.widgets import Input

        # Esc and the next key read together reach Textual as one key (keys.py): split,
        # only on the main screen with no box focused: in a box the key is typed (a "£"
        # is a "£" there), and a dialog that Esc closes would get the key meant for the
        # screen under it (it refused it, or a digit went into its number).
        console = self.keys_to
        if isinstance(event, events.Key) and not event.is_forwarded and \
                console is not None and not console.type_ahead.armed and \
                len(self.screen_stack) == 1 and not isinstance(self.focused, Input):
            pressed = keys.split_escape(event.key, event.character)
            if pressed:
                for key, character in pressed:  # in their order, before any key after
                    await super().on_event(events.Key(key, character))
                return
        await super().on_event(event)

    def on_key(self, event: events.Key) -> None:
        # A key typed while the picker loads comes here from the palette's screen (the
        # main screen's come through its own on_key first).
        if self.keys_to is not None:
            self.keys_to.type_ahead.catch(event)

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        if self.keys_to is not None:
            self.keys_to.type_ahead.focused(event.widget, self.call_later)

    # -- one answer on screen at a time -------------------------------------------------

    def notify(self, message: str, *, title: str = "", severity: str = "information",
               timeout: float | None = None, markup: bool = True) -> None:
        """Textual's way to say something (a screen's, a widget's): on the console's
        answer line (notices.py), never in a toast over what it covers. The words are
        shown as they are: process names and output are not markup."""
        console = self.keys_to
        if console is not None:
            console.notices.say(message, warning=severity in ("warning", "error"),
                                timeout=timeout)


class ProctuiApp(ConsoleFrame):
    """The console of one supervisor (here, or attached to one elsewhere)."""

    def __init__(self, core: Core, *, clock: Callable[[], float] = time.monotonic,
                 hint: tuple[str, ...] = (), refresh_hz: float = REFRESH_HZ,
                 stop_after: float | None = None,
                 on_terminal_lost: Callable[[str], None] | None = None,
                 driver_class: type | None = None, attached: str | None = None,
                 read_only: bool = False, again: str = "proctui attach",
                 first_frame: Callable[[], object] | None = None) -> None:
        super().__init__(driver_class=driver_class)
        self.main = ConsoleScreen(
            core, clock=clock, hint=hint, refresh_hz=refresh_hz, stop_after=stop_after,
            on_terminal_lost=on_terminal_lost, attached=attached, read_only=read_only,
            again=again, first_frame=first_frame)

    @property
    def keys_to(self) -> ConsoleScreen:
        return self.main

    def get_default_screen(self) -> Screen[Any]:
        return self.main
