"""The picture of a run, drawn from its journal: one lane per process, its phases in
colour (starting, ready, stopping with its deadlines and extensions, deciding, killed,
left running, ended), and marks for the signals sent and the decisions made.

``proctui timeline -o run.svg`` writes an SVG; without ``-o`` it draws in text, which is
also what the console shows on its timeline key.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field

# phase -> (text mark, SVG colour, words for the legend)
PHASES = {
    "waiting": ("·", "#5f6b7a", "waiting for a dependency"),
    "starting": ("░", "#6c8ebf", "started, not yet ready"),
    "running": ("─", "#3c8d40", "running"),
    "ready": ("━", "#57b35c", "ready"),
    "stopping": ("▒", "#d9a900", "stopping (stop signal sent)"),
    "deciding": ("?", "#b84fb8", "waiting for a decision"),
    "killing": ("█", "#d04437", "SIGKILL sent"),
    "left": ("…", "#e07b00", "left running"),
}


MAX_LANES = 100  # processes drawn; the rest are counted
MAX_MARKS = 300  # marks, segments and deadlines kept per lane; the rest are counted
MAX_NAME = 120  # characters of a name kept
MAX_TEXT = 400  # characters of an outcome kept
MAX_COMMANDS = 40  # commands listed under the text picture (the latest; the rest counted)

# Characters never sent to a terminal nor put in an SVG as they are: C0 and C1 controls,
# DEL, bidirectional controls, line separators, lone surrogates and non-characters.
# XML 1.0 cannot hold most of them at all, and a terminal would obey them.
_HIDDEN = {c: None for c in (*range(0x20), *range(0x7F, 0xA0), *range(0x202A, 0x202F),
                             *range(0x2066, 0x206A), 0x061C, 0x200E, 0x200F, 0x2028,
                             0x2029, 0xFFFE, 0xFFFF)}


def visible(value: object, limit: int = MAX_TEXT) -> str:
    """``value`` as text that shows every character it holds: ``\\x1b`` for ESC,
    ``\\xff`` for an undecodable byte kept as a surrogate, ``\\u202e`` for a bidi
    override; cut to ``limit`` characters."""
    text = value if isinstance(value, str) else str(value)
    text = text[:limit]
    if text.isprintable() and text.isascii():
        return text
    out = []
    for c in text:
        n = ord(c)
        if n in _HIDDEN or 0xD800 <= n <= 0xDFFF:
            if 0xDC80 <= n <= 0xDCFF:  # a byte that was not UTF-8 (surrogateescape)
                out.append(f"\\x{n - 0xDC00:02x}")
            else:
                out.append(f"\\x{n:02x}" if n < 0x100 else f"\\u{n:04x}")
        else:
            out.append(c)
    return "".join(out)


def _number(value: object) -> float | None:
    """A finite number, or None (a bool, a string, an infinity are not times)."""
    if isinstance(value, int | float) and not isinstance(value, bool) \
            and math.isfinite(value) and abs(value) < 1e11:
        return float(value)
    return None


@dataclass
class Lane:
    name: str
    segments: list[tuple[float, float, str]] = field(default_factory=list)
    marks: list[tuple[float, str]] = field(default_factory=list)  # (t, short label)
    deadlines: list[float] = field(default_factory=list)
    outcome: str = ""
    left_out: int = 0  # marks, segments and deadlines not kept (past MAX_MARKS)
    _minor_seen: int = 0
    _stride: int = 1  # of the process's own marks, one in this many is kept
    _phase: str | None = None
    _since: float = 0.0

    def switch(self, t: float, phase: str | None) -> None:
        if self._phase is not None and t > self._since:
            if len(self.segments) < MAX_MARKS:
                self.segments.append((self._since, t, self._phase))
            else:
                self.left_out += 1
        self._phase, self._since = phase, t

    def mark(self, t: float, label: str) -> None:
        """Keep a mark. Past MAX_MARKS, the process's own marks (its extensions and
        stages, which it may send without end) are thinned evenly over time: every other
        one kept is dropped and from then on only one in twice as many is kept. Marks of
        what happened to it (signals, decisions) are kept until a hard bound."""
        minor = label.startswith(("+proc", "stage "))
        if minor:
            self._minor_seen += 1
            if self._minor_seen % self._stride:
                self.left_out += 1
                return
        if len(self.marks) >= MAX_MARKS:
            self._thin()
        if len(self.marks) >= MAX_MARKS:
            self.left_out += 1
            return
        self.marks.append((t, visible(label, 40)))

    def _thin(self) -> None:
        kept, flip = [], False
        for t, label in self.marks:
            if label.startswith(("+proc", "stage ")):
                flip = not flip
                if not flip:
                    self.left_out += 1
                    continue
            kept.append((t, label))
        if len(kept) < len(self.marks):
            self.marks = kept
            self._stride *= 2

    def deadline(self, t: float) -> None:
        if len(self.deadlines) < MAX_MARKS:
            self.deadlines.append(t)
        else:
            self.left_out += 1


@dataclass
class Picture:
    lanes: list[Lane]
    start: float
    end: float
    lanes_left_out: int = 0  # processes past MAX_LANES, not drawn
    commands: list[tuple[float, str]] = field(default_factory=list)  # who asked for what
    commands_left_out: int = 0
    shutdown: tuple[float, str] | None = None  # when everything began to stop, and why


class Builder:
    """A picture built one entry at a time: memory holds one summary per process (at
    most MAX_LANES of them, each with at most MAX_MARKS of each thing), never the
    entries, so a journal of any size is drawn in bounded memory."""

    def __init__(self) -> None:
        self.lanes: dict[str, Lane] = {}
        self.start = math.inf
        self.end = -math.inf
        self.lanes_left_out: set[str] = set()
        self.commands: deque[tuple[float, str]] = deque(maxlen=MAX_COMMANDS)
        self.commands_seen = 0
        self.shutdown: tuple[float, str] | None = None
        self.latest: tuple[float, float] | None = None  # the newest entry's t and wall

    def add(self, e: dict[str, object]) -> None:
        t = _number(e.get("t"))
        if t is None:
            return
        wall = _number(e.get("wall"))
        if t >= self.end and wall is not None:
            self.latest = (t, wall)
        self.start, self.end = min(self.start, t), max(self.end, t)
        if e.get("kind") in ("command", "ask", "answer"):
            self.commands_seen += 1
            self.commands.append((t, _command(e)))
        if e.get("kind") == "shutdown" and self.shutdown is None:
            self.shutdown = (t, visible(e.get("why") or "reason not recorded", 40))
        name = e.get("name")
        if not isinstance(name, str):
            return
        name = visible(name, MAX_NAME)
        ln = self.lanes.get(name)
        if ln is None:
            if len(self.lanes) >= MAX_LANES:
                if len(self.lanes_left_out) < 100_000:
                    self.lanes_left_out.add(name)
                return
            ln = self.lanes[name] = Lane(name)
        _step(ln, t, e)

    def picture(self, now_wall: float | None = None) -> Picture:
        """``now_wall`` (time.time()) for a run still going: the lanes go on to now, not
        to the last entry (three processes started 25 ms apart and running for a minute
        were drawn as "0.0s in all"). Measured from the newest entry by the wall clock,
        as the entries' own clock may be another machine's."""
        start, end = (self.start, self.end) if self.start <= self.end else (0.0, 1.0)
        if now_wall is not None and self.latest is not None:
            t, wall = self.latest
            end = max(end, t + max(0.0, now_wall - wall))
        for ln in self.lanes.values():
            ln.switch(end, None)
        return Picture(list(self.lanes.values()), start, max(end, start + 0.001),
                       len(self.lanes_left_out), list(self.commands),
                       self.commands_seen - len(self.commands), self.shutdown)


def _command(e: dict[str, object]) -> str:
    """A command over the control socket and who sent it: "stop web  uid 1000 · ssh
    10.0.0.5 port 50000"; an agent's request and its answer: "ask 3: kill web  mcp uid
    1000: it hangs", "answer 3: granted  console uid 1000"."""
    name = e.get("name")
    kind = e.get("kind")
    if kind == "ask":
        what = f"ask {visible(e.get('id'), 12)}: {visible(e.get('choice'), 12)}" + \
            (f" {visible(name, MAX_NAME)}" if name else "")
    elif kind == "answer":
        what = f"answer {visible(e.get('id'), 12)}: {visible(e.get('answer'), 12)}"
    else:
        what = visible(e.get("op"), 20) + (f" {visible(name, MAX_NAME)}" if name else "")
    if (by := _number(e.get("by"))) is not None:
        what += f" by {by:g}s"
    ssh = visible(e.get("ssh") or "", 80).split()
    via = f" · ssh {ssh[0]} port {ssh[1]}" if len(ssh) == 2 else ""
    client = f"{visible(e.get('client'), 16)} " if e.get("client") else ""
    who = f"  {client}uid {visible(e.get('uid'), 12)}{via}" if "uid" in e else ""
    why = f": {visible(e.get('why'), 256)}" if kind == "ask" and e.get("why") else ""
    return f"{what}{who}{why}"


