"""The one detached supervisor. ``proctui up`` (and ``run --detach``) forks one; a console
whose terminal went away with ``on_hangup = "detach"`` becomes one. Either way it is the
same loop (the headless runner, lingering: it stays until someone stops everything), with
its notices in RUN_DIR/supervisor.log (rotated), and the same exit work: the summary to
RUN_DIR/summary.txt and the log, the control socket's last word to its clients, PID
files of what was left running kept, and every process left running handed a drainer for
its pipes (its next write must not kill it).

``up`` forks: the child leaves the terminal's session, takes the run directory's lock,
starts every process, serves the control socket, and only then tells the parent,
through a pipe, that it is ready (or why it could not start). The parent prints how to
reach it and exits: so a script that runs ``proctui up`` can use ``proctui status`` on
the very next line.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from proctui import __version__
from proctui.config import ProcessSpec
from proctui.core.store.rundir import RunDir
from proctui.daemon.log import LOG, open_log, rotate_log, write_to_log

if TYPE_CHECKING:
    from proctui.core.supervisor import Supervisor
    from proctui.remote.listener import Listener

READY_WAIT = 300.0  # seconds; start-up is bounded far below this by the start timeouts


def detach(specs: Sequence[ProcessSpec], *, run_dir: Path, source: str,
           leftover_defaults: ProcessSpec, stop_after: float | None,
           reload_from: Callable[[], Sequence[ProcessSpec]] | None = None) -> tuple[int, str]:
    """Start the supervisor in the background. Returns (exit status, one line to show):
    (0, its pid) once every process was launched, else the reason it did not start."""
    read_end, write_end = os.pipe()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    pid = os.fork()
    if pid == 0:  # the supervisor
        os.close(read_end)
        status = 70
        try:
            status = _supervise(specs, run_dir, source, leftover_defaults, stop_after,
                                write_end, reload_from)
        except BaseException as e:  # reported through the pipe; the child then ends
            _tell(write_end, f"error internal error: {type(e).__name__}: {e}")
        finally:
            os._exit(status)
    os.close(write_end)
    message = _read_all(read_end)
    if message.startswith("ready "):
        return 0, message.split()[1]
    if message.startswith("error "):
        return 2, message[len("error "):].strip()
    _reap(pid)
    return 1, (f"the supervisor exited while starting; see {run_dir / LOG}")


def _supervise(specs: Sequence[ProcessSpec], path: Path, source: str,
               leftover_defaults: ProcessSpec, stop_after: float | None,
               ready_fd: int,
               reload_from: Callable[[], Sequence[ProcessSpec]] | None) -> int:
    from proctui.core.store.rundir import RunDirError
    from proctui.frontends import headless

    os.setsid()  # no controlling terminal: a hangup there is not ours
    directory = RunDir(path)
    try:
        directory.open()
    except RunDirError as e:
        _tell(ready_fd, f"error {e}")
        return 2
    log = open_log(directory)
    write_to_log(log if log is not None else os.open(os.devnull, os.O_RDWR))
    os.chdir("/")  # never hold a mount busy (every process has its own cwd)
    log_error = _first_line(source)

    def ready(error: str | None) -> None:
        _tell(ready_fd, f"error {error}; stopping everything" if error else
              f"ready {os.getpid()}")

    try:
        return headless.run(specs, run_dir=directory, leftover_defaults=leftover_defaults,
                            stop_after=stop_after, source=source, linger=True, ready=ready,
                            tick=lambda: rotate_log(directory), reload_from=reload_from,
                            output_trouble=log_error,
                            rebuilt=_reopen_log)
    finally:
        directory.close()


def go_on_detached(sup: Supervisor, run_dir: RunDir, control: Listener,
                   why: str, source: str) -> int:
    """A console's terminal went away (``on_hangup = "detach"``): go on as the detached
    supervisor, in this process, until someone stops everything; then the same exit work
    as ``up``'s. Returns proctui's exit status. Called from a thread (the console's may be
    stuck writing to the terminal that is gone): the signals stay the console's."""
    from proctui.commands.print_notices import PrintNotices
    from proctui.core.output.events import EventQueue
    from proctui.frontends import headless
    from proctui.frontends.printer import Printer
    from proctui.frontends.writer import Writer
    from proctui.remote import heal

    log = open_log(run_dir)
    write_to_log(log if log is not None else os.open(os.devnull, os.O_RDWR))
    log_error = _first_line(source)
    heal.REBUILT.append(_reopen_log)
    events = EventQueue(keep_output=False)  # output goes to the log files already
    sup.send(PrintNotices(events)).result(timeout=5.0)
    control.console_gone()
    what = why if why.startswith("the terminal") else f"the terminal went away ({why})"
    events.put_notice(None, f"{what}: detached (on_hangup = \"detach\"); every process "
                            f"goes on under pid {os.getpid()}")
    printer = Printer(sup.snapshot().names or ["proctui"],
                      Writer(1, on_broken=lambda _why: events.wake(),
                             on_trouble=lambda _why: events.wake()), colour=False)
    runner = headless.HeadlessRunner(
        sup, events, printer, linger=True, started=None,
        closing=lambda: _closing(run_dir, sup, control),
        tick=lambda: rotate_log(run_dir), output_name="supervisor.log",
        already_started=True, signals=False)
    if log_error is not None:
        runner.say_trouble(log_error)
    return runner.run()


def _closing(run_dir: RunDir, sup: Supervisor, control: Listener) -> None:
    from proctui.frontends.finale import keep_summary

    keep_summary(run_dir, sup, terminal_gone=False)  # (the log has it: this is the log)
    control.close()


def _first_line(source: str) -> str | None:
    """The log's first line; why it could not be written (a full disk: up and status
    say it), or None."""
    try:
        os.write(1, f"proctui {__version__}: supervisor pid {os.getpid()} started "
                    f"{time.strftime('%Y-%m-%d %H:%M:%S')} for {source or 'commands'}\n"
                    .encode(errors="replace"))
    except OSError as e:
        return str(e)
    return None


def _reopen_log(rebuilt: RunDir) -> None:
    """The run directory was removed and made again: our notices go to its new
    supervisor.log, not to the removed one's."""
    fd = rebuilt.open_append(LOG)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)


def _tell(fd: int, text: str) -> None:
    with contextlib.suppress(OSError):
        os.write(fd, (text + "\n").encode())
        os.close(fd)


def _read_all(fd: int) -> str:
    chunks = []
    deadline = time.monotonic() + READY_WAIT
    with contextlib.suppress(OSError):
        while time.monotonic() < deadline:
            chunk = os.read(fd, 4096)
            if not chunk:
                break
            chunks.append(chunk)
            if b"\n" in chunk:
                break
    os.close(fd)
    return b"".join(chunks).decode(errors="replace")


def _reap(pid: int) -> None:
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)
