"""Which run sent a notify datagram, at a bounded cost per datagram.

Any local process can send to a run's notify socket, as fast as it likes. Judging a
sender outside the run's group needs the lineage, and a fresh walk of proctui's whole
process tree costs milliseconds with a few hundred processes: one walk per datagram
lets a flood buy the core's time and make a SIGKILL seconds late. So a sender is looked
up in what is already known first (the lineage's attribution, keyed by pid and start
time so that a reused pid is a new process); a sender found in no run is remembered as
a stranger for a while; and new walks for unknown senders are rationed. A datagram
beyond the ration is dropped and counted: a flood costs its victims dropped datagrams,
never time.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from enum import Enum

from proctui.core.os.lineage import Key

WALK_EVERY = 0.1  # seconds: at most one walk of the tree for senders nobody knows yet
STRANGER_FOR = 1.0  # seconds a sender found in no run is not looked up again
MAX_STRANGERS = 4096  # remembered strangers; past this the oldest are forgotten


class Judged(Enum):
    STRANGER = "not from a supervised process"
    OVER_BUDGET = "over the lookup budget"


MAX_HOPS = 64  # parents followed to see whether a sender is in proctui's tree at all


def outside_tree(pid: int, root: int, parent_of: Callable[[int], int | None]) -> bool:
    """Is ``pid`` proven not to descend from ``root``? Its parents up to init, a few
    reads: much cheaper than a walk of the whole tree, and a walk could never attribute
    such a sender anyway. proctui is a child subreaper, so nothing of its tree is ever
    re-parented past it. When in doubt (a process gone meanwhile, a very deep chain),
    not proven."""
    for _ in range(MAX_HOPS):
        parent = parent_of(pid)
        if parent is None or parent == root:
            return False
        if parent <= 1:
            return True
        pid = parent
    return False


class Senders:
    def __init__(self, owner: Callable[[Key], str | None], walk: Callable[[], object],
                 outside: Callable[[int], bool] = lambda pid: False,
                 clock: Callable[[], float] = time.monotonic) -> None:
        """``owner``: the run token the lineage knows for a process (no I/O); ``walk``:
        a fresh walk of the tree that updates what ``owner`` knows; ``outside``: is a
        pid proven to be outside proctui's tree (outside_tree)."""
        self.owner = owner
        self.walk = walk
        self.outside = outside
        self.clock = clock
        self.strangers: dict[Key, float] = {}  # process -> until when it stays one
        self.next_walk = 0.0
        self.walks = 0

    def judge(self, key: Key) -> str | Judged:
        """The token of the run that ``key`` belongs to, or why it has none."""
        token = self.owner(key)
        if token is not None:
            return token
        now = self.clock()
        until = self.strangers.get(key)
        if until is not None and now < until:
            return Judged.STRANGER
        if self.outside(key[0]):
            # Outside the tree: a stranger for sure, found without spending the
            # ration of walks that senders inside the tree may need.
            self._remember(key, now)
            return Judged.STRANGER
        if now < self.next_walk:
            return Judged.OVER_BUDGET
        self.next_walk = now + WALK_EVERY
        self.walks += 1
        self.walk()
        token = self.owner(key)
        if token is not None:
            self.strangers.pop(key, None)
            return token
        self._remember(key, now)
        return Judged.STRANGER

    def _remember(self, key: Key, now: float) -> None:
        if len(self.strangers) >= MAX_STRANGERS:
            # dicts keep insertion order: forget the oldest half
            for old in list(self.strangers)[: MAX_STRANGERS // 2]:
                del self.strangers[old]
        self.strangers[key] = now + STRANGER_FOR
