"""The headless runner: every output line as ``name | text``, proctui's own lines as
``proctui | ...``, and a summary at the end. For scripts, CI and non-terminals.

Signals: the first SIGINT, SIGTERM or SIGHUP stops everything gracefully; a second SIGINT
kills what is still stopping; a third abandons what is left and exits at once.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from collections.abc import Sequence
from typing import TextIO

from proctui.config import ProcessSpec
from proctui.core.events import Dropped, EventQueue, Notice, Output
from proctui.core.outcome import exit_status_for, seconds
from proctui.core.rundir import RunDir
from proctui.core.supervisor import Supervisor

COUNTDOWN_EVERY = 5.0  # seconds between "SIGKILL in ..." lines during a wait
POLL = 0.1
_COLOURS = ("36", "33", "32", "35", "34", "96", "93", "92", "95", "94")
_HANDLED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def use_colour(stream: TextIO) -> bool:
    if "NO_COLOR" in os.environ:
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


class Printer:
    """Formats lines with padded names; survives a closed or broken stdout."""

    def __init__(self, names: Sequence[str], out: TextIO, colour: bool) -> None:
        self.out = out
        self.width = max(len(n) for n in [*names, "proctui"])
        self.colour = colour
        self._prefix: dict[str, str] = {}
        self._index = {name: i for i, name in enumerate(names)}
        self.broken = False

    def prefix(self, name: str | None) -> str:
        key = name or "\0proctui"
        p = self._prefix.get(key)
        if p is None:
            label = (name or "proctui").ljust(self.width)
            if self.colour:
                code = "1" if name is None else _COLOURS[self._index.get(name, 0) % len(_COLOURS)]
                label = f"\x1b[{code}m{label}\x1b[0m"
            p = self._prefix[key] = f"{label} | "
        return p

    def lines(self, name: str | None, lines: Sequence[str]) -> None:
        if not lines:
            return
        p = self.prefix(name)
        self.write(p + f"\n{p}".join(lines) + "\n")

    def say(self, text: str, name: str | None = None) -> None:
        """A line of proctui's own, about process ``name`` (or about itself)."""
        self.lines(None, [f"{name}: {text}" if name else text])

    def write(self, text: str) -> None:
        if self.broken:
            return
        try:
            self.out.write(text)
        except (OSError, ValueError):
            # The terminal went away (SIGHUP) or the pipe closed: keep supervising.
            self.broken = True

    def flush(self) -> None:
        if not self.broken:
            try:
                self.out.flush()
            except (OSError, ValueError):
                self.broken = True


