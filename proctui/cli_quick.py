"""The start commands' options, and a reader for their plain forms that needs no click.

``run``, ``up`` and ``demo`` are what an operator waits on, and click's import was 10 to
15 ms of every start on this machine (more than the whole ``seq | cat`` the headless
runner is measured against, and four times that emulated on riscv64). ``OPTIONS`` is the one
list of their options: cli_base makes the click options from it, and ``read`` reads an
argument list with it when every word is one it is sure of. Anything else (help, a
mistake, a value click would refuse or might read otherwise, a second use of an option,
shell completion) is left to click, which then answers as it always did (only a bad
duration's wording changed, to ">= 0" where 0 is allowed): ``read`` returns None, never
an error of its own. tests/test_cli_quick.py holds the two readers to the same answers.
"""

from __future__ import annotations

import enum
import os
import re
import stat
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from proctui.config.spec import ConfigError, OnHangup, OnTimeout
from proctui.config.values import Where, parse_duration, seconds


class Kind(enum.Enum):
    FLAG = "flag"
    SECONDS = "seconds"  # >= 0, at most 100 days: 10, 1.5, 10s, 2m, 1h30m
    HZ = "hz"  # 0.5 to 60
    CHOICE = "choice"
    TEXT = "text"
    DIRECTORY = "directory"  # a path that must not be a file
    PATH = "path"


HZ_RANGE = (0.5, 60)  # (60, not 60.0: click shows it in the help)


@dataclass(frozen=True)
class StartOption:
    flag: str  # the long form
    kind: Kind
    help: str
    metavar: str | None = None
    choices: tuple[str, ...] = ()
    short: str | None = None

    @property
    def dest(self) -> str:
        return self.flag[2:].replace("-", "_")


FILE = StartOption(
    "--file", Kind.PATH, short="-f",
    help="A proctui.toml (by its .toml suffix) or a Procfile. Default: ./proctui.toml, "
         "else ./Procfile.")
DETACH = StartOption(
    "--detach", Kind.FLAG,
    help="Supervise in the background, in a session of its own; returns once every "
         "process has started (proctui attach, status, down reach it).")
PRINT_CONFIG = StartOption(
    "--print-config", Kind.FLAG,
    help="Print the demo as a proctui.toml to copy and edit, and exit.")

# The options run, up and demo share, in the order their help lists them.
OPTIONS = (
    StartOption("--headless", Kind.FLAG,
                help="Print output lines instead of opening the console (automatic when "
                     "stdout is not a terminal)."),
    StartOption("--stop-timeout", Kind.SECONDS, metavar="SECONDS",
                help="Seconds from the stop request to the timeout action."),
    StartOption("--kill-timeout", Kind.SECONDS, metavar="SECONDS",
                help="Seconds after SIGKILL before a process is reported unkillable."),
    StartOption("--on-timeout", Kind.CHOICE, choices=tuple(p.value for p in OnTimeout),
                help="At the stop deadline: kill, abandon, or ask the operator (headless: "
                     "ask acts as kill)."),
    StartOption("--stop-signal", Kind.TEXT, metavar="SIGNAL",
                help="The stop signal, e.g. TERM, INT, SIGQUIT."),
    StartOption("--stop-after", Kind.SECONDS, metavar="SECONDS",
                help="Stop everything gracefully after SECONDS (for scripts and demos)."),
    StartOption("--refresh", Kind.HZ, metavar="HZ",
                help="Redraw the console at most HZ times a second (default 10); lower it "
                     "on a slow link."),
    StartOption("--run-dir", Kind.DIRECTORY,
                help="Where the lock and PID files live. Default: $XDG_RUNTIME_DIR/proctui/"
                     "NAME-HASH (or /tmp/proctui-UID/...), one per config file or "
                     "directory."),
    StartOption("--on-hangup", Kind.CHOICE, choices=tuple(h.value for h in OnHangup),
                help="When the console's terminal goes away: stop everything (default), or "
                     "detach and supervise on (as [defaults] on_hangup)."),
)


@dataclass(frozen=True)
class StartCommand:
    name: str
    options: tuple[StartOption, ...]
    commands: bool  # takes COMMANDS after its options


