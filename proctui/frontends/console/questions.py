"""What waits for the operator, asked about one at a time: processes parked at a
decision, and agents' requests for a decision only an operator takes.

Every deadline that reaches "ask" is a new question (after an extend, the next deadline
asks again); every agent's request is one. Everything waiting forms one queue, in the
order it started waiting; after an answer the next question comes only after a visible
pause, so a key pressed twice never answers two questions.
"""

from __future__ import annotations

from collections.abc import Sequence

from proctui.core.life.asks import Ask
from proctui.core.life.stop import Phase
from proctui.core.view import ProcessView

PAUSE = 1.0  # seconds between one answer and the next question

Waiting = ProcessView | Ask  # a process parked at a decision, or an agent's request


def question_key(view: ProcessView) -> tuple[object, ...]:
    """One question: this process, this stop, this decision (each deadline asks anew)."""
    return (view.name, view.pid, view.stop_requested_at, view.decisions)


def ask_key(ask: Ask) -> tuple[object, ...]:
    """One agent's request (its number is never given twice by a supervisor)."""
    return ("ask", ask.id)


def key_of(item: Waiting) -> tuple[object, ...]:
    return ask_key(item) if isinstance(item, Ask) else question_key(item)


class Questions:
    def __init__(self, pause: float = PAUSE) -> None:
        self.pause = pause
        self.answered: set[tuple[object, ...]] = set()
        self.since: dict[tuple[object, ...], float] = {}  # when each started waiting
        self.resume_at = 0.0
        self.told: set[tuple[object, ...]] = set()  # said to wait under another screen
        self.said = False  # the answer line says so, and no question has been on screen since

    def waiting(self, views: Sequence[ProcessView], now: float,
                asks: Sequence[Ask] = ()) -> list[Waiting]:
        """Everything parked at a decision, and every agent's request, oldest first."""
        parked: list[Waiting] = [v for v in views if v.phase is Phase.DECIDING]
        parked += [a for a in asks if a.waiting]
        keys = {key_of(item) for item in parked}
        for key in list(self.since):
            if key not in keys:
                del self.since[key]
        for item in parked:
            self.since.setdefault(key_of(item), now)
        parked.sort(key=lambda item: self.since[key_of(item)])
        return parked

    def next(self, views: Sequence[ProcessView], now: float,
             asks: Sequence[Ask] = ()) -> tuple[Waiting, int, int] | None:
        """The next question to ask, with its place in the queue, or None for now."""
        parked = self.waiting(views, now, asks)
        if now < self.resume_at:
            return None
        for i, item in enumerate(parked):
            if key_of(item) not in self.answered:
                return item, i + 1, len(parked)
        return None

    def newly_due(self, views: Sequence[ProcessView], now: float,
                  asks: Sequence[Ask] = ()) -> tuple[Waiting, str] | None:
        """What to say of a question come due under another screen (the help covers the
        whole screen: nothing said one waited until Esc), once per question."""
        upcoming = self.next(views, now, asks)
        if upcoming is None or key_of(upcoming[0]) in self.told:
            return None
        item = upcoming[0]
        self.told.add(key_of(item))
        self.said = True
        what = f"an agent's request to {item.what}" if isinstance(item, Ask) else \
            f"{item.name}"
        return item, f"{what} waits for a decision: Esc closes this to answer it"

    def arrived(self) -> bool:
        """Whether a question is on screen now that ``newly_due`` said one waits (once):
        its answer has done its work."""
        said, self.said = self.said, False
        return said

    def place(self, item: Waiting, views: Sequence[ProcessView], now: float,
              asks: Sequence[Ask] = ()) -> tuple[int, int]:
        parked = self.waiting(views, now, asks)
        keys = [key_of(x) for x in parked]
        key = key_of(item)
        return (keys.index(key) + 1 if key in keys else 1), max(1, len(parked))

    def done(self, key: tuple[object, ...], now: float) -> None:
        self.answered.add(key)
        self.resume_at = now + self.pause
