"""Making untrusted text safe for a terminal. Process output may keep its colours (SGR)
and nothing else; proctui's own lines (which quote commands and names from a config)
show every control character as a visible escape, so they can neither move the cursor
nor set the terminal's title or clipboard."""

from __future__ import annotations

import re

# Escape sequences that are not colours (cursor moves, OSC titles and links, ...), and
# control characters other than tab and the escape that starts a colour.
_OSC = re.compile(r"\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?")
_NON_SGR = re.compile(r"\x1b\[[0-?]*[ -/]*[@-ln-~]|\x1b[PX^_][^\x1b]*(?:\x1b\\)?|\x1b[@-Z\\-_]"
                      r"|\x1b(?!\[)")
_CSI_M = re.compile(r"\x1b\[([0-?]*)([ -/]*)m")
_BAD_SGR = re.compile(r"\x1b\[(?![0-9;:]*m)")  # an unfinished CSI: drop its introducer
_SGR = re.compile(r"\x1b\[[0-9;:]*m")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1a\x1c-\x1f\x7f\x80-\x9f]")
_ALL_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def clean(line: str, colour: bool = True) -> str:
    """Keep SGR colours (or drop them too); drop every other escape sequence and control
    character, C1 included (a terminal may act on a lone 0x9b as CSI)."""
    if "\x9b" in line or "\x9d" in line:
        # The 8-bit forms of CSI and OSC: removed like their 7-bit twins, not cut in half.
        line = line.replace("\x9b", "\x1b[").replace("\x9d", "\x1b]")
    if "\x1b" in line:
        line = _NON_SGR.sub("", _OSC.sub("", line))
        line = _BAD_SGR.sub("", _CSI_M.sub(_plain_sgr, line))
        if not colour:
            line = _SGR.sub("", line)
    if _CONTROL.search(line):
        line = _CONTROL.sub("", line)
    if "\t" in line:
        line = line.expandtabs(8)
    return line


def _plain_sgr(m: re.Match[str]) -> str:
    params, inter = m.group(1), m.group(2)
    return m.group(0) if not inter and all(c in "0123456789;:" for c in params) else ""


_SUSPECT = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # all but tab and newline
_PLAIN_ASCII = bytes([0x0a, *range(0x20, 0x7f)])  # what clean never changes: not a tab


def plain_ascii(text: str) -> bytes | None:
    """``text`` as bytes when it is ASCII that ``clean`` leaves as it is (most output),
    else None: the one scan ``needs_cleaning`` makes, and its bytes kept for the writer."""
    if not text.isascii():
        return None
    data = text.encode("ascii")
    return None if data.translate(None, _PLAIN_ASCII) else data


def needs_cleaning(text: str, colour: bool) -> bool:
    """Could ``clean`` change anything in ``text``? (A tab is expanded; an escape may be
    a colour to keep, but only a full clean can tell.)"""
    if text.isascii():
        # Most output, and known at once: deleting the plain bytes in C leaves nothing
        # unless something needs cleaning, four times quicker than the regex's scan.
        return bool(text.encode("ascii").translate(None, _PLAIN_ASCII))
    return "\t" in text or _SUSPECT.search(text) is not None


def visible(text: str) -> str:
    """Every control character as a visible escape: ``\\x1b]2;t`` shows as ``\\x1b]2;t``."""
    if not _ALL_CONTROL.search(text):
        return text
    return _ALL_CONTROL.sub(_escape, text)


def _escape(m: re.Match[str]) -> str:
    ch = m.group(0)
    return {"\n": "\\n", "\r": "\\r", "\t": "\\t"}.get(ch, f"\\x{ord(ch):02x}")
