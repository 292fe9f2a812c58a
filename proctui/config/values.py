"""Validating single values. Each parser takes the value, its key and where it came from,
and raises a ConfigError naming all three."""

from __future__ import annotations

import math
import re
import signal
from collections.abc import Mapping
from enum import Enum
from urllib.parse import quote

from proctui.config.spec import (
    COMMAND_LINE,
    MAX_LINE_LENGTH,
    MAX_NAME_LENGTH,
    MAX_SCROLLBACK,
    MAX_SECONDS,
    ConfigError,
    OnTimeout,
    RestartPolicy,
)

_NAME_BAD = re.compile(r"[\x00-\x1f\x7f-\x9f]")


class Where:
    def __init__(self, source: str, process: str | None) -> None:
        self.source, self.process = source, process

    def error(self, key: str | None, message: str) -> ConfigError:
        return ConfigError(self.source, message, self.process, key)


def seconds(value: object, key: str | None, where: Where, *, positive: bool = False) -> float:
    """A number of seconds, or a duration in words as the command line takes them
    (``"10s"``, ``"2m"``, ``"1h30m"``): ``stop_timeout = "10s"`` was refused while
    ``--stop-timeout 10s`` and ``silence_warning = "5m"`` were taken."""
    if isinstance(value, str):
        parsed = parse_duration(value)
        if parsed is None:
            raise where.error(key, "expected a number of seconds or a duration (10, 1.5, "
                                   f"\"10s\", \"2m\", \"1h30m\"), got {show(value)}")
        value = parsed
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise where.error(key, f"expected a number of seconds, got {show(value)}")
    # An int is finite however long, and never converted until it is known to be in
    # bounds: math.isfinite() of a 400-digit one (TOML has no bound) raised OverflowError.
    finite = math.isfinite(value) if isinstance(value, float) else True
    if not finite or value < 0 or (positive and value == 0):
        bound = "> 0" if positive else ">= 0"
        raise where.error(key, f"expected a number of seconds {bound}, got {show(value)}")
    if value > MAX_SECONDS:
        raise where.error(key, f"expected a number of seconds, at most {MAX_SECONDS:.0f} "
                               f"(100 days), got {show(value)}")
    return float(value)


# ASCII digits only, and not too many: \d and str.isdigit() take ١٢ and ５ (and ² for
# isdigit, on which int() then raised). Compiled (and cached by re) at the first duration.
_NUMBER = r"(?:[0-9]{1,15}(?:\.[0-9]{0,9})?|\.[0-9]{1,9})"
_DURATION = rf"(?:({_NUMBER})h)?(?:({_NUMBER})m)?(?:({_NUMBER})s)?"


def parse_duration(text: str) -> float | None:
    """``10``, ``1.5``, ``10s``, ``2m``, ``1h30m``: seconds, or None when it is not one of
    these (a sign, ``nan``, an exponent, another unit, a digit that is not ASCII or a
    number of more than 15 digits is not a duration)."""
    text = text.strip()
    if len(text) > 80:
        return None
    if re.fullmatch(_NUMBER, text):
        return float(text)
    m = re.fullmatch(_DURATION, text)
    if m is None or not any(m.groups()):
        return None
    return sum(float(n) * unit for n, unit in zip(m.groups(), (3600, 60, 1), strict=True)
               if n is not None)


def count(value: object, key: str, where: Where, minimum: int, maximum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= maximum:
        raise where.error(key, f"expected a whole number from {minimum} to {maximum}, got "
                               f"{show(value)}")
    return value


_RT = r"^RT(MIN|MAX)(?:([+-])([0-9]{1,3}))?$"  # compiled at the first signal by name


def parse_signal(value: object, key: str = "stop_signal", where: Where | None = None) -> int:
    """A signal by name (TERM, SIGTERM, RTMIN+3, SIGRTMAX-1) or number."""
    where = where or Where(COMMAND_LINE, None)
    if isinstance(value, int) and not isinstance(value, bool):
        return _signal_number(value, key, where, show(value))
    if not isinstance(value, str) or not value.strip():
        raise where.error(key, f"expected a signal name such as \"TERM\", got {show(value)}")
    text = value.strip().upper().replace(" ", "")
    if re.fullmatch("[0-9]{1,9}", text):  # (isdigit() is true for "²", which int() refuses)
        return _signal_number(int(text), key, where, show(value))
    name = text[3:] if text.startswith("SIG") else text
    rt = re.match(_RT, name)
    if rt and hasattr(signal, "SIGRTMIN"):
        base = int(signal.SIGRTMIN) if rt.group(1) == "MIN" else int(signal.SIGRTMAX)
        offset = int(rt.group(3) or 0) * (-1 if rt.group(2) == "-" else 1)
        return _signal_number(base + offset, key, where, show(value))
    try:
        number = int(signal.Signals["SIG" + name])
    except KeyError:
        raise where.error(key, f"unknown signal {show(value)}") from None
    return _signal_number(number, key, where, show(value))


def _signal_number(number: int, key: str, where: Where, shown: str) -> int:
    valid = signal.valid_signals()
    if number not in valid or number == 0:
        raise where.error(key, f"not a signal on this system: {shown}")
    if number == signal.SIGSTOP:
        raise where.error(key, "SIGSTOP only pauses a process; it cannot stop one")
    return int(number)


def enum(kind: type[Enum], value: object, key: str, where: Where) -> Enum:
    choices = " | ".join(f'"{m.value}"' for m in kind)
    if isinstance(value, str):
        for member in kind:
            if member.value == value.strip().lower():
                return member
    raise where.error(key, f"expected one of {choices}, got {show(value)}")


def duration_words(value: str, positive: bool = True) -> str:
    """The one wording for every bad number of seconds (the value cut short: a 400-digit
    one is not echoed whole)."""
    bound = "> 0" if positive else ">= 0"
    return (f"{show(value)} is not a duration {bound} and at most 100 days (10, 1.5, 10s, "
            "2m, 1h30m)")


def show(value: object) -> str:
    if isinstance(value, str):
        return repr(value) if len(value) <= 60 else repr(value[:57] + "...")
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int) and abs(value) >= 10**30:  # (a TOML integer has no bound)
        # Not written out: str() of an int of over 4300 digits raises ValueError.
        if value.bit_length() > 10_000:
            return "a number of over 3000 digits"
        return f"a {len(str(abs(value)))}-digit number"
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return "a list"
    return repr(value)


