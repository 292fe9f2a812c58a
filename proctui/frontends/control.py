"""The control commands: clients of a running supervisor's socket, for people and scripts.

Finding the supervisor, the command table's commands on it (``stop NAME...``,
``extend NAME SECONDS``, ...), ``down`` and ``attach`` (``status`` is status.py, ``logs
NAME`` logs.py). Each finds the supervisor the way ``run`` named
its run directory (from -f FILE, ./proctui.toml or ./Procfile, or this directory), or
the only one running when there is no config here.
"""

from __future__ import annotations

import contextlib
import shlex
import signal
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from proctui.commands.base import Request
from proctui.commands.interactive import SetInteractive
from proctui.commands.stop_all import StopAll
from proctui.core.life.stages import Why
from proctui.core.output.lines import Stream, stamp_at
from proctui.core.output.text import clean
from proctui.core.reply import Fault
from proctui.core.store.rundir import default_run_dir
from proctui.frontends.policy import Ladder, Rung, climb, summary
from proctui.frontends.report import still_stopping
from proctui.frontends.status import UnknownProcess
from proctui.protocol.pushes import Hello
from proctui.protocol.wire import SOCKET
from proctui.remote.client import Connection, NoSupervisor, NotAnswering, RemoteCore
from proctui.remote.redial import local_dial

CONFIGS = ("proctui.toml", "Procfile")


# -- finding the supervisor ----------------------------------------------------------------


def locate(file: Path | None, run_dir: Path | None) -> Path:
    """The run directory to talk to. Raises NoSupervisor with the reason when none fits."""
    if run_dir is not None:
        return run_dir
    if file is not None:
        if not file.is_file():
            raise NoSupervisor(f"{file}: file not found")
        return default_run_dir(file)
    here = Path.cwd()
    for name in CONFIGS:
        if (here / name).is_file():
            return default_run_dir(here / name)
    mine = default_run_dir(here)  # proctui run 'CMD' ... from this directory
    if (mine / SOCKET).exists():
        return mine
    silent: list[NotAnswering] = []
    live = running(silent)
    if len(live) == 1 and not silent:
        return live[0][0]
    if not live and len(silent) == 1:
        raise silent[0]
    if not live and not silent:
        raise NoSupervisor("no supervisor is running (and no proctui.toml or Procfile "
                           "here): start one with proctui up, or pass -f FILE or --run-dir")
    listed = [f"{path} ({hello.source or 'commands'}, pid {hello.pid})"
              for path, hello in live] + [f"pid {e.pid} (not answering)" for e in silent]
    raise NoSupervisor(f"{len(listed)} supervisors are running; pick one with --run-dir: "
                       f"{'; '.join(listed)}")


def running(silent: list[NotAnswering] | None = None) -> list[tuple[Path, Hello]]:
    """Every supervisor of ours that answers, with its hello; those that do not answer
    go to ``silent``."""
    root = default_run_dir(Path("/")).parent
    found = []
    with contextlib.suppress(OSError):
        for entry in sorted(root.iterdir()):
            if not (entry / SOCKET).exists():
                continue
            try:
                conn = Connection.open(entry)
            except NotAnswering as e:
                if silent is not None:
                    silent.append(e)
                continue
            except NoSupervisor:
                continue
            found.append((entry, conn.hello))
            conn.close()
    return found


def dialer(file: Path | None, run_dir: Path | None, host: str | None = None,
           read_only: bool = False) -> Callable[[], Connection]:
    """How to reach the supervisor, as often as asked: here, or on ``host`` over SSH
    (where ``file`` and ``run_dir`` are the box's)."""
    if host is not None:
        from proctui.remote.dial import over_ssh, where_args

        return over_ssh(host, where_args(file, run_dir), read_only)
    return lambda: Connection.open(locate(file, run_dir), read_only=read_only)


# -- commands on processes -------------------------------------------------------------


def send_all(conn: Connection, requests: list[Request[Any]], out: TextIO,
             err: TextIO) -> int:
    """Send each request in turn and say each reply as its command says it; the exit
    status is the worst of them. A name the supervisor does not run is the one-line
    error (exit 2) before anything is sent."""
    known = conn.names
    for request in requests:
        name = getattr(request, "name", None)
        if isinstance(name, str) and name not in known:
            raise UnknownProcess(name, known)
    status = 0
    for request in requests:
        reply = conn.call(request)
        name = getattr(request, "name", None)
        if reply.fault is Fault.UNKNOWN_NAME and isinstance(name, str):
            raise UnknownProcess(name, known)
        said = request.said(reply)
        out.write("".join(clean(line) + "\n" for line in said.out))
        err.write("".join(clean(line) + "\n" for line in said.err))
        status = max(status, said.status)
    return status


