"""The questions, on screen: each tick, the next thing waiting for the operator (a
process parked at a decision, or an agent's request) is asked about (one question at a
time, never over another screen), the question on screen is kept current, and one
answered elsewhere (a key in another console, ``proctui kill`` or ``proctui answer``, a
lapse, the end) goes."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from textual.screen import Screen

from proctui.core.life.asks import Ask
from proctui.core.life.stop import Phase
from proctui.core.view import ProcessView
from proctui.frontends.console.notices import Notices
from proctui.frontends.console.questions import Questions

if TYPE_CHECKING:  # (the dialogs and Textual's buttons load at the first question)
    from proctui.frontends.console.dialogs import AgentAskScreen, AskScreen, Decision


class Asking:
    def __init__(self, screen: Screen[Any], notices: Notices, *, clock: Callable[[], float],
                 refused: Callable[[], bool], help: Callable[[], None],
                 detach: Callable[[], None] | None, resumed: Callable[[], None],
                 decide: Callable[[str, Decision], None],
                 answer: Callable[[Ask, bool], None] = lambda _ask, _grant: None) -> None:
        self.screen = screen  # the main screen: the questions go over it
        self.notices = notices
        self.clock = clock
        # What a question's keys reach: may they act (read-only, the link down), the
        # help over it, leaving (attached: None when local), a tick once it is back on
        # top, and the answers (a decision at a deadline; an agent's request granted).
        self.refused, self.help, self.detach = refused, help, detach
        self.resumed, self.decide, self.answer = resumed, decide, answer
        self.questions = Questions()
        self.question: AskScreen | AgentAskScreen | None = None  # the one on screen

    def ask(self, views: Sequence[ProcessView], now: float, frozen: bool,
            asks: Sequence[Ask] = ()) -> None:
        """Each tick (``frozen``: the link is down, the picture is old: nothing is asked)."""
        app = self.screen.app
        screen = self.question
        if screen is not None and screen is app.screen:
            self._keep_current(screen, views, now, asks)
            return
        if len(app.screen_stack) > 1 or frozen:
            # Another screen is open: one question at a time. Said over a text that hides
            # the table, not over a dialog's text, nor the question the help came from.
            if not frozen and getattr(app.screen, "HIDES_ALL", False) and \
                    screen not in app.screen_stack and \
                    (due := self.questions.newly_due(views, now, asks)):
                about = due[0] if isinstance(due[0], ProcessView) else None
                self.notices.say(due[1], warning=True, timeout=8, about=about)
            return  # (or the link is down)
        upcoming = self.questions.next(views, now, asks)
        if upcoming is None:
            return
        from proctui.frontends.console.dialogs import AgentAskScreen, AskScreen

        item, position, count = upcoming
        question: AskScreen | AgentAskScreen
        if isinstance(item, Ask):
            question = AgentAskScreen(item, position, count, now, refused=self.refused,
                                      help=self.help, detach=self.detach,
                                      resumed=self.resumed)
        else:
            question = AskScreen(item, position, count, now, refused=self.refused,
                                 help=self.help, detach=self.detach, resumed=self.resumed)
        self.question = question
        if self.questions.arrived():  # said under the help, it has done its work
            self.notices.clear()

        def answered(answer: Decision | str | None) -> None:
            if self.question is question:
                self.question = None
            self.questions.done(question.key, self.clock())
            if isinstance(item, Ask):
                if answer in ("grant", "deny"):
                    self.answer(item, answer == "grant")
            elif answer is not None and not isinstance(answer, str):
                self.decide(item.name, answer)

        app.push_screen(question, answered)

    def _keep_current(self, screen: AskScreen | AgentAskScreen,
                      views: Sequence[ProcessView], now: float, asks: Sequence[Ask]) -> None:
        """The question on screen as things are now; gone once answered elsewhere."""
        from proctui.frontends.console.dialogs import AgentAskScreen

        if isinstance(screen, AgentAskScreen):
            ask = next((a for a in asks if a.id == screen.ask.id and a.waiting), None)
            if ask is None:
                screen.dismiss(None)  # answered elsewhere, lapsed, or moot
                self.questions.done(screen.key, now)
                return
            screen.show(ask, *self.questions.place(ask, views, now, asks), now)
            return
        current = next((v for v in views if v.name == screen.view.name), None)
        if current is None or current.phase is not Phase.DECIDING or \
                current.decisions != screen.view.decisions:
            screen.dismiss(None)  # answered elsewhere (a key, another console, the end)
            self.questions.done(screen.key, now)
            return
        screen.show(current, *self.questions.place(current, views, now, asks), now)
