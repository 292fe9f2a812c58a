"""An attached console whose link is down, or that may only look.

While the link to the supervisor is down the console keeps its last picture, greyed
(the ``-stale`` class on the main screen), with its countdowns frozen at the moment the
link was lost, under a banner that says since when and when the next try is; every key
that would act says why it cannot instead of doing nothing. Attached with
``--read-only``, the same keys say so at any time. A mixin of the app, as actions.py's.
"""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING

from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from proctui.frontends.console.keys import fit, shown

if TYPE_CHECKING:
    from proctui.frontends.console.app import ProctuiApp
    from proctui.remote.redial import Reconnecting

    _Base = ProctuiApp
else:
    _Base = object

__all__ = ["LinkActions", "LinkBanner", "age", "banner_words", "silence_words"]

# Seconds without a byte from the supervisor before an attached console says so; an idle
# link hears the answer to a ping every ANSWER_TIMEOUT / 4 (2.5 s), and gives up at 10 s.
SILENT_WARN = 4.0


def _refusals() -> tuple[str, str]:
    """The words for read-only, and for a link that is down. They live with the redial
    loop, which a local console never needs: it is not loaded before the first frame."""
    from proctui.remote.redial import READ_ONLY, RECONNECTING
    return READ_ONLY, RECONNECTING


def age(value: float, up: bool = False) -> str:
    """Whole seconds for a line that changes once a second: 12s, 2m05s (``up``: a wait
    still to come is rounded up, so it never shows 0s before it is over)."""
    whole = max(0, math.ceil(value) if up else math.floor(value))
    if whole < 120:
        return f"{whole}s"
    return f"{whole // 60}m{whole % 60:02d}s"


def banner_words(link: Reconnecting, now: float) -> list[str]:
    """The banner's items, most important first (the narrowest screen keeps the first):
    "reconnecting", "link lost 12s ago", "next try in 2s", how to leave, why."""
    wait = "trying now…" if link.next_try is None else \
        f"next try in {age(link.next_try - now, up=True)}"
    return ["reconnecting", f"link lost {age(now - link.since)} ago", wait,
            f"{shown('detach')} detaches", link.why]


def silence_words(silent: float, why: str) -> list[str]:
    """The banner while the link is up but the supervisor has stopped answering."""
    return [f"no answer from the supervisor for {age(silent)}", f"{shown('detach')} detaches",
            why]


class LinkBanner(Widget):
    """The row that says the link is down (hidden while it is up)."""

    DEFAULT_CSS = """
    LinkBanner { height: 1; display: none; background: $warning; color: $text;
                 text-style: bold; }
    """

    items: reactive[tuple[str, ...]] = reactive(())

    def render(self) -> Text:
        """Whole items while they fit; then the reason, cut with … rather than left out."""
        *items, why = self.items or ("",)
        width = self.size.width - 2
        line = fit(items, width, " · ")
        room = width - len(line) - 3
        if len(why) > room and "; " in why:  # "... is not answering (since ...); advice"
            why = why.rsplit("; ", 1)[1]
        if why and room >= 12:
            line += " · " + (why if len(why) <= room else why[:room - 1] + "…")
        return Text(" " + line)


class LinkActions(_Base):
    _frozen: float | None = None  # the clock when the link was lost: the picture's time
    _links = 1  # the core's links, as last seen

    def refusal(self) -> str | None:
        """Why a key that acts cannot act now, or None when it can."""
        if self.read_only:
            return _refusals()[0]
        if getattr(self.core, "link", None) is not None:
            return _refusals()[1]
        return None

    def refused(self) -> bool:
        """Say why a key that acts cannot, visibly; True when it cannot."""
        why = self.refusal()
        if why is not None:
            self.notify(why, severity="warning", timeout=3, markup=False)
        return why is not None

    def _link_tick(self, now: float) -> float:
        """Each tick: show or hide the banner, grey the picture, and return the clock
        the picture is drawn at (frozen while the link is down)."""
        link: Reconnecting | None = getattr(self.core, "link", None)
        links = getattr(self.core, "links", 1)
        if links != self._links:
            self._links = links
            self.questions.answered.clear()  # a new link: every waiting decision asks again
        if link is None and self._frozen is None:
            self._silence()
            return now
        banner = self.query_one(LinkBanner)
        banner.display = link is not None
        self.screen_stack[0].set_class(link is not None, "-stale")
        if link is None:
            self._frozen = None
            return now
        if self._frozen is None:
            self._frozen = now
        wall = time.monotonic()  # the clock the link's times were taken on
        banner.items = tuple(banner_words(link, wall))
        # Next whole second of the age, or the end of the wait if sooner.
        due = 1.0 - (wall - link.since) % 1.0
        if link.next_try is not None and link.next_try > wall:
            due = min(due, (link.next_try - wall) % 1.0 or 1.0)
        self._soon(due + 0.01)
        return self._frozen

    def _silence(self) -> None:
        """A supervisor that stops answering (frozen, overloaded) showed nothing until
        the link was given up, 10 s later, its countdowns sitting at 0.0s meanwhile: after
        SILENT_WARN seconds of silence the banner says so."""
        conn = getattr(self.core, "conn", None)
        if self.attached is None or conn is None:
            return
        silent = time.monotonic() - conn.heard
        quiet = silent >= SILENT_WARN
        banner = self.query_one(LinkBanner)
        if quiet:
            banner.items = tuple(silence_words(silent, str(conn.not_answering())))
        banner.display = quiet
        self._soon(1.01 - silent % 1.0 if quiet else SILENT_WARN - silent + 0.05)

    def action_timeline(self) -> None:
        if getattr(self.core, "link", None) is not None:
            self.notify(_refusals()[1], severity="warning", timeout=3, markup=False)
            return
        super().action_timeline()
