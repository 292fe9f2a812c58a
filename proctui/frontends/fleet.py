"""The fleet: every box's supervisor at once, each over a link of its own (the operator's
ssh, or a run directory here), and one row a box that says what needs the operator.

Each box is reached on a thread of its own until its first link is made; from then on
its RemoteCore keeps the link (it redials by itself when it drops). A box whose
supervisor ended, or that never answered, is dialled again and again with a growing
wait: the row says why meanwhile. Nothing here waits on one box for another, and nothing
here knows Textual: the fleet console draws these rows, the tests read them."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import field
from enum import Enum

from proctui.core.life.asks import Ask
from proctui.core.life.outcome import OutcomeKind, seconds
from proctui.core.life.stop import Phase
from proctui.core.snapshot import CoreSnapshot
from proctui.core.view import ProcessView
from proctui.frontends.report import action_words
from proctui.frontends.words import duration, duration_changes, duration_step
from proctui.records import dataclass
from proctui.remote.client import RemoteCore
from proctui.remote.connection import Connection
from proctui.remote.redial import Backoff

LOST_AFTER = 5.0  # seconds a dropped link is "reconnecting" before it is "lost"
# The share of an age's step (ten seconds, a minute) by which its new words may be drawn
# late, so that boxes whose ages move at different seconds share one redraw: a minute's
# age at most 6 s late (an age in seconds is never late, nor is a countdown).
AGE_LATE = 0.1
AGAIN_MOST = 10.0  # the longest wait between two dials of a box that is not there


class LinkState(Enum):
    UP = "up"
    CONNECTING = "connecting"  # no link made yet: the first dial is under way
    RECONNECTING = "reconnecting"  # the link dropped a moment ago
    LOST = "lost"  # the link has been down LOST_AFTER or more
    UNREACHABLE = "unreachable"  # never reached: its dial failed (the row says why)
    ENDED = "ended"  # its supervisor ended (dialled again: a new one may come)


@dataclass(frozen=True, slots=True)
class Decision:
    """A process on a box that waits for the operator's decision."""

    process: str
    words: str  # "SIGKILL in 12s", or "no deadline"
    since: float | None = None


@dataclass(frozen=True, slots=True)
class FleetRow:
    box: str
    link: LinkState
    link_words: str  # "up 2h", "lost 12s · try 3, next try in 2s"
    age: str = ""  # the supervisor's: "up 3h" ("" when unknown)
    running: int = 0
    ready: int = 0
    stopping: int = 0
    failed: int = 0
    abandoned: int = 0
    decisions: tuple[Decision, ...] = ()
    worst: str = ""  # the worst thing the box has to say, in one line
    stale: str = ""  # the counts are from before the link dropped: "as of 12s ago"
    rank: int = 9  # 0 first: what needs the operator on top
    # When to look at this row again, on the clock it was made with: when a word of it
    # changes with the clock alone (an age, a countdown; Due); None: never. Not part of
    # what the row says.
    due: float | None = field(default=None, compare=False)

    @property
    def counts(self) -> str:
        return (f"{self.running} running · {self.ready} ready · {self.stopping} stopping · "
                f"{self.failed} failed · {self.abandoned} abandoned")


def left(value: float) -> str:
    """A countdown in whole seconds, rounded up ("0s" only at its end; "2m05s" past two
    minutes): a table of boxes, not tenths that would draw it ten times a second."""
    whole = math.ceil(max(0.0, value))
    return f"{whole}s" if whole < 120 else seconds(whole)


def left_changes(value: float) -> float | None:
    """Seconds until ``left`` of a countdown at ``value`` now says something else (None:
    it has ended)."""
    return value - (math.ceil(value) - 1) if value > 0 else None


