"""The Textual console. The supervisor starts the processes first; Textual is imported
only then, so on a slow board the services do not wait for the console to load."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from proctui.config import OnHangup, ProcessSpec

# Kept out of the import: proctui.frontends.console.keys is read by light commands.
if TYPE_CHECKING:
    from proctui.core.store.rundir import RunDir
    from proctui.remote.client import RemoteCore


def run_console(specs: Sequence[ProcessSpec], *, run_dir: RunDir | None = None,
                leftover_defaults: ProcessSpec | None = None,
                hint: tuple[tuple[str, str], ...] = (),
                stop_after: float | None = None, refresh_hz: float | None = None,
                on_hangup: OnHangup = OnHangup.STOP, source: str = "",
                reload_from: Callable[[], Sequence[ProcessSpec]] | None = None) -> int:
    """Open the console on ``specs``; returns proctui's exit status once all have ended."""
    from proctui.core.supervisor import Supervisor
    from proctui.frontends import hangup
    from proctui.frontends.report import summary_lines
    from proctui.remote.listener import Listener
    from proctui.startup import resume

    sup = Supervisor(specs, run_dir=run_dir, interactive=True,
                     leftover_defaults=leftover_defaults)
    app = None
    control = Listener(sup, run_dir, source, reload_from, own_console=True)

    def tell(why: str, detached: bool) -> None:
        assert app is not None
        if detached:
            app.detached = why
        else:
            app.hangup = why

    def on_lost(why: str, detached: bool) -> None:
        if detached:
            control.console_gone()
        if app is not None:
            tell(why, detached)
            app._poked()  # wake it: nothing in the core may change to do so

    def cleanup() -> None:
        # Called only when proctui ends from the hangup guard (the console is not coming
        # back): the summary goes to the run directory, the terminal may be gone.
        from proctui.frontends.finale import keep_summary

        keep_summary(run_dir, sup, terminal_gone=False if guard.detached else None)
        control.close()  # first: consoles and `down` are told what is final
        if run_dir is not None:
            run_dir.close()

    def first_frame() -> None:
        resume()  # start-up is over (proctui/startup.py)
        control.serve_soon()

    interrupted = False
    detach = on_hangup is OnHangup.DETACH and run_dir is not None
    log = _supervisor_log(run_dir) if detach else None
    with hangup.handled(sup, on_lost, cleanup, detach=detach, log=log) as guard:
        sup.start(wait=False)
        # Bound now, served once the first frame is drawn (see remote/listener.py).
        control.bind()
        try:
            # Every process is launched before Textual loads, not while it loads: the
            # two threads handing the GIL to each other at each system call cost more
            # than the overlap gained, 18 ms of CPU and 9 ms of the first frame on an
            # x86 host, 149 ms and 103 ms emulated (tests/bench/RESULTS.md). And a fork
            # is cheaper while proctui is small (under qemu each one is a copy).
            sup.started()
            from proctui.frontends.console.app import REFRESH_HZ, ProctuiApp
            from proctui.frontends.console.driver import console_driver
            from proctui.frontends.console.keys import hint as hint_items

            app = ProctuiApp(sup, hint=hint_items("demo", hint) if hint else (),
                             stop_after=stop_after, refresh_hz=refresh_hz or REFRESH_HZ,
                             on_terminal_lost=guard.hangup, driver_class=console_driver(),
                             first_frame=first_frame)
            if guard.lost is not None:
                # A SIGTERM or hangup while Textual loaded, before there was an app to
                # tell: it quits on its first tick (and prints the summary) all the same.
                tell(guard.lost, guard.detached)
            app.run()
        except KeyboardInterrupt:
            # ctrl+c before Textual owned the terminal (a SIGINT): everything is stopped
            # below as after a crash, and the summary says what became of it.
            interrupted = True
        finally:
            resume()  # no frame came, yet it may supervise on (detached by a hangup)
            guard.closed.set()
            if guard.detached:
                guard.finished.wait()  # it supervises on, and ends proctui itself
            hangup.finish_stop(sup)
            status = sup.exit_status()
            from proctui.frontends.finale import keep_summary

            keep_summary(run_dir, sup)
            control.close()
            sup.close()
    from proctui.frontends.printer import Printer, use_colour

    printer = Printer([s.name for s in specs], sys.stdout, use_colour(sys.stdout))
    for line in summary_lines(sup.final(), sup.views(), sup.strays()):
        printer.say(line)  # folded to the terminal's width
    if sup.crash:
        printer.say(f"internal error: {sup.crash}")
    printer.finish(2.0)
    return 130 if interrupted else status


def _supervisor_log(run_dir: RunDir | None) -> Callable[[str], None]:
    """Where a console that detached on hangup writes its notices: the same file as a
    supervisor started with --detach (opened at the first line)."""
    from proctui.frontends.daemon import open_log

    fds: list[int | None] = []

    def log(text: str) -> None:
        if not fds:
            fds.append(open_log(run_dir) if run_dir is not None else None)
        if fds[0] is not None:
            with contextlib.suppress(OSError):
                os.write(fds[0], f"proctui | {text}\n".encode())

    return log


def attach_console(core: RemoteCore, *, refresh_hz: float | None = None,
                   read_only: bool | None = None, again: str = "proctui attach") -> int:
    """Open the console on a supervisor elsewhere (a RemoteCore). Returns 0 once detached,
    or the supervisor's exit status when this console stopped everything. ``read_only``
    (default: the core's): a console that looks and never acts."""
    from proctui.frontends.console.app import REFRESH_HZ, ProctuiApp
    from proctui.frontends.console.driver import console_driver
    from proctui.frontends.console.keys import shown
    from proctui.frontends.printer import Printer, use_colour
    from proctui.frontends.report import summary_lines

    pid = core.conn.hello.get("pid")
    where = f"supervisor pid {pid}" + ("" if core.conn.local else f" on {core.conn.where}")
    if read_only is None:
        read_only = core.read_only
    core.read_only = read_only  # (refused in the core too: nothing that acts is sent)
    if read_only:
        hint = (f"attached read-only to {where}", "no key here acts on it",
                f"{shown('detach')} or {shown('quit')} detaches")
    else:
        hint = (f"attached to {where}",
                f"{shown('detach')} detaches (everything keeps running)",
                f"{shown('quit')} asks before stopping anything")
    app = ProctuiApp(core, hint=hint, refresh_hz=refresh_hz or REFRESH_HZ,
                     on_terminal_lost=lambda _why: None, driver_class=console_driver(),
                     attached=where, read_only=read_only, again=again)

    def leave(signum: int, _frame: object) -> None:
        app.detached = signal.Signals(signum).name
        app._poked()

    previous = {sig: signal.signal(sig, leave) for sig in (signal.SIGHUP, signal.SIGTERM)}
    try:
        app.run()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    names = list(core.names)
    printer = Printer(names or ["proctui"], sys.stdout, use_colour(sys.stdout))
    if core.all_ended() and core.shutting_down:
        for line in summary_lines(core.final(), core.views(), core.strays()):
            printer.say(line)
        printer.finish(2.0)
        return core.exit_status()
    if core.gone is not None and not core.all_ended():
        printer.say(core.gone)
        printer.finish(2.0)
        return 1
    goes_on = "goes on stopping everything" if core.shutting_down else "goes on"
    printer.say(f"detached; {where} {goes_on}; this comes back to it:")
    # A command to copy: whole, never folded (the terminal's own wrap copies as one line).
    printer.say(f"  {again}", fold=False)
    printer.finish(2.0)
    return 0
