"""Sending the core a request of the command table, and showing what it answers: the
words of a reply that says why nothing happened (or, asked for, whatever it says). The
answer comes on the core's thread (or at once); it is shown on the console's."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from textual.screen import Screen

from proctui.commands.api import Core
from proctui.commands.base import Named, Request
from proctui.core.reply import Done
from proctui.frontends.console.notices import Notices


class Sender:
    def __init__(self, core: Core, screen: Screen[Any], notices: Notices,
                 draw: Callable[[], None] | None = None) -> None:
        self.core = core
        self.screen = screen  # (its messages carry the answers to the console's thread)
        self.notices = notices
        # Draws the core's newest snapshot: an answer is shown after the state it speaks
        # of (c said "pane cleared" over a pane still full until the next tick).
        self.draw = draw

    def send(self, request: Request[Any], said: bool = False,
             then: Callable[[Done], object] | None = None) -> Future[Any]:
        """Send ``request``; show its answer when it says why nothing happened (or,
        ``said``, when the key shows nothing else: X while everything stops); then, if
        given, ``then`` on it."""
        future = self.core.send(request)

        def answered(reply: Done) -> None:
            if (said or not reply.ok) and reply.text:
                if self.draw is not None:
                    self.draw()  # (the reply comes after the snapshot it follows)
                # About the process it names, as it is now: once that changes (S started
                # what "has already ended"), the answer is stale and goes.
                about = self.core.snapshot().view(request.name) \
                    if isinstance(request, Named) else None
                self.notices.say(reply.text, warning=not reply.ok, about=about)
            if then is not None:
                then(reply)

        self.then(future, answered)
        return future

    def then(self, future: Future[Any], act: Callable[[Done], object]) -> None:
        """Once ``future`` is done, ``act`` on its reply, on the console's thread. Handed
        over as a message (posting one is thread-safe and never waits): the core's thread
        never waits for the console's, however busy its terminal keeps it."""
        screen = self.screen

        def done(f: Future[Any]) -> None:
            try:
                reply = f.result()
            except Exception as e:
                reply = Done(False, str(e))
            screen.call_later(act, reply)

        future.add_done_callback(done)
