"""The summary kept on disk: RUN_DIR/summary.txt at the end of every supervised run, and
in RUN_DIR/supervisor.log as well when the terminal it was printed to has gone away (an
SSH drop with ``on_hangup = "stop"``: nobody saw it there)."""

from __future__ import annotations

import contextlib
import os
import time
from typing import TYPE_CHECKING

from proctui.frontends.policy import summary

if TYPE_CHECKING:
    from proctui.commands.api import Core
    from proctui.core.store.rundir import RunDir

SUMMARY = "summary.txt"


def keep_summary(run_dir: RunDir | None, core: Core, *,
                 terminal_gone: bool | None = None) -> None:
    """Write the summary to RUN_DIR/summary.txt (whole, replacing the last run's); also
    to supervisor.log when ``terminal_gone`` (default: the shutdown began with a
    hangup). Never raises: a full disk loses the file, not the exit."""
    if run_dir is None or run_dir.fd is None:
        return
    snapshot = core.snapshot()
    lines, status = summary(snapshot)
    when = time.strftime("%Y-%m-%d %H:%M:%S")
    why = snapshot.shutdown_why
    head = f"proctui pid {os.getpid()} ended {when}, exit status {status}" + (
        f" (the shutdown began: {why})" if why else "")
    text = "\n".join([head, *lines]) + "\n"
    with contextlib.suppress(OSError):
        run_dir.replace_file(SUMMARY, text.encode(errors="replace"))
    if terminal_gone is None:
        terminal_gone = why == "hangup"
    if not terminal_gone:
        return
    from proctui.core.store.rundir import SUPERVISOR_LOG

    run_dir.append_text(SUPERVISOR_LOG, "".join(f"proctui | {line}\n" for line in [
        "the terminal went away; the summary it was not shown:", head, *lines]))
