"""How runs speak to proctui and what it does with it: the notify socket's messages
routed to the run that sent them (by the sender's process group, or by lineage for a
process outside it), readiness and the watchdog, and the journal entries they make.

It hears and judges; what a process said goes back to the engine as a fact (``Heard``)
through one callback, and the engine writes the process's record."""

from __future__ import annotations

import asyncio
import os
import re
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from proctui.core.life.outcome import seconds
from proctui.core.os.lineage import Lineage
from proctui.core.os.oslayer import OSLayer
from proctui.core.output.lines import Chunk
from proctui.core.output.text import visible
from proctui.core.process import Managed
from proctui.core.run import Run
from proctui.core.speak.notify import Message, NotifySocket
from proctui.core.speak.readiness import Checks
from proctui.core.speak.senders import Judged, Senders, outside_tree
from proctui.core.store.journal import Journal
from proctui.core.store.kinds import Kind

MAX_STATUS = 200  # characters of STATUS= shown
MAX_JOURNAL_VALUE = 256  # characters of each notify field in the journal


# Bidirectional controls: U+202E in a STATUS turns the rest of a console row around.
# A pattern, compiled (and cached by re) at the first STATUS=: most runs have none, and
# compiling this class at import cost every start 0.3 ms.
_BIDI = "[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]"


def status_line(status: str, errno: int | None) -> str:
    """What the views show: the last STATUS= (visible, capped) and the last ERRNO=.
    Made anew from both each time, never appended to: a stream of ERRNO= once grew it
    by one "errno N" per message (12 MB and quadratic work after 3,000)."""
    text = re.sub(_BIDI, lambda m: f"\\u{ord(m.group(0)):04x}", visible(status[: MAX_STATUS * 4]))
    text = text[:MAX_STATUS]
    if errno is None:
        return text
    return f"{text} · errno {errno}" if text else f"errno {errno}"


class _Said:
    """What a run said last, so that a repeated message is not a new notice (a plain
    class: a mutable dataclass's methods are compiled at import)."""

    __slots__ = ("errno", "main_pid", "status", "stopping")

    def __init__(self) -> None:
        self.status = ""
        self.errno: int | None = None
        self.main_pid: int | None = None
        self.stopping = False


@dataclass(frozen=True, slots=True)
class Heard:
    """What a run said that changes its record: readiness (``ready_at``), its status
    line. ``None`` fields are unchanged; ``seen`` alone asks for a fresh snapshot."""

    ready_at: float | None = None
    status: str | None = None


