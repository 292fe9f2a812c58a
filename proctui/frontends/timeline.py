"""The picture of a run, drawn from its journal: one lane per process, its phases in
colour (starting, ready, stopping with its deadlines and extensions, deciding, killed,
left running, ended), and marks for the signals sent and the decisions made.

``proctui timeline -o run.svg`` writes an SVG; without ``-o`` it draws in text, which is
also what the console shows on its timeline key.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from html import escape

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


@dataclass
class Lane:
    name: str
    segments: list[tuple[float, float, str]] = field(default_factory=list)
    marks: list[tuple[float, str]] = field(default_factory=list)  # (t, short label)
    deadlines: list[float] = field(default_factory=list)
    outcome: str = ""
    _phase: str | None = None
    _since: float = 0.0

    def switch(self, t: float, phase: str | None) -> None:
        if self._phase is not None and t > self._since:
            self.segments.append((self._since, t, self._phase))
        self._phase, self._since = phase, t


@dataclass
class Picture:
    lanes: list[Lane]
    start: float
    end: float


def build(entries: list[dict[str, object]]) -> Picture:
    lanes: dict[str, Lane] = {}
    times = [float(e["t"]) for e in entries if isinstance(e.get("t"), int | float)]
    start, end = (min(times), max(times)) if times else (0.0, 1.0)

    def lane(name: str) -> Lane:
        return lanes.setdefault(name, Lane(name))

    for e in entries:
        t, kind, name = float(e["t"]), e.get("kind"), e.get("name")
        if not isinstance(name, str):
            continue
        ln = lane(name)
        if kind == "waiting":
            ln.switch(t, "waiting")
            ln.marks.append((t, "waits"))
        elif kind == "start":
            ln.outcome = ""
            ln.switch(t, "starting" if e.get("ready") else "running")
        elif kind == "stage":
            ln.marks.append((t, f"stage {e.get('stage')}"))
        elif kind == "ready":
            ln.switch(t, "ready")
            ln.marks.append((t, "ready"))
        elif kind == "stop":
            ln.switch(t, "stopping")
        elif kind == "deadline":
            if e.get("phase") == "deciding":
                ln.switch(t, "deciding")
            elif isinstance(e.get("deadline"), int | float):
                if e.get("phase") == "stopping" and ln._phase == "deciding":
                    ln.switch(t, "stopping")
                ln.deadlines.append(float(e["deadline"]))  # type: ignore[arg-type]
        elif kind == "signal":
            sig = str(e.get("signal", ""))
            if sig == "SIGKILL":
                ln.switch(t, "killing")
            elif ln._phase in (None, "running", "ready", "starting"):
                ln.switch(t, "stopping")
            ln.marks.append((t, sig.removeprefix("SIG")))
        elif kind == "decision":
            ln.marks.append((t, str(e.get("action", "?"))))
        elif kind == "extend":
            ln.marks.append((t, "+" + ("proc" if e.get("who") == "process" else "op")))
        elif kind == "outcome":
            ln.outcome = str(e.get("text", ""))
            left = e.get("outcome") in ("abandoned", "unkillable", "held", "stop-failed",
                                     "kill-failed")
            ln.switch(t, "left" if left else None)
    for ln in lanes.values():
        ln.switch(end, None)
    return Picture(list(lanes.values()), start, max(end, start + 0.001))


# -- text ---------------------------------------------------------------------------------

def text(picture: Picture, width: int = 100) -> list[str]:
    """Lanes as lines of text: ``name │ phases │ outcome``."""
    names = max((len(ln.name) for ln in picture.lanes), default=4)
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
        lines.append(f"{ln.name.ljust(names)} │{''.join(row)}")
        if ln.outcome:
            lines.append(f"{''.ljust(names)} │ {ln.outcome}"[:width])
    legend = "  ".join(f"{mark} {words}" for mark, _, words in PHASES.values())
    lines += ["", f"{seconds_span(span)} in all · ┆ deadline · ▲ signal · K SIGKILL · "
                  "! kill decision · ✓ ready", legend]
    return lines


def seconds_span(span: float) -> str:
    return f"{span:.1f}s" if span < 120 else f"{span / 60:.1f} min"


# -- SVG ----------------------------------------------------------------------------------

LANE = 34
LEFT = 150
RIGHT = 30
TOP = 40


def svg(picture: Picture, width: int = 1100, title: str = "proctui timeline") -> str:
    span = picture.end - picture.start
    inner = width - LEFT - RIGHT
    height = TOP + LANE * len(picture.lanes) * 2 + 110

    def x(t: float) -> float:
        return LEFT + (t - picture.start) / span * inner

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'font-family="monospace" font-size="12">',
           '<rect width="100%" height="100%" fill="#1e1e1e"/>',
           f'<text x="10" y="22" fill="#ddd" font-size="15">{escape(title)}</text>']
    for i in range(6):  # the time axis
        t = picture.start + span * i / 5
        out.append(f'<line x1="{x(t):.1f}" y1="{TOP}" x2="{x(t):.1f}" '
                   f'y2="{height - 80}" stroke="#333"/>')
        out.append(f'<text x="{x(t):.1f}" y="{TOP - 6}" fill="#888" text-anchor="middle">'
                   f'{t - picture.start:.1f}s</text>')
    for row, ln in enumerate(picture.lanes):
        y = TOP + 10 + row * LANE * 2
        out.append(f'<text x="10" y="{y + 14}" fill="#ddd">{escape(ln.name[:18])}</text>')
        for a, b, phase in ln.segments:
            w = max(1.5, x(b) - x(a))
            out.append(f'<rect x="{x(a):.1f}" y="{y}" width="{w:.1f}" height="20" '
                       f'fill="{PHASES[phase][1]}"><title>{escape(PHASES[phase][2])} '
                       f'{a - picture.start:.1f}s to {b - picture.start:.1f}s</title></rect>')
        for i, t in enumerate(ln.deadlines):
            if picture.start <= t <= picture.end:
                # The last deadline armed is the one that held; earlier ones were moved.
                colour = "#fff" if i == len(ln.deadlines) - 1 else "#777"
                out.append(f'<line x1="{x(t):.1f}" y1="{y - 4}" x2="{x(t):.1f}" '
                           f'y2="{y + 24}" stroke="{colour}" stroke-dasharray="3,2"/>')
        free = 0.0  # where the previous label ends: labels of close marks never overlap
        for t, label in ln.marks:
            out.append(f'<path d="M{x(t):.1f},{y - 2} l-4,-7 h8 z" fill="#fff"/>')
            at = max(x(t) + 5, free)
            free = at + 6.2 * len(label) + 4
            out.append(f'<text x="{at:.1f}" y="{y - 3}" fill="#ccc" '
                       f'font-size="10">{escape(label)}</text>')
        if ln.outcome:
            out.append(f'<text x="{LEFT}" y="{y + 36}" fill="#aaa" font-size="11">'
                       f'{escape(ln.outcome[:130])}</text>')
    lx, ly = 10, height - 70
    for _mark, colour, words in PHASES.values():
        out.append(f'<rect x="{lx}" y="{ly}" width="14" height="14" fill="{colour}"/>')
        out.append(f'<text x="{lx + 18}" y="{ly + 11}" fill="#ccc" font-size="11">'
                   f'{escape(words)}</text>')
        lx += 18 + 7 * len(words) + 16
        if lx > width - 200:
            lx, ly = 10, ly + 20
    out.append(f'<text x="10" y="{height - 10}" fill="#888" font-size="11">dashed: the '
               'deadline that held (grey: one that was moved) · ▼ a signal, a decision, an '
               'extension (+op by the operator, +proc by the process), ready</text>')
    out.append("</svg>")
    return "\n".join(out)
