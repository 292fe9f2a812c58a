"""How a ``proctui`` command writes a line of its own, and the one-line failure that every
command ends with when it cannot do what it was asked (exit status 2)."""

from __future__ import annotations

import codecs
import re
import sys
from typing import NoReturn

EXIT_USAGE = 2

_CSI = re.compile(r"\033\[[;?0-9]*[a-zA-Z]")  # what click.echo strips for a non-terminal


def say(text: str, err: bool = False, end: str = "\n") -> None:
    """A line on stdout (or stderr), at once, as click.echo writes it: nothing when the
    stream is closed (not the other stream), colour codes stripped when it is not a
    terminal. Unlike click.echo, a name or path the stream cannot encode (an argument's
    surrogate escapes), or a stream that says it is ASCII (a C locale), gets replacement
    characters or UTF-8, not a traceback."""
    stream = sys.stderr if err else sys.stdout
    if stream is None:
        return
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):
        tty = False
    line = (text if tty else _CSI.sub("", text)) + end
    encoding = getattr(stream, "encoding", None) or "utf-8"
    try:
        ascii_only = codecs.lookup(encoding).name == "ascii"
    except LookupError:
        ascii_only = False
    buffer = getattr(stream, "buffer", None)
    if ascii_only and buffer is not None:
        stream.flush()
        buffer.write(line.encode("utf-8", "replace"))
    else:
        try:
            stream.write(line)
        except UnicodeEncodeError:
            if buffer is None:
                raise
            stream.flush()
            buffer.write(line.encode(encoding, "replace"))
    stream.flush()


def fail(message: str) -> NoReturn:
    """``proctui: error: MESSAGE`` on stderr, and exit status 2."""
    say(f"proctui: error: {message}", err=True)
    sys.exit(EXIT_USAGE)
