"""What a run says about itself, watched for the step function: whether it is ready
(READY=1, a line of its output, a port that accepts connections, a probe command that
exits 0) within ready_timeout, and whether it is alive (the watchdog: WATCHDOG=1 at
least every watchdog_sec). A sensor: it reports what it saw as facts (``Ready``,
``ReadyTimedOut``, ``WatchdogMissed``, ``ProcessExtends``) and decides nothing about the
process; the step function does (a timeout stops it only if it still runs).

A probe command runs in a session of its own with a token in its environment; at its
end (or at a timeout, or when the run ends) its whole group is killed while its leader
is still unreaped (so the group id cannot be anyone else's yet), and whatever it left
outside its group with that token is killed too: a probe never leaves an orphan behind.
"""

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

from proctui.config import ProcessSpec, ReadyCheck
from proctui.core.life import inputs as i
from proctui.core.os.oslayer import OSLayer
from proctui.core.output.lines import Chunk
from proctui.core.speak.notify import Message

PROBE_TIMEOUT = 10.0  # seconds an exec probe may take before it is killed
EXTEND_GRAIN = 0.1  # seconds: a process's extensions are passed on this often, at most
HELPER_VAR = "PROCTUI_HELPER"  # the token of proctui's own helpers (probes, stop commands)


class Checks:
    """The readiness check and the watchdog of one run."""

    def __init__(self, loop: asyncio.AbstractEventLoop, os_layer: OSLayer,
                 spec: ProcessSpec, number: int, post: Callable[[object], None],
                 helpers: set[int], leaders: Callable[[int], bool]) -> None:
        self.loop = loop
        self.os = os_layer
        self.spec = spec
        self.number = number
        self.post = post  # a fact about this run, to the step function
        self.helpers = helpers  # probe pids: not ours to reap or to attribute to a run
        self.leaders = leaders  # is this pid a run's leader (never a probe's escapee)
        ready = spec.ready
        self.check = ready
        self.ready = False
        self.watchdog = spec.watchdog_sec
        self._regex = re.compile(ready.log) if ready is not None and ready.log else None
        self._ready_timer: asyncio.TimerHandle | None = None
        self._ready_deadline: float | None = None
        self._watchdog_timer: asyncio.TimerHandle | None = None
        self._task: asyncio.Task[None] | None = None
        self._probe: subprocess.Popen[bytes] | None = None
        self._probe_token = ""
        self._closed = False
        self._extended_at = -1e9  # when an extension was last passed on
        self._extension: float | None = None  # the latest deadline asked for since
        self._extension_timer: asyncio.TimerHandle | None = None
        if ready is not None:
            if spec.ready_timeout is not None:
                self._ready_deadline = time.monotonic() + spec.ready_timeout
                self._arm_ready_timeout()
            if ready.tcp is not None or ready.exec is not None:
                self._task = loop.create_task(self._probing(ready))
        self._arm_watchdog()

    # -- readiness --------------------------------------------------------------------

    def _became_ready(self, how: str) -> None:
        if self.ready or self._closed:
            return
        self.ready = True
        if self._ready_timer is not None:
            self._ready_timer.cancel()
            self._ready_timer = None
        self.post(i.Ready(self.number, how))

    @property
    def wants_output(self) -> bool:
        """Does it wait for a line of the run's output?"""
        return self._regex is not None and not self.ready and not self._closed

    def output(self, lines: Chunk) -> None:
        if self._regex is not None and not self.ready:
            for line in lines.split():  # only for a pattern still awaited
                if self._regex.search(line):
                    self._became_ready(f"printed {line[:60]!r}")
                    return

    def extend_ready(self, until: float) -> None:
        """The process asked for more time to become ready (the step function agreed)."""
        if self._ready_deadline is not None and not self.ready:
            self._ready_deadline = max(self._ready_deadline, until)

    def _arm_ready_timeout(self) -> None:
        assert self._ready_deadline is not None
        self._ready_timer = self.loop.call_at(self._ready_deadline, self._ready_expired)

    def _ready_expired(self) -> None:
        self._ready_timer = None
        if self.ready or self._closed or self._ready_deadline is None:
            return
        if time.monotonic() < self._ready_deadline - 0.001:
            self._arm_ready_timeout()  # the process asked for more time
            return
        assert self.spec.ready_timeout is not None
        self.post(i.ReadyTimedOut(self.number, self.spec.ready_timeout))

    async def _probing(self, check: ReadyCheck) -> None:
        while not self.ready and not self._closed:
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
        """Run the probe in a session of its own, wait for it by its pidfd, and end its
        whole tree once it has ended, taken too long, or the run ended."""
        assert check.exec is not None
        spec = self.spec
        token = os.urandom(12).hex()
        env = spec.environ()
        env[HELPER_VAR] = token
        proc = subprocess.Popen(check.exec, cwd=str(spec.cwd), env=env,
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True)
        self._probe, self._probe_token = proc, token
        self.helpers.add(proc.pid)
        try:
            fd = os.pidfd_open(proc.pid)
        except OSError:
            self._end_probe()
            raise
        try:
            done = self.loop.create_future()
            self.loop.add_reader(fd, _settle, done)
            try:
                await asyncio.wait_for(done, PROBE_TIMEOUT)
            except TimeoutError:
                pass
            finally:
                self.loop.remove_reader(fd)
            return self._end_probe() == 0
        finally:
            os.close(fd)

    def _end_probe(self) -> int | None:
        """Kill what is left of the probe (its group while the leader is unreaped, then
        what escaped it with its token), reap it, and give its exit code (None: it was
        still running)."""
        proc, self._probe = self._probe, None
        if proc is None:
            return None
        code = end_helper(proc, self._probe_token, self.os, self.leaders)
        self.helpers.discard(proc.pid)
        return code

    # -- messages ---------------------------------------------------------------------

    def message(self, msg: Message) -> None:
        """A notify message from this run's processes."""
        if msg.get("READY") == "1":
            self._became_ready("READY=1")
        extend = msg.number("EXTEND_TIMEOUT_USEC")
        if extend is not None:
            self._extend(extend / 1e6)
        usec = msg.number("WATCHDOG_USEC")
        if usec is not None:
            self.watchdog = usec / 1e6 or None
            self._arm_watchdog()
        ping = msg.get("WATCHDOG")
        if ping == "1":
            self._arm_watchdog()
        elif ping == "trigger":
            self._watchdog_expired()

    def _extend(self, by: float) -> None:
        """EXTEND_TIMEOUT_USEC, passed on at most once per EXTEND_GRAIN: a process asking
        in a tight loop moved the deadline thousands of times a second, each move a
        notice, a snapshot and a journal entry. Requests in between are coalesced into
        the latest instant asked for, passed on within the grain, so nothing is lost."""
        now = time.monotonic()
        wanted = now + by
        if now - self._extended_at >= EXTEND_GRAIN:
            # The grain is over: what waited for its timer goes now, with this one (or
            # the timer, due at the same moment, passed it on a second time).
            if self._extension_timer is not None:
                self._extension_timer.cancel()
                self._extension_timer = None
            wanted = max(wanted, self._extension or 0.0)
            self._extension = None
            self._pass(wanted, now)
            return
        self._extension = max(self._extension or 0.0, wanted)
        if self._extension_timer is None:
            self._extension_timer = self.loop.call_at(self._extended_at + EXTEND_GRAIN,
                                                      self._pass_pending)

    def _pass_pending(self) -> None:
        self._extension_timer = None
        wanted, self._extension = self._extension, None
        if wanted is not None and not self._closed:
            self._pass(wanted, time.monotonic())

    def _pass(self, wanted: float, now: float) -> None:
        self._extended_at = now
        if wanted > now:
            self.post(i.ProcessExtends(self.number, wanted - now))

    # -- the watchdog -----------------------------------------------------------------

    def _arm_watchdog(self) -> None:
        if self._watchdog_timer is not None:
            self._watchdog_timer.cancel()
            self._watchdog_timer = None
        if self.watchdog and not self._closed:
            self._watchdog_timer = self.loop.call_later(self.watchdog, self._watchdog_expired)

    def _watchdog_expired(self) -> None:
        self._watchdog_timer = None
        if not self._closed:
            self.post(i.WatchdogMissed(self.number, self.watchdog or 0.0))

    def close(self) -> None:
        self._closed = True
        # Now, not when the cancelled task next runs: at proctui's end the loop may
        # never run it again.
        self._end_probe()
        for timer in (self._ready_timer, self._watchdog_timer, self._extension_timer):
            if timer is not None:
                timer.cancel()
        if self._task is not None:
            self._task.cancel()


