"""How runs speak to proctui and what it does with it: the notify socket's messages
routed to the run that sent them (by the sender's process group, or by lineage for a
process outside it), readiness and the watchdog, and the journal entries they make.

It hears and judges; what a process said goes to the step function as a fact (its
status line; readiness and extensions through the run's checks), never written here."""

from __future__ import annotations

import asyncio
import os
import re
from collections import Counter
from collections.abc import Callable

from proctui.config import ProcessSpec
from proctui.core.life import inputs as i
from proctui.core.life.state import RunState
from proctui.core.os.lineage import Lineage
from proctui.core.os.oslayer import OSLayer
from proctui.core.output.text import visible
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


class Speech:
    """The notify sockets of the runs, and what their messages say: facts for the step
    function (``StatusSaid``; readiness and extensions through the run's checks),
    notices for its pane, entries for the journal. A message is taken only from a
    process of the run it was sent to (judged by its group, session or lineage)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, os_layer: OSLayer, lineage: Lineage,
                 runs: Callable[[], list[RunState]], journal: Journal,
                 notice: Callable[[str | None, str], None],
                 post: Callable[[str, object], None],
                 run_of: Callable[[str], RunState | None],
                 checks: Callable[[str], Checks | None]) -> None:
        self.loop = loop
        self.os = os_layer
        self.journal = journal
        self.notice = notice
        self.post = post  # (process name, fact) to the step function
        self.run_of = run_of  # the current run of a process, as the table holds it
        self.checks = checks  # the current run's readiness checks, if any
        self._dropped: Counter[str] = Counter()  # by the sockets of runs that have ended
        self.sockets: dict[str, NotifySocket] = {}  # process name -> its run's socket
        self._numbers: dict[str, int] = {}  # process name -> the run its socket is for
        self._warned = False
        self._said: dict[str, _Said] = {}  # process name -> what its current run said
        self.senders = Senders(
            lineage.owner.get, lambda: lineage.update(runs, max_age=0),
            lambda pid: outside_tree(pid, os.getpid(), self._parent_of))

    def child_env(self, name: str, number: int, spec: ProcessSpec) -> dict[str, str]:
        """The environment a new run gets: its own notify socket (the address itself
        says which run speaks), and WATCHDOG_USEC when it has a watchdog."""
        env = {}
        self._close(name)
        self._said[name] = _Said()
        try:
            sock = NotifySocket(self.loop, lambda msg: self._message(name, number, sock, msg),
                                lambda e: self._failed(name, sock, e))
        except OSError as e:
            if not self._warned:
                self._warned = True
                self.notice(None, f"warning: no notify socket ({e}); sd_notify messages "
                                  "will not be heard")
        else:
            self.sockets[name] = sock
            self._numbers[name] = number
            env["NOTIFY_SOCKET"] = sock.address
        if spec.watchdog_sec:
            env["WATCHDOG_USEC"] = str(int(spec.watchdog_sec * 1e6))
        return env

    def ended(self, name: str) -> None:
        self._close(name)

    def _close(self, name: str) -> None:
        sock = self.sockets.pop(name, None)
        self._numbers.pop(name, None)
        if sock is not None:
            self._dropped.update(sock.dropped)
            if sock.dropped:
                # What was refused at this run's door, and why: a flood or a broken
                # sender shows in the journal, not only in a counter nobody reads.
                self.journal.write(Kind.NOTIFY_DROPPED, name, received=sock.received,
                                   dropped=dict(sock.dropped))
            sock.close()

    def dropped_now(self, name: str) -> int:
        """Datagrams the current run's socket has dropped so far (every reason)."""
        sock = self.sockets.get(name)
        return sum(sock.dropped.values()) if sock is not None else 0

    def dropped_counts(self) -> dict[str, dict[str, int]]:
        """Datagrams dropped so far, per process and reason, live sockets included."""
        counts = {name: dict(sock.dropped) for name, sock in self.sockets.items()
                  if sock.dropped}
        if self._dropped:
            counts["(ended runs)"] = dict(self._dropped)
        return counts

    def _failed(self, name: str, sock: NotifySocket, error: Exception) -> None:
        if sock.dropped["handler error"] == 1:  # once per run: a sender can repeat it
            self.notice(name, f"internal error handling a notify message "
                              f"({type(error).__name__}: {error}); such messages are dropped")

    def _message(self, name: str, number: int, sock: NotifySocket,
                 msg: Message) -> str | None:
        run = self.run_of(name)
        if run is None or run.number != number or not run.live or \
                self.sockets.get(name) is not sock:
            return Judged.STRANGER.value
        refused = self._from(run, msg)
        if refused is not None:
            return refused
        self.journal.chatter(Kind.NOTIFY, name, pid=msg.pid, uid=msg.uid,
                             fields={k: v[:MAX_JOURNAL_VALUE] for k, v in msg.fields})
        said = self._said.setdefault(name, _Said())
        status, errno = msg.get("STATUS"), msg.number("ERRNO")
        if status is not None or errno is not None:
            said.status = said.status if status is None else status[: MAX_STATUS * 4]
            said.errno = said.errno if errno is None else errno
            line = status_line(said.status, said.errno)
            if line != run.status:
                self.post(name, i.StatusSaid(number, line))
        if msg.get("STOPPING") == "1" and not said.stopping:
            said.stopping = True
            self.notice(name, "says it is stopping")
        main = msg.number("MAINPID")
        if main is not None and main != said.main_pid:
            said.main_pid = main
            self.notice(name, f"says its main process is pid {main}")
        extend = msg.number("EXTEND_TIMEOUT_USEC")
        if extend is not None:
            self.journal.chatter(Kind.EXTEND, name, who="process", usec=extend,
                                 deadline=run.stop.deadline)
        checks = self.checks(name)
        if checks is not None:
            checks.message(msg)
        return None

    def _from(self, run: RunState, msg: Message) -> str | None:
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
        for name in list(self.sockets):
            self._close(name)