class Speech:
    def __init__(self, loop: asyncio.AbstractEventLoop, os_layer: OSLayer, lineage: Lineage,
                 runs: Callable[[], list[Run]], journal: Journal,
                 notice: Callable[[Managed | None, str], None],
                 heard: Callable[[Managed, Heard], None]) -> None:
        self.loop = loop
        self.os = os_layer
        self.journal = journal
        self.notice = notice
        self.heard = heard  # the engine writes the record and publishes it
        self.checks: dict[str, Checks] = {}  # process name -> its current run's checks
        self.probes: set[int] = set()
        self._dropped: Counter[str] = Counter()  # by the sockets of runs that have ended
        self.sockets: dict[str, NotifySocket] = {}  # process name -> its run's socket
        self._warned = False
        self._said: dict[str, _Said] = {}  # process name -> what its current run said
        self.senders = Senders(
            lineage.owner.get, lambda: lineage.update(runs, max_age=0),
            lambda pid: outside_tree(pid, os.getpid(), self._parent_of))

    def child_env(self, m: Managed) -> dict[str, str]:
        """The environment a new run of ``m`` gets: its own notify socket (the address
        itself says which run speaks), and WATCHDOG_USEC when it has a watchdog."""
        env = {}
        self._close(m.name)
        try:
            sock = NotifySocket(self.loop, lambda msg: self._message(m, sock, msg),
                                lambda e: self._failed(m, sock, e))
        except OSError as e:
            if not self._warned:
                self._warned = True
                self.notice(None, f"warning: no notify socket ({e}); sd_notify messages "
                                    "will not be heard")
        else:
            self.sockets[m.name] = sock
            env["NOTIFY_SOCKET"] = sock.address
        if m.spec.watchdog_sec:
            env["WATCHDOG_USEC"] = str(int(m.spec.watchdog_sec * 1e6))
        return env

    def spawned(self, m: Managed, run: Run) -> None:
        self._said[m.name] = _Said()
        spec = m.spec
        self.checks[m.name] = Checks(
            run, spec.ready, spec.ready_timeout, spec.watchdog_sec,
            on_ready=lambda how: self._ready(m, run, how),
            say=lambda text: self.notice(m, text), probes=self.probes)
        self.journal.write(Kind.START, m.name, pid=run.pid, cmd=spec.cmd,
                             ready=spec.ready.describe() if spec.ready else None,
                             depends_on=[d for d, _ in spec.depends_on] or None)

    def listens(self, m: Managed) -> bool:
        """Does the current run of ``m`` wait for a line of its output?"""
        return m.name in self.checks

    def output(self, m: Managed, lines: Chunk) -> None:
        checks = self.checks.get(m.name)
        if checks is not None and lines:
            checks.output(lines)

    def ended(self, m: Managed) -> None:
        checks = self.checks.pop(m.name, None)
        if checks is not None:
            checks.close()
        self._close(m.name)

    def _close(self, name: str) -> None:
        sock = self.sockets.pop(name, None)
        if sock is not None:
            self.dropped.update(sock.dropped)
            if sock.dropped:
                # What was refused at this run's door, and why: a flood or a broken
                # sender shows in the journal, not only in a counter nobody reads.
                self.journal.write(Kind.NOTIFY_DROPPED, name, received=sock.received,
                                     dropped=dict(sock.dropped))
            sock.close()

    @property
    def dropped(self) -> Counter[str]:
        """Datagrams dropped, per reason, by the sockets of runs that have ended."""
        return self._dropped

    def dropped_now(self, name: str) -> int:
        """Datagrams the current run's socket has dropped so far (every reason)."""
        sock = self.sockets.get(name)
        return sum(sock.dropped.values()) if sock is not None else 0

    def dropped_counts(self) -> dict[str, dict[str, int]]:
        """Datagrams dropped so far, per process and reason, live sockets included (for
        a status line: a flood or a broken sender should be seen)."""
        counts = {name: dict(sock.dropped) for name, sock in self.sockets.items()
                  if sock.dropped}
        if self.dropped:
            counts["(ended runs)"] = dict(self.dropped)
        return counts

    def _failed(self, m: Managed, sock: NotifySocket, error: Exception) -> None:
        if sock.dropped["handler error"] == 1:  # once per run: a sender can repeat it
            self.notice(m, f"internal error handling a notify message "
                             f"({type(error).__name__}: {error}); such messages are dropped")

    def _ready(self, m: Managed, run: Run, how: str) -> None:
        if m.run is not run or not run.live:
            return
        now = time.monotonic()
        took = now - (run.started_at or now)
        self.notice(m, f"ready after {seconds(took)} ({how})")
        self.journal.write(Kind.READY, m.name, after=round(took, 3), how=how)
        self.heard(m, Heard(ready_at=now))

    def _message(self, m: Managed, sock: NotifySocket, msg: Message) -> str | None:
        run = m.run
        if run is None or not run.live or self.sockets.get(m.name) is not sock:
            return Judged.STRANGER.value
        refused = self._from(run, msg)
        if refused is not None:
            return refused
        self.journal.chatter(Kind.NOTIFY, m.name, pid=msg.pid, uid=msg.uid,
                               fields={k: v[:MAX_JOURNAL_VALUE] for k, v in msg.fields})
        said = self._said.setdefault(m.name, _Said())
        now_status, notices = m.status, 0
        status, errno = msg.get("STATUS"), msg.number("ERRNO")
        if status is not None or errno is not None:
            said.status = said.status if status is None else status[: MAX_STATUS * 4]
            said.errno = said.errno if errno is None else errno
            now_status = status_line(said.status, said.errno)
        if msg.get("STOPPING") == "1" and not said.stopping:
            said.stopping = True
            notices += 1
            self.notice(m, "says it is stopping")
        main = msg.number("MAINPID")
        if main is not None and main != said.main_pid:
            said.main_pid = main
            notices += 1
            self.notice(m, f"says its main process is pid {main}")
        checks = self.checks.get(m.name)
        if checks is not None:
            for text in checks.message(msg):
                notices += 1
                self.notice(m, text)
        extend = msg.number("EXTEND_TIMEOUT_USEC")
        if extend is not None:
            self.journal.chatter(Kind.EXTEND, m.name, who="process", usec=extend,
                                   deadline=run.state.deadline)
        if now_status != m.status or notices:
            # A new snapshot only when there is something new to see (a WATCHDOG=1 or
            # a repeated STATUS makes none); readiness and deadlines publish their own.
            self.heard(m, Heard(status=now_status))
        return None

    def _from(self, run: Run, msg: Message) -> str | None:
        """Is the sender one of the run's processes? Still in /proc (alive, or a zombie
        not yet reaped): its group or session is the run's, or lineage says it is the
        run's. Reaped already (``systemd-notify`` without a barrier sends and exits): it
        sent to this run's own socket, as the user the run's leader runs as (or as
        root), which a stranger of another user cannot."""
        st = self.os.read_stat(msg.pid)
        if st is not None:
            if run.pgid in (st.pgid, st.sid):
                return None
            token = self.senders.judge((st.pid, st.start_ticks))
            if isinstance(token, Judged):
                return token.value
            return None if token == run.token else Judged.STRANGER.value
        if msg.uid in (0, self.os.uid_of(run.pid or 0)):
            return None
        return Judged.STRANGER.value

    def _parent_of(self, pid: int) -> int | None:
        st = self.os.read_stat(pid)
        return st.ppid if st is not None else None

    def close(self) -> None:
        for checks in self.checks.values():  # a run left running: its probe still goes
            checks.close()
        self.checks.clear()
        for name in list(self.sockets):
            self._close(name)
