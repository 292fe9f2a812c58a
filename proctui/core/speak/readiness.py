"""What a run says about itself: whether it is ready (READY=1, a line of its output, a
port that accepts connections, a probe command that exits 0), within ready_timeout, and
whether it is alive (the watchdog: WATCHDOG=1 at least every watchdog_sec)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import socket
import subprocess
import time
from collections.abc import Callable

from proctui.config import ReadyCheck
from proctui.core.life.outcome import Who, setting
from proctui.core.life.stop import Phase
from proctui.core.output.lines import Chunk
from proctui.core.run import Run
from proctui.core.speak.notify import Message

PROBE_TIMEOUT = 10.0  # seconds an exec probe may take before it is killed
EXTEND_GRAIN = 0.1  # seconds: a process's extensions of its stop are passed on this often


class Checks:
    """The readiness check and the watchdog of one run."""

    def __init__(self, run: Run, ready: ReadyCheck | None, ready_timeout: float | None,
                 watchdog_sec: float | None, *, on_ready: Callable[[str], None],
                 say: Callable[[str], None], probes: set[int]) -> None:
        self.run = run
        self.check = ready
        self.on_ready = on_ready
        self.say = say
        self.probes = probes  # probe pids: not ours to reap or to attribute to a run
        self.loop = run.loop
        self.ready = False
        self.watchdog = watchdog_sec
        self._regex = re.compile(ready.log) if ready is not None and ready.log else None
        self._timers: list[asyncio.TimerHandle] = []
        self._ready_deadline: float | None = None
        self._watchdog_timer: asyncio.TimerHandle | None = None
        self._task: asyncio.Task[None] | None = None
        self._probe_proc: subprocess.Popen[bytes] | None = None  # the exec probe running now
        self._closed = False
        self._asked_said = -1e9  # when "asked for more time to become ready" was last said
        self._extended_at = -1e9  # when an extension was last passed on to the stop
        self._extension: float | None = None  # the latest deadline asked for since
        self._extension_timer: asyncio.TimerHandle | None = None
        if ready is not None:
            if ready_timeout is not None:
                self._ready_deadline = time.monotonic() + ready_timeout
                self._ready_timeout = ready_timeout
                self._arm_ready_timeout()
            if ready.tcp is not None or ready.exec is not None:
                self._task = self.loop.create_task(self._probe(ready))
        self._arm_watchdog()

    # -- readiness --------------------------------------------------------------------

    def _became_ready(self, how: str) -> None:
        if self.ready or self._closed:
            return
        self.ready = True
        self.on_ready(how)

    def output(self, lines: Chunk) -> None:
        if self._regex is not None and not self.ready:
            for line in lines.split():  # only for a pattern still awaited
                if self._regex.search(line):
                    self._became_ready(f"printed {line[:60]!r}")
                    return

    def _arm_ready_timeout(self) -> None:
        assert self._ready_deadline is not None
        self._timers.append(self.loop.call_at(self._ready_deadline, self._ready_expired))

    def _ready_expired(self) -> None:
        if self.ready or self._closed or self._ready_deadline is None:
            return
        if time.monotonic() < self._ready_deadline - 0.001:
            self._arm_ready_timeout()  # the process asked for more time
            return
        self.say(f"not ready within {setting(self._ready_timeout)}: stopping it")
        if self.run.live:
            self.run.request_stop(ready_timeout=self._ready_timeout)

    async def _probe(self, check: ReadyCheck) -> None:
        while not self.ready and not self._closed and self.run.live:
            try:
                ok = await (self._tcp(check) if check.tcp else self._exec(check))
            except OSError:
                ok = False
            if ok:
                self._became_ready(check.describe())
                return
            await asyncio.sleep(check.interval)

    async def _tcp(self, check: ReadyCheck) -> bool:
        assert check.tcp is not None
        host, port = check.tcp
        try:
            _, writer = await asyncio.wait_for(asyncio.open_connection(host, port),
                                               timeout=max(1.0, check.interval))
        except (OSError, TimeoutError, socket.gaierror):
            return False
        writer.close()
        with contextlib.suppress(Exception):
            await writer.wait_closed()
        return True

    async def _exec(self, check: ReadyCheck) -> bool:
        """Run the probe in a session of its own, wait for it by its pidfd, kill its
        group if it takes too long, or when the run ends or proctui closes (close()):
        a probe that hangs must not outlive proctui with ppid 1."""
        assert check.exec is not None
        spec = self.run.spec
        proc = subprocess.Popen(check.exec, cwd=str(spec.cwd), env=spec.environ(),
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True)
        self._probe_proc = proc
        self.probes.add(proc.pid)
        try:
            fd = os.pidfd_open(proc.pid)
        except OSError:
            self._kill_probe()
            raise
        try:
            for attempt in range(2):
                done = self.loop.create_future()
                self.loop.add_reader(fd, _settle, done)
                try:
                    await asyncio.wait_for(done, PROBE_TIMEOUT if attempt == 0 else 1.0)
                    break
                except TimeoutError:
                    self._kill_probe()
                finally:
                    self.loop.remove_reader(fd)
            return proc.poll() == 0  # never a blocking wait on the core's loop
        finally:
            if self._probe_proc is proc:
                self._kill_probe()  # cancelled (the run ended): its group goes too
                self._probe_proc = None
            os.close(fd)
            self.probes.discard(proc.pid)  # if it lives on, the orphan reaper takes it

    def _kill_probe(self) -> None:
        """SIGKILL the probe's group (its session: it is the leader). Only while its
        leader is not reaped, so that the group id cannot be someone else's yet."""
        proc = self._probe_proc
        if proc is not None and proc.returncode is None and proc.poll() is None:
            with contextlib.suppress(OSError):
                os.killpg(proc.pid, signal.SIGKILL)

    # -- messages ---------------------------------------------------------------------

    def message(self, msg: Message) -> list[str]:
        """A notify message from this run's processes; returns what to say of it."""
        said = []
        if msg.get("READY") == "1":
            self._became_ready("READY=1")
        extend = msg.number("EXTEND_TIMEOUT_USEC")
        if extend is not None:
            by = extend / 1e6
            if self.run.state.phase.stopping:
                self._extend_stop(by)
            elif not self.ready and self._ready_deadline is not None:
                self._ready_deadline = max(self._ready_deadline, time.monotonic() + by)
                now = time.monotonic()
                if now - self._asked_said >= 1.0:  # a stream of requests: one line a second
                    self._asked_said = now
                    said.append(f"asked for {setting(round(by, 1))} more to become ready")
        usec = msg.number("WATCHDOG_USEC")
        if usec is not None:
            self.watchdog = usec / 1e6 or None
            self._arm_watchdog()
        ping = msg.get("WATCHDOG")
        if ping == "1":
            self._arm_watchdog()
        elif ping == "trigger":
            self._watchdog_expired()
        return said

    def _extend_stop(self, by: float) -> None:
        """EXTEND_TIMEOUT_USEC during the stop, passed on at most once per EXTEND_GRAIN:
        a process asking in a tight loop moved the deadline thousands of times a
        second, each move a notice, a snapshot and a journal entry that the journal
        must keep. Requests in between are coalesced into the latest deadline asked
        for, passed on before the current deadline comes, so nothing asked is lost."""
        state = self.run.state
        if state.phase not in (Phase.STOPPING, Phase.DECIDING) or state.operator_waits:
            return  # the machine would refuse it: spare the snapshot
        now = time.monotonic()
        wanted = now + by
        if state.deadline is None or now - self._extended_at >= EXTEND_GRAIN:
            self._pass_extension(wanted, now)
            return
        if wanted <= state.deadline:
            return
        self._extension = max(self._extension or 0.0, wanted)
        if self._extension_timer is None:
            due = min(self._extended_at + EXTEND_GRAIN, state.deadline - EXTEND_GRAIN / 4)
            self._extension_timer = self.loop.call_at(max(due, now), self._pass_pending)

    def _pass_pending(self) -> None:
        self._extension_timer = None
        wanted, self._extension = self._extension, None
        if wanted is not None and not self._closed and self.run.state.phase.stopping:
            self._pass_extension(wanted, time.monotonic())

    def _pass_extension(self, wanted: float, now: float) -> None:
        self._extended_at = now
        self._extension = None
        if self._extension_timer is not None:
            self._extension_timer.cancel()
            self._extension_timer = None
        if wanted > now:
            self.run.extend(wanted - now, Who.PROCESS)

    # -- the watchdog -----------------------------------------------------------------

    def _arm_watchdog(self) -> None:
        if self._watchdog_timer is not None:
            self._watchdog_timer.cancel()
            self._watchdog_timer = None
        if self.watchdog and not self._closed:
            self._watchdog_timer = self.loop.call_later(self.watchdog, self._watchdog_expired)

    def _watchdog_expired(self) -> None:
        self._watchdog_timer = None
        if self._closed or not self.run.live or self.run.state.phase.stopping:
            return
        interval = self.watchdog or 0
        self.say(f"watchdog timeout after {setting(interval)} (no WATCHDOG=1): stopping it")
        self.run.request_stop(watchdog_sec=interval)

    def close(self) -> None:
        self._closed = True
        # Now, not when the cancelled task next runs: at proctui's end the loop may
        # never run it again.
        self._kill_probe()
        for handle in self._timers:
            handle.cancel()
        if self._watchdog_timer is not None:
            self._watchdog_timer.cancel()
        if self._extension_timer is not None:
            self._extension_timer.cancel()
        if self._task is not None:
            self._task.cancel()


def _settle(done: asyncio.Future[None]) -> None:
    if not done.done():
        done.set_result(None)
