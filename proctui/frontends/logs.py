"""``proctui logs NAME``: a process's kept output from a running supervisor, a page at a
time, then (with ``-f``) what it prints next."""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path
from typing import TextIO

from proctui.core.output.lines import Stream
from proctui.core.output.text import clean
from proctui.core.reply import Fault
from proctui.frontends.status import UnknownProcess
from proctui.frontends.words import run_mark
from proctui.protocol import pushes
from proctui.protocol.link import Tail, Watch
from proctui.remote.client import Connection, NotAnswering


def logs(conn: Connection, name: str, follow: bool, lines: int | None, out: TextIO) -> int:
    if name not in conn.names:
        raise UnknownProcess(name, conn.names)
    colour = _is_tty(out)
    page = conn.call(Tail(name, lines=lines))
    end = page.total  # what was there when asked: a flood cannot keep us paging for ever
    wanted = 0 if lines is None else max(0, page.total - lines)
    if lines is not None and page.ok and page.first > wanted:
        # (Of fewer lines than asked, their count: "the last 1000" of 501 overstated it.)
        of = f"the last {lines}" if page.total >= lines else f"the {page.total}"
        _aside(f"{page.first - wanted} of {of} lines of {name} are no longer kept (its "
               "scrollback is smaller)")
    while True:  # a page at a time: the supervisor bounds each reply
        if page.fault is Fault.UNKNOWN_NAME:
            raise UnknownProcess(name, conn.names)
        _print_lines(out, page.lines, page.streams, colour)
        if not page.more or page.next >= end or not page.lines:
            break
        asked = page.next
        page = conn.call(Tail(name, start=asked))
        if page.ok and page.first > asked:
            gone = page.first - asked  # a flood moved the scrollback past us meanwhile
            _aside(f"{gone} line{'s' if gone != 1 else ''} of {name} left the scrollback "
                   "before they could be read")
    with contextlib.suppress(OSError, ValueError):
        out.flush()
    if not follow:
        return 0
    # With acks: over a slow link it prints the lines as the link carries them and,
    # once it is more than two seconds of the link behind, the newest, saying how many
    # it missed (remote/push.py); not what sshd held for it, minutes late.
    conn.send(Watch([name], start={name: page.next}, acks=True))
    seen = conn.views.get(name)
    while True:
        try:
            message = conn.event()
        except NotAnswering as e:  # it fell silent: stopped (SIGSTOP) or stuck
            return _lost(name, str(e), status=2)  # as every client says it (README)
        except ConnectionError:  # (a reset is a close with our acks still unread)
            message = None
        except (OSError, ValueError) as e:  # a failed link; a message that is no message
            return _lost(name, f"{_gone(conn)} ({e})")
        if message is None:
            if conn.state.all_ended:  # its goodbye: the last state said so
                _aside(f"the supervisor has ended: no more of {name}'s output will come")
                return 0
            # Closed with no goodbye: killed, crashed, or the link under it broke. A
            # script following the output must not take that for the end of the run.
            return _lost(name, _gone(conn))
        push = pushes.decode(message)  # (typed, whatever a box over --host may send)
        if isinstance(push, pushes.PushEnd):
            conn.acknowledge(message)
            continue
        if isinstance(push, pushes.Views):
            conn.keep(push)
            now = conn.views.get(name)
            mark, seen = run_mark(seen, now), now
            if mark:
                out.write(clean(f"── {name}: {mark} ──") + "\n")
        elif isinstance(push, pushes.Out) and push.name == name:
            if push.dropped:
                out.write(f"[{push.dropped} lines dropped: this reader fell behind]\n")
            _print_lines(out, list(push.lines), push.streams, colour)
            with contextlib.suppress(OSError, ValueError):
                out.flush()
        else:
            conn.keep(push)


def _gone(conn: Connection) -> str:
    """What ended the connection, as far as this end can tell."""
    if not conn.local:  # (the box's end of the link ends with its supervisor too)
        return f"{conn.where}: the link to the supervisor was lost (or the supervisor " \
               "went away)"
    pid = conn.pid or conn.hello.pid
    return f"the supervisor{f' (pid {pid})' if pid else ''} went away without ending"


def _lost(name: str, why: str, status: int = 1) -> int:
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.write(f"proctui: error: {why}: no more of {name}'s output will come\n")
    return status


def _aside(words: str) -> None:
    """Said beside the output, not in it: a script reading it gets the process's lines."""
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.write(f"proctui: {words}\n")


def _print_lines(out: TextIO, lines: list[str], streams: list[int], colour: bool) -> None:
    text = [clean(line, colour) for line, stream in zip(lines, streams, strict=False)
            if stream != Stream.PROCTUI]
    if text:
        out.write("\n".join(text) + "\n")


def _is_tty(out: TextIO) -> bool:
    try:
        return out.isatty() and "NO_COLOR" not in os.environ
    except (AttributeError, ValueError):
        return False


def offline_logs(file: Path | None, run_dir: Path | None, name: str, lines: int | None,
                 out: TextIO) -> bool:
    """No supervisor answers but NAME's log file is there: print it (the last ``lines``),
    say so first on stderr, and return True."""
    from proctui.core.store.logfiles import DIRECTORY, log_name
    from proctui.frontends.control import locate
    from proctui.frontends.rundirs import held

    try:
        path = locate(file, run_dir)
    except Exception:
        return False
    if held(path / "lock"):
        return False  # a supervisor holds the run directory (even a stopped one): ask it
    log = path / DIRECTORY / log_name(name)
    if not log.is_file():
        return False
    sys.stderr.write(f"proctui: no supervisor is running; {log} as it left it:\n")
    text = log.read_bytes().decode(errors="replace").splitlines()
    shown = text[-lines:] if lines else ([] if lines == 0 else text)
    out.write("".join(clean(line) + "\n" for line in shown))
    return True