class Due:
    """When a row must be looked at again: the soonest of its words to change with the
    clock alone (an age's words possibly a little late, AGE_LATE)."""

    def __init__(self, now: float, at: float | None = None) -> None:
        self.now, self.at = now, at

    def add(self, after: float | None) -> None:
        if after is not None:
            at = self.now + after
            self.at = at if self.at is None else min(self.at, at)

    def age(self, value: float) -> None:
        """An age of ``value`` seconds is shown (``duration``)."""
        step = duration_step(value)
        self.add(duration_changes(value) + (AGE_LATE * step if step >= 10 else 0.0))


def _decision_words(view: ProcessView, now: float, due: Due) -> str:
    if view.deadline is None:
        since = view.decision_since
        if since is None:
            return "no deadline"
        due.age(now - since)
        return f"waiting {duration(now - since)}"
    due.add(left_changes(view.deadline - now))
    words = left(view.deadline - now)
    action = action_words(view)
    return f"{action} in {words}" if action else f"{words} left"


def _lapse_words(ask: Ask, now: float, due: Due) -> str:
    due.add(left_changes(ask.expires_at - now))
    return f"lapses in {left(ask.expires_at - now)}"


def _failed(view: ProcessView) -> bool:
    if view.phase is not Phase.ENDED:
        return False
    if view.not_started:
        return True
    o = view.outcome
    return o is not None and not o.clean and \
        o.kind not in (OutcomeKind.ABANDONED, OutcomeKind.HELD)


def _restarting(view: ProcessView) -> str:
    """What a process restarted after a failed run says (a crash loop), else "": waiting
    to start again, or running again with a failure among its runs (it stays said while
    it runs, so that a crash loop does not come and go from the row every few seconds)."""
    n = view.restarts
    if view.phase is Phase.BACKOFF and view.outcome is not None and not view.outcome.clean:
        return f"{view.name}: {view.outcome.text}; restarting (restarts: {n})"
    if view.phase is Phase.RUNNING and n and view.worst:
        return f"{view.name}: running again after a failed run (restarts: {n})"
    return ""


def row_of(box: str, snap: CoreSnapshot | None, now: float, wall: float,
           link: LinkState, link_words: str, why: str = "",
           due: float | None = None) -> FleetRow:
    """One box's row from its newest snapshot (None: never reached); ``why``: what is
    wrong with its link; ``due``: when the link's words change with the clock."""
    if snap is None:
        return FleetRow(box, link, link_words, worst=why or link_words, rank=1, due=due)
    soon = Due(now, due)
    views = snap.views
    running = sum(1 for v in views if v.phase is Phase.RUNNING)
    # Ready as is-ready says it: it said so, or it runs and has no ready check.
    ready = sum(1 for v in views if v.phase is Phase.RUNNING and
                (v.ready_at is not None or not v.ready_check))
    stopping = sum(1 for v in views if v.phase.stopping)
    failed = [v for v in views if _failed(v)]
    restarting = [words for v in views if (words := _restarting(v))]
    abandoned = sum(1 for v in views if v.phase is Phase.ENDED and v.outcome is not None
                    and v.outcome.kind in (OutcomeKind.ABANDONED, OutcomeKind.HELD))
    decisions = tuple(Decision(v.name, _decision_words(v, now, soon), v.decision_since)
                      for v in views if v.phase is Phase.DECIDING)
    # An agent's request waits for the operator as a decision does (its box's console
    # asks it; here it is said, with when it lapses).
    decisions += tuple(Decision(f"an agent's request to {a.what}", _lapse_words(a, now, soon),
                                a.asked_at) for a in snap.asks if a.waiting)
    stale = ""
    if link is not LinkState.UP and snap.link is not None and snap.link.heard is not None:
        stale = f"as of {duration(now - snap.link.heard)} ago"
        soon.age(now - snap.link.heard)
    if decisions:
        d = decisions[0]
        more = f" (and {len(decisions) - 1} more)" if len(decisions) > 1 else ""
        worst, rank = f"{d.process} waits for your decision: {d.words}{more}", 0
    elif link is not LinkState.UP:
        worst, rank = why or link_words, 1
    elif snap.crash:
        worst, rank = f"the supervisor crashed: {snap.crash}", 1
    elif snap.shutting_down or stopping:
        what = "stopping everything" if snap.shutting_down else \
            f"{stopping} stopping"
        worst, rank = what + (f" ({snap.shutdown_why})" if snap.shutdown_why else ""), 2
    elif failed:
        v = failed[0]
        text = v.not_started or (v.outcome.text if v.outcome is not None else "failed")
        worst, rank = f"{v.name}: {text}", 3
    elif restarting:
        worst, rank = restarting[0], 3
    elif snap.troubles:
        worst, rank = snap.troubles[0], 3
    elif abandoned:
        worst, rank = f"{abandoned} abandoned, left running", 4
    elif snap.all_ended:
        worst, rank = "everything has ended", 5
    else:
        worst, rank = "all well", 6
    started = snap.link.started if snap.link is not None else None
    age = ""
    if started:
        age = f"up {duration(wall - started)}"
        soon.age(wall - started)
    return FleetRow(box, link, link_words, age, running, ready, stopping, len(failed),
                    abandoned, decisions, worst, stale, rank, soon.at)


