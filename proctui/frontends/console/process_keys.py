"""What the keys that command the selected process do (s S r K e a A), the answers to a
decision at a deadline and to an agent's request, and the command table's commands
offered in the palette. Every
one that acts asks the link first (link.py): read-only, or the link is down, it says so
instead."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from textual.screen import Screen

from proctui.commands.abandon import Abandon
from proctui.commands.adopt import Adopt
from proctui.commands.api import Core
from proctui.commands.base import Named, Request
from proctui.commands.extend import Extend
from proctui.commands.kill import Kill
from proctui.commands.restart import Restart
from proctui.commands.start import Start
from proctui.commands.stop import Stop
from proctui.commands.wait import Wait
from proctui.core.life.stop import Phase
from proctui.core.view import ProcessView
from proctui.frontends.console.link import LinkWatch
from proctui.frontends.console.sending import Sender

if TYPE_CHECKING:  # (the dialogs load when one first opens; the answer with the first)
    from proctui.core.life.asks import Ask
    from proctui.frontends.console.dialogs import Decision


class ProcessKeys:
    def __init__(self, screen: Screen[Any], core: Core, sender: Sender, link: LinkWatch,
                 selected: Callable[[], ProcessView]) -> None:
        self.screen = screen  # the confirmations go over it
        self.core = core
        self.sender = sender
        self.link = link
        self.selected = selected  # the selected process, as the screen shows it

    def on_selected(self, make: Callable[[str], Request[Any]], said: bool = False) -> None:
        """Send the request ``make`` makes for the selected process, unless refused."""
        if not self.link.refused():
            self.sender.send(make(self.selected().name), said)

    def stop(self) -> None:
        self.on_selected(Stop)

    def start(self) -> None:
        self.on_selected(Start)

    def restart(self) -> None:
        self.on_selected(Restart)

    def kill(self) -> None:
        self.on_selected(Kill)

    def extend(self) -> None:
        self.on_selected(Extend)

    def adopt(self) -> None:
        self.on_selected(Adopt)

    def abandon(self) -> None:
        """Asks first, where there is something to leave running."""
        if self.link.refused():
            return
        # The shown view can be a frame old; whether to ask depends on the core's latest.
        shown = self.selected()
        view = self.core.snapshot().view(shown.name) or shown
        if not view.alive and view.phase is not Phase.HELD:
            self.sender.send(Abandon(view.name))  # the core says why not
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self.sender.send(Abandon(view.name))

        from proctui.frontends.console.dialogs import ConfirmScreen

        self.screen.app.push_screen(ConfirmScreen(
            f"Abandon {view.name} (pid {view.pid})?",
            "proctui stops watching it and never signals it again; it is left running and "
            "keeps its PID file."), answered)

    def decide(self, name: str, decision: Decision) -> None:
        """The answer to the question at a deadline (its own checks are done)."""
        if decision.action == "kill":
            self.sender.send(Kill(name))
        elif decision.action == "extend":
            self.sender.send(Extend(name, decision.seconds))
        elif decision.action == "abandon":
            self.sender.send(Abandon(name))
        elif decision.action == "wait":
            self.sender.send(Wait(name))

    def answer(self, ask: Ask, grant: bool) -> None:
        """The operator's answer to an agent's request (its own checks are done)."""
        from proctui.commands.answer import AnswerAsk

        self.sender.send(AnswerAsk(ask.id, grant), said=True)

    def command(self, cls: type[Request[Any]], make: Callable[[str], Request[Any]]) -> None:
        """A command of the table, from the palette, with no key of its own: on the
        selected process when it names one; its answer is shown, whatever it says."""
        if issubclass(cls, Named):
            self.on_selected(make, said=True)
        elif not (cls.acts and self.link.refused()):
            self.sender.send(make(""), said=True)
