"""The executor: carries out what the step function asks for (spawn, signal, arm a
timer, look whether a group is gone, gather a run's facts, write the journal and PID
files) and reports what happened as facts, through the engine's inbox. It holds the
handles (child processes, pipes, pidfds, timers, sockets), never a process's state: what
it needs to know of a process it reads from the table, as the step left it.

Facts that an effect brings at once (a spawn's pid, a signal's reach) are returned to the
engine, which takes them before anything else; facts that come later (a pidfd readable,
a timer) are posted to the inbox like any other input."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import heapq
import itertools
import os
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from proctui.core.life import effects as fx
from proctui.core.life import inputs as i
from proctui.core.life import machine as life
from proctui.core.life.outcome import EndKind, ExitStatus, pids_phrase
from proctui.core.life.state import Escapee, Proc, RunState
from proctui.core.os.group import Leader
from proctui.core.os.housekeeping import Housekeeping
from proctui.core.os.lineage import Lineage
from proctui.core.os.oslayer import OSLayer
from proctui.core.output.events import EventQueue, pace
from proctui.core.output.lines import Chunk, OutputBuffer, Stream
from proctui.core.output.pipes import Pipes
from proctui.core.output.text import visible
from proctui.core.speak.readiness import Checks
from proctui.core.speak.speech import Speech
from proctui.core.stopcmd import StopCommand
from proctui.core.store.journal import Journal
from proctui.core.store.logfiles import LogFile, open_logs_dir
from proctui.core.store.pidfiles import PidFiles
from proctui.core.store.rundir import RunDir

RUN_TOKEN_VAR = "PROCTUI_RUN"  # set in each child's environment, one value per run
FD_RETRIES = 30  # looks (a second apart) a lack of file descriptors is waited out
DYING_LOOK, DYING_LOOKS = 0.05, 20  # an abandoned group a sent signal is ending: 1 s at most
_LEFT_RUNNING_ENDS = (EndKind.ABANDONED, EndKind.UNKILLABLE, EndKind.STOP_FAILED,
                      EndKind.KILL_FAILED)

Post = Callable[[str, object], None]


@dataclass
class Handles:
    """What the executor holds for one run: resources, no state of the process's."""

    number: int
    popen: subprocess.Popen[bytes] | None = None
    pipes: Pipes | None = None
    leader: Leader | None = None
    deadline: asyncio.TimerHandle | None = None
    look: asyncio.TimerHandle | None = None
    checks: Checks | None = None
    stop_command: StopCommand | None = None
    fd_failures: int = 0
    dying_looks: int = DYING_LOOKS
    escapee_pidfds: dict[int, int] = field(default_factory=dict)


