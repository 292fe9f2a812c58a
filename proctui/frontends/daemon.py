"""``proctui run --detach``: the supervisor in the background, in a session of its own.

The command forks. The child leaves the terminal's session, takes the run directory's
lock, sends its own notices to RUN_DIR/supervisor.log, starts every process, serves the
control socket, and only then tells the parent, through a pipe, that it is ready (or
why it could not start). The parent prints how to reach it and exits: so a script that
runs ``proctui up`` can use ``proctui status`` on the very next line.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from proctui import __version__
from proctui.config import ProcessSpec
from proctui.core.store.rundir import RunDir

LOG = "supervisor.log"
LOG_KEEP = 1  # supervisor.log.1: the previous run's, or this run's earlier part
LOG_MAX = 8 << 20  # bytes: past this the log rotates while the supervisor runs
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
               reload_from: Callable[[], Sequence[ProcessSpec]] | None = None) -> int:
    from proctui.core.store.rundir import RunDirError
    from proctui.frontends import headless

    os.setsid()  # no controlling terminal: a hangup there is not ours
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    directory = RunDir(path)
    try:
        directory.open()
    except RunDirError as e:
        _tell(ready_fd, f"error {e}")
        return 2
    log = open_log(directory)
    if log is None:
        log = null
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.chdir("/")  # never hold a mount busy (every process has its own cwd)
    log_error = None
    try:  # a full disk loses the log, not the run: said by up and status instead
        os.write(1, f"proctui {__version__}: supervisor pid {os.getpid()} started "
                    f"{time.strftime('%Y-%m-%d %H:%M:%S')} for {source or 'commands'}\n"
                    .encode(errors="replace"))
    except OSError as e:
        log_error = str(e)

    def reopen_log(rebuilt: RunDir) -> None:
        """The run directory was removed and made again: our notices go to its new
        supervisor.log, not to the removed one's."""
        fd = rebuilt.open_append(LOG)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.close(fd)

    from proctui.remote import heal

    heal.REBUILT.append(reopen_log)

    def ready(error: str | None) -> None:
        _tell(ready_fd, f"error {error}; stopping everything" if error else
              f"ready {os.getpid()}")

    try:
        return headless.run(specs, run_dir=directory, leftover_defaults=leftover_defaults,
                            stop_after=stop_after, source=source, linger=True, ready=ready,
                            tick=lambda: rotate_log(directory), reload_from=reload_from,
                            output_trouble=log_error)
    finally:
        directory.close()


def open_log(directory: RunDir) -> int | None:
    """RUN_DIR/supervisor.log, the previous one kept as supervisor.log.1."""
    if directory.fd is None:
        return None
    with contextlib.suppress(OSError):
        os.replace(LOG, f"{LOG}.{LOG_KEEP}", src_dir_fd=directory.fd,
                   dst_dir_fd=directory.fd)
    try:
        return directory.open_append(LOG)
    except OSError:
        return None


def rotate_log(directory: RunDir, limit: int = LOG_MAX) -> bool:
    """supervisor.log past ``limit``: it becomes supervisor.log.1 and a new one takes
    proctui's stdout and stderr (a chatty neighbour or a flood of refused connections
    once grew it without bound until the next start). True when it rotated."""
    try:
        if os.fstat(1).st_size < limit:
            return False
    except OSError:
        return False
    fd = open_log(directory)
    if fd is None:
        return False
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    return True


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