COMMANDS = {c.name: c for c in (
    StartCommand("run", (FILE, DETACH, *OPTIONS), commands=True),
    StartCommand("up", (FILE, *OPTIONS), commands=True),
    StartCommand("demo", (DETACH, *OPTIONS, PRINT_CONFIG), commands=False),
)}


def to_seconds(text: str, positive: bool = False) -> float | None:
    """A duration as the command line gives it (10, 1.5, 10s, 2m, 1h30m; > 0 when
    ``positive``, at most 100 days), or None."""
    number = parse_duration(text)
    if number is None:
        return None
    try:
        return seconds(number, None, Where("", None), positive=positive)
    except ConfigError:
        return None


_DECIMAL = re.compile(r"\d{1,6}(?:\.\d{1,6})?")  # what float() reads the same way everywhere


def _value(option: StartOption, text: str) -> object:
    """``text`` converted as click converts it for ``option``; _Unsure where click might
    refuse it, or read it otherwise."""
    if not text or text.startswith("-"):
        raise _Unsure
    kind = option.kind
    if kind is Kind.TEXT:
        return text
    if kind is Kind.CHOICE:
        if text not in option.choices:
            raise _Unsure
        return text
    if kind is Kind.SECONDS:
        number = to_seconds(text)
        if number is None:
            raise _Unsure
        return number
    if kind is Kind.HZ:
        if not _DECIMAL.fullmatch(text) or not HZ_RANGE[0] <= float(text) <= HZ_RANGE[1]:
            raise _Unsure
        return float(text)
    # A path: click looks only at one that exists (a file where a directory is wanted, or
    # one it cannot read, it refuses).
    try:
        st = os.stat(text)
    except ValueError:  # a NUL: click would fail with a traceback of its own
        raise _Unsure from None
    except OSError:
        return Path(text)
    if (kind is Kind.DIRECTORY and stat.S_ISREG(st.st_mode)) or not os.access(text, os.R_OK):
        raise _Unsure
    return Path(text)


class _Unsure(Exception):
    """Click is to read this argument list."""


@dataclass(frozen=True)
class Reading:
    command: str
    params: dict[str, object]  # as click hands them to the command: every option's dest


def read(argv: Sequence[str]) -> Reading | None:
    """``argv`` (without the program) as click would read it, or None when not sure."""
    if not argv or argv[0] not in COMMANDS or "_PROCTUI_COMPLETE" in os.environ:
        return None
    command = COMMANDS[argv[0]]
    by_flag = {o.flag: o for o in command.options}
    by_flag.update({o.short: o for o in command.options if o.short})
    params: dict[str, object] = {o.dest: False if o.kind is Kind.FLAG else None
                                 for o in command.options}
    seen: set[str] = set()
    positional: list[str] = []
    words = list(argv[1:])
    try:
        while words:
            word = words.pop(0)
            if word == "--":
                positional += words
                break
            if word == "-":
                raise _Unsure
            if not word.startswith("-"):
                positional.append(word)
                continue
            flag, has_value, inline = word.partition("=")
            option = by_flag.get(flag)
            if option is None or option.dest in seen or (has_value and flag == option.short):
                raise _Unsure
            seen.add(option.dest)
            if option.kind is Kind.FLAG:
                if has_value:
                    raise _Unsure
                params[option.dest] = True
                continue
            if not has_value:
                if not words:
                    raise _Unsure
                inline = words.pop(0)
            params[option.dest] = _value(option, inline)
    except _Unsure:
        return None
    if command.commands:
        params["commands"] = tuple(positional)
    elif positional:
        return None
    return Reading(command.name, params)


def main(argv: Sequence[str]) -> bool:
    """Run a start command read without click; False (nothing done) when click is to read
    it. Ends as the click command does: the same exit statuses for the same events."""
    reading = read(argv)
    if reading is None:
        return False
    from proctui import launch

    try:
        getattr(launch, reading.command)(**reading.params)
    except (EOFError, KeyboardInterrupt):
        launch.say("", err=True)  # as click's: it closes the terminal's ^C echo
        sys.exit(130)
    except BrokenPipeError:
        _quiet_stdout()
        sys.exit(1)
    sys.exit(0)


def _quiet_stdout() -> None:
    """The reader of stdout is gone: nothing more is written there, and the interpreter's
    last flush at exit must not print a second error (as click does)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass
