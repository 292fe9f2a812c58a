"""The run's journal: every fact worth showing later, one JSON object a line, in the run
directory (journal.jsonl; the previous run's is kept as journal.1.jsonl). Each entry has
a monotonic time (``t``, comparable within a boot) and a wall time (``wall``). Pictures
(proctui timeline) and summaries are drawn from it."""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections import deque

from proctui.core.rundir import RunDir

NAME = "journal.jsonl"
PREVIOUS = "journal.1.jsonl"
MAX_BYTES = 64 << 20  # past this the journal stops growing (and says so once)


KEPT = 50_000  # entries also kept in memory, for a console's timeline


class Journal:
    def __init__(self, run_dir: RunDir | None) -> None:
        self.entries: deque[dict[str, object]] = deque(maxlen=KEPT)
        self.fd: int | None = None
        self.size = 0
        self.full = False
        if run_dir is None or run_dir.fd is None:
            return
        with contextlib.suppress(OSError):
            os.replace(NAME, PREVIOUS, src_dir_fd=run_dir.fd, dst_dir_fd=run_dir.fd)
        with contextlib.suppress(OSError):
            self.fd = run_dir.open_append(NAME)
        self.path = run_dir.path / NAME

    def write(self, kind: str, name: str | None = None, **data: object) -> None:
        entry: dict[str, object] = {"t": round(time.monotonic(), 4),
                                    "wall": round(time.time(), 3), "kind": kind}
        if name is not None:
            entry["name"] = name
        entry.update({k: v for k, v in data.items() if v is not None})
        self.entries.append(entry)
        if self.fd is None or self.full:
            return
        line = json.dumps(entry, ensure_ascii=False, default=str) + "\n"
        if self.size + len(line) > MAX_BYTES:
            self.full = True
            line = json.dumps({"t": entry["t"], "wall": entry["wall"],
                               "kind": "journal-full"}) + "\n"
        try:
            self.size += os.write(self.fd, line.encode(errors="backslashreplace"))
        except OSError:
            self.fd = None

    def close(self) -> None:
        if self.fd is not None:
            with contextlib.suppress(OSError):
                os.close(self.fd)
            self.fd = None


def parse_lines(text: str) -> list[dict[str, object]]:
    """Every entry of a journal (lines that are not JSON objects are skipped)."""
    entries = []
    for line in text.splitlines():
        with contextlib.suppress(ValueError, RecursionError):
            entry = json.loads(line)
            if isinstance(entry, dict) and "kind" in entry and \
                    isinstance(entry.get("t"), int | float):
                entries.append(entry)
    return entries
