"""The Textual console. The supervisor starts the processes first; Textual is imported
only then, so on a slow board the services do not wait for the console to load."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from proctui.config import ProcessSpec
from proctui.core.rundir import RunDir
from proctui.core.supervisor import Supervisor


def run_console(specs: Sequence[ProcessSpec], *, run_dir: RunDir | None = None,
                leftover_defaults: ProcessSpec | None = None,
                hint: tuple[tuple[str, str], ...] = (),
                stop_after: float | None = None, refresh_hz: float | None = None) -> int:
    """Open the console on ``specs``; returns proctui's exit status once all have ended."""
    from proctui import hangup
    from proctui.core.report import summary_lines

    sup = Supervisor(specs, run_dir=run_dir, interactive=True,
                     leftover_defaults=leftover_defaults)
    app = None

    def on_lost(why: str) -> None:
        if app is not None:
            app.hangup = why

    def cleanup() -> None:
        if run_dir is not None:
            run_dir.close()

    with hangup.handled(sup, on_lost, cleanup) as guard:
        sup.start()
        try:
            from proctui.console.app import REFRESH_HZ, ProctuiApp
            from proctui.console.driver import quiet_driver
            from proctui.console.keys import hint as hint_items

            app = ProctuiApp(sup, hint=hint_items("demo", hint) if hint else (),
                             stop_after=stop_after, refresh_hz=refresh_hz or REFRESH_HZ,
                             on_terminal_lost=guard.trigger, driver_class=quiet_driver())
            app.run()
        finally:
            guard.closed.set()
            hangup.finish_stop(sup)
            status = sup.exit_status()
            sup.close()
    from proctui.headless import Printer, use_colour

    printer = Printer([s.name for s in specs], sys.stdout, use_colour(sys.stdout))
    for line in summary_lines(sup.final(), sup.views(), sup.strays()):
        printer.say(line)
    if sup.crash:
        printer.say(f"internal error: {sup.crash}")
    printer.finish(2.0)
    return status