def end_helper(proc: subprocess.Popen[bytes], token: str, os_layer: OSLayer,
               skip: Callable[[int], bool] = lambda pid: False) -> int | None:
    """End a helper of proctui's (a probe, a stop command) and everything it started:
    its group is killed while its leader is a zombie at most (``waitid`` with WNOWAIT
    looks without reaping, so the group id is still its own and cannot be reused), then
    whatever left the group carrying the helper's token, then the leader is reaped.
    Returns its exit code, a negative signal number, or None if it had not ended."""
    code: int | None = None
    try:
        info = os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        info = None
    with contextlib.suppress(OSError):
        os.killpg(proc.pid, signal.SIGKILL)
    if info is not None:
        code = info.si_status if info.si_code == os.CLD_EXITED else -info.si_status
    for pid in helper_escapees(token, proc.pid, os_layer, skip):
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    if info is not None:  # a zombie: reaped at once (one still dying is reaped by the walk)
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(proc.pid, 0)
    proc.returncode = code if code is not None else -signal.SIGKILL
    return code


def helper_escapees(token: str, pgid: int, os_layer: OSLayer,
                    skip: Callable[[int], bool] = lambda pid: False) -> list[int]:
    """Live processes carrying a helper's token outside its group (a ``setsid`` child):
    under the helper still, or re-parented to proctui (its subreaper) once the helper
    ended. Only those are read for the token: a look at every process's environment
    costs a core at a thousand processes."""
    if not token:
        return []
    table = os_layer.descendants(max_age=0)
    me = os.getpid()
    candidates = table.descendants(pgid)
    for pid in table.kids.get(me, ()):
        st = table.stats.get(pid)
        if st is not None and pid != pgid and not skip(pid):  # (skip: the runs' leaders)
            candidates.append(st)
            candidates += table.descendants(pid)
    return [st.pid for st in candidates
            if st.live and st.pgid != pgid and os_layer.has_env(st.pid, HELPER_VAR, token)]


def _settle(done: asyncio.Future[None]) -> None:
    if not done.done():
        done.set_result(None)
