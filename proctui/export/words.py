"""How systemd reads words: ExecStart= quoting, Environment= words, specifiers, settings
taken as they are, unit names, time spans and signal names. Each rule here was checked
with ``systemd-analyze verify``."""

from __future__ import annotations

import re
import signal
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from proctui.config import COMMAND_LINE, ConfigError

DEFAULT_PREFIX = "proctui-"
# Where an export's own refusals say they come from. Not the config's name: that name may
# itself be what is refused, and printed it would break the error's one line.
EXPORT = "export"

# Characters a unit name may hold as they are; everything else becomes \xNN (as
# systemd-escape does), so distinct process names stay distinct unit names.
_UNIT_CHARS = re.compile(r"[A-Za-z0-9:_.-]")
_MAX_UNIT_NAME = 255
# A word needs no quotes when it is made only of these (after % and $ are doubled).
_PLAIN_WORD = re.compile(r"[A-Za-z0-9_@%+=:,./$-]+")
_C_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r"}
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# systemd refuses such an executable path however it is quoted ("special characters").
_UNSAFE_PATH = re.compile(r"[\"'\\\x00-\x1f\x7f]")
# proctui and systemd agree on a line of an env_file only when it is this plain.
_PLAIN_ENV_LINE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=[^\s'\"\\][^\\]*|[A-Za-z_][A-Za-z0-9_]*=")


# -- what a unit cannot hold --------------------------------------------------------------

class Unholdable(ValueError):
    """Text no unit file can hold; ``str()`` says why, for the one line of a refusal."""


def _refuse_characters(text: str, *, escaped: bool) -> None:
    """Unholdable for the first character no unit can hold. systemd ends a line at \\n, \\r
    and NUL, so any of them in a value starts a directive of the value's choosing. Where
    systemd reads C escapes (a quoted word) the other control characters are escaped;
    where it takes the text as it is, no control character is written at all. NUL it
    reads back nowhere (\\x00 is "an unknown escape"), and a byte that is not UTF-8 (kept
    by os.fsdecode as a lone surrogate) makes systemd drop the whole line."""
    for ch in text:
        code = ord(ch)
        if 0xDC80 <= code <= 0xDCFF:
            raise Unholdable(f"contains a byte that is not UTF-8 (\\x{code - 0xDC00:02x})")
        if 0xD800 <= code <= 0xDFFF:
            raise Unholdable(f"contains a lone surrogate (U+{code:04X})")
        if code == 0 or ((code < 0x20 or code == 0x7F) and not escaped):
            raise Unholdable(f"contains a control character ({repr(ch)[1:-1]}, "
                             f"U+{code:04X})")


def checked(text: str) -> str:
    """``text`` as it is, for part of a setting or a comment that systemd takes as it is;
    Unholdable if it holds a control character or a byte that is not UTF-8."""
    _refuse_characters(text, escaped=False)
    return text


def literal(text: str) -> str:
    """``text`` for a setting systemd takes as it is to the end of the line, but for
    specifiers: Description=, WorkingDirectory=, EnvironmentFile=. No escape is read there
    (WorkingDirectory=/a/\\x2e\\x2e is a directory of that name, and \\x2fa is not
    absolute), so what such a line cannot carry is Unholdable rather than escaped."""
    checked(text)
    if text.endswith("\\"):
        # The line would go on into the next one, and the directive there be lost.
        raise Unholdable("ends with a backslash (systemd would join the next line to it)")
    if text.endswith(" "):
        raise Unholdable("ends with a space (systemd would strip it)")
    return specifiers(text)


@contextmanager
def refused_as(process: str | None, key: str | None, what: str = "") -> Iterator[None]:
    """Unholdable text met inside, as the one line of a ConfigError naming the process and
    the key it came from (``what`` says more when the key alone would not)."""
    try:
        yield
    except Unholdable as e:
        raise ConfigError(EXPORT, f"{what}{e}; systemd cannot hold it", process, key) from None


# -- quoting ------------------------------------------------------------------------------

def _escape(text: str, *, dollar: bool) -> str:
    out = []
    for ch in text:
        if ch in _C_ESCAPES:
            out.append(_C_ESCAPES[ch])
        elif ch == "%":
            out.append("%%")  # a specifier otherwise (%n, %h, ...)
        elif ch == "$" and dollar:
            out.append("$$")  # ExecStart= expands $VAR and ${VAR}; $$ is a literal $
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    return "".join(out)


def exec_word(word: str) -> str:
    """One argv word as ExecStart= reads it back: systemd's own quoting, C escapes inside
    double quotes, ``%%`` and ``$$`` for literal ``%`` and ``$``; Unholdable for NUL or a
    byte that is not UTF-8."""
    _refuse_characters(word, escaped=True)
    escaped = _escape(word, dollar=True)
    return escaped if _PLAIN_WORD.fullmatch(escaped) else f'"{escaped}"'


def exec_line(argv: Sequence[str]) -> str:
    """ExecStart='s value for ``argv``, whose first word is the program's path."""
    path, words = argv[0], [exec_word(w) for w in argv]
    if "$" in path:
        # systemd takes the path literally but expands $ in the arguments, argv[0] among
        # them: "@PATH ARGV0" gives each its own spelling.
        return " ".join([f'@"{_escape(path, dollar=False)}"', *words])
    # A leading @, -, :, +, ! is a prefix to systemd, not part of the path; quoted, it is.
    if words[0].startswith(("@", "-", ":", "+", "!")):
        words[0] = f'"{_escape(path, dollar=True)}"'
    return " ".join(words)


def environment_word(key: str, value: str) -> str:
    """``KEY=VALUE`` for Environment=: quoted and C-escaped, ``%%`` for ``%``. Environment=
    expands no variables, so a ``$`` stays as it is (``$$`` would reach the process).
    Unholdable for NUL or a byte that is not UTF-8 (systemd ignores such an assignment)."""
    _refuse_characters(key, escaped=True)
    _refuse_characters(value, escaped=True)
    return f'"{_escape(f"{key}={value}", dollar=False)}"'


def specifiers(text: str) -> str:
    """Text with its ``%`` doubled, for a setting taken as it is but for specifiers (see
    ``literal``, which also refuses what such a setting cannot hold)."""
    return text.replace("%", "%%")


def unit_name(name: str, prefix: str = DEFAULT_PREFIX) -> str:
    # surrogateescape: a name taken from a path that is not UTF-8 (the config's directory,
    # for --supervisor) gets its bytes as they are, as systemd-escape would give them.
    body = "".join(ch if _UNIT_CHARS.fullmatch(ch) else
                   "".join(f"\\x{b:02x}" for b in ch.encode("utf-8", "surrogateescape"))
                   for ch in name)
    if body.startswith("."):
        body = "\\x2e" + body[1:]
    return f"{prefix}{body}.service"


def seconds_value(value: float) -> str:
    """Seconds as systemd's time spans read them. 0 means "no timeout" to systemd, while
    to proctui it means now, so it becomes the shortest span systemd has."""
    if value <= 0:
        return "1us"
    if value == int(value):
        return str(int(value))
    return f"{value:.6f}".rstrip("0").rstrip(".")


def signal_value(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        pass
    # Real-time signals have no name of their own in Python; systemd reads SIGRTMIN+n.
    rtmin = getattr(signal, "SIGRTMIN", None)
    if rtmin is not None and number >= int(rtmin):
        return f"SIGRTMIN+{number - int(rtmin)}"
    return str(number)


def _seconds_words(value: float) -> str:
    return f"{seconds_value(value) if value > 0 else '0'}s"


def check_prefix(prefix: str) -> None:
    if not all(_UNIT_CHARS.fullmatch(ch) for ch in prefix):
        raise ConfigError(COMMAND_LINE, f"{prefix!r} cannot start a unit name (letters, "
                                        "digits and :_.- only)", key="--prefix")
