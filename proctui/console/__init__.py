"""The Textual console. Imported only when a console opens: the core, the CLI's fast
paths and the headless runner never import Textual."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Sequence

from proctui.config import ProcessSpec
from proctui.core.rundir import RunDir
from proctui.core.supervisor import Supervisor

FALLBACK_POLL = 0.05
HANGUP_GRACE = 3.0  # seconds Textual gets to close after a hangup, once all ended


def run_console(specs: Sequence[ProcessSpec], *, run_dir: RunDir | None = None,
                leftover_defaults: ProcessSpec | None = None, hint: str | None = None,
                stop_after: float | None = None) -> int:
    """Open the console on ``specs``; returns proctui's exit status once all have ended."""
    from proctui.console.app import ProctuiApp
    from proctui.core.report import summary_lines
    from proctui.headless import Printer, use_colour

    sup = Supervisor(specs, run_dir=run_dir, interactive=True,
                     leftover_defaults=leftover_defaults)
    app: ProctuiApp | None = None
    console_done = threading.Event()

    def hangup(signum: int, _frame: object) -> None:
        # The operator is gone (SSH dropped) or the system is shutting down: nobody can
        # answer an "ask" any more, so it acts as kill; stop everything now.
        sup.set_interactive(False)
        sup.stop_all()
        if app is not None:
            app.hangup = signal.Signals(signum).name
        threading.Thread(target=exit_when_stopped, name="proctui-hangup", daemon=True).start()

    def exit_when_stopped() -> None:
        """After a hangup, Textual can block for ever writing to the terminal that went
        away. Once every process has ended (bounded by the timeouts), give it a moment to
        close by itself, then end proctui: there is nothing left to supervise."""
        while not sup.all_ended():
            time.sleep(FALLBACK_POLL)
        if console_done.wait(HANGUP_GRACE):
            return
        status = sup.exit_status()
        with contextlib.suppress(Exception):
            if run_dir is not None:
                run_dir.close()
        os._exit(status)

    previous = {sig: signal.signal(sig, hangup) for sig in (signal.SIGHUP, signal.SIGTERM)}
    try:
        sup.start()
        app = ProctuiApp(sup, hint=hint, stop_after=stop_after)
        try:
            app.run()
        finally:
            console_done.set()
            if not sup.all_ended():
                # The console ended without finishing the stop (it crashed, or the terminal
                # went away): finish it here, bounded by the same timeouts.
                sup.set_interactive(False)
                sup.stop_all()
                while not sup.all_ended():
                    time.sleep(FALLBACK_POLL)
        printer = Printer([s.name for s in specs], sys.stdout, use_colour(sys.stdout))
        for line in summary_lines(sup.final(), sup.views(), sup.strays()):
            printer.say(line)
        if sup.crash:
            printer.say(f"internal error: {sup.crash}")
        printer.finish(2.0)
        return sup.exit_status()
    finally:
        sup.close()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