class Executor:
    def __init__(self, loop: asyncio.AbstractEventLoop, os_layer: OSLayer,
                 run_dir: RunDir | None, events: EventQueue | None, journal: Journal,
                 post: Post, current: Callable[[str], Proc | None],
                 procs: Callable[[], list[Proc]],
                 stray: Callable[[int, str], None],
                 trouble: Callable[[str, str | None], None],
                 poke: Callable[[], None], urgent: Post | None = None) -> None:
        self.loop = loop
        # A fact whose signal must go out before any bookkeeping (a deadline come).
        self.urgent = urgent or post
        self.os = os_layer
        self.run_dir = run_dir
        self.events = events
        self.journal = journal
        self.post = post  # (name, fact) into the engine's inbox
        self.current = current  # a process as the table holds it now
        self.procs = procs
        self.poke = poke  # output arrived: readers look
        # Every deadline armed, by instant, with its timer (a heap: one whose timer is no
        # longer its process's is dropped when it comes to the top): the engine asks
        # for those come between two events.
        self._deadlines: list[tuple[float, int, str, asyncio.TimerHandle]] = []
        self._serials = itertools.count()  # (ties in time never compare the timers)
        self.lineage = Lineage(os_layer, RUN_TOKEN_VAR)
        self.helpers: set[int] = set()  # our own children (probes, stop commands, drainers)
        self.lineage.ignore = self.helpers
        self.handles: dict[str, Handles] = {}  # process name -> its current run's
        self.buffers: dict[str, OutputBuffer] = {}
        self.logs: dict[str, LogFile] = {}
        self.backoff: dict[str, asyncio.TimerHandle] = {}
        self.last_output: dict[str, float] = {}
        self.output_count = 0  # reads that brought output: frontends look when it moves
        self._gone_looks: dict[tuple[str, int], float | None] = {}  # due now, batched
        self._timers: set[asyncio.TimerHandle] = set()
        self._said: list[tuple[str | None, str]] = []  # waiting for the next snapshot
        self.said_soon: Callable[[], None] = lambda: None  # the engine publishes soon
        self._old_pipes: list[Pipes] = []  # earlier runs' pipes, read until their end
        self._logs_fd: int | None = None
        if run_dir is not None and run_dir.fd is not None:
            try:
                self._logs_fd = open_logs_dir(run_dir)
            except OSError as e:
                self.say(None, f"output logs: {run_dir.path / 'logs'}: {e.strerror or e}; "
                               "output is not kept on disk")
        self.speech = Speech(loop, os_layer, self.lineage, self._runs, journal, self.say,
                             post, self._run_of, self._checks_of)
        self.pid_files = PidFiles(run_dir, os_layer, self.lineage, self.say, self.later,
                                  current, lambda text: trouble("PID files", text))
        self.housekeeping = Housekeeping(loop, os_layer, self.lineage, procs, self._keep,
                                         post, stray, self.last_output.get,
                                         self.speech.dropped_now)

    # -- what the engine asks ---------------------------------------------------------

    def added(self, p: Proc) -> None:
        """A process joined the table: its buffer and its output log."""
        self.buffers.setdefault(p.name, OutputBuffer(p.spec.scrollback))
        if self._logs_fd is not None and not p.is_leftover and p.spec.log_max_size > 0 \
                and p.name not in self.logs:
            self.logs[p.name] = LogFile(self._logs_fd, p.name, p.spec.log_max_size,
                                        p.spec.log_keep, lambda text: self.say(p.name, text))

    def do(self, p: Proc, effect: fx.Effect) -> list[object]:
        """Carry out one effect for ``p``; the facts it brings at once."""
        match effect:
            case fx.Notice():
                self.say(p.name, effect.text)
            case fx.Journal():
                self.journal.write(effect.kind, p.name, effect.at, **dict(effect.data))
            case fx.Signal():
                return self._signal(p, effect)
            case fx.ArmDeadline():
                self._arm_deadline(p, effect)
            case fx.LookGone():
                self._look_gone(p, effect)
            case fx.Spawn():
                return self._spawn(p, effect.number)
            case fx.Watch():
                self._watch(p, effect.run)
            case fx.Conclude():
                return self._conclude(p, effect)
            case fx.StopWatching():
                self._stop_watching(p, effect)
            case fx.ArmBackoff():
                self._arm_backoff(p, effect.at)
            case fx.StartChecks():
                self._start_checks(p, effect.run)
            case fx.ExtendReady():
                h = self._handles(p, effect.number)
                if h is not None and h.checks is not None:
                    h.checks.extend_ready(effect.at)
            case fx.StartStopCommand():
                self._start_stop_command(p, effect.run)
            case fx.EndStopCommand():
                h = self._handles(p, effect.number)
                if h is not None and h.stop_command is not None:
                    h.stop_command.kill(effect.why)
            case fx.WritePidFile():
                self.pid_files.write(effect.proc)
            case fx.RemovePidFile():
                self.pid_files.remove(effect.pid_name)
            case fx.TreeChanged():
                self.housekeeping.changed()
            case _:
                raise TypeError(f"not an executor's effect: {effect!r}")
        return []

    def walk(self) -> None:
        """A fresh walk of the tree (before a shutdown: escapees get the signal too)."""
        self.lineage.update(self._runs)

    def say(self, name: str | None, text: str) -> None:
        """A line of proctui's own: the process's pane (when about one), the printer;
        once the snapshot that shows what it speaks of is out (a reader of "waiting for
        a decision" found the process still stopping)."""
        self._said.append((name, visible(text)))  # (visible: never a live escape)
        if len(self._said) == 1:
            self.said_soon()

    @property
    def said_pending(self) -> bool:
        return bool(self._said)

    @property
    def said_count(self) -> int:
        return len(self._said)

    def flush_said(self, count: int | None = None) -> None:
        """The lines said since the last snapshot (its first ``count``: those said
        before it was made), to the panes and the printer."""
        if count is None:
            said, self._said = self._said, []
        else:
            said, self._said = self._said[:count], self._said[count:]
        for name, text in said:
            if name is not None and name in self.buffers:
                self.buffers[name].append(Stream.PROCTUI, [text])
            if self.events is not None:
                self.events.put_notice(name, text)

    def later(self, delay: float, fn: Callable[..., None], *args: object) -> None:
        def call() -> None:
            self._timers.discard(handle)
            fn(*args)

        handle = self.loop.call_later(delay, call)
        self._timers.add(handle)

    # -- spawning ---------------------------------------------------------------------

    def _spawn(self, p: Proc, number: int) -> list[object]:
        spec = p.spec
        self._close_handles(p.name)
        h = self.handles[p.name] = Handles(number)
        buffer = self.buffers[p.name]
        log = self.logs.get(p.name)
        h.pipes = pipes = Pipes(self.loop, buffer, spec.max_line_length,
                                lambda stream, lines: self._output(p.name, stream, lines),
                                log)
        try:
            w_out, w_err = pipes.create()
        except OSError as e:
            return [i.SpawnFailed(number, str(e))]
        token = os.urandom(16).hex()  # inherited by every descendant
        try:
            env = spec.environ()
            env.update(self.speech.child_env(p.name, number, spec))
            env[RUN_TOKEN_VAR] = token
            h.popen = subprocess.Popen(
                spec.argv, cwd=str(spec.cwd), env=env, stdin=subprocess.DEVNULL,
                stdout=w_out, stderr=w_err, start_new_session=True, close_fds=True)
        except (OSError, ValueError, subprocess.SubprocessError) as e:
            pipes.close()
            self.speech.ended(p.name)
            return [i.SpawnFailed(number, str(e))]
        finally:
            for fd in (w_out, w_err):
                with contextlib.suppress(OSError):
                    os.close(fd)
        pid = h.popen.pid  # own session: the group id is the pid
        st = self.os.read_stat(pid)
        pipes.start()
        return [i.Spawned(number, pid, st.start_ticks if st is not None else None, token,
                          time.time())]

    def _watch(self, p: Proc, run: RunState) -> None:
        """Watch the leader's exit (its pidfd) and each process outside its group."""
        assert run.pid is not None
        h = self.handles.get(p.name)
        if h is None or h.number != run.number:
            self._close_handles(p.name)
            h = self.handles[p.name] = Handles(run.number)
        name, number = p.name, run.number
        h.leader = leader = Leader(self.os, self.loop, run.pid, run.start_ticks, run.leftover)
        for esc in run.escapees:
            self._track(h, name, esc)

        def exited(status: ExitStatus) -> None:
            if h.popen is not None and status.known:
                # Reaped here: subprocess must never wait on this pid again (it may be
                # someone else's by then).
                h.popen.returncode = status.code if status.code is not None else \
                    -int(status.signal or 0)
            self.post(name, i.LeaderExited(number, status, time.monotonic()))

        leader.watch(exited)

    def _track(self, h: Handles, name: str, esc: Escapee) -> bool:
        """Hold a pidfd of a process outside the group: it is signalled through it (never
        a reused pid), and its end is a fact."""
        if esc.pid in h.escapee_pidfds or not esc.alive:
            return False
        try:
            fd = self.os.pidfd_open(esc.pid)
        except OSError:
            fd = None
        if fd is None:
            return False
        h.escapee_pidfds[esc.pid] = fd
        number = h.number

        def ended() -> None:
            self._drop_escapee(h, esc.pid)
            self.os.reap(esc.pid)  # ours once re-parented to us; harmless otherwise
            self.post(name, i.EscapeeEnded(number, esc.pid))

        self.loop.add_reader(fd, ended)
        return True

    def _drop_escapee(self, h: Handles, pid: int) -> None:
        fd = h.escapee_pidfds.pop(pid, None)
        if fd is not None:
            self.loop.remove_reader(fd)
            with contextlib.suppress(OSError):
                os.close(fd)

    def _find_escapees(self, h: Handles, name: str, run: RunState,
                       newer_than: float | None = None) -> tuple[Escapee, ...]:
        """Descendants of the run that left its group, newly found, now held."""
        self.lineage.update(self._runs, newer_than=newer_than)
        found = []
        for st in self.lineage.escapees(run):
            esc = Escapee(st.pid, st.pgid, st.start_ticks)
            if self._track(h, name, esc):
                found.append(esc)
        return tuple(found)

    # -- signals ----------------------------------------------------------------------

    def _signal(self, p: Proc, e: fx.Signal) -> list[object]:
        run, h = p.run, self._handles(p, e.number)
        if run is None or h is None or h.leader is None:
            return []
        found = self._find_escapees(h, p.name, run) if e.find_escapees else ()
        reached_pids = None
        if e.sig == signal.SIGKILL:
            reached_pids = tuple(self._live_pids(run, h))
        reached = False
        sent_at = time.monotonic()
        if run.pgid is not None:
            try:
                self.os.signal_group(run.pgid, e.sig)
                reached = True
            except ProcessLookupError:
                pass  # nothing left in the group: it ended just now
            except OSError as err:
                return [i.SignalFailed(e.number, e.sig, e.reason, str(err))]
        spare = self._nested(run, h) if e.sig != signal.SIGKILL else frozenset()
        failures = []
        for pid, fd in list(h.escapee_pidfds.items()):
            if pid in spare:
                continue
            try:
                self.os.signal_pidfd(fd, e.sig)
                reached = True
            except ProcessLookupError:
                pass  # its pidfd says so (EscapeeEnded)
            except OSError as err:
                failures.append(f"cannot signal pid {pid} (outside its group): {err}")
        return [i.SignalDone(e.number, e.sig, e.reason, reached, sent_at, reached_pids,
                             tuple(failures), found)]

    def _nested(self, run: RunState, h: Handles) -> frozenset[int]:
        """Escapees that another proctui inside this run supervises (their PROCTUI_RUN is
        one of its runs, not ours): that one stops them, in its own order, when it gets
        the stop signal; a signal from here would cut its staged stop short. SIGKILL
        still reaches them."""
        return frozenset(pid for pid in h.escapee_pidfds if (
            (token := self.os.env_value(pid, RUN_TOKEN_VAR)) is not None
            and token != run.token))

    def _live_pids(self, run: RunState, h: Handles) -> list[int]:
        """Members and escapees alive right now, each read fresh: what a SIGKILL is
        about to reach decides how the run is worded. Who the members are comes from
        the last walk, however old, while the leader lives: the kill waits for no walk
        (a walk of 4,000 processes costs 160 ms, and 2,000 kills due together each
        waited for one: SIGKILL landed a second late). Only what it reaches is worded
        from this, and with the leader alive it reaches something whatever the walk
        missed. With the leader gone, a fresh walk says whether anything is left."""
        pids: list[int] = []
        if run.pgid is not None:
            leader = self.os.read_stat(run.pgid)
            leader_live = leader is not None and leader.live and leader.pgid == run.pgid
            with self.os.one_walk() if leader_live else contextlib.nullcontext():
                members = self.os.group_members(run.pgid, ours=not run.leftover)
            for st in members:
                fresh = self.os.read_stat(st.pid) if st.pid != run.pgid else leader
                if fresh is not None and fresh.live and fresh.pgid == run.pgid:
                    pids.append(st.pid)
            if leader_live and run.pgid not in pids:
                pids.insert(0, run.pgid)
        return pids + [pid for pid in h.escapee_pidfds if pid not in pids]

    # -- timers -----------------------------------------------------------------------

    def _arm_deadline(self, p: Proc, e: fx.ArmDeadline) -> None:
        h = self._handles(p, e.number)
        if h is None:
            return
        if h.deadline is not None:
            h.deadline.cancel()
            h.deadline = None
        if e.at is not None:
            name, number = p.name, e.number
            # The loop's clock is time.monotonic(), the machine's clock too. Every deadline
            # due in one turn of the loop is taken together, its signal first (urgent).
            h.deadline = self.loop.call_at(e.at, self._deadline_come, h, name, number)
            heapq.heappush(self._deadlines, (e.at, next(self._serials), name, h.deadline))
        if h.stop_command is not None:
            h.stop_command.bound(e.at)

    def _deadline_come(self, h: Handles, name: str, number: int) -> None:
        h.deadline = None  # come: due_deadlines must not take it again
        self.urgent(name, i.DeadlineReached(number))

    def due_deadlines(self, now: float) -> list[tuple[str, object]]:
        """The deadlines that have come while the loop was busy with something long,
        taken off their timers: the engine takes them between two events of its batch
        rather than after it."""
        heap, come = self._deadlines, list[tuple[str, object]]()
        while heap and heap[0][0] <= now:
            _at, _n, name, timer = heapq.heappop(heap)
            h = self.handles.get(name)
            if h is None or h.deadline is not timer:
                continue  # disarmed, or armed again since
            timer.cancel()  # (taken here: its timer must not take it again)
            h.deadline = None
            come.append((name, i.DeadlineReached(h.number)))
        return come

    def _arm_backoff(self, p: Proc, at: float | None) -> None:
        old = self.backoff.pop(p.name, None)
        if old is not None:
            old.cancel()
        if at is not None:
            name = p.name

            def over() -> None:
                self.backoff.pop(name, None)
                self.post(name, life.BackoffOver())

            self.backoff[p.name] = self.loop.call_at(at, over)

    # -- the end of a run -------------------------------------------------------------

    def _look_gone(self, p: Proc, e: fx.LookGone) -> None:
        h = self._handles(p, e.number)
        if h is None:
            return
        if h.look is not None:
            h.look.cancel()
            h.look = None
        key = (p.name, e.number)
        if e.delay > 0:
            h.look = self.loop.call_later(e.delay, self._due_look, key, None)
            return
        self._due_look(key, e.newer_than, now=False)

    def _due_look(self, key: tuple[str, int], newer_than: float | None,
                  now: bool = True) -> None:
        """Looks due now are taken together, with one walk of the tree: many leaders end
        at once when everything stops (a walk per run made 2,000 processes take 25 s)."""
        first = not self._gone_looks
        old = self._gone_looks.get(key)
        self._gone_looks[key] = max(filter(None, (old, newer_than)), default=None)
        if first:
            self.loop.call_soon(self._looks)

    def _looks(self) -> None:
        due, self._gone_looks = self._gone_looks, {}
        newest = max((t for t in due.values() if t is not None), default=None)
        self.lineage.update(self._runs, newer_than=newest)
        with self.os.one_walk():
            for (name, number), newer in due.items():
                p = self.current(name)
                h = self.handles.get(name)
                if p is None or p.run is None or h is None or h.number != number:
                    continue
                self.post(name, self._look(p, p.run, h, newer))

    def _look(self, p: Proc, run: RunState, h: Handles, newer_than: float | None) -> object:
        h.look = None
        try:
            alive = run.pgid is not None and self.os.group_alive(run.pgid,
                                                                 ours=not run.leftover)
        except OSError as e:
            if e.errno in (errno.EMFILE, errno.ENFILE) and h.fd_failures < FD_RETRIES:
                h.fd_failures += 1
                return i.LookFailed(run.number, str(e), retry=True)
            return i.LookFailed(run.number, str(e), retry=False)
        found: tuple[Escapee, ...] = ()
        if not alive:
            # Orphans of the leader are re-parented to us when it dies: look after that.
            found = self._find_escapees(h, p.name, run, newer_than=run.leader_exited_at)
            if run.leader_exited_at is not None and h.pipes is not None and \
                    not any(x.alive for x in run.escapees + found):
                h.pipes.read_now()  # output already in the pipes belongs before the outcome
        return i.GroupLooked(run.number, alive, found)

    def _conclude(self, p: Proc, e: fx.Conclude) -> list[object]:
        """Gather the facts of the end the stop machine decided: what is still alive of
        the run (for "left running"), what it is doing (for "unkillable")."""
        run, h = p.run, self._handles(p, e.number)
        if run is None or h is None:
            return [i.Concluded(e.number, e.end)]
        end = e.end
        left: tuple[int, ...] = ()
        word = ""
        status = None
        if end in _LEFT_RUNNING_ENDS:
            left = tuple(self._live_pids(run, h))
            if end is EndKind.ABANDONED and left and h.dying_looks > 0 and \
                    all(self.os.dying(pid) for pid in left):
                # Abandoned just after the stop signal, which is about to end them all
                # (a busy machine has not run them yet): "left running" would be false.
                # Look again shortly; the ending is then worded from its exit status.
                h.dying_looks -= 1
                name = p.name
                self.loop.call_later(DYING_LOOK, lambda: self._conclude_later(name, e))
                return []
            if not left:
                # Nothing is left running after all: it ended just before the deadline
                # or the decision, and the look that would have said so had not come yet.
                end = EndKind.GONE
                if run.exit is None and h.leader is not None:
                    status = h.leader.reap_now()
                if h.pipes is not None:
                    h.pipes.read_now()
            elif end is EndKind.UNKILLABLE and run.pgid is not None:
                word = self.os.describe(run.pgid, ours=not run.leftover)
        return [i.Concluded(e.number, end, left, word, status)]

    def _conclude_later(self, name: str, e: fx.Conclude) -> None:
        p = self.current(name)
        if p is None:
            return
        for fact in self._conclude(p, e):
            self.post(name, fact)

    def _stop_watching(self, p: Proc, e: fx.StopWatching) -> None:
        h = self._handles(p, e.number)
        if h is None:
            return
        for timer in (h.deadline, h.look):
            if timer is not None:
                timer.cancel()
        h.deadline = h.look = None
        if h.leader is not None:
            h.leader.close()
        for pid in list(h.escapee_pidfds):
            self._drop_escapee(h, pid)
        if h.checks is not None:
            h.checks.close()
            h.checks = None
        if h.stop_command is not None:
            left = h.stop_command.close()
            if left is not None:
                # The run ended before its stop command did: the command goes with it,
                # and what escaped its group is named (it was orphaned, unsaid, before).
                self.say(p.name, "stop command killed (SIGKILL to its group): the run "
                         "ended first" + (f"; it left {pids_phrase(left)} running outside "
                                          "its group: killed with it" if left else ""))
        self.speech.ended(p.name)
        run = p.run
        if e.keep_leader and h.popen is not None and (run is None or run.exit is None):
            # Left running: never wait for it (subprocess would, at interpreter exit).
            h.popen.returncode = 0
        elif h.popen is not None and run is not None and run.exit is not None and \
                run.exit.known:
            h.popen.returncode = run.exit.code if run.exit.code is not None else \
                -int(run.exit.signal or 0)

    # -- what a run says --------------------------------------------------------------

    def _start_checks(self, p: Proc, run: RunState) -> None:
        h = self._handles(p, run.number)
        spec = p.spec
        if h is None:
            return
        name = p.name
        # Every run has them: a process may ask for more time to stop (EXTEND_TIMEOUT_USEC)
        # or start a watchdog (WATCHDOG_USEC) whatever its config says.
        h.checks = Checks(self.loop, self.os, spec, run.number,
                          lambda fact: self.post(name, fact), self.helpers, self._leader)

    def _start_stop_command(self, p: Proc, run: RunState) -> None:
        h = self._handles(p, run.number)
        if h is None:
            return
        name = p.name
        log = self.logs.get(name)
        h.stop_command = StopCommand(
            self.loop, self.os, p.spec, run.number, run.pid,
            lambda fact: self.post(name, fact), lambda text: self.say(name, text),
            log.write if log is not None else (lambda _data: None), self.helpers,
            self._leader)
        h.stop_command.start()
        if run.stop.deadline is not None:
            h.stop_command.bound(run.stop.deadline)

    def _output(self, name: str, stream: int, lines: Chunk) -> None:
        self.output_count += 1
        self.poke()
        if not lines:
            return
        self.last_output[name] = time.monotonic()
        p = self.current(name)
        if p is not None and p.silent_since is not None and p.run is not None:
            self.post(name, i.SilenceLooked(p.run.number, None))  # its silence is over
        h = self.handles.get(name)
        if h is not None and h.checks is not None and h.checks.wants_output:
            h.checks.output(lines)
        if self.events is not None and not self.events.put_output(name, stream, lines) \
                and h is not None and h.pipes is not None:
            pace(self.events, h.pipes, self.loop)

    # -- bookkeeping ------------------------------------------------------------------

    def _handles(self, p: Proc, number: int) -> Handles | None:
        h = self.handles.get(p.name)
        return h if h is not None and h.number == number else None

    def _run_of(self, name: str) -> RunState | None:
        p = self.current(name)
        return p.run if p is not None else None

    def _checks_of(self, name: str) -> Checks | None:
        h = self.handles.get(name)
        return h.checks if h is not None else None

    def _runs(self) -> list[RunState]:
        return [p.run for p in self.procs() if p.run is not None]

    def _leader(self, pid: int) -> bool:
        return any(r.pid == pid for r in self._runs())

    def _keep(self) -> set[int]:
        return set(self.helpers)

    def _close_handles(self, name: str) -> None:
        """A new run: the last one's handles go, but its pipes, read to their end."""
        h = self.handles.pop(name, None)
        if h is None:
            return
        for timer in (h.deadline, h.look):
            if timer is not None:
                timer.cancel()
        if h.leader is not None:
            h.leader.close()
        for pid in list(h.escapee_pidfds):
            self._drop_escapee(h, pid)
        if h.checks is not None:
            h.checks.close()
        if h.stop_command is not None:
            h.stop_command.close()
        if h.pipes is not None and h.pipes.open:
            self._old_pipes.append(h.pipes)

    def store_rebuilt(self) -> None:
        """The run directory was removed under us and made again (remote/heal.py): the
        journal and the output logs go on in the new one."""
        if self.run_dir is None:
            return
        self.journal.reopen(self.run_dir)
        old, self._logs_fd = self._logs_fd, None
        if old is None:
            return
        with contextlib.suppress(OSError):
            self._logs_fd = open_logs_dir(self.run_dir)
        for log in self.logs.values():
            log.close()  # opened again, in the new directory, at the next write
            if self._logs_fd is not None:
                log.dir_fd = self._logs_fd
            else:
                log.failed = True
        os.close(old)

    def close(self, output_path: Callable[[str], str | None]) -> None:
        """proctui is closing: timers and watchers go; the pipes of processes left
        running go to drainers (their next write must not kill them)."""
        self.speech.close()
        for timer in (*self._timers, *self.backoff.values()):
            timer.cancel()
        self._timers.clear()
        self.housekeeping.close()
        for name, h in list(self.handles.items()):
            pipes = h.pipes
            if pipes is not None and pipes.open:
                self._hand_over(pipes, output_path(name))
                h.pipes = None
            self._close_handles(name)
        for pipes in self._old_pipes:
            if pipes.open:
                self._hand_over(pipes, None)
        self._old_pipes.clear()
        for log in self.logs.values():
            log.close()
        if self._logs_fd is not None:
            os.close(self._logs_fd)
            self._logs_fd = None

    def _hand_over(self, pipes: Pipes, path: str | None) -> None:
        out = None
        if self.run_dir is not None and path is not None:
            with contextlib.suppress(OSError):
                out = self.run_dir.open_append(path)
        drainer = pipes.hand_over(out)
        if out is not None:
            os.close(out)
        if drainer is not None:
            self.helpers.add(drainer)

