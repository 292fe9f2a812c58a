"""An attached console whose link is down, or that may only look.

While the link to the supervisor is down the console keeps its last picture, greyed
(the ``-stale`` class on the main screen), with its countdowns frozen at the moment the
link was lost, under a banner that says since when and when the next try is; every key
that would act says why it cannot instead of doing nothing. Attached with
``--read-only``, the same keys say so at any time. All of it is read from the snapshot's
``link`` (a local core has none).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

from rich.text import Text
from textual.reactive import reactive
from textual.screen import Screen
from textual.widget import Widget

from proctui.commands.api import Core
from proctui.core.snapshot import CoreSnapshot, Link
from proctui.frontends.console.keys import fit, shown

__all__ = ["LinkBanner", "LinkWatch", "age", "banner_words", "silence_words"]

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


def down(link: Link | None) -> bool:
    """Is the link to the supervisor down (a redial under way)?"""
    return link is not None and link.down_since is not None


def banner_words(link: Link, now: float) -> list[str]:
    """The banner's items, most important first (the narrowest screen keeps the first):
    "reconnecting", "link lost 12s ago", "next try in 2s", how to leave, why."""
    since = link.down_since if link.down_since is not None else now
    wait = "trying now…" if link.next_try is None else \
        f"next try in {age(link.next_try - now, up=True)}"
    return ["reconnecting", f"link lost {age(now - since)} ago", wait,
            f"{shown('detach')} detaches", link.down_why]


def silence_words(silent: float, why: str) -> list[str]:
    """The banner while the link is up but the supervisor has stopped answering."""
    return [f"no answer from the supervisor for {age(silent)}", f"{shown('detach')} detaches",
            why]


def _not_answering(link: Link, silent: float) -> str:
    """Why the supervisor says nothing, as the link itself says it when it gives up
    ("the supervisor (pid 4121) is not answering (since 12:03:04); it is stopped: ...")."""
    from proctui.remote.connection import NotAnswering

    host = "" if link.local else link.where.rpartition(" on ")[2]
    return str(NotAnswering(link.pid, time.time() - silent, link.local, host))


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


class LinkWatch:
    """Whether a key that acts may act now, and each tick: the banner, the grey, and the
    clock the picture is drawn at (frozen while the link is down)."""

    def __init__(self, screen: Screen[Any], core: Core, *, attached: bool, read_only: bool,
                 banner: Callable[[], LinkBanner], soon: Callable[[float], None],
                 new_link: Callable[[], None]) -> None:
        self.screen = screen  # the main screen: greyed while the link is down
        self.core = core
        self.attached = attached
        self.read_only = read_only
        self._banner = banner  # (the widget, once the screen is composed)
        self._soon = soon  # the next tick, when the banner's words next change
        self._new_link = new_link  # a new link: every waiting decision asks again
        self.frozen: float | None = None  # the clock when the link was lost
        self._links = 1  # the core's links, as last seen

    def refusal(self) -> str | None:
        """Why a key that acts cannot act now, or None when it can (the latest
        snapshot's link: the one drawn may be a frame old)."""
        if self.read_only:
            return _refusals()[0]
        if down(self.core.snapshot().link):
            return _refusals()[1]
        return None

    def refused(self) -> bool:
        """Say why a key that acts cannot, visibly; True when it cannot."""
        why = self.refusal()
        if why is not None:
            self.screen.notify(why, severity="warning", timeout=3, markup=False)
        return why is not None

    def refused_down(self) -> bool:
        """Say that the link is down, when it is (a key that only reads from the
        supervisor, as the timeline does); True when it is."""
        if down(self.core.snapshot().link):
            self.screen.notify(_refusals()[1], severity="warning", timeout=3, markup=False)
            return True
        return False

    def tick(self, now: float, snap: CoreSnapshot) -> float:
        """Each tick, from the tick's snapshot: show or hide the banner, grey the
        picture, and return the clock the picture is drawn at."""
        link = snap.link
        if link is None:
            return now  # a local core: no link to lose
        if link.links != self._links:
            self._links = link.links
            self._new_link()
        is_down = down(link)
        if not is_down and self.frozen is None:
            self._silence(link)
            return now
        banner = self._banner()
        banner.display = is_down
        self.screen.set_class(is_down, "-stale")
        if not is_down:
            self.frozen = None
            return now
        if self.frozen is None:
            self.frozen = now
        wall = time.monotonic()  # the clock the link's times were taken on
        since = link.down_since if link.down_since is not None else wall
        banner.items = tuple(banner_words(link, wall))
        # Next whole second of the age, or the end of the wait if sooner.
        due = 1.0 - (wall - since) % 1.0
        if link.next_try is not None and link.next_try > wall:
            due = min(due, (link.next_try - wall) % 1.0 or 1.0)
        self._soon(due + 0.01)
        return self.frozen

    def _silence(self, link: Link) -> None:
        """A supervisor that stops answering (frozen, overloaded) showed nothing until
        the link was given up, 10 s later, its countdowns sitting at 0.0s meanwhile: after
        SILENT_WARN seconds of silence the banner says so."""
        # When the supervisor last said anything (monotonic), where the link says it.
        heard = link.heard
        if not self.attached or heard is None:
            return
        silent = time.monotonic() - heard
        quiet = silent >= SILENT_WARN
        banner = self._banner()
        if quiet:
            banner.items = tuple(silence_words(silent, _not_answering(link, silent)))
        banner.display = quiet
        self._soon(1.01 - silent % 1.0 if quiet else SILENT_WARN - silent + 0.05)
