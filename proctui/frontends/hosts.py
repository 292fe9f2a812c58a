"""``proctui status --host a --host b ...``: one table for several boxes, each asked at
once (a thread per box, each bounded by its connection's waits). A box that does not
answer has its own line saying so and why, and makes the exit status 2.

``--json`` prints a list, one object per box in the order given:
``{"host": DEST, "error": null, "status": <status --json of that box>}``, or, for a box
that did not answer, ``{"host": DEST, "error": "why, one line", "status": null}``."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

from proctui.core.output.text import clean
from proctui.frontends.words import duration, look
from proctui.remote.client import Connection, NoSupervisor

EXIT_SILENT = 2  # as ``status`` on one box that does not answer


@dataclass
class Answer:
    host: str
    error: str | None = None
    rows: list[tuple[str, str, str, str]] = field(default_factory=list)
    footer: str = ""
    json: dict[str, Any] | None = None


def ask(host: str, dial: Callable[[], Connection], as_json: bool) -> Answer:
    """One box's rows (or JSON), or why it did not answer, in one line."""
    from proctui.frontends.status import detail, status_json

    try:
        conn = dial()
    except NoSupervisor as e:
        return Answer(host, _why(host, str(e)))
    except OSError as e:
        return Answer(host, f"the connection failed: {e.strerror or e}")
    try:
        now = time.monotonic()
        if as_json:
            return Answer(host, json=status_json(conn, now))
        rows = [(v.name, look(v).label, str(v.pid or "-"), detail(v, now))
                for v in conn.ordered_views()]
        hello, state = conn.hello, conn.state
        up = duration(time.time() - (hello.started or time.time()))
        consoles = state.consoles
        footer = (f"{host}: supervisor pid {hello.pid}, up {up} · run dir "
                  f"{hello.run_dir} · {consoles} console{'s' if consoles != 1 else ''}"
                  " attached" + (" · stopping everything" if state.shutting_down
                                 else ""))
        return Answer(host, rows=rows, footer=footer)
    finally:
        conn.close()


def _why(host: str, text: str) -> str:
    return text.removeprefix(f"{host}: ")


def status(hosts: Sequence[str], dial_for: Callable[[str], Callable[[], Connection]],
           as_json: bool, out: TextIO) -> int:
    """Ask every box at once; print one table (or one JSON list); 0 when all answered."""
    answers: list[Answer | None] = [None] * len(hosts)

    def one(i: int, host: str) -> None:
        try:
            answers[i] = ask(host, dial_for(host), as_json)
        except NoSupervisor as e:  # (a destination ssh would not take)
            answers[i] = Answer(host, _why(host, str(e)))
        except Exception as e:  # one box's surprise is its own line, not everyone's end
            answers[i] = Answer(host, f"internal error: {e!r}"[:300])

    threads = [threading.Thread(target=one, args=(i, h), daemon=True)
               for i, h in enumerate(hosts)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    got = [a if a is not None else Answer(hosts[i], "no answer") for i, a in enumerate(answers)]
    if as_json:
        out.write(json.dumps([{"host": a.host, "error": a.error, "status": a.json}
                              for a in got], indent=2) + "\n")
    else:
        _table(got, out)
    return EXIT_SILENT if any(a.error is not None for a in got) else 0


def _table(got: list[Answer], out: TextIO) -> None:
    rows: list[tuple[str, ...]] = []
    for a in got:
        if a.error is not None:
            rows.append((a.host, "-", "no answer", "-", a.error))
        rows += [(a.host, *row) for row in a.rows]
    head = ("HOST", "NAME", "STATE", "PID", "")
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(4)]
    for row in [head, *rows]:
        line = "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row[:4]))
        out.write(clean(f"{line}  {row[4]}".rstrip()) + "\n")
    for a in got:
        if a.footer:
            out.write(clean(a.footer) + "\n")
