"""Replies that could be big, built a page at a time. Twenty clients each asking for an
80 MB scrollback and never reading once grew the supervisor to 1.7 GB, and building such
replies on the server thread held the GIL while a SIGKILL was due. A page holds at most
PAGE_BYTES, is read a SLICE at a time with a yield between slices, and says where the
next one begins; a client that leaves more than MAX_QUEUED bytes unread, or a reply
unread for DRAIN_LIMIT seconds, is dropped."""

from __future__ import annotations

import asyncio

from proctui.core.output.lines import OutputBuffer, Stream
from proctui.protocol.link import Tail
from proctui.protocol.replies import TailPage

HIGH_WATER = 256 << 10  # bytes a client may leave unread before pushes wait for it
PAGE_BYTES = 256 << 10  # about the most one reply holds (tail, journal: the client pages)
SLICE = 1000  # lines or entries read between two yields to the core's thread
MAX_QUEUED = HIGH_WATER + 2 * PAGE_BYTES + (1 << 20)  # bytes unread: more drops a client
DRAIN_LIMIT = 60.0  # seconds a client may leave its reply unread before it is dropped


async def tail_page(buf: OutputBuffer, request: Tail) -> TailPage:
    """At most PAGE_BYTES of lines: from ``start``, or ``lines`` before the end, or the
    oldest line kept."""
    if request.start is not None:
        start = request.start
    elif request.lines is not None:
        start = _start_of_last(buf, request.lines)
    else:
        start = 0
    first: int | None = None
    lines: list[str] = []
    streams: list[int] = []
    size = 0
    # Lines before the oldest one kept are gone: begin at it (the page's first says so).
    # A read from further back would hold none of them, and the reader would stop there.
    # The operator's clear (c) empties the panes, not what is kept: logs reads past it.
    at = max(start, buf.kept())
    while size < PAGE_BYTES:
        got = buf.read(at, SLICE, cleared=True)
        if first is None:
            first = got.first
        elif got.first != at:
            break  # the scrollback moved past us meanwhile: the next page says so
        for line, stream in zip(got.lines, got.streams, strict=False):
            lines.append(line)
            streams.append(stream)
            size += len(line) + 4
            if size >= PAGE_BYTES:
                break
        at = (first if first is not None else start) + len(lines)
        if not got.lines or at >= buf.mark().total:
            break
        await asyncio.sleep(0)
    begin = start if first is None else first
    end = begin + len(lines)
    total = buf.mark().total
    return TailPage(first=begin, lines=lines, runs=runs(streams), next=end,
                    more=end < total, total=total)


def _start_of_last(buf: OutputBuffer, count: int) -> int:
    """Where the last ``count`` lines of the process's own begin. proctui's marker lines
    (started, ended) are not counted: logs does not print them, and ``logs crasher -n 3``
    printed 1 line of the 7 it had."""
    total, kept = buf.mark().total, buf.kept()
    start = max(kept, total - count)
    own = _own(buf, start, total)
    while own < count and start > kept:
        back = max(kept, start - (count - own))
        own += _own(buf, back, start)
        start = back
    return start


def _own(buf: OutputBuffer, start: int, end: int) -> int:
    """How many of lines ``start`` .. ``end`` are the process's (not proctui's)."""
    own, at = 0, start
    while at < end:
        got = buf.read(at, min(SLICE, end - at), cleared=True)
        if not got.lines or got.first != at:
            break  # (the scrollback moved meanwhile: counted as far as it could be)
        own += sum(stream != Stream.PROCTUI for stream in got.streams)
        at += len(got.lines)
    return own


def runs(streams: list[int]) -> list[list[int]]:
    """[1, 1, 1, 2] as [[1, 3], [2, 1]]: most output is long runs of one stream."""
    out: list[list[int]] = []
    for s in streams:
        if out and out[-1][0] == s:
            out[-1][1] += 1
        else:
            out.append([s, 1])
    return out
