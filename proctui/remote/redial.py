"""A console's link to a supervisor elsewhere, lost and made again: how long to wait
between tries, what the console shows meanwhile, and when to stop trying.

A link that drops (EOF, an error, a supervisor silent past its timeout) is not the end:
the supervisor and its processes go on without us (a disconnect is a detach on the
server's side). The console ends only on proof that the supervisor itself has ended: it
said goodbye (everything ended, then it closed), the dial found no supervisor there
(``SupervisorEnded``), or a different supervisor answers there now.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from proctui.protocol.pushes import Hello
from proctui.records import dataclass
from proctui.remote.connection import GONE, Connection, NoSupervisor, NotAnswering

FIRST_DELAY = 0.5  # seconds before the first try once the link dropped
MAX_DELAY = 5.0  # the longest wait between two tries
STEADY = MAX_DELAY  # a link up this long starts the next loss's waits from FIRST_DELAY
RECONNECTING = "not connected: reconnecting"  # a command asked for while the link is down
READ_ONLY = "read-only: attached with --read-only"  # a command asked of a read-only core


class SupervisorEnded(NoSupervisor):
    """A dial's answer that there is no supervisor to reconnect to (its box said so): the
    console says why and ends. Anything else a dial raises (NotAnswering, OSError, a
    NoSupervisor of another kind, an ssh that could not connect) is retried."""


@dataclass(frozen=True, slots=True)
class Reconnecting:
    """The link is down: since when (time.monotonic()), why, and when the next try
    begins (None: a try is under way)."""

    since: float
    why: str
    next_try: float | None
    tries: int = 0


class Backoff:
    """FIRST_DELAY doubling up to MAX_DELAY; back to FIRST_DELAY only after a link that
    stayed up STEADY seconds (a supervisor that accepts and drops us at once must not
    make a busy loop)."""

    def __init__(self, first: float = FIRST_DELAY, most: float = MAX_DELAY) -> None:
        self.first, self.most = first, most
        self.delay = first

    def next(self) -> float:
        delay = self.delay
        self.delay = min(self.most, self.delay * 2)
        return delay

    def link_lasted(self, seconds: float) -> None:
        if seconds >= STEADY:
            self.delay = self.first


def local_dial(run_dir: Path, timeout: float | None = None,
               read_only: bool = False) -> Callable[[], Connection]:
    """Dialling the control socket of ``run_dir`` on this machine: no supervisor there
    (no socket, refused, another user's) is SupervisorEnded; a silent one is retried."""

    def dial() -> Connection:
        try:
            return Connection.open(run_dir, timeout, read_only)
        except NotAnswering:
            raise
        except NoSupervisor as e:
            raise SupervisorEnded(str(e)) from None

    return dial


def other_supervisor(old: Hello, new: Hello) -> str | None:
    """Why the supervisor that answered is not the one we were attached to (its pid, its
    start or its processes differ), or None when it is the same."""
    if (old.pid, old.started) == (new.pid, new.started):
        if old.names == new.names:
            return None
        return (f"supervisor pid {new.pid} reloaded its config while the link was "
                "down: proctui attach shows its processes as they are now")
    return (f"{GONE}: supervisor pid {old.pid} has ended, and pid {new.pid} "
            "runs there now (proctui attach reaches it)")