# Keys allowed in [defaults] and in each process; the process keys add to these.
SETTING_KEYS = (
    "stop_timeout", "kill_timeout", "on_timeout", "stop_signal", "extend_step",
    "restart", "scrollback", "max_line_length", "max_stop_time", "watchdog_sec",
    "ready_timeout", "log_max_size", "log_keep", "success_exit_codes",
    "silence_warning",
)


def settings(table: Mapping[str, object], where: Where) -> dict[str, object]:
    """Validate the [defaults]-style keys present in ``table``."""
    out: dict[str, object] = {}
    for key in SETTING_KEYS:
        if key not in table:
            continue
        value = table[key]
        if key in ("stop_timeout", "kill_timeout"):
            out[key] = seconds(value, key, where)
        elif key in ("extend_step", "max_stop_time", "watchdog_sec", "ready_timeout",
                     "silence_warning"):
            out[key] = seconds(value, key, where, positive=True)
        elif key == "on_timeout":
            out[key] = enum(OnTimeout, value, key, where)
        elif key == "restart":
            out[key] = enum(RestartPolicy, value, key, where)
        elif key == "stop_signal":
            out[key] = parse_signal(value, key, where)
        elif key == "scrollback":
            out[key] = count(value, key, where, 1, MAX_SCROLLBACK)
        elif key == "max_line_length":
            out[key] = count(value, key, where, 80, MAX_LINE_LENGTH)
        elif key == "log_max_size":
            size = count(value, key, where, 0, 1 << 40)
            if 0 < size < 4096:
                raise where.error(key, f"expected 0 (no log file) or at least 4096 bytes, "
                                       f"got {size}")
            out[key] = size
        elif key == "log_keep":
            out[key] = count(value, key, where, 0, 100)
        elif key == "success_exit_codes":
            out[key] = exit_codes(value, key, where)
    return out




def exit_codes(value: object, key: str, where: Where) -> tuple[int, ...]:
    """A list of exit codes, each 0-255: in order, each once."""
    if not isinstance(value, list):
        raise where.error(key, f"expected a list of exit codes such as [0, 143], got "
                               f"{show(value)}")
    if not value:
        # Every ending would be a failure, a clean exit 0 too: a slip, not a wish.
        raise where.error(key, "must name at least one exit code, such as [0]")
    codes: list[int] = []
    for item in value:
        if isinstance(item, bool) or not isinstance(item, int) or not 0 <= item <= 255:
            raise where.error(key, f"expected exit codes from 0 to 255, got {show(item)}")
        if item not in codes:
            codes.append(item)
    return tuple(codes)


def check_name(name: object, where: Where) -> str:
    if not isinstance(name, str) or not name.strip():
        raise where.error(None, "process name is empty")
    if (byte := not_utf8(name)) is not None:
        # Undecodable bytes in an argument (b"\xff=true") arrive as lone surrogates;
        # a name goes into file names, JSON and the screen, which all need UTF-8.
        raise where.error(None, f"process name contains a byte that is not UTF-8 ({byte})")
    if _NAME_BAD.search(name):
        raise where.error(None, f"process name {name!r} contains a control character")
    if name != name.strip():
        raise where.error(None, f"process name {name!r} starts or ends with a space")
    if len(name) > MAX_NAME_LENGTH:
        raise where.error(None, f"process name is too long (at most {MAX_NAME_LENGTH} "
                                "characters)")
    if (encoded := len(quote(name, safe=""))) > 200:  # a file name in the run directory
        # (It said "at most 64 characters" of a 26-character 日本語 name.)
        raise where.error(None, f"process name is too long for a file name: {encoded} "
                                "characters percent-encoded, at most 200 (about 22 "
                                "characters of Japanese, Chinese or Korean)")
    if "\0" in name:
        raise where.error(None, "process name contains NUL")
    if name == "proctui":  # its lines would read as proctui's own ("proctui | ...")
        raise where.error(None, "process name 'proctui' is proctui's own label")
    return name


_UNDECODABLE = r"[\ud800-\udfff]"  # compiled at the first name checked


def not_utf8(text: str) -> str | None:
    """The first character of ``text`` that UTF-8 cannot hold, as the byte it stood for
    (``\\xff``: Python decodes an undecodable byte into a lone surrogate), else None."""
    m = re.search(_UNDECODABLE, text)
    if m is None:
        return None
    code = ord(m.group())
    return f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"\\u{code:04x}"


def no_nul(value: str, key: str, where: Where) -> str:
    if "\0" in value:
        raise where.error(key, "contains a NUL character")
    return value