# -- down -----------------------------------------------------------------------------------


COUNTDOWN_EVERY = 5.0
EXIT_WAIT = 10.0  # seconds: how long down waits for the supervisor to exit once all ended


class Down:
    """Stop everything as the headless runner would (an "ask" acts as a kill), printing
    output, notices and countdowns, then the summary. ctrl+c once kills what is still
    stopping; twice abandons it and stops watching."""

    def __init__(self, conn: Connection, out: TextIO) -> None:
        from proctui.frontends.printer import Printer, use_colour

        self.conn = conn
        self.core = core = RemoteCore(conn, replay=0, kind="down")
        self.news = threading.Event()
        core.output.listen(self.news.set)
        names = core.snapshot().names
        self.names = names
        self.printer = Printer(names or ["proctui"], out, use_colour(out))
        # Where each pane's new lines begin; known once its first lines arrive (the
        # supervisor numbers them, and only lines from now on are sent).
        self.seen: dict[str, int | None] = {name: None for name in names}
        # Each stop's own notices come first; a countdown line only after 5 s of quiet.
        self.last_said = dict.fromkeys(names, time.monotonic())
        self.interrupts = 0
        self.ladder = Ladder(start=Rung.KILL)  # down has asked for the stop already
        self.said_quiet = False
        self.summary: list[str] = []  # once everything has ended

    def run(self, signals: bool = True, say_summary: bool = True) -> int:
        """Stop everything and watch it end. ``signals``: take ctrl+c here (else the
        caller passes it on with ``interrupt``: a fleet's down, from its main thread);
        ``say_summary``: print the summary (else it is left in ``self.summary``)."""
        core, printer = self.core, self.printer
        previous = signal.signal(signal.SIGINT, self._on_interrupt) if signals else None
        try:
            core.send(SetInteractive(False))
            reply = core.send(StopAll(why=Why.DOWN.value)).result(timeout=30)
            printer.say(f"stopping everything (supervisor pid {self.conn.hello.pid})"
                        + ("" if reply.ok else f": {reply.text}"))
            handled = 0
            while not self._over():
                self.news.wait(1.0)
                self.news.clear()
                core.output.changes()
                self._print_new()
                self._countdowns()
                if self.interrupts > handled:
                    handled = self.interrupts
                    if self._interrupted(handled):
                        break
            if core.snapshot().all_ended:
                self._until_exited()
            self._print_new()
        finally:
            if signals:
                signal.signal(signal.SIGINT, previous)
        status = 1
        snap = core.snapshot()
        link = snap.link
        if link is not None and link.not_answering is not None and not snap.all_ended:
            printer.finish(2.0)
            core.close()
            raise NoSupervisor(link.not_answering)  # one line, exit status 2
        if not snap.all_ended:
            printer.say((link.gone if link is not None else None)
                        or "stopped watching before everything had ended")
        else:
            lines, status = summary(snap)
            self.summary = lines
            for line in lines if say_summary else ():
                printer.say(line)
        printer.finish(2.0)
        core.close()
        return status

    def _over(self) -> bool:
        snap = self.core.snapshot()
        return snap.all_ended or (snap.link is not None and snap.link.gone is not None)

    def _until_exited(self) -> None:
        """Everything has ended; the supervisor now sends what is final (the last lines
        can arrive after the state that says all ended) and exits. Wait for that, briefly,
        so nothing is left unprinted and a `proctui up` right after finds the run
        directory free."""
        from proctui.core.os.procfs import read_stat

        deadline = time.monotonic() + EXIT_WAIT
        while not self._gone() and time.monotonic() < deadline and self.interrupts == 0:
            self.news.wait(0.1)
            self.news.clear()
            self._print_new()
        pid = self.conn.hello.pid if self.conn.local else None  # (not ours to see)
        while isinstance(pid, int) and time.monotonic() < deadline and self.interrupts == 0:
            st = read_stat(pid)
            if st is None or not st.live:
                break
            time.sleep(0.02)

    def _gone(self) -> bool:
        link = self.core.snapshot().link
        return link is not None and link.gone is not None

    def _on_interrupt(self, _signum: int, _frame: object) -> None:
        self.interrupt()

    def interrupt(self) -> None:
        """A ctrl+c (from the handler, or passed on by whoever took it)."""
        self.interrupts += 1
        self.printer.interrupted()  # (its "^C" stands where the next line begins)
        self.news.set()

    def _print_new(self) -> None:
        """What every process printed since the last look, and proctui's notices, in the
        order they happened across processes (by the supervisor's order of appends):
        printed a process at a time, db's SIGTERM came before web's end that had come
        first."""
        got: list[tuple[int, int, str, str, int]] = []  # (order, n, name, line, stream)
        with self.core.output.lock:  # every buffer as of one push: none half-read
            for name in self.names:
                buf = self.core.output.buffer(name)
                mark = buf.mark()
                start = self.seen[name]
                if start is None:
                    if not mark.total:
                        continue
                    start = mark.first
                if mark.total == start:
                    continue
                part = buf.read(start)
                self.seen[name] = part.first + len(part.lines)
                if part.dropped:
                    self.printer.say(f"{part.dropped} lines of output not shown: this reader "
                                     "fell behind", name)
                for i, (line, stream) in enumerate(zip(part.lines, part.streams, strict=False)):
                    got.append((stamp_at(part.stamps, i), len(got), name, line, stream))
        got.sort()  # (stable within a process: the running count breaks ties)
        for _order, _n, name, line, stream in got:
            if stream == Stream.PROCTUI:
                self.printer.say(line, name)
                self.last_said[name] = time.monotonic()
            else:
                self.printer.lines(name, [line])

    def _countdowns(self) -> None:
        now = time.monotonic()
        # The countdowns are worked out here from the last views: a supervisor that
        # missed a ping (stopped, or its link stalled) moves no deadline and sends no
        # kill, and "SIGKILL in 0.0s" would say it does.
        quiet = now - self.conn.heard
        if quiet >= self.conn.ping_every + 1.0:  # it missed a ping
            if not self.said_quiet:
                self.said_quiet = True
                self.printer.say(f"no word from the supervisor for {quiet:.0f}s: no "
                                 "countdown until it answers")
            return
        self.said_quiet = False
        for view in self.core.snapshot().views:
            if view.phase.stopping and \
                    now - self.last_said.get(view.name, 0.0) >= COUNTDOWN_EVERY:
                self.last_said[view.name] = now
                # (ctrl+c here kills what is still stopping: down asked for the stop)
                way_out = "ctrl+c kills it" if self.interrupts == 0 else ""
                self.printer.say(still_stopping(view, now, way_out), view.name)

    def _interrupted(self, count: int) -> bool:
        core = self.core
        rung = self.ladder.press()
        self.printer.say(self.ladder.words(rung, "ctrl+c"))
        climb(core, rung)
        if rung is not Rung.ABANDON:
            return False
        deadline = time.monotonic() + 2.0
        while not self._over() and time.monotonic() < deadline:
            time.sleep(0.05)
        return True