def ordered(rows: Sequence[FleetRow]) -> list[FleetRow]:
    """What needs the operator first (a decision, a lost box, a stop, a failure), then
    the rest; boxes of one rank in the order they were given."""
    return sorted(rows, key=lambda r: r.rank)  # (stable: the given order within a rank)


@dataclass
class FleetBox:
    """One box: how to reach it, and its link once made."""

    name: str
    dial: Callable[[], Connection]
    read_only: bool = False
    core: RemoteCore | None = None
    why: str = ""  # why the last dial failed, or why the supervisor ended
    tries: int = 0
    next_try: float | None = None  # monotonic; None: a dial is under way
    ended: bool = False  # its supervisor ended (or another answers there now)
    linked_at: float = 0.0  # when the current link was made (the core's, or its redial's)
    links: int = 1  # links its core has made: one more is a redial, up since then
    generation: int = 0  # a new core (a new supervisor, after an end): consoles start anew
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def row(self, now: float, wall: float) -> FleetRow:
        with self._lock:
            core, why, tries, next_try, ended = (self.core, self.why, self.tries,
                                                 self.next_try, self.ended)
        due = Due(now)
        if core is None:
            wait = "trying now"
            if next_try is not None:
                wait = f"next try in {left(next_try - now)}"
                due.add(left_changes(next_try - now))
            if ended:
                return row_of(self.name, None, now, wall, LinkState.ENDED,
                              f"ended · {wait}", f"its supervisor ended: {why}", due.at)
            if tries == 0 or not why:
                return row_of(self.name, None, now, wall, LinkState.CONNECTING,
                              "connecting")
            return row_of(self.name, None, now, wall, LinkState.UNREACHABLE,
                          f"unreachable · {tries} tries, {wait}", why, due.at)
        core.output.changes()  # (before the snapshot: news after it rings again)
        snap = core.snapshot()
        link = snap.link
        if link is not None and link.down_since is not None:
            down = now - link.down_since
            state = LinkState.RECONNECTING if down < LOST_AFTER else LinkState.LOST
            if state is LinkState.RECONNECTING:
                due.add(LOST_AFTER - down)
            due.age(down)
            wait = "trying now"
            if link.next_try is not None:
                wait = f"next try in {left(link.next_try - now)}"
                due.add(left_changes(link.next_try - now))
            words = f"{state.value} {duration(down)} · try {link.tries + 1}, {wait}"
            return row_of(self.name, snap, now, wall, state, words,
                          f"link {state.value}: {link.down_why}", due.at)
        if link is not None and link.links != self.links:
            with self._lock:  # the core made its link again: "up" counts from now
                self.links, self.linked_at = link.links, now
        due.age(now - self.linked_at)
        return row_of(self.name, snap, now, wall, LinkState.UP,
                      f"up {duration(now - self.linked_at)}", due=due.at)


