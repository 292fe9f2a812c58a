"""The ways out of the console: quitting (q, ctrl+c, ctrl+q, the palette's Quit: every
one through the stop sequence), a shutdown begun elsewhere (``proctui down``; attached,
any), a hangup, detaching (an attached console), abandoning everything, and stopping
everything now regardless of order."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from textual.screen import Screen

from proctui.commands.abandon_all import AbandonAll
from proctui.commands.kill_all import KillAll
from proctui.commands.stop_all import StopAll
from proctui.core.life.stages import Why
from proctui.core.snapshot import CoreSnapshot
from proctui.core.view import ProcessView
from proctui.frontends.console import keys
from proctui.frontends.console.link import LinkWatch
from proctui.frontends.console.panels import Hint, ShutdownPanel
from proctui.frontends.console.sending import Sender


class Quitting:
    def __init__(self, screen: Screen[Any], sender: Sender, link: LinkWatch, *,
                 attached: str | None, read_only: bool, again: str,
                 views: Callable[[], tuple[ProcessView, ...]],
                 tick: Callable[[], None], leave: Callable[[], None]) -> None:
        self.screen = screen  # the main screen: its panel, its hint, the dialogs over it
        self.leave = leave  # the console is done: the app exits (or the fleet shows)
        self.sender = sender
        self.link = link
        self.attached = attached  # attached to a supervisor elsewhere: q asks, d detaches
        self.read_only = read_only
        self.again = again  # the command that attaches here again, from anywhere
        self.views = views  # as the screen shows them
        self.tick = tick
        self.quitting = False  # everything is stopping: the panel shows, then it leaves
        # Told from outside, from any thread: the terminal hung up (or a SIGTERM), and
        # why the console leaves at once with everything running (detached).
        self.hangup: str | None = None
        self.detached: str | None = None

    @property
    def panel(self) -> ShutdownPanel:
        return self.screen.query_one(ShutdownPanel)

    def quit(self) -> None:
        """q, ctrl+c, ctrl+q and the palette's Quit: stop everything first (attached:
        ask, with detach the default; read-only: detach)."""
        app = self.screen.app
        if self.attached is not None and self.read_only:
            self.detach("detached")
            return
        if self.attached is not None and not self.quitting:
            if len(app.screen_stack) == 1:
                from proctui.frontends.console.dialogs import LeaveScreen

                app.push_screen(LeaveScreen(self.attached, self.again), self._leave)
            return
        if not self.quitting:
            self.begin(Why.QUIT)
            return
        if len(app.screen_stack) > 1:
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self.sender.send(KillAll())

        from proctui.frontends.console.dialogs import ConfirmScreen

        app.push_screen(ConfirmScreen("Kill all now?", "Send SIGKILL to every process that "
                                                       "is still stopping."), answered)

    def _leave(self, answer: str | None) -> None:
        if answer == "detach":
            self.detach("detached")
        elif answer == "stop" and not self.link.refused():
            self.begin(Why.QUIT)

    def detach_key(self) -> None:
        """d: leave at once (only an attached console has something to leave running)."""
        if self.attached is None:
            self.screen.notify("This console runs the processes itself: quitting stops "
                               "them. To leave them running, start them with proctui up "
                               "and attach.", markup=False)
            return
        self.detach("detached")

    def detach(self, why: str) -> None:
        """Leave at once; the supervisor and every process go on."""
        self.detached = why
        self.leave()

    def begin(self, why: Why, words: str = "") -> None:
        """Stop everything; the journal, the summary and events say ``why``, and
        ``words`` (when the operator did not ask) say it on screen."""
        self._shown(words)
        self.sender.send(StopAll(why=why.value))
        self.tick()

    def elsewhere(self, snap: CoreSnapshot) -> None:
        """`proctui down` from another terminal, an agent's down (allowed it, or granted
        its request), or (attached) any shutdown of the supervisor: the panel and its
        countdowns show, as after q (an attached console showed nothing of it), and the
        console leaves once everything has ended."""
        why = snap.shutdown_why
        if self.quitting or not (why in _ELSEWHERE or (self.attached is not None and
                                 snap.shutting_down)):
            return
        self.panel.elsewhere = True
        if self.attached is not None:  # it said "everything keeps running"
            for hint in self.screen.query(Hint):
                hint.items = (f"the supervisor is stopping everything ({why})",
                              f"{keys.shown('detach')} detaches")
        self._shown(f"{why} (from another terminal)" if why == Why.DOWN.value else
                    f"the supervisor is shutting down ({why or 'stop everything'})")

    def _shown(self, words: str = "") -> None:
        """The console is quitting: the shutdown panel shows, and it leaves once
        everything has ended (the stop itself asked for by the caller, or elsewhere)."""
        self.quitting = True
        self.panel.display = True
        if words:
            self.screen.notify(f"{words}: stopping everything", markup=False)

    def abandon_everything(self) -> None:
        """Q: abandon whatever still runs, and exit (asks first)."""
        if self.link.refused():
            return
        app = self.screen.app

        def answered(yes: bool | None) -> None:
            if yes:
                self.sender.send(AbandonAll(), then=lambda _reply: self.leave())

        left = tuple(f"{v.name} (pid {v.pid})" for v in self.views() if v.alive and v.pid)
        from proctui.frontends.console.dialogs import ConfirmScreen

        app.push_screen(ConfirmScreen(
            "Abandon everything still running and exit now?",
            "" if left else "Nothing is running.", items=left, prefix="Left running:"),
            answered)

    def stop_all_now(self) -> None:
        """X: stop everything now, regardless of dependency order."""
        if self.link.refused():
            return
        self.sender.send(StopAll(ordered=False), said=self.quitting)
        self.quitting = True
        self.tick()

    def stop_everything(self) -> None:
        """The palette's stop_all: everything stops in order, as after q, whoever asks
        (attached too: the question q asks first is answered by choosing it)."""
        if not self.quitting and not self.link.refused():
            self.begin(Why.OPERATOR)


# Shutdowns that end a console of proctui run as quitting it would: the panel shows, and
# it leaves once everything has ended.
_ELSEWHERE = frozenset({Why.DOWN.value, Why.AGENT.value, Why.GRANTED.value})