def attach(conn: Connection, refresh_hz: float | None, read_only: bool = False,
           dial: Callable[[], Connection] | None = None, again: list[str] | None = None) -> int:
    """The console on ``conn``'s supervisor, redialled when the link drops (a local one
    at its run directory, else with ``dial``); ``read_only``: nothing acting is sent.
    ``again``: the options that reach it once more (a local one's: its run directory, as
    a plain `proctui attach` finds it only from the directory it was started in)."""
    from proctui.frontends.console import attach_console

    if not sys.stdin.isatty() or not sys.stdout.isatty():
        conn.close()
        raise NoSupervisor("attach needs a terminal (use proctui status or logs in scripts)")
    if conn.run_dir is not None:  # its end is the end, not a reason to redial
        dial = local_dial(conn.run_dir, conn.timeout, read_only)
        again = ["--run-dir", str(conn.run_dir)]
    words = shlex.join(["proctui", "attach", *(again or []),
                        *(["--read-only"] if read_only else [])])
    core = RemoteCore(conn, dial=dial, read_only=read_only)
    try:
        status = attach_console(core, refresh_hz=refresh_hz, read_only=read_only,
                                again=words)
    finally:
        core.close()  # the link it holds now (a dial's child too), and its reader thread
    # The console has said the one line already; a silent supervisor is exit status 2.
    link = core.snapshot().link
    return 2 if link is not None and link.not_answering is not None else status
