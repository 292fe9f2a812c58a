"""The timeline as an SVG picture (``proctui timeline -o FILE``): the same lanes, marks
and legend as the text, for a report or a browser."""

from __future__ import annotations

from html import escape

from proctui.frontends.timeline import PHASES, Picture, visible

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
           f'<text x="10" y="22" fill="#ddd" font-size="15">{escape(visible(title))}</text>']
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
            wide = 6.2 * len(label)
            at = max(x(t) + 5, free)
            if at + wide > width - 4:  # past the right edge: the label goes to its left
                at = max(free, x(t) - 5 - wide)
                if at + wide > width - 4:
                    continue  # no room left on this lane: the mark shows, its label not
            free = at + wide + 4
            out.append(f'<text x="{at:.1f}" y="{y - 3}" fill="#ccc" '
                       f'font-size="10">{escape(label)}</text>')
        if ln.outcome:
            out.append(f'<text x="{LEFT}" y="{y + 36}" fill="#aaa" font-size="11">'
                       f'{escape(ln.outcome[:130])}</text>')
    if picture.shutdown is not None:
        at, why = picture.shutdown
        label = f"the shutdown began: {why}"
        anchor = "end" if x(at) + 6.2 * len(label) > width - 4 else "start"
        out.append(f'<line x1="{x(at):.1f}" y1="{TOP}" x2="{x(at):.1f}" y2="{height - 80}" '
                   f'stroke="#e05050" stroke-width="1.5"/>')
        out.append(f'<text x="{x(at) + (-4 if anchor == "end" else 4):.1f}" '
                   f'y="{height - 84}" fill="#e05050" font-size="11" '
                   f'text-anchor="{anchor}">{escape(label)}</text>')
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
