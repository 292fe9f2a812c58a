"""proctui as a service of a manager that speaks sd_notify (systemd ``Type=notify``, or
another proctui): when NOTIFY_SOCKET is set for proctui itself, it says READY=1 once its
processes are ready (or started, for those without a check), keeps STATUS= to one line,
says STOPPING=1, and while it stops sends EXTEND_TIMEOUT_USEC so that the manager's stop
timeout never kills it in the middle of its own staged stop, an operator's extension or
a decision. WATCHDOG=1 when WATCHDOG_USEC is set for it.

A thread of its own, on a steady beat, reading only the core's snapshot: a stalled
frontend cannot make the manager think proctui is hung."""

from __future__ import annotations

import contextlib
import os
import re
import socket
import threading
from collections.abc import Callable, MutableMapping, Sequence

from proctui.config import ProcessSpec
from proctui.core.life.stop import Phase
from proctui.core.snapshot import CoreSnapshot

BEAT = 0.5  # seconds between looks
EXTEND_FOR = 5.0  # seconds each EXTEND_TIMEOUT_USEC asks for; renewed every beat
# Compiled (and cached by re) only under a watchdog, not at every start.
_USEC = r"[0-9]{1,16}"
_PID = r"[0-9]{1,10}"


class Upstream:
    def __init__(self, address: str, watchdog: float | None = None) -> None:
        self.address = "\0" + address[1:] if address.startswith("@") else address
        self.watchdog = watchdog
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)
        self.sock.setblocking(False)
        self.sent: list[str] = []  # what was said, for the tests and the log
        self._closed = threading.Event()
        self._thread: threading.Thread | None = None

    @classmethod
    def from_environ(cls, environ: MutableMapping[str, str] | None = None) -> Upstream | None:
        """The manager's socket, if proctui has one. The variables are taken out of the
        environment: they are proctui's, not its children's (each run gets its own)."""
        env = os.environ if environ is None else environ
        address = env.pop("NOTIFY_SOCKET", "")
        usec = env.pop("WATCHDOG_USEC", "")
        pid = env.pop("WATCHDOG_PID", "")
        if not address or "\0" in address or len(address) > 107 or \
                not (address.startswith(("/", "@"))):
            return None
        watchdog = None
        if re.fullmatch(_USEC, usec) and int(usec) > 0 and (
                not pid or (re.fullmatch(_PID, pid) and int(pid) == os.getpid())):
            watchdog = int(usec) / 1e6
        try:
            return cls(address, watchdog)
        except OSError:
            return None

    def send(self, text: str) -> None:
        """Best effort and never blocking: a manager that does not listen costs nothing."""
        with contextlib.suppress(OSError):
            self.sock.sendto(text.encode(errors="replace"), self.address)
            self.sent.append(text)

    def start(self, snapshot: Callable[[], CoreSnapshot], specs: Sequence[ProcessSpec]) -> None:
        checks = {s.name for s in specs if s.ready is not None}
        self._thread = threading.Thread(target=self._run, args=(snapshot, checks),
                                        name="proctui-upstream", daemon=True)
        self._thread.start()

    def _run(self, snapshot: Callable[[], CoreSnapshot], checks: set[str]) -> None:
        ready = stopping = False
        status = ""
        beat = min(BEAT, self.watchdog / 2) if self.watchdog else BEAT
        while not self._closed.wait(beat):
            snap = snapshot()
            words = status_line(snap, checks)
            said = []
            if words != status:
                status = words
                said.append(f"STATUS={words}")
            if not ready and all_ready(snap, checks):
                ready = True
                said.append("READY=1")
            if snap.shutting_down and not stopping:
                stopping = True
                said.append("STOPPING=1")
            if stopping and not snap.all_ended:
                said.append(f"EXTEND_TIMEOUT_USEC={int(EXTEND_FOR * 1e6)}")
            if self.watchdog:
                said.append("WATCHDOG=1")
            if said:
                self.send("\n".join(said))

    def close(self) -> None:
        self._closed.set()
        if self._thread is not None:
            self._thread.join(2.0)
        self.sock.close()


def all_ready(snap: CoreSnapshot, checks: set[str]) -> bool:
    """Every process settled: ready (or started, without a check), or ended, or waiting
    to restart; none still waiting for its dependencies or to start."""
    if not snap.views:
        return False
    for v in snap.views:
        if v.phase in (Phase.WAITING, Phase.STARTING):
            return False
        if v.phase is Phase.RUNNING and v.name in checks and v.ready_at is None:
            return False
    return True


def status_line(snap: CoreSnapshot, checks: set[str]) -> str:
    """One line: "5 running, 1 waiting for db", "stopping: 2 left", "3 ended"."""
    running = starting = stopping = ended = failed = 0
    waiting: list[str] = []
    for v in snap.views:
        if v.phase is Phase.RUNNING:
            if v.name in checks and v.ready_at is None:
                starting += 1
            else:
                running += 1
        elif v.phase.stopping:
            stopping += 1
        elif v.phase is Phase.WAITING:
            waiting.extend(v.waiting_for)
        elif v.phase in (Phase.ENDED, Phase.BACKOFF):
            ended += 1
            if v.outcome is not None and not v.outcome.clean:
                failed += 1
        elif v.phase is Phase.STARTING:
            starting += 1
    parts = []
    if snap.shutting_down:
        left = running + starting + stopping
        parts.append(f"stopping: {left} left" if left else "stopped")
    else:
        if running:
            parts.append(f"{running} running")
        if starting:
            parts.append(f"{starting} starting")
        if waiting:
            names = sorted(set(waiting))
            count = sum(1 for v in snap.views if v.phase is Phase.WAITING)
            parts.append(f"{count} waiting for {', '.join(names)}")
    if ended:
        parts.append(f"{ended} ended" + (f" ({failed} failed)" if failed else ""))
    return ", ".join(parts) or "nothing to run"