def build(entries: Iterable[dict[str, object]], now_wall: float | None = None) -> Picture:
    builder = Builder()
    for e in entries:
        builder.add(e)
    return builder.picture(now_wall)


def _step(ln: Lane, t: float, e: dict[str, object]) -> None:
    kind = e.get("kind")
    if kind == "waiting":
        if ln._phase != "waiting":
            ln.mark(t, "waits")
        ln.switch(t, "waiting")
    elif kind == "start":
        ln.outcome = ""
        ln.switch(t, "starting" if e.get("ready") else "running")
    elif kind == "stage":
        ln.mark(t, f"stage {visible(e.get('stage'), 20)}")
    elif kind == "ready":
        ln.switch(t, "ready")
        ln.mark(t, "ready")
    elif kind == "stop":
        ln.switch(t, "stopping")
    elif kind == "deadline":
        deadline = _number(e.get("deadline"))
        if e.get("phase") == "deciding":
            ln.switch(t, "deciding")
        elif deadline is not None:
            if e.get("phase") == "stopping" and ln._phase == "deciding":
                ln.switch(t, "stopping")
            ln.deadline(deadline)
    elif kind == "signal":
        sig = visible(e.get("signal", ""), 20)
        if sig == "SIGKILL":
            ln.switch(t, "killing")
        elif ln._phase in (None, "running", "ready", "starting"):
            ln.switch(t, "stopping")
        ln.mark(t, sig.removeprefix("SIG"))
    elif kind == "decision":
        action = e.get("action")
        if action in ("wait", "extend") and ln._phase == "deciding":
            # Answered: stopping again (a wait has no deadline entry to say so, and the
            # rest of the stop was drawn as still "waiting for a decision").
            ln.switch(t, "stopping")
        ln.mark(t, visible(action if action is not None else "?", 20))
    elif kind == "extend":
        ln.mark(t, "+" + ("proc" if e.get("who") == "process" else "op"))
    elif kind == "outcome":
        ln.outcome = visible(e.get("text", ""))
        left = e.get("outcome") in ("abandoned", "unkillable", "held", "stop-failed",
                                    "kill-failed")
        # A deadline past the end never ran out: it is not drawn after the process ended.
        ln.deadlines = [d for d in ln.deadlines if d <= t]
        ln.switch(t, "left" if left else None)


