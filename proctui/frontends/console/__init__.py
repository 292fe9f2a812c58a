"""The Textual console. The supervisor starts the processes first; Textual is imported
only then, so on a slow board the services do not wait for the console to load."""

from __future__ import annotations

import gc
import signal
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from proctui.config import OnHangup, ProcessSpec

# Kept out of the import: proctui.frontends.console.keys is read by light commands.
if TYPE_CHECKING:
    from proctui.core.store.rundir import RunDir
    from proctui.core.supervisor import Supervisor
    from proctui.remote.client import RemoteCore
    from proctui.remote.listener import Listener

    # (supervisor, run directory, control socket, why the terminal went, source) -> status
    GoOn = Callable[[Supervisor, RunDir, Listener, str, str], int]


def run_console(specs: Sequence[ProcessSpec], *, run_dir: RunDir | None = None,
                leftover_defaults: ProcessSpec | None = None,
                hint: tuple[tuple[str, str], ...] = (),
                stop_after: float | None = None, refresh_hz: float | None = None,
                on_hangup: OnHangup = OnHangup.STOP, source: str = "",
                reload_from: Callable[[], Sequence[ProcessSpec]] | None = None,
                go_on_detached: GoOn | None = None) -> int:
    """Open the console on ``specs``; returns proctui's exit status once all have ended.
    ``go_on_detached``: the detached supervisor's loop and exit work (proctui.daemon), for
    a terminal that goes away with ``on_hangup = "detach"``."""
    from proctui.core.supervisor import Supervisor
    from proctui.frontends import hangup
    from proctui.frontends.policy import summary
    from proctui.remote.listener import Listener

    sup = Supervisor(specs, run_dir=run_dir, interactive=True,
                     leftover_defaults=leftover_defaults, reload_from=reload_from)
    app = None
    # Served once the first frame is drawn, or (no frame ever comes) at the latest a
    # moment after it is bound.
    control = Listener(sup, run_dir, source, own_console=True)

    def tell(why: str, detached: bool) -> None:
        assert app is not None
        if detached:
            app.main.quit.detached = why
        else:
            app.main.quit.hangup = why

    def on_lost(why: str, detached: bool) -> None:
        if detached:
            control.console_gone()
        if app is not None:
            tell(why, detached)
            app.main.poke()  # wake it: nothing in the core may change to do so

    def cleanup() -> None:
        # Called only when proctui ends from the hangup guard (the console is not coming
        # back): the summary goes to the run directory, the terminal may be gone.
        from proctui.frontends.finale import keep_summary

        keep_summary(run_dir, sup, terminal_gone=False if guard.detached else None)
        control.close()  # first: consoles and `down` are told what is final
        if run_dir is not None:
            run_dir.close()

    def first_frame() -> None:
        control.serve_soon()

    interrupted = False
    detach = on_hangup is OnHangup.DETACH and run_dir is not None
    go_on = None
    if detach and go_on_detached is not None:
        directory = run_dir
        assert directory is not None

        def go_on(why: str) -> int:  # the same loop and exit work as `up`'s supervisor
            return go_on_detached(sup, directory, control, why, source)

    with hangup.handled(sup, on_lost, cleanup, detach=detach, go_on=go_on) as guard:
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

            # What the imports made (about 50,000 objects: modules, classes, functions)
            # lives as long as proctui: out of the collector's sight, the first full
            # collection (during the first frame) is not a walk over all of it, 20 ms
            # of a 250 ms bare Textual frame here (tests/bench/startup.py), and
            # neither is every later one while the console runs.
            gc.freeze()
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
            guard.closed.set()
            if guard.detached:
                guard.finished.wait()  # it supervises on, and ends proctui itself
            hangup.finish_stop(sup)
            from proctui.frontends.finale import keep_summary

            keep_summary(run_dir, sup)
            control.close()
            sup.close()
    from proctui.frontends.printer import Printer, use_colour

    # The summary and the exit status from one snapshot: the status says what it shows.
    lines, status = summary(sup.snapshot())
    printer = Printer([s.name for s in specs], sys.stdout, use_colour(sys.stdout))
    for line in lines:
        printer.say(line)  # folded to the terminal's width
    printer.finish(2.0)
    return 130 if interrupted else status


def attach_console(core: RemoteCore, *, refresh_hz: float | None = None,
                   read_only: bool | None = None, again: str = "proctui attach") -> int:
    """Open the console on a supervisor elsewhere (a RemoteCore). Returns 0 once detached,
    or the supervisor's exit status when this console stopped everything. ``read_only``
    (default: the link's, as the RemoteCore was made): a console that looks and never
    acts (the RemoteCore made read-only refuses to send what acts, too)."""
    from proctui.frontends.console.app import REFRESH_HZ, ProctuiApp
    from proctui.frontends.console.driver import console_driver
    from proctui.frontends.console.keys import shown
    from proctui.frontends.policy import summary
    from proctui.frontends.printer import Printer, use_colour

    link = core.snapshot().link
    where = link.where if link is not None else "the supervisor"
    if read_only is None:
        read_only = link is not None and link.read_only
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
        app.main.quit.detached = signal.Signals(signum).name
        app.main.poke()

    previous = {sig: signal.signal(sig, leave) for sig in (signal.SIGHUP, signal.SIGTERM)}
    try:
        app.run()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    snap = core.snapshot()  # what the summary and the words below say, at one moment
    link = snap.link
    printer = Printer(snap.names or ["proctui"], sys.stdout, use_colour(sys.stdout))
    if snap.all_ended and snap.shutting_down:
        lines, status = summary(snap)
        for line in lines:
            printer.say(line)
        printer.finish(2.0)
        return status
    if link is not None and link.gone is not None and not snap.all_ended:
        printer.say(link.gone)
        printer.finish(2.0)
        return 1
    goes_on = "goes on stopping everything" if snap.shutting_down else "goes on"
    printer.say(f"detached; {where} {goes_on}; this comes back to it:")
    # A command to copy: whole, never folded (the terminal's own wrap copies as one line).
    printer.say(f"  {again}", fold=False)
    printer.finish(2.0)
    return 0