class HeadlessRunner:
    def __init__(self, supervisor: Supervisor, events: EventQueue, printer: Printer,
                 stop_after: float | None = None) -> None:
        self.sup = supervisor
        self.stop_after = stop_after
        self.events = events
        self.printer = printer
        self._signals: list[int] = []
        self._interrupts = 0
        self._stopping = False
        self._last_countdown: dict[str, float] = {}

    def run(self) -> int:
        previous = {sig: signal.signal(sig, self._on_signal) for sig in _HANDLED}
        try:
            self.sup.start()
            started = time.monotonic()
            abandoned_all = False
            while True:
                self._drain(POLL)
                abandoned_all = self._handle_signals()
                if (self.stop_after is not None and not self._stopping
                        and time.monotonic() - started >= self.stop_after):
                    self._stopping = True
                    self.printer.say(f"--stop-after {self.stop_after:g}s: stopping everything")
                    self.sup.stop_all()
                self._countdowns()
                if abandoned_all or self.sup.all_ended():
                    break
            if abandoned_all:
                # Let the abandon outcomes reach us before we print the summary.
                deadline = time.monotonic() + 2.0
                while not self.sup.all_ended() and time.monotonic() < deadline:
                    self._drain(0.02)
            self._drain(0)
            status = self._summary()
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            self.sup.close()
            self.printer.flush()
        return status

    def _on_signal(self, signum: int, _frame: object) -> None:
        # Record it for the main loop to report; start the first stop right away (the
        # command API only queues a call on the core's loop, which is safe here).
        self._signals.append(signum)
        if not self._stopping:
            self.sup.stop_all()

    def _handle_signals(self) -> bool:
        while self._signals:
            signum = self._signals.pop(0)
            name = signal.Signals(signum).name
            if signum == signal.SIGINT:
                self._interrupts += 1
            if not self._stopping:
                self._stopping = True  # the handler has already asked the core to stop
                self.printer.say(f"received {name}: stopping everything (ctrl+c again "
                                 "kills what is still stopping)")
            elif signum == signal.SIGINT and self._interrupts == 2:
                self.printer.say("received SIGINT again: killing what is still stopping "
                                 "(ctrl+c once more abandons it)")
                self.sup.kill_all()
            elif signum == signal.SIGINT and self._interrupts >= 3:
                left = [v for v in self.sup.views() if v.outcome is None and v.pid]
                pids = ", ".join(f"{v.name} pid {v.pid}" for v in left) or "nothing"
                self.printer.say(f"received SIGINT a third time: abandoning what is left "
                                 f"({pids}) and exiting")
                with contextlib.suppress(Exception):
                    self.sup.abandon_all().result(timeout=2.0)
                return True
        return False

    def _drain(self, timeout: float) -> None:
        printer = self.printer
        for event in self.events.get(timeout):
            if type(event) is Output:
                printer.lines(event.name, event.lines)
            elif type(event) is Notice:
                printer.say(event.text, event.name)
                if event.name is not None:
                    self._last_countdown[event.name] = time.monotonic()
            elif type(event) is Dropped:
                printer.say(f"{event.count} lines of output dropped: the reader fell behind",
                            event.name)
        printer.flush()

    def _countdowns(self) -> None:
        now = time.monotonic()
        for view in self.sup.views():
            if not view.phase.stopping:
                continue
            last = self._last_countdown.get(view.name, 0.0)
            if now - last < COUNTDOWN_EVERY:
                continue
            self._last_countdown[view.name] = now
            since = now - (view.stop_requested_at or now)
            if view.deadline is None:
                what = "waiting for a decision" if view.deadline_action == "decision" \
                    else "waiting without a deadline"
                self.printer.say(f"still stopping after {seconds(since)}: {what}", view.name)
            else:
                self.printer.say(f"still stopping after {seconds(since)}: "
                                 f"{view.deadline_action} in "
                                 f"{seconds(view.deadline - now)}", view.name)

    def _summary(self) -> int:
        for line in summary_lines(self.sup):
            self.printer.say(line)
        self.printer.flush()
        return exit_status_for([o for _, o in self.sup.outcomes()])


def summary_lines(sup: Supervisor) -> list[str]:
    """One line per process: its last outcome (and how often it was restarted)."""
    finals = sup.final()
    restarts = {v.name: v.restarts for v in sup.views()}
    width = max((len(n) for n, _ in finals), default=0)
    lines = ["summary:"]
    for name, outcome in finals:
        text = outcome.text if outcome is not None else "not started"
        count = restarts.get(name, 0)
        if count:
            text += " (restarted once)" if count == 1 else f" (restarted {count} times)"
        lines.append(f"  {name.ljust(width)}  {text}")
    return lines


def run(specs: Sequence[ProcessSpec], *, run_dir: RunDir | None = None,
        leftover_defaults: ProcessSpec | None = None, out: TextIO | None = None,
        stop_after: float | None = None) -> int:
    """Run ``specs`` headless until every process has ended; returns the exit status."""
    out = out or sys.stdout
    events = EventQueue()
    sup = Supervisor(specs, events=events, interactive=False, run_dir=run_dir,
                     leftover_defaults=leftover_defaults)
    printer = Printer([s.name for s in specs], out, use_colour(out))
    return HeadlessRunner(sup, events, printer, stop_after).run()