# -- text ---------------------------------------------------------------------------------

def text(picture: Picture, width: int = 100) -> list[str]:
    """Lanes as lines of text: ``name │ phases │ outcome``."""
    from proctui.frontends.printer import cells, cut_middle, wrap_words

    names = min(max((cells(ln.name) for ln in picture.lanes), default=4), max(4, width // 3))
    cols = max(10, width - names - 3)
    span = picture.end - picture.start

    def col(t: float) -> int:
        return min(cols - 1, max(0, int((t - picture.start) / span * cols)))

    lines = []
    for ln in picture.lanes:
        row = [" "] * cols
        for a, b, phase in ln.segments:
            for i in range(col(a), max(col(a) + 1, col(b))):
                row[i] = PHASES[phase][0]
        for t in ln.deadlines:
            if picture.start <= t <= picture.end:
                row[col(t)] = "┆"
        for t, label in ln.marks:
            row[col(t)] = "K" if label == "KILL" else "!" if label == "kill" else \
                "▲" if label not in ("ready",) else "✓"
        # Cut in the middle, by columns: names sharing a long prefix stay apart.
        lines.append(f"{cut_middle(ln.name, names)} │{''.join(row)}")
        if ln.outcome:  # folded at words: cut at the edge, "(3s stop timeout)" was lost
            lines += [f"{''.ljust(names)} │ {piece}"
                      for piece in wrap_words(ln.outcome, max(20, width - names - 3), 2)]
        if ln.left_out:
            lines.append(f"{''.ljust(names)} │ ({ln.left_out} more marks, not drawn)")
    if picture.lanes_left_out:
        lines.append(f"(and {picture.lanes_left_out} more processes, not drawn)")
    if picture.shutdown is not None:
        at, why = picture.shutdown
        lines.append(f"{'▼'.rjust(names + 2 + col(at))}")
        lines += wrap_words(f"the shutdown began at {at - picture.start:.1f}s: {why}",
                            width, 2)
    if picture.commands:
        earlier = picture.commands_left_out
        lines += ["", "commands" + (f" (the last {len(picture.commands)}; {earlier} before)"
                                    if earlier else "") + ":"]
        for t, label in picture.commands:
            lines += wrap_words(f"  {seconds_span(t - picture.start):>8}  {label}", width, 14)
    marks = [f"{seconds_span(span)} in all", "┆ deadline",
             "▲ a signal, a wait, a stage, an extension or a decision", "K SIGKILL",
             "! kill decision", "✓ ready"]
    lines += ["", *_packed(marks, " · ", width),
              *_packed([f"{mark} {words}" for mark, _, words in PHASES.values()], "  ",
                       width)]
    return lines


def _packed(items: list[str], sep: str, width: int) -> list[str]:
    """Items joined by ``sep`` into lines of at most ``width`` columns where they fit."""
    lines = [""]
    for item in items:
        if lines[-1] and len(lines[-1]) + len(sep) + len(item) > width:
            lines.append("")
        lines[-1] += (sep if lines[-1] else "") + item
    return lines


def seconds_span(span: float) -> str:
    if span < 120:
        return f"{span:.1f}s"
    return f"{span / 60:.1f} min" if span < 360_000 else f"{span / 86400:.0f} days"
