"""The run's journal: every fact worth showing later, one JSON object a line, in the run
directory (journal.jsonl; the previous run's is kept as journal.1.jsonl). Each entry has
a monotonic time (``t``, comparable within a boot) and a wall time (``wall``). Pictures
(proctui timeline) and summaries are drawn from it.

A process can talk as fast as it likes; the journal must still tell how its shutdown
went. So what a process says (notify messages: ``chatter``) is coalesced per process, a
few entries a second, and may fill only part of the file; the rest is kept for the
entries that tell what happened (``write``: start, stop, signals, deadlines, decisions,
outcomes, the end). Memory is bounded in bytes too, and every entry is written as ASCII
JSON whatever it holds."""

from __future__ import annotations

import contextlib
import errno
import json
import math
import os
import stat
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import BinaryIO

from proctui.core.store.kinds import Kind
from proctui.core.store.rundir import RunDir
from proctui.records import dataclass

NAME = "journal.jsonl"
PREVIOUS = "journal.1.jsonl"
MAX_BYTES = 64 << 20  # past this the journal stops growing (and says so once)
# The last part of the file is kept for the entries that tell what happened (start,
# stop, signals, deadlines, decisions, outcomes, the end): chatter never gets it.
RESERVE = 8 << 20
CHATTER_PER_SECOND = 4  # chatter entries per process and kind; the rest coalesced
KEPT = 50_000  # entries also kept in memory, for a console's timeline
EVENTS_KEPT = 20_000  # entries that tell what happened, kept for readers from a number
MEMORY = 8 << 20  # and at most about this many bytes of them as JSON (some 20 MB live)

Entry = dict[str, object]


class _Chatter:
    """Chatter of one process and kind within the current second (a plain class: a
    mutable dataclass's methods are compiled at import)."""

    __slots__ = ("pending", "second", "skipped", "written")

    def __init__(self, second: float) -> None:
        self.second = second  # when the current second began
        self.written = 0
        self.skipped = 0  # coalesced away since the last entry written
        self.pending: Entry | None = None  # the latest of them, written when it matters