class Fleet:
    """Every box, each reached on its own; ``changed`` is called (from any thread) when
    a box's link is made or lost, or its views or state change (at most once between
    two ``rows()``), for a frontend to look again."""

    def __init__(self, boxes: Sequence[FleetBox],
                 changed: Callable[[], None] = lambda: None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.boxes = list(boxes)
        self.changed = changed
        self.clock = clock
        self._closing = threading.Event()
        self._waiting: set[threading.Event] = set()  # each linked box's end, or close()
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        for box in self.boxes:
            self._reach(box)

    def _reach(self, box: FleetBox) -> None:
        t = threading.Thread(target=self._dialling, args=(box,), daemon=True,
                             name=f"proctui-fleet-{box.name}")
        self._threads.append(t)
        t.start()

    def _dialling(self, box: FleetBox) -> None:
        """Dial until a link is made; then watch it until its supervisor ends, and dial
        again (a new supervisor may come there: ``proctui up`` once more)."""
        backoff = Backoff(most=AGAIN_MOST)
        while not self._closing.is_set():
            with box._lock:
                box.next_try = None
            self.changed()
            try:
                conn = box.dial()
            except Exception as e:  # whatever a dial raises is that box's row, retried
                with box._lock:
                    box.tries += 1
                    box.why = (str(e) or type(e).__name__).splitlines()[0][:300] \
                        if str(e).strip() else type(e).__name__
                    delay = backoff.next()
                    box.next_try = self.clock() + delay
                self.changed()
                if self._closing.wait(delay):
                    return
                continue
            if self._closing.is_set():
                conn.close()
                return
            # Views only: a box's output comes once its console opens (a Watch sent then),
            # so that twenty boxes' floods do not all stream to a table of counts.
            ended = threading.Event()
            core = RemoteCore(conn, output=False, dial=box.dial, read_only=box.read_only,
                              ended=ended.set)
            self.linked(box, core)
            backoff = Backoff(most=AGAIN_MOST)
            # The core redials a dropped link itself; it ends only when its supervisor
            # has (said goodbye, refused us, or another answers there now).
            self._waiting.add(ended)
            if not self._closing.is_set():  # (else close() has been and gone)
                ended.wait()  # (set by close() too)
            self._waiting.discard(ended)
            if self._closing.is_set():
                return
            gone = core.snapshot().link
            core.close()
            with box._lock:
                box.core = None
                box.ended = True
                box.why = (gone.gone if gone is not None and gone.gone else "it ended")
                delay = backoff.next()
                box.next_try = self.clock() + delay
            self.changed()
            if self._closing.wait(delay):
                return

    def linked(self, box: FleetBox, core: RemoteCore) -> None:
        """``box``'s link is made: ``core`` is the box's, and its news (its views, its
        state, its link lost and made again) the fleet's to hear."""
        core.output.listen(lambda: self.changed())  # (the frontend's, whenever set)
        with box._lock:
            box.core, box.ended, box.why, box.tries = core, False, "", 0
            box.linked_at, box.links = self.clock(), 1
            box.generation += 1
        self.changed()

    def rows(self) -> list[FleetRow]:
        now, wall = self.clock(), time.time()
        return ordered([box.row(now, wall) for box in self.boxes])

    def box(self, name: str) -> FleetBox | None:
        return next((b for b in self.boxes if b.name == name), None)

    def close(self) -> None:
        """End every link (a dial under way: closed once it returns), in parallel."""
        self._closing.set()
        for ended in list(self._waiting):
            ended.set()
        cores = [b.core for b in self.boxes if b.core is not None]
        closers = [threading.Thread(target=c.close, daemon=True) for c in cores]
        for t in closers:
            t.start()
        for t in closers:
            t.join(3.0)
