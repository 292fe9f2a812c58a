"""What one push carries to a client: the output it has not had yet, within a budget of
bytes; and, for a client that acknowledges its pushes, how many may be on the way.

Over SSH the bytes of a push leave the control socket at once (``proctui stdio`` reads
them) and wait in sshd's channel window, up to 2 MB, ahead of everything pushed after
them: at 100 KB/s a stop ran 27 s before an attached console showed it. A client that
acknowledges (``watch`` with ``acks``: each push ends with ``{"t": "push", "k": K}``, and
it answers ``{"op": "ack", "k": K}``) has at most IN_FLIGHT pushes unacknowledged, and
the output of each is what the link carries in LAG (in bytes on the wire: UTF-8 and JSON
escapes counted), at the pace the acknowledgements show. Views, state and countdowns
then wait behind about two LAGs and a round trip; a process more than CATCH_UP of the
link behind gets its newest lines, the rest counted as not shown; each push begins with
the next process in turn. A client that never acknowledges stalls only its own pushes.
At the close, the last pushes are paced the same way for a second at most, and the last
of them carries the newest lines of whatever the client is still behind on.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable

from proctui.core.output.lines import OutputBuffer, stamp_at
from proctui.protocol import wire
from proctui.protocol.pushes import Out
from proctui.remote.pages import runs
from proctui.remote.slots import Client

LINES_PER_PUSH = 5000  # of one process, in one push
QUIET_AFTER = 0.01  # seconds without output: a push that catches up is a burst's end
LINE_COST = 4  # bytes a line costs on the wire besides its text (quotes, comma, stream)
ESCAPED = 6  # the most bytes one character can take on the wire (a control character)


def output(c: Client, buffer: Callable[[str], OutputBuffer], budget: int,
           write: Callable[[bytes], object], far: float | None = None) -> None:
    """Write the output ``c`` has not had, of every process it watches, within ``budget``
    bytes (a line at least, of each process it reaches); ``c.news`` is set when more is
    left for the next push. A process more than ``far`` bytes behind gets its newest
    lines, the others counted as not shown. Each push begins with the next process in
    turn: a flood first in every push left a quiet process's pane seconds behind."""
    names = list(c.sent)
    turn = c.turn % len(names) if names else 0
    c.turn += 1
    size = 0
    for name in names[turn:] + names[:turn]:
        start = c.sent[name]
        buf = buffer(name)
        mark = buf.mark()  # one instant, under the buffer's lock
        quiet = time.monotonic() - buf.appended_at >= QUIET_AFTER
        if c.has_all(name, mark):
            if quiet and name in c.busy:  # its last push was a burst's end after all
                c.busy.discard(name)
                write(wire.dumps(Out(name, start, output_total=mark.output_total,
                                     partial=mark.partial, cleared=mark.cleared_before,
                                     quiet=True).to_dict()))
            continue
        first = max(start, mark.first)
        behind = start < mark.first
        if behind:
            # It fell behind the scrollback, so it misses lines whatever we send: the
            # newest first. From the oldest held, the end of a flood came a push (50
            # ms) later, and an attached console drew it a tick (100 ms) after that.
            first = max(first, mark.total - LINES_PER_PUSH)
        got = buf.read(first, LINES_PER_PUSH)
        if not behind and far is not None and got.lines and \
                cost(got.lines) * (mark.total - first) / len(got.lines) > far:
            # Further behind than the link carries in a moment: on a slow link it would
            # never catch up, so it is behind all the same.
            behind = True
            got = buf.read(max(first, mark.total - LINES_PER_PUSH), LINES_PER_PUSH)
        keep = fitting(got.lines, budget - size, newest=behind)
        lines, begin = got.lines[keep], got.first + keep.start
        cut = keep.stop < len(got.lines)  # lines left for the next push
        c.sent[name] = begin + len(lines)
        c.partial[name] = "" if cut else got.partial  # (it follows the last line only)
        c.cleared[name] = mark.cleared_before
        # "q": this process has gone quiet and the client has all of it, so a console
        # may draw it now rather than at its next tick (up to 100 ms later); else the
        # next push says so once it has (c.busy).
        quiet = quiet and c.sent[name] >= mark.total
        (c.busy.discard if quiet else c.busy.add)(name)
        stamps = tuple((i - keep.start, order) for i, order in got.stamps
                       if keep.start <= i < keep.stop)
        if got.stamps and (not stamps or stamps[0][0] != 0) and lines:
            # The append its first line came in began before the lines sent.
            stamps = ((0, stamp_at(got.stamps, keep.start)), *stamps)
        data = wire.dumps(Out(name, begin, tuple(lines),
                              tuple((s, n) for s, n in runs(got.streams[keep])),
                              max(0, begin - start), mark.output_total, c.partial[name],
                              mark.cleared_before, quiet, stamps).to_dict())
        write(data)
        size += len(data)
        if c.sent[name] < mark.total or size >= budget:
            # More to send: the next push comes at the next PUSH_HZ tick. Not sooner:
            # pushed as fast as a client read during a flood, the server thread took
            # the GIL from the core and SIGKILLs came twice as late (10 to 21 ms).
            c.news.set()
            if size >= budget:
                break


def fitting(lines: list[str], room: int, newest: bool = False) -> slice:
    """The lines that fit in ``room`` bytes, one at least: the first of them, or the
    newest (the last)."""
    if ESCAPED * sum(map(len, lines)) + LINE_COST * len(lines) <= room:
        return slice(0, len(lines))
    used = count = 0
    for line in (reversed(lines) if newest else lines):
        used += line_cost(line)
        if used > room and count:
            break
        count += 1
    return slice(len(lines) - count, len(lines)) if newest else slice(0, count)


def cost(lines: list[str]) -> int:
    """Bytes ``lines`` take in a message."""
    return sum(map(line_cost, lines))


def line_cost(line: str) -> int:
    """Bytes ``line`` takes in a message: a character of plain ASCII is a byte, others up
    to four (UTF-8), an escape character six (as ``\\u001b``)."""
    if line.isascii() and "\x1b" not in line:
        return len(line) + LINE_COST
    return len(json.dumps(line, ensure_ascii=False).encode("utf-8", "backslashreplace")) + 2


def caught_up(c: Client, buffer: Callable[[str], OutputBuffer]) -> bool:
    """Has ``c`` every line of every process it watches?"""
    return all(c.has_all(name, buffer(name).mark()) for name in c.sent)

