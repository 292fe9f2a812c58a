"""Reading a config file (or an env_file) without trusting it: a regular file, of a sane
size, opened without blocking (a FIFO must not hang us), decoded as UTF-8."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from proctui.config.spec import MAX_CONFIG_BYTES


class UnreadableFile(Exception):
    """``str()`` is the reason, for a ConfigError."""


def read_text(path: Path, limit: int = MAX_CONFIG_BYTES, *, keep_bad_bytes: bool = False) -> str:
    """The file's text; UnreadableFile says why there is none. ``keep_bad_bytes``: a byte
    that is not UTF-8 comes as Python's lone surrogate for it (surrogateescape), for a
    reader that names the line and the process it is in; else it is the file's error."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise UnreadableFile("file not found") from None
    except OSError as e:
        raise UnreadableFile(f"cannot read: {e.strerror or e}") from None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise UnreadableFile("is a directory, expected a file")
        if not stat.S_ISREG(st.st_mode):
            raise UnreadableFile("not a regular file")
        if st.st_size > limit:
            raise UnreadableFile(f"too large ({st.st_size} bytes; at most {limit})")
        chunks, size = [], 0
        while True:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                break
            size += len(chunk)
            if size > limit:
                raise UnreadableFile(f"too large (over {limit} bytes)")
            chunks.append(chunk)
    except OSError as e:
        raise UnreadableFile(f"cannot read: {e.strerror or e}") from None
    finally:
        os.close(fd)
    raw = b"".join(chunks)
    try:
        text = raw.decode("utf-8", "surrogateescape" if keep_bad_bytes else "strict")
    except UnicodeDecodeError as e:
        raise UnreadableFile(f"not UTF-8 text ({_place(raw, e.start)})") from None
    # Editors on Windows start UTF-8 files with a byte order mark; it is not content.
    return text.removeprefix("\ufeff")


def _place(raw: bytes, at: int) -> str:
    """Where the byte at ``at`` is, as an editor shows it: its line, and its column in
    characters, not an offset in bytes from the start of the file."""
    start = raw.rfind(b"\n", 0, at) + 1
    line = raw.count(b"\n", 0, at) + 1
    column = len(raw[start:at].decode("utf-8", "replace")) + 1
    return f"a byte \\x{raw[at]:02x} at line {line}, column {column}"
