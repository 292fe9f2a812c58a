"""What every frontend does the same way, written once: the interrupt ladder of a client
(``down``, a console before its first frame: once, kill what is still stopping; twice,
abandon what is left), and the summary at the end with the exit status. A supervisor's
own ladder (headless, the detached supervisor) is the core's: ``commands.interrupt``."""

from __future__ import annotations

import contextlib
from enum import Enum

from proctui.commands.abandon_all import AbandonAll
from proctui.commands.api import Core
from proctui.commands.kill_all import KillAll
from proctui.commands.stop_all import StopAll
from proctui.core.snapshot import CoreSnapshot
from proctui.frontends.report import summary_lines


class Rung(Enum):
    STOP = 1  # every stop sequence, with its countdowns
    KILL = 2  # SIGKILL to whatever is still stopping
    ABANDON = 3  # leave what is left running, and exit


class Ladder:
    """Each press climbs one rung; ``start`` is where the first press lands (``down`` has
    already asked for the stop, so its first ctrl+c kills). A plain class: a mutable
    dataclass's methods are compiled at import."""

    def __init__(self, start: Rung = Rung.STOP, key: str = "ctrl+c", presses: int = 0) -> None:
        self.start = start
        self.key = key
        self.presses = presses

    def press(self) -> Rung:
        self.presses += 1
        return Rung(min(Rung.ABANDON.value, self.start.value + self.presses - 1))

    def words(self, rung: Rung, what: str) -> str:
        """What the press did, and what the next one would do. ``what``: the press as
        the operator knows it ("received SIGINT", "ctrl+c")."""
        if rung is Rung.STOP:
            return f"{what}: stopping everything ({self.key} again kills what is still " \
                   "stopping)"
        if rung is Rung.KILL:
            again = " again" if self.presses > 1 else ""
            return f"{what}{again}: killing what is still stopping ({self.key} once more " \
                   "abandons it)"
        return f"{what} again: abandoning what is left"


def climb(core: Core, rung: Rung) -> None:
    """Carry out a rung on the core (never blocks longer than a few seconds)."""
    if rung is Rung.STOP:
        core.send(StopAll())
    elif rung is Rung.KILL:
        core.send(KillAll())
    else:
        with contextlib.suppress(Exception):
            core.send(AbandonAll()).result(timeout=5.0)


def summary(snapshot: CoreSnapshot) -> tuple[list[str], int]:
    """The lines every frontend prints at the end, and proctui's exit status: both from
    one snapshot, so the status says what the summary shows."""
    lines = summary_lines(snapshot)
    if snapshot.crash:
        lines.append(f"internal error: {snapshot.crash}")
    return lines, snapshot.exit_status
