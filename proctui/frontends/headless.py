"""The headless runner: every output line as ``name | text``, proctui's own lines as
``proctui | ...``, and a summary at the end. For scripts, CI and non-terminals.

Signals: the first SIGINT, SIGTERM or SIGHUP stops everything gracefully; a second SIGINT
kills what is still stopping; a third abandons what is left and exits at once. A reader
that goes away (a broken pipe: ``proctui run | head``) counts as a hangup; a reader that
stalls never keeps proctui from exiting. An output that cannot be written (a full disk
under ``> file`` or supervisor.log) stops nothing: the lost lines are counted, and the
trouble is said once and shown by ``proctui status`` until writes go through again.

The same runner is the detached supervisor (``linger``): it prints only its own notices
(the output goes to the log files), ignores SIGHUP, and stays until someone stops
everything, even once every process has ended by itself.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import TextIO

from proctui.commands.interactive import SetInteractive
from proctui.commands.interrupt import Interrupt
from proctui.commands.notice import Notice as SayNotice
from proctui.commands.stop_all import StopAll
from proctui.commands.trouble import Trouble
from proctui.config import ProcessSpec
from proctui.core.life.stages import Why
from proctui.core.output.events import Dropped, EventQueue, Notice, Output
from proctui.core.store.rundir import RunDir
from proctui.core.supervisor import Supervisor
from proctui.frontends.policy import summary
from proctui.frontends.printer import Printer, use_colour
from proctui.frontends.report import still_stopping
from proctui.frontends.writer import DRAIN_MOST, Writer

COUNTDOWN_EVERY = 5.0  # seconds between "SIGKILL in ..." lines during a wait
POLL = 0.1  # while something stops; output and notices wake the loop at once anyway
# Idle, nothing needs the loop: a signal starts its stop in the handler, the stop's
# notices and a reader gone (the writer says so) wake it. Only a safety net.
POLL_IDLE = 5.0
EXIT_GRACE = 2.0  # seconds a reader may take nothing at exit (60 s at most in all)
SAID_WAIT = 1.0  # seconds the last outcomes' lines may follow the snapshot that ended it all
_HANDLED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class HeadlessRunner:
    def __init__(self, supervisor: Supervisor, events: EventQueue, printer: Printer,
                 stop_after: float | None = None, *, linger: bool = False,
                 started: Callable[[], object] | None = None,
                 closing: Callable[[], object] | None = None,
                 tick: Callable[[], object] | None = None,
                 output_name: str = "its output", already_started: bool = False,
                 signals: bool = True) -> None:
        self.sup = supervisor
        self.already_started = already_started  # a console's, going on detached
        self.signals = signals  # install its own handlers (False: someone else's are in)
        self.output_name = output_name  # what the output is, in the trouble's words
        self.stop_after = stop_after
        self.linger = linger
        self.started = started  # once every process was launched
        self.closing = closing  # when everything has ended, before the core stops
        self.tick = tick  # about once a second (the detached supervisor rotates its log)
        self.events = events
        self.printer = printer
        self._exit_now = False  # the last rung: abandoned, exit
        self._summary_lines: list[str] = []
        self._finishing = False
        self._cut_by = ""  # why output stopped being waited for
        self._ended_at: float | None = None  # when the loop first saw everything ended
        self._skipped = 0  # output lines not printed, to exit sooner
        self._hangups = 0
        self._stopping = False
        self._said_broken = False
        self._trouble: str | None = None  # the output's failing writes, as last said
        self._last_countdown: dict[str, float] = {}
        self._last_look = 0.0

    def run(self) -> int:
        previous = {sig: signal.signal(sig, self._on_signal) for sig in _HANDLED} \
            if self.signals else {}
        if self.linger and self.signals:
            # Not SIG_IGN: that would be inherited by every process we start.
            signal.signal(signal.SIGHUP, self._on_hangup)
        timer = None
        try:
            if not self.already_started:
                self.sup.start()
            if self.started is not None:
                self.started()
            started = time.monotonic()
            if self.stop_after is not None:
                # A timer, not the loop: the loop may be printing a long backlog to a
                # slow reader, and --stop-after 2 stopped at 7.4 s behind one.
                timer = threading.Timer(self.stop_after, self._on_stop_after)
                timer.daemon = True
                timer.start()
            while True:
                self._drain(self._poll(started))
                self._check_reader()
                self._countdowns()
                snap = self.sup.snapshot()
                if snap.abandoned_all:
                    # The last rung of the ladder (decided in the core): everything left
                    # is abandoned, and proctui exits at once.
                    self._exit_now = True
                    self._hurry("received SIGINT again")
                    break
                if snap.all_ended and (not self.linger or snap.shutting_down or snap.crash):
                    break
            if self._exit_now:
                # Let the abandon outcomes reach us before we print the summary.
                deadline = time.monotonic() + 2.0
                while not self.sup.snapshot().all_ended and time.monotonic() < deadline:
                    self._drain(0.02)
            # The snapshot that said everything ended is published before its words
            # (the last outcomes' lines): wait for them, or the summary came first and
            # an outcome's line was never printed (seen under load).
            self.events.wait_said(self.sup.snapshot().seq, SAID_WAIT)
            self._drain(0)
            status = self._summary()
        finally:
            self._finishing = True  # a signal from here on only hurries the exit
            if timer is not None:
                timer.cancel()
            try:
                if self.closing is not None:
                    self.closing()
                self.sup.close()
            finally:
                # Our handlers stay through the last wait for the reader (a minute at
                # most): restored before it, a ctrl+c there was a KeyboardInterrupt (exit
                # 130, no summary) and a SIGTERM killed proctui outright.
                try:
                    self._finish()
                finally:
                    for sig, handler in previous.items():
                        signal.signal(sig, handler)
        out = self.printer.out
        if isinstance(out, Writer) and out.failed:
            status = max(status, 1)  # its output (the summary's too, maybe) is lost
            with contextlib.suppress(OSError):
                os.write(2, f"proctui: {out.lost} lines of {self.output_name} not written: "
                            f"{out.failing or 'writes failed earlier'}\n".encode())
        return status

    def _poll(self, started: float) -> float:
        """How long to wait for news: idle, a second (the queue wakes on any event)."""
        if self._stopping or self.sup.snapshot().shutting_down:
            return POLL
        if self.stop_after is not None:
            return max(0.0, min(POLL_IDLE, started + self.stop_after - time.monotonic()))
        return POLL_IDLE

    def _on_stop_after(self) -> None:
        if not self._stopping:
            self._stopping = True
            self.sup.send(SayNotice(f"--stop-after {self.stop_after:g}s: stopping everything"))
            self.sup.send(StopAll(why=Why.STOP_AFTER.value))

    def _finish(self) -> None:
        """Wait for the reader to take the rest, then say on stderr what it did not, and
        (when exiting at once) the summary it may have missed."""
        out = self.printer.out
        done = self.printer.finish(EXIT_GRACE)
        if (done or not isinstance(out, Writer) or self.printer.broken is not None) \
                and not self._skipped:
            return
        left = out.waiting() if isinstance(out, Writer) and not done else 0
        words = [f"{left} bytes of output not written"] if left else []
        if self._skipped:
            words.append(f"{self._skipped} lines of output not printed")
        if not words:
            return  # (the last write ended as the wait did: nothing is missing)
        why = f"exiting at once ({self._cut_by})" if self._cut_by else "the reader took too long"
        lines = [f"proctui: {' and '.join(words)}: {why}"]
        if self._cut_by and not done:
            lines += [f"proctui | {line}" for line in self._summary_lines]
        # A thread, waited for 2 s at most: stderr may be the same slow pipe, or stalled.
        say = threading.Thread(target=_write_stderr, args=("\n".join(lines) + "\n",),
                               daemon=True)
        say.start()
        say.join(2.0)

    def _hurry(self, why: str) -> None:
        """Exit as soon as possible: no more waiting for the reader (a signal handler
        calls this: no lock). What is not printed is counted and said on stderr."""
        self._cut_by = self._cut_by or why
        if isinstance(self.printer.out, Writer):
            self.printer.out.hurry = True

    def _hurried(self) -> bool:
        """Output is no longer waited for: exiting at once, or everything has ended and
        the reader has had a minute for the rest (the README's bound)."""
        out = self.printer.out
        if self._exit_now or (isinstance(out, Writer) and out.hurry):
            return True
        if isinstance(out, Writer) and self.sup.snapshot().all_ended:
            now = time.monotonic()
            if self._ended_at is None:
                self._ended_at = now
            elif now - self._ended_at > DRAIN_MOST:
                self._hurry("the reader took more than a minute after everything ended")
                return True
        return False

    def _on_signal(self, signum: int, _frame: object) -> None:
        # Sent at once, from here: the main loop may be printing a long backlog to a slow
        # reader (a second ctrl+c killed 5.6 s late behind one). Sending takes no lock, so
        # this is safe here, and it is kept even if the core has not finished starting.
        # The ladder (once: stop; twice: kill; thrice: abandon, name every pid left
        # running, exit 3) is the core's: decided in order with everything else it takes,
        # at whatever moment of a start of thousands the signal comes.
        name = signal.Signals(signum).name
        if signum == signal.SIGINT:
            self.printer.interrupted()  # (a ctrl+c's "^C" where the next line begins)
        snap = self.sup.snapshot()
        if self._finishing or (snap.all_ended and snap.launched and (
                not self.linger or snap.shutting_down)):
            # Nothing left to stop: it only waits for the reader (a backlog at 300 KB/s
            # kept it 226 s, a SIGTERM adding a line at the end). Waiting ends here. (A
            # detached supervisor whose processes all ended stays until it is stopped.)
            self._hurry(f"received {name}")
            return
        self._stopping = True
        self.sup.send(Interrupt(name))

    def _on_hangup(self, _signum: int, _frame: object) -> None:
        self._hangups += 1  # a detached supervisor has no terminal to lose: noted, no more

    def _check_reader(self) -> None:
        self._check_trouble()
        broken = self.printer.broken
        if broken is None or self._said_broken:
            return
        self._said_broken = True
        # Nobody reads us any more: like a hangup, stop everything per policy.
        self.sup.send(SetInteractive(False))
        if not self._stopping:
            self._stopping = True
            self.sup.send(StopAll(why=Why.HANGUP.value))
        with contextlib.suppress(OSError):
            os.write(2, f"proctui: output {broken}: stopping everything\n".encode())

    def _check_trouble(self) -> None:
        """Writes to our output fail (a full disk), or go through again: the core holds
        it as a trouble, said once and shown by status. Nothing is stopped for it."""
        out = self.printer.out
        failing = out.failing if isinstance(out, Writer) else None
        if failing != self._trouble:
            self.say_trouble(failing)

    def say_trouble(self, failing: str | None) -> None:
        first = self._trouble is None
        self._trouble = failing
        if failing is None:
            self.sup.send(Trouble(self.output_name, None))
            return
        text = (f"{self.output_name} not written: {failing} (its lines are lost until "
                "there is room; supervision goes on)")
        self.sup.send(Trouble(self.output_name, text))
        if first and not self.linger:  # a detached supervisor's stderr is the same log
            with contextlib.suppress(OSError):
                os.write(2, f"proctui: {text}\n".encode())

    def _drain(self, timeout: float) -> None:
        printer, events = self.printer, self.events
        for event in events.get(timeout):
            events.touch()  # still at work: a slow but steady reader is not stalled
            if type(event) is Output and self._hurried():
                self._skipped += event.lines.count  # counted, said on stderr at the end
                continue
            if type(event) is Output:
                printer.lines(event.name, event.lines)
            elif type(event) is Notice:
                printer.say(event.text, event.name)
                if event.name is not None:
                    self._last_countdown[event.name] = time.monotonic()
            elif type(event) is Dropped:
                printer.say(f"{event.count} lines of output dropped: the reader fell behind",
                            event.name)

    def _countdowns(self) -> None:
        now = time.monotonic()
        if now - self._last_look < 1.0:
            return  # once a second is enough, and it keeps a big run's loop light
        self._last_look = now
        if self.tick is not None:
            self.tick()
        if self._hangups:
            self._say(f"received SIGHUP ({self._hangups}x): ignored, a detached "
                             "supervisor goes on (SIGTERM or proctui down stops it)")
            self._hangups = 0
        for view in self.sup.snapshot().views:
            if not view.phase.stopping:
                continue
            if now - self._last_countdown.get(view.name, 0.0) < COUNTDOWN_EVERY:
                continue
            self._last_countdown[view.name] = now
            self._say(still_stopping(view, now), view.name)

    def _say(self, text: str, name: str | None = None) -> None:
        """A line of the runner's own, in order with the output and notices queued before
        it: said straight away, it jumped seconds ahead of them behind a slow reader."""
        self.events.put_notice(name, text)

    def _summary(self) -> int:
        lines, status = summary(self.sup.snapshot())
        self._summary_lines = lines
        for line in lines:
            self.printer.say(line)
        return status


def run(specs: Sequence[ProcessSpec], *, run_dir: RunDir | None = None,
        leftover_defaults: ProcessSpec | None = None, out: TextIO | None = None,
        stop_after: float | None = None, source: str = "", linger: bool = False,
        ready: Callable[[str | None], object] | None = None,
        tick: Callable[[], object] | None = None,
        reload_from: Callable[[], Sequence[ProcessSpec]] | None = None,
        output_trouble: str | None = None,
        rebuilt: Callable[[RunDir], None] | None = None) -> int:
    """Run ``specs`` headless until every process has ended (``linger``: until someone
    stops everything); returns the exit status. The control socket is served from start
    to end; ``ready`` is called once every process was launched, with the socket's error
    if it could not be made. ``output_trouble``: why the output could not be written
    already (a detached supervisor's first line to its log failed)."""
    from proctui.frontends.upstream import Upstream
    from proctui.remote.listener import Listener

    stream = out or sys.stdout
    # Before any process starts: the manager's variables are proctui's, not theirs.
    upstream = Upstream.from_environ()
    events = EventQueue(keep_output=not linger)
    # A detached supervisor waits for an operator at an "ask" (the next console, or the
    # control commands, answers); a plain headless run has nobody to ask.
    sup = Supervisor(specs, events=events, interactive=linger, run_dir=run_dir,
                     leftover_defaults=leftover_defaults, reload_from=reload_from)
    sink: TextIO | Writer = stream
    if out is None:
        with contextlib.suppress(AttributeError, OSError, ValueError):
            stream.flush()
            sink = Writer(stream.fileno(), on_broken=lambda _why: events.wake(),
                          on_trouble=lambda _why: events.wake())
    printer = Printer([s.name for s in specs], sink, use_colour(stream))
    control = Listener(sup, run_dir, source)

    def started() -> None:
        # Served when a client first connects: a short run never loads the server.
        error = control.bind(on_knock=True)
        if error is not None and linger:
            # Nobody could ever attach to it, or stop it but by a signal: do not stay.
            sup.send(SetInteractive(False))
            sup.send(StopAll())
        if ready is not None:
            ready(error)
        if upstream is not None:
            upstream.start(sup.snapshot, specs)

    def closing() -> None:
        from proctui.frontends.finale import keep_summary

        # A detached supervisor's printer writes to supervisor.log already.
        keep_summary(run_dir, sup, terminal_gone=False if linger else None)
        control.close()
        if upstream is not None:
            upstream.close()

    if rebuilt is not None:
        from proctui.remote import heal

        heal.REBUILT.append(rebuilt)  # the run directory made again: the log follows
    runner = HeadlessRunner(sup, events, printer, stop_after, linger=linger, started=started,
                          closing=closing, tick=tick,
                          output_name="supervisor.log" if linger else "standard output")
    if output_trouble is not None and isinstance(sink, Writer):
        # Known before the first process starts (up says it), and the output's until a
        # write goes through.
        sink.failing, sink.failed = output_trouble, True
        runner.say_trouble(output_trouble)
    return runner.run()


def _write_stderr(text: str) -> None:
    with contextlib.suppress(OSError):
        os.write(2, text.encode())
