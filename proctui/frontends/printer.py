"""Lines as every line-printing frontend prints them: ``name | text`` with the names
padded (and coloured on a terminal), proctui's own as ``proctui | ...``. Used by the
headless runner, ``proctui down``, and the summary a console prints when it closes."""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TextIO

from proctui.core.output.lines import Chunk
from proctui.core.output.text import clean, needs_cleaning, plain_ascii
from proctui.frontends.writer import Writer

if TYPE_CHECKING:
    import textwrap

_COLOURS = ("36", "33", "32", "35", "34", "96", "93", "92", "95", "94")


def use_colour(stream: TextIO) -> bool:
    if "NO_COLOR" in os.environ:
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


LABEL_MAX = 20  # columns a name's label is padded to, at most


def cells(text: str) -> int:
    """Columns ``text`` takes on a terminal: wide characters two, combining ones none."""
    if text.isascii():
        return len(text)
    from unicodedata import combining, east_asian_width

    return sum(0 if combining(c) else 2 if east_asian_width(c) in "WF" else 1 for c in text)


BREAKS = " -_./:,"  # a name's pieces end after these (and a piece begins at " (")


def cut_middle(text: str, width: int, measure: Callable[[str], int] = cells) -> str:
    """``text`` in exactly ``width`` terminal cells (as ``measure`` counts them): padded,
    or cut with "…" between whole pieces (words, and a name's parts between - _ . / :):
    a beginning, and its last pieces where they fit in half the room beside it, so
    that names sharing a long prefix stay apart ("worker-with-a-…name-01").
    Never inside a piece ("ignores-term…ftover)", "a-very-long-p…and-ever"), but for a
    first piece too long alone, which is cut at its end."""
    if measure(text) <= width:
        return text + " " * (width - measure(text))
    if width <= 1:
        return "…"[:width]
    starts = [i for i in range(1, len(text))
              if text[i - 1] in BREAKS or text[i] in " ("]
    heads = [h for i in starts if (h := text[:i].rstrip())]
    tails = ["", *(t for i in starts if (t := text[i:].lstrip()) and
                   measure(t) <= (width - 1) // 2)]
    best, score = "", (False, 0)
    for tail in tails:  # (a few dozen pieces at most: names are 64 characters)
        room = width - 1 - measure(tail)
        head = next((h for h in reversed(heads) if measure(h) <= room), "")
        # With an end where one fits (it tells names apart), then the most shown.
        if head and (shown := (bool(tail), measure(head) + measure(tail))) > score:
            best, score = head + "…" + tail, shown
    cut = best or _cells_from(text, width - 1, measure) + "…"
    return cut + " " * (width - measure(cut))


def _cells_from(text: str, width: int, measure: Callable[[str], int]) -> str:
    """The longest start of ``text`` that takes at most ``width`` cells."""
    used = 0
    for i, char in enumerate(text):
        used += measure(char)
        if used > width:
            return text[:i]
    return text


class Printer:
    """Formats lines with padded names into a Writer (or, in tests, any text stream)."""

    def __init__(self, names: Sequence[str], out: TextIO | Writer, colour: bool) -> None:
        self.out = out
        # Names are padded to the longest, up to LABEL_MAX: a 43-character name left a
        # 60-column terminal 14 columns beside every label, and the summary (folded to
        # fit beside it) was cut mid-word there. A longer name is written whole.
        self.width = min(LABEL_MAX, max(cells(n) for n in [*names, "proctui"]))
        self.colour = colour
        self._prefix: dict[str, str] = {}
        self._bprefix: dict[str, bytes] = {}
        self._index = {name: i for i, name in enumerate(names)}
        if isinstance(out, Writer):
            out.note_prefix = self.prefix(None)
        self._terminal = _isatty(out)
        self._echoed = False  # a "^C" stands where the next line begins (interrupted)

    def interrupted(self) -> None:
        """ctrl+c was typed: a terminal echoes "^C" where the next line begins, and that
        line, folded to fit the terminal beside its label, was then two columns too wide
        ("...kills what is sti" / "ll"). It begins at the first column again, over the
        "^C". (From a signal handler: a flag, no lock.)"""
        self._echoed = self._terminal

    @property
    def broken(self) -> str | None:
        return self.out.broken if isinstance(self.out, Writer) else None

    @property
    def failed(self) -> bool:
        """Output was lost to a failed write (a full disk), not to a reader gone."""
        return isinstance(self.out, Writer) and self.out.failed

    def prefix(self, name: str | None) -> str:
        key = name or "\0proctui"
        p = self._prefix.get(key)
        if p is None:
            label = name or "proctui"
            label += " " * (self.width - cells(label))  # (日本語 is six columns, not three)
            if self.colour:
                code = "1" if name is None else _COLOURS[self._index.get(name, 0) % len(_COLOURS)]
                label = f"\x1b[{code}m{label}\x1b[0m"
            p = self._prefix[key] = f"{label} | "
        return p

    def lines(self, name: str | None, lines: Sequence[str] | Chunk) -> None:
        if not lines:
            return
        p = self.prefix(name)
        back = ""
        if self._echoed:
            self._echoed, back = False, "\r"
        if isinstance(lines, Chunk):
            chunk = lines
        else:  # a newline inside one of them starts a line of its own, with its prefix
            text = "\n".join(lines)
            chunk = Chunk(text=text, count=text.count("\n") + 1)
        # One scan of the whole chunk in C (the lines, not the prefix with its colour):
        # most output holds nothing to clean, and a flood of millions of lines must not
        # be cleaned, nor even split, one line at a time.
        if isinstance(self.out, Writer):
            data = plain_ascii(chunk.text)
            if data is not None:
                # Prefixed as bytes and handed over in pieces: the text, its copies with
                # the prefix, and their encoding were five copies of a 256 KiB read.
                bp = self._bprefix.get(p) or self._bprefix.setdefault(
                    p, p.encode("utf-8", "replace"))
                self.out.write_pieces((back.encode(), bp, data.replace(b"\n", b"\n" + bp),
                                       b"\n"), chunk.count)
                return
        if needs_cleaning(chunk.text, self.colour):
            colour = self.colour
            text = p + f"\n{p}".join(clean(line, colour) for line in chunk.lines) + "\n"
        else:
            text = p + chunk.text.replace("\n", f"\n{p}") + "\n"
        self.write(back + text, chunk.count)

    def say(self, text: str, name: str | None = None, fold: bool = True) -> None:
        """A line of proctui's own, about process ``name`` (or about itself): on a
        terminal, folded to fit beside its label (`down`, the headless runner's notices
        and the detach line were cut mid-word by the terminal). ``fold`` False: a command
        to copy, which a fold would break with labels."""
        line = f"{name}: {text}" if name else text
        columns = terminal_columns(self.out) if fold else None
        self.lines(None, folded([line], self.width, columns) if columns else [line])

    def write(self, text: str, count: int = 1) -> None:
        if isinstance(self.out, Writer):
            self.out.write(text, count)
            return
        with contextlib.suppress(OSError, ValueError):
            self.out.write(text)

    def finish(self, timeout: float) -> bool:
        if isinstance(self.out, Writer):
            return self.out.drain(timeout)
        with contextlib.suppress(OSError, ValueError):
            self.out.flush()
        return True


def folded(lines: list[str], label: int, columns: int) -> list[str]:
    """Lines of proctui's own (the summary, notices) as a terminal ``columns`` wide will
    show them: each folded at a space to fit beside the printer's ``label | `` (``label``
    wide), a summary line's continuation indented under its outcome, so that the
    terminal never breaks a word."""
    import re

    room = columns - label - 3
    if room < 20:
        return lines
    out: list[str] = []
    for line in lines:
        # "  name  outcome" (a summary's; a name may hold single spaces: "web (leftover)").
        row = re.match(r"( {2,})(\S+(?: \S+)*) {2,}(?=\S)", line)
        indent = len(line) - len(line.lstrip(" "))
        if row is None:
            out += wrap_words(line, room, indent + 2)
        elif len(row.group(0)) <= room // 2:  # the outcome's continuation under it
            out += wrap_words(line, room, len(row.group(0)))
        else:
            # The outcome's column leaves it too little room (a long name): the name on
            # rows of its own, folded at its hyphens and spaces (a terminal split a
            # 62-column name in the middle of a word at 80 columns), and the outcome
            # under it, indented, its continuation under its beginning.
            out += wrap_words(f"{row.group(1)}{row.group(2)}", room, indent + 2,
                              hyphens=True)
            outcome = " " * (indent + 4) + line[row.end():]
            out += wrap_words(outcome, room, indent + 4)
    return out


def wrap_words(line: str, room: int | None, hang: int, hyphens: bool = False) -> list[str]:
    """``line`` folded at spaces into rows of ``room`` columns, each after the first
    indented by ``hang`` (``room`` None, no terminal: the line as it is). A number stays
    with the word before it, and an outcome's set phrases stay whole: "exit code" above a
    lone "0", or "pid" above "27743 left running", read as two sentences. A word longer
    than a row is cut where the row ends (it went on at the terminal's first column,
    under no label). A ``room`` below one column is no width known: a terminal that says
    it has 0 columns (a serial console, some containers) made textwrap raise.
    ``hyphens``: a name, folded after its hyphens too."""
    import re

    if room is None or room < 1:
        return [line]
    if hang >= room:  # an indent that fills the row: every row after the first went wider
        hang = room // 2
    hang = max(0, hang)
    glued = re.sub(r"(?<=\S) (?=\d)|(?<=\bexit) (?=code\b)|(?<=\bleft) (?=running\b)",
                   "\x00", line)
    # textwrap counts characters: a wide one (日) gets a mark after it that counts its
    # second column, and goes once the line is folded.
    if not glued.isascii():
        glued = "".join(c + "\x01" * (cells(c) - 1) for c in glued)
    wrapper = _wrapper()(room, initial_indent="", subsequent_indent=" " * hang,
                         break_long_words=True, break_on_hyphens=hyphens,
                         drop_whitespace=True)
    return [piece.replace("\x00", " ").replace("\x01", "") for piece in
            wrapper.wrap(glued)] or [line]


@functools.cache
def _wrapper() -> type[textwrap.TextWrapper]:
    import textwrap

    class Wrapper(textwrap.TextWrapper):
        """textwrap's, cutting a word too long for a row between two characters, never
        between a wide one and the mark of its second column (the row came out a cell
        too wide, its last character wrapped by the terminal under no label)."""

        def _handle_long_word(self, reversed_chunks: list[str], cur_line: list[str],
                              cur_len: int, width: int) -> None:
            chunk = reversed_chunks[-1]
            end = max(1, width - cur_len)
            while 0 < end < len(chunk) and chunk[end] == "\x01":
                end -= 1
            if end == 0 and not cur_line:  # one wide character wider than the row
                end = len(chunk) - len(chunk[1:].lstrip("\x01"))
            cur_line.append(chunk[:end])
            reversed_chunks[-1] = chunk[end:]

    return Wrapper


def _isatty(stream: object) -> bool:
    try:
        fd = stream.fd if isinstance(stream, Writer) else stream.fileno()  # type: ignore[attr-defined]
        return os.isatty(fd)
    except (AttributeError, OSError, ValueError):
        return False


def terminal_columns(stream: object) -> int | None:
    """The width of the terminal ``stream`` writes to (a file, or a Writer), or None when
    it is no terminal, or one that does not know its width: asked for each time, as a
    window may have been resized."""
    try:
        fd = stream.fd if isinstance(stream, Writer) else stream.fileno()  # type: ignore[attr-defined]
        columns = os.get_terminal_size(fd).columns if os.isatty(fd) else None
    except (AttributeError, OSError, ValueError):
        return None
    # A terminal whose size was never set (a serial line, a pty made by a program that
    # did not set it) says 0 columns: that is no width, not a width of nothing.
    return columns if columns is not None and columns > 0 else None
