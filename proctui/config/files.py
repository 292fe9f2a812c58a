"""Reading a config file (or an env_file) without trusting it: a regular file, of a sane
size, opened without blocking (a FIFO must not hang us), decoded as UTF-8."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from proctui.config.spec import MAX_CONFIG_BYTES


class UnreadableFile(Exception):
    """``str()`` is the reason, for a ConfigError."""


def read_text(path: Path, limit: int = MAX_CONFIG_BYTES) -> str:
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
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise UnreadableFile(f"not UTF-8 text ({e.reason} at byte {e.start})") from None
    # Editors on Windows start UTF-8 files with a byte order mark; it is not content.
    return text.removeprefix("\ufeff")
