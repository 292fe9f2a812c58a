"""Processes parked at a decision, asked about one at a time.

Every deadline that reaches "ask" is a new question (after an extend, the next deadline
asks again). Several waiting processes form one queue, in the order they started
waiting; after an answer the next question comes only after a visible pause, so a key
pressed twice never answers two questions.
"""

from __future__ import annotations

from collections.abc import Sequence

from proctui.core.life.stop import Phase
from proctui.core.view import ProcessView

PAUSE = 1.0  # seconds between one answer and the next question


def question_key(view: ProcessView) -> tuple[object, ...]:
    """One question: this process, this stop, this decision (each deadline asks anew)."""
    return (view.name, view.pid, view.stop_requested_at, view.decisions)


class Questions:
    def __init__(self, pause: float = PAUSE) -> None:
        self.pause = pause
        self.answered: set[tuple[object, ...]] = set()
        self.since: dict[tuple[object, ...], float] = {}  # when each started waiting
        self.resume_at = 0.0
        self.told: set[tuple[object, ...]] = set()  # said to wait under another screen
        self.said = False  # the answer line says so, and no question has been on screen since

    def waiting(self, views: Sequence[ProcessView], now: float) -> list[ProcessView]:
        """Everything parked at a decision, oldest first."""
        parked = [v for v in views if v.phase is Phase.DECIDING]
        keys = {question_key(v) for v in parked}
        for key in list(self.since):
            if key not in keys:
                del self.since[key]
        for v in parked:
            self.since.setdefault(question_key(v), now)
        parked.sort(key=lambda v: self.since[question_key(v)])
        return parked

    def next(self, views: Sequence[ProcessView], now: float) -> tuple[ProcessView, int, int] | None:
        """The next question to ask, with its place in the queue, or None for now."""
        parked = self.waiting(views, now)
        if now < self.resume_at:
            return None
        for i, v in enumerate(parked):
            if question_key(v) not in self.answered:
                return v, i + 1, len(parked)
        return None

    def newly_due(self, views: Sequence[ProcessView],
                  now: float) -> tuple[ProcessView, str] | None:
        """What to say of a question come due under another screen (the help covers the
        whole screen: nothing said one waited until Esc), once per question."""
        upcoming = self.next(views, now)
        if upcoming is None or question_key(upcoming[0]) in self.told:
            return None
        self.told.add(question_key(upcoming[0]))
        self.said = True
        return upcoming[0], f"{upcoming[0].name} waits for a decision: Esc closes this to " \
            "answer it"

    def arrived(self) -> bool:
        """Whether a question is on screen now that ``newly_due`` said one waits (once):
        its answer has done its work."""
        said, self.said = self.said, False
        return said

    def place(self, view: ProcessView, views: Sequence[ProcessView], now: float) -> tuple[int, int]:
        parked = self.waiting(views, now)
        keys = [question_key(v) for v in parked]
        key = question_key(view)
        return (keys.index(key) + 1 if key in keys else 1), max(1, len(parked))

    def done(self, key: tuple[object, ...], now: float) -> None:
        self.answered.add(key)
        self.resume_at = now + self.pause
