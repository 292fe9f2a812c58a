"""RUN_DIR/supervisor.log: where a detached supervisor's own lines go (its notices, the
summary), the previous one kept as supervisor.log.1, rotated past LOG_MAX while it runs."""

from __future__ import annotations

import contextlib
import os

from proctui.core.store.rundir import SUPERVISOR_LOG, RunDir

LOG = SUPERVISOR_LOG
LOG_KEEP = 1  # supervisor.log.1: the previous run's, or this run's earlier part
LOG_MAX = 8 << 20  # bytes: past this the log rotates while the supervisor runs


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


def write_to_log(fd: int) -> None:
    """proctui's stdout and stderr go to ``fd`` from now on, its stdin from nowhere."""
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(null)
