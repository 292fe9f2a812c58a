"""How systemd reads words: ExecStart= quoting, Environment= words, specifiers, unit
names, time spans and signal names. Each rule here was checked with
``systemd-analyze verify``."""

from __future__ import annotations

import re
import signal
from collections.abc import Sequence

from proctui.config import COMMAND_LINE, ConfigError

DEFAULT_PREFIX = "proctui-"

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
    double quotes, ``%%`` and ``$$`` for literal ``%`` and ``$``."""
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
    expands no variables, so a ``$`` stays as it is (``$$`` would reach the process)."""
    return f'"{_escape(f"{key}={value}", dollar=False)}"'


def specifiers(text: str) -> str:
    """Text for a setting that is taken as it is but for specifiers (Description=, paths:
    WorkingDirectory= and EnvironmentFile= take the rest of the line unquoted)."""
    return text.replace("%", "%%")


def unit_name(name: str, prefix: str = DEFAULT_PREFIX) -> str:
    body = "".join(ch if _UNIT_CHARS.fullmatch(ch) else
                   "".join(f"\\x{b:02x}" for b in ch.encode("utf-8")) for ch in name)
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
