"""The console's answers (a key bound to nothing, a request refused, a question come due
under the help): one at a time, the newest, on a line of its own above the key bar.

The line takes its room from the layout instead of floating over it: Textual's toasts
covered the end of a pane's newest line, the help's last line, a dialog's buttons and the
search box. An answer about a process goes as soon as that process changes ("nothing to
abandon" stayed after S had started it again), and any answer goes at its timeout."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from rich.text import Text
from textual.timer import Timer
from textual.widget import Widget

from proctui.core.view import ProcessView
from proctui.records import dataclass

TIMEOUT = 5.0  # seconds an answer stays, unless said otherwise (Textual's toasts' own)


def state_of(view: ProcessView) -> tuple[object, ...]:
    """What an answer about ``view`` speaks of: its life (its stage, its run, how that
    ended), not what it prints or says of itself (output, STATUS), which an answer never
    names."""
    return (view.phase, view.pid, view.restarts, view.outcome, view.held, view.deadline,
            view.decisions, view.paused)


@dataclass(frozen=True, slots=True)
class Notice:
    text: str
    warning: bool
    until: float  # time.monotonic() when it goes
    about: str | None = None  # the process it speaks of
    state: tuple[object, ...] = ()  # that process's state_of when it was said


class Notices:
    """The one answer on screen, and the lines that show it (the main screen's, the help's):
    plain Python, told the views each tick."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.current: Notice | None = None
        self._lines: list[Callable[[Notice | None], None]] = []

    def listen(self, heard: Callable[[Notice | None], None]) -> None:
        self._lines.append(heard)

    def unlisten(self, heard: Callable[[Notice | None], None]) -> None:
        if heard in self._lines:
            self._lines.remove(heard)

    def say(self, text: str, *, warning: bool = False, timeout: float | None = None,
            about: ProcessView | None = None) -> None:
        """Show ``text`` in place of any answer before it; ``about``: the process it
        speaks of, as it is now (the answer goes when that changes)."""
        self._set(Notice(text, warning, self.clock() + (timeout or TIMEOUT),
                         about.name if about is not None else None,
                         state_of(about) if about is not None else ()))

    def clear(self) -> None:
        if self.current is not None:
            self._set(None)

    def expire(self, notice: Notice) -> None:
        """Its time is up (a line's timer): it goes, unless another replaced it."""
        if self.current is notice:
            self._set(None)

    def check(self, views: Sequence[ProcessView]) -> None:
        """Each tick: an answer whose process changed (or went, a reload removed it) is
        stale and goes."""
        notice = self.current
        if notice is None or notice.about is None:
            return
        view = next((v for v in views if v.name == notice.about), None)
        if view is None or state_of(view) != notice.state:
            self._set(None)

    def _set(self, notice: Notice | None) -> None:
        self.current = notice
        for heard in list(self._lines):
            heard(notice)


class NoticeLine(Widget):
    """Where the answer shows: in the layout (the rows above it give it their room), hidden
    while there is none. A long answer wraps, up to three rows, rather than lose its end."""

    DEFAULT_CSS = """
    NoticeLine { height: auto; max-height: 3; display: none; background: $boost;
                 padding: 0 1; }
    """

    def __init__(self, notices: Notices, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.notices = notices
        self.notice: Notice | None = None
        self._timer: Timer | None = None

    def on_mount(self) -> None:
        self.notices.listen(self.heard)
        self.heard(self.notices.current)

    def on_unmount(self) -> None:
        self.notices.unlisten(self.heard)

    def heard(self, notice: Notice | None) -> None:
        if notice is self.notice:
            return
        self.notice = notice
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        if notice is not None:
            left = max(0.001, notice.until - self.notices.clock())
            self._timer = self.set_timer(left, lambda: self.notices.expire(notice))
        self.display = notice is not None
        self.refresh(layout=True)

    def render(self) -> Text:
        notice = self.notice
        if notice is None:
            return Text()
        return Text(notice.text, style="bold yellow" if notice.warning else "")