class Journal:
    def __init__(self, run_dir: RunDir | None, *, max_bytes: int = MAX_BYTES,
                 reserve: int = RESERVE, memory: int = MEMORY,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.entries: deque[Entry] = deque()
        self._sizes: deque[int] = deque()
        self.memory_used = 0
        self.memory = memory
        self.max_bytes = max_bytes
        self.chatter_bytes = max_bytes - reserve
        self.clock = clock
        # Told when writes to the file begin to fail (with why) and when one goes
        # through again (None): a full disk, said where the operator looks.
        self.on_trouble: Callable[[str | None], None] = lambda _why: None
        self.failing: str | None = None  # why the latest write failed, until one succeeds
        self._lost = 0  # entries not written since the last that was
        self.seq = 0  # every entry's number, in order: a reader asks from its last one
        # The entries that tell what happened (not chatter), in the order of their
        # numbers, for ``since``: a reader that reconnects asks from its last number.
        self._told: list[Entry] = []
        self._told_seqs: list[int] = []
        self.fd: int | None = None
        self.path: Path | None = None
        self.size = 0
        self.full = False
        self.chatter_full = False
        self._chatter: dict[tuple[Kind, str], _Chatter] = {}
        if run_dir is None or run_dir.fd is None:
            return
        with contextlib.suppress(OSError):
            os.replace(NAME, PREVIOUS, src_dir_fd=run_dir.fd, dst_dir_fd=run_dir.fd)
        with contextlib.suppress(OSError):
            self.fd = run_dir.open_append(NAME)
        self.path = run_dir.path / NAME

    def write(self, kind: Kind, name: str | None = None, when: float | None = None,
              **data: object) -> None:
        """An entry that tells what happened: always written while the file has room.
        A process's coalesced chatter comes first, so its last word precedes its stop.
        ``when``: the instant it happened (monotonic), when that was before now (a
        SIGKILL sent before the bookkeeping of a batch of them)."""
        if self._chatter:
            for key in [k for k in self._chatter if name is None or k[1] == name]:
                self._flush(key)
        entry = self._entry(kind, name, data, when)
        self._tell(entry)
        self._put(entry, chatter=False)

    def _tell(self, entry: Entry) -> None:
        self._told.append(entry)
        self._told_seqs.append(entry["seq"])  # type: ignore[arg-type]
        if len(self._told) > 2 * EVENTS_KEPT:
            del self._told[:EVENTS_KEPT]
            del self._told_seqs[:EVENTS_KEPT]

    def since(self, seq: int, limit: int) -> tuple[list[Entry], int]:
        """Up to ``limit`` entries that tell what happened, numbered after ``seq``, and
        how many such entries after ``seq`` are no longer kept (0: nothing was lost)."""
        import bisect

        start = bisect.bisect_right(self._told_seqs, seq)
        lost = 0
        if start == 0 and self._told_seqs and self._told_seqs[0] > seq + 1:
            lost = self._told_seqs[0] - seq - 1  # numbers between: older than kept
        return self._told[start:start + limit], lost

    def chatter(self, kind: Kind, name: str, **data: object) -> None:
        """An entry a process can make as often as it likes (a notify message): a few a
        second per process are written; of the rest, only the latest is kept, written
        with the next one or before the process's next entry that matters, and says
        how many it stands for (``coalesced``)."""
        now = self.clock()
        key = (kind, name)
        c = self._chatter.get(key)
        if c is None or now - c.second >= 1.0:
            if c is not None:
                self._flush(key)
            c = self._chatter[key] = _Chatter(now)  # a new second
        entry = self._entry(kind, name, data)
        if c.written < CHATTER_PER_SECOND:
            c.written += 1
            self._put(entry, chatter=True)
        else:
            if c.pending is not None:
                c.skipped += 1
            c.pending = entry

    def _flush(self, key: tuple[Kind, str]) -> None:
        """Write the pending entry; the second goes on (a stop does not buy a process
        a fresh allowance of chatter)."""
        c = self._chatter.get(key)
        if c is None or c.pending is None:
            return
        if c.skipped:
            c.pending["coalesced"] = c.skipped
        entry, c.pending, c.skipped = c.pending, None, 0
        self._put(entry, chatter=True)

    def _entry(self, kind: Kind, name: str | None, data: dict[str, object],
               when: float | None = None) -> Entry:
        self.seq += 1
        now = self.clock()
        at = now if when is None else when
        entry: Entry = {"t": round(at, 4), "wall": round(time.time() - (now - at), 3),
                        "kind": kind, "seq": self.seq}
        if name is not None:
            entry["name"] = name
        entry.update({k: v for k, v in data.items() if v is not None})
        return entry

    def _put(self, entry: Entry, chatter: bool) -> None:
        line = encode(entry)
        self._remember(entry, len(line))
        if self.fd is None or self.full:
            return
        if chatter:
            if self.chatter_full:
                return
            if self.size + len(line) > self.chatter_bytes:
                self.chatter_full = True
                entry = {"t": entry["t"], "wall": entry["wall"], "kind": Kind.CHATTER_FULL}
                line = encode(entry)  # from the reserve, once: from here only what matters
        elif self.size + len(line) > self.max_bytes:
            self.full = True
            line = encode({"t": entry["t"], "wall": entry["wall"], "kind": Kind.JOURNAL_FULL})
        self._write(line, entry)

    def _write(self, line: bytes, entry: Entry) -> None:
        """Write one entry's line. A write that fails (a full disk) loses that entry, not
        the rest of the run: the next entry tries again, and once one goes through, a
        gap entry before it says how many were lost and why. (The journal used to stop
        at the first failure, and the timeline of a run that outlived a full /run ended
        there.)"""
        assert self.fd is not None
        gap = b""
        if self.failing is not None:
            gap = encode({"t": entry["t"], "wall": entry["wall"], "kind": Kind.JOURNAL_GAP,
                          "lost": self._lost, "why": self.failing})
        data = gap + line
        try:
            written = os.write(self.fd, data)
        except OSError as e:
            self._failed(str(e))
            return
        if written < len(data):
            # A short write: the disk filled during it. Half a line would be a bad line
            # to every reader (the timeline refused the whole journal): take it back.
            with contextlib.suppress(OSError):
                os.ftruncate(self.fd, os.fstat(self.fd).st_size - written)
            self._failed(os.strerror(errno.ENOSPC))
            return
        self.size += written
        if self.failing is not None:
            self.failing, self._lost = None, 0
            self.on_trouble(None)

    def _failed(self, why: str) -> None:
        first = self.failing is None
        self.failing = why
        self._lost += 1
        if first:
            self.on_trouble(why)

    def _remember(self, entry: Entry, size: int) -> None:
        self.entries.append(entry)
        self._sizes.append(size)
        self.memory_used += size
        while len(self.entries) > 1 and (len(self.entries) > KEPT
                                         or self.memory_used > self.memory):
            self.entries.popleft()
            self.memory_used -= self._sizes.popleft()

    def reopen(self, run_dir: RunDir) -> None:
        """The run directory was removed and made again (remote/heal.py): go on in its
        new journal, which begins with the entries still held here (the newest; the file
        went with the directory). Else the timeline of the rest of the run was lost."""
        if self.fd is not None:
            with contextlib.suppress(OSError):
                os.close(self.fd)
        self.fd, self.size, self.full, self.chatter_full = None, 0, False, False
        if run_dir.fd is None:
            return
        with contextlib.suppress(OSError):
            self.fd = run_dir.open_append(NAME)
        self.path = run_dir.path / NAME
        data = memoryview(b"".join(encode(entry) for entry in self.entries))
        try:
            while self.fd is not None and data:
                written = os.write(self.fd, data)
                self.size += written
                data = data[written:]
        except OSError:
            self.fd = None

    def close(self) -> None:
        for key in list(self._chatter):
            self._flush(key)
        self._chatter.clear()
        if self.fd is not None:
            with contextlib.suppress(OSError):
                os.close(self.fd)
            self.fd = None


def encode(entry: Entry) -> bytes:
    """One line of JSON in ASCII, whatever the entry holds: a lone surrogate (a command
    line's undecodable byte) is written as its escape, an infinity or NaN (no JSON) as
    text, anything else as its str()."""
    try:
        text = json.dumps(entry, ensure_ascii=True, allow_nan=False, default=str)
    except (ValueError, TypeError, RecursionError):
        text = json.dumps(_plain(entry), ensure_ascii=True, allow_nan=False, default=str)
    return text.encode("ascii") + b"\n"


def _plain(value: object, depth: int = 0) -> object:
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if depth > 20:
        return str(value)[:200]
    if isinstance(value, dict):
        return {str(k): _plain(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v, depth + 1) for v in value]
    return value


# -- reading ------------------------------------------------------------------------------
# Every reader of a journal (proctui timeline) goes through here: whatever the file holds,
# an entry comes out as a dict with a finite, plausible ``t`` and a ``kind``, or the line
# is named as bad; nothing here raises.

MAX_LINE = 16 << 20  # a line longer than this is not read into memory (the writer's are small)
MAX_TIME = 1e11  # a monotonic or wall time past this (some 3,000 years) is no time


@dataclass(frozen=True, slots=True)
class BadLine:
    """A line that is not a journal entry: its number (from 1) and what is wrong with it."""

    number: int
    why: str


def _no_constant(name: str) -> object:
    raise ValueError(f"{name} is not JSON")


_DECODER = json.JSONDecoder(parse_constant=_no_constant)  # one, not one a line: 20% faster


def parse_entry(line: bytes | str) -> Entry | str:
    """One line: the entry, or the words saying what is wrong with it."""
    try:
        entry = _DECODER.decode(line.decode("utf-8") if isinstance(line, bytes) else line)
    except UnicodeDecodeError:
        return "not UTF-8"
    except RecursionError:
        return "nested too deeply"
    except ValueError as e:
        return str(e).split(":")[0][:80] or "not JSON"
    if not isinstance(entry, dict):
        return "not a JSON object"
    t = entry.get("t")
    if "kind" not in entry or not isinstance(t, int | float) or isinstance(t, bool):
        return "no kind or no time"
    if not -MAX_TIME <= t <= MAX_TIME:  # also NaN, which fails every comparison
        return f"time {str(t)[:30]} out of range"
    return entry


def read_lines(lines: Iterable[bytes]) -> Iterator[Entry | BadLine]:
    """Entries of a journal, one per line (blank lines skipped), with a BadLine for each
    line that is not one. Lines are taken one at a time: memory stays bounded."""
    for number, line in enumerate(lines, 1):
        if len(line) > MAX_LINE:
            yield BadLine(number, f"longer than {MAX_LINE >> 20} MB")
            continue
        if not line.strip():
            continue
        got = parse_entry(line)
        yield BadLine(number, got) if isinstance(got, str) else got


class Unreadable(Exception):
    """The journal cannot be read at all; ``str()`` says why, in a few words."""


def read_file(path: Path) -> Iterator[Entry | BadLine]:
    """The entries of a journal file, streamed. Like every file of the run directory, it
    is opened without following a symlink and must be a regular file (a FIFO would block
    for ever). A bad last line without its newline (a write cut short) is left out.
    Raises Unreadable when the file cannot be opened or read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        raise Unreadable("a symlink (not followed)" if e.errno == errno.ELOOP
                         else (e.strerror or str(e))) from None
    with os.fdopen(fd, "rb", buffering=1 << 20) as f:
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise Unreadable("not a regular file")
            os.set_blocking(fd, True)
            lines = _Lines(f)
            previous: Entry | BadLine | None = None
            for got in read_lines(lines):
                if previous is not None:
                    yield previous
                previous = got
        except OSError as e:
            raise Unreadable(e.strerror or str(e)) from None
    if previous is not None and not (isinstance(previous, BadLine) and lines.cut_short):
        yield previous


class _Lines:
    """The lines of a file, each read with a bound: a longer one is skipped to its end
    and stands as a line just over the bound (so that it is named as too long)."""

    def __init__(self, f: BinaryIO) -> None:
        self.f = f
        self.cut_short = False  # the last line read had no newline

    def __iter__(self) -> Iterator[bytes]:
        while line := self.f.readline(MAX_LINE + 1):
            if len(line) > MAX_LINE and not line.endswith(b"\n"):
                while (more := self.f.readline(1 << 20)) and not more.endswith(b"\n"):
                    pass
                line = line[:MAX_LINE + 1]
            self.cut_short = not line.endswith(b"\n")
            yield line


def parse_lines(text: str) -> list[Entry]:
    """Every entry of a journal (lines that are not journal entries are skipped)."""
    lines = (line.encode("utf-8", "surrogatepass") for line in text.splitlines())
    return [e for e in read_lines(lines) if not isinstance(e, BadLine)]
