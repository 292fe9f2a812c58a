"""``proctui status --host a --host b ...`` (or ``--fleet FILE``): one table for several
boxes, each asked at once (a thread per box, each bounded by its connection's waits). A
box that does not answer has its own line saying so and why, and makes the exit status 2.

``proctui events`` on several boxes is one stream: each event with a ``host`` field (text:
after the box's name), until every box's supervisor has ended.

``proctui down`` on several boxes stops them all at once: each box's lines as its own
``down`` prints them, after the box's name, then one summary with the box on every line;
the exit status is the worst of them (2 for a box that did not answer).

``--json`` prints a list, one object per box in the order given:
``{"host": DEST, "error": null, "status": <status --json of that box>}``, or, for a box
that did not answer, ``{"host": DEST, "error": "why, one line", "status": null}``."""

from __future__ import annotations

import contextlib
import json
import re
import signal
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO, cast

from proctui.core.output.text import clean
from proctui.frontends.printer import terminal_columns, wrap_words
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


def _at_once(count: int, one: Callable[[int], None]) -> None:
    """``one(i)`` for every box at once, a thread each; back when all are done."""
    threads = [threading.Thread(target=one, args=(i,), daemon=True) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        while t.is_alive():
            t.join(0.2)  # (a join without a timeout would not let ctrl+c in)


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

    _at_once(len(hosts), lambda i: one(i, hosts[i]))
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


class _Prefixed:
    """A stream that writes each whole line after ``prefix``, under a lock shared by the
    boxes' threads (no colour, no folding: it is no terminal)."""

    def __init__(self, out: TextIO, prefix: str, lock: threading.Lock) -> None:
        self.out, self.prefix, self.lock = out, prefix, lock
        self._part = ""

    def write(self, text: str) -> int:
        *lines, self._part = (self._part + text).split("\n")
        if lines:
            with self.lock:
                for line in lines:
                    self.out.write(f"{self.prefix}{line}\n")
        return len(text)

    def flush(self) -> None:
        with self.lock, contextlib.suppress(OSError, ValueError):
            self.out.flush()

    def isatty(self) -> bool:
        return False


def down(names: Sequence[str], dials: Sequence[Callable[[], Connection]],
         out: TextIO) -> int:
    """Stop every box at once; one summary with the box on every line; the worst exit
    status. ctrl+c is passed on to every box's down (once: kill what is still stopping;
    twice: abandon it), as on one box."""
    from proctui.frontends.control import Down

    width = max(len(n) for n in names)
    lock = threading.Lock()
    ended: list[tuple[list[str], int] | str | None] = [None] * len(names)
    downs: list[Down | None] = [None] * len(names)

    def one(i: int) -> None:
        try:
            conn = dials[i]()
        except NoSupervisor as e:
            ended[i] = f"not reached: {_why(names[i], str(e))}"
            return
        except OSError as e:
            ended[i] = f"not reached: the connection failed: {e.strerror or e}"
            return
        try:
            # (A Printer writes, flushes and asks isatty: all a _Prefixed does.)
            stream = cast(TextIO, _Prefixed(out, f"{names[i].ljust(width)}  ", lock))
            d = downs[i] = Down(conn, stream)
            status = d.run(signals=False, say_summary=False)
            ended[i] = (d.summary, status) if d.summary else \
                "stopped watching before everything had ended"
        except NoSupervisor as e:
            ended[i] = _why(names[i], str(e))
        except Exception as e:  # one box's surprise is its own line, not everyone's end
            ended[i] = f"internal error: {e!r}"[:300]
        finally:
            conn.close()

    def interrupted(_signum: int, _frame: object) -> None:
        for d in downs:
            if d is not None:
                d.interrupt()

    previous = signal.signal(signal.SIGINT, interrupted)
    try:
        _at_once(len(names), one)
    finally:
        signal.signal(signal.SIGINT, previous)
    worst = 0
    rows: list[tuple[str, str]] = []  # (the box, its summary line)
    for name, result in zip(names, ended, strict=True):
        if isinstance(result, tuple):
            said, status = result
            rows += [(name, line.strip()) for line in said if line != "summary:"]
            worst = max(worst, status)
        else:
            rows.append((name, result or "no answer"))
            worst = max(worst, EXIT_SILENT)
    lines = summary(rows, width, terminal_columns(out))
    out.write("".join(clean(line) + "\n" for line in lines))
    out.flush()
    return worst


def summary(rows: Sequence[tuple[str, str]], width: int, columns: int | None) -> list[str]:
    """The summary of several boxes, a (box, its summary line) a row, the box's name
    ``width`` wide; on a terminal ``columns`` wide, each folded at spaces under its
    outcome (a terminal cut "exit cod" / "e 0" at 100 columns)."""
    lines = ["proctui | summary:"]
    room = columns - len("proctui | ") if columns else None
    for name, line in rows:
        process = re.match(r"\S+(?: \S+)* {2,}", line)  # "web  " before its outcome
        hang = width + 2 + (process.end() if process else 0)
        lines += [f"proctui | {row}" for row in
                  wrap_words(f"{name.ljust(width)}  {line}", room, hang)]
    return lines


def events(names: Sequence[str], dials: Sequence[Callable[[], Connection]], as_json: bool,
           processes: Sequence[str], out: TextIO, err: TextIO) -> int:
    """Every box's events in one stream, as they come; a box that cannot be reached or
    stops answering is one line on ``err``. The exit status is the worst of them."""
    from proctui.frontends.events import stream
    from proctui.frontends.status import UnknownProcess

    lock = threading.Lock()
    shared = cast(TextIO, _Prefixed(out, "", lock))  # whole lines, one box at a time
    statuses = [EXIT_SILENT] * len(names)

    def one(i: int) -> None:
        try:
            conn = dials[i]()
        except NoSupervisor as e:
            _say(err, lock, f"{names[i]}: not reached: {_why(names[i], str(e))}")
            return
        except OSError as e:
            _say(err, lock, f"{names[i]}: not reached: {e.strerror or e}")
            return
        try:
            statuses[i] = stream(conn, as_json, processes, shared, local=False,
                                 host=names[i])
        except (NoSupervisor, UnknownProcess) as e:
            _say(err, lock, f"{names[i]}: {_why(names[i], str(e))}")
        except Exception as e:  # one box's surprise is its own line, not everyone's end
            _say(err, lock, f"{names[i]}: internal error: {e!r}"[:300])
        finally:
            conn.close()

    _at_once(len(names), one)
    return max(statuses)


def _say(err: TextIO, lock: threading.Lock, line: str) -> None:
    with lock, contextlib.suppress(OSError, ValueError):
        err.write(f"proctui: {clean(line)}\n")
        err.flush()
