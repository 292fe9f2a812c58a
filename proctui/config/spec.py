"""What a configured process is: immutable specs, and the one error type for bad input.

Kept free of file formats (no tomllib here) so that the core and ``--version`` import
nothing they do not need.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Mapping
from dataclasses import field, replace
from enum import Enum
from pathlib import Path

from proctui.records import dataclass

COMMAND_LINE = "command line"
DEFAULT_SCROLLBACK = 10_000  # lines kept per process
DEFAULT_MAX_LINE_LENGTH = 8192  # characters; longer lines are cut into pieces

# Bounds that keep every value usable by the core (a deque, a timer, a file name).
MAX_SECONDS = 100 * 24 * 3600.0  # 100 days: longer is "no deadline", which is `wait`
MAX_SCROLLBACK = 10_000_000
MAX_LINE_LENGTH = 1_000_000
MAX_NAME_LENGTH = 64
MAX_CONFIG_BYTES = 4 << 20


class ConfigError(Exception):
    """Bad input. ``str()`` is the one line to show the user."""

    def __init__(self, source: str, message: str, process: str | None = None,
                 key: str | None = None) -> None:
        where = [source]
        if process is not None:
            where.append(f"process {_shown(process)}")
        if key is not None:
            where.append(f"key {key!r}")
        super().__init__(f"{': '.join(where)}: {message}")
        self.source, self.process, self.key = source, process, key


def _shown(name: str) -> str:
    """A name quoted, a byte that was not UTF-8 as that byte: an argument b"w\\xff" comes
    to Python as "w\\udcff", which repr() wrote as 'w\\udcff' (no byte the user typed)."""
    shown = repr(name)
    if "\\udc" not in shown:
        return shown
    import re

    # Not where the backslash is the name's own, which repr() doubles: an odd run only.
    return re.sub(r"(?<!\\)((?:\\\\)*)\\udc([89a-f][0-9a-f])", r"\1\\x\2", shown)


class OnTimeout(Enum):
    KILL = "kill"
    ABANDON = "abandon"
    ASK = "ask"


class RestartPolicy(Enum):
    NO = "no"
    ON_FAILURE = "on-failure"
    ALWAYS = "always"


class OnHangup(Enum):
    STOP = "stop"
    DETACH = "detach"


class DependCondition(Enum):
    STARTED = "started"
    READY = "ready"
    EXITED_OK = "exited-ok"


@dataclass(frozen=True, slots=True)
class ReadyCheck:
    """How a process says it is ready: exactly one of these is set."""

    notify: bool = False  # READY=1 on the notify socket
    log: str | None = None  # a regular expression on its output lines
    tcp: tuple[str, int] | None = None  # something accepts connections there
    exec: tuple[str, ...] | None = None  # a command that exits 0
    interval: float = 1.0  # seconds between tcp/exec probes

    def describe(self) -> str:
        if self.notify:
            return "READY=1 on the notify socket"
        if self.log is not None:
            return f"a line matching {self.log!r}"
        if self.tcp is not None:
            return f"a connection to {self.tcp[0]}:{self.tcp[1]}"
        return f"{' '.join(self.exec or ())!r} exiting 0"


@dataclass(frozen=True, slots=True)
class ProcessSpec:
    name: str
    argv: tuple[str, ...]
    cmd: str = field(compare=False)  # as the user wrote it, for display
    cwd: Path
    shell: bool = False
    env: tuple[tuple[str, str], ...] = ()  # on top of proctui's own environment
    stop_timeout: float = 10.0
    kill_timeout: float = 5.0
    on_timeout: OnTimeout = OnTimeout.KILL
    stop_signal: int = signal.SIGTERM
    extend_step: float = 30.0
    restart: RestartPolicy = RestartPolicy.NO
    scrollback: int = DEFAULT_SCROLLBACK
    max_line_length: int = DEFAULT_MAX_LINE_LENGTH
    # Where it was said (errors name it), not what runs: the same process read again
    # from the file by another name ("proctui.toml", then its absolute path) is the same.
    source: str = field(default=COMMAND_LINE, compare=False)
    max_stop_time: float | None = None  # caps EXTEND_TIMEOUT_USEC (None: unlimited)
    watchdog_sec: float | None = None
    ready: ReadyCheck | None = None
    ready_timeout: float | None = None
    depends_on: tuple[tuple[str, DependCondition | None], ...] = ()  # None: the default
    restart_with: tuple[str, ...] = ()
    log_max_size: int = 8 << 20
    log_keep: int = 3
    success_exit_codes: tuple[int, ...] = (0,)  # exit codes that are a clean end
    stop_command: tuple[str, ...] = ()  # run instead of the stop signal (empty: none)
    stop_command_then_signal: bool = False  # the stop signal follows the stop command
    silence_warning: float | None = None  # seconds without output that mark it silent

    def environ(self, base: Mapping[str, str] | None = None) -> dict[str, str]:
        env = dict(os.environ if base is None else base)
        # A Python child writes nothing through a pipe until it exits unless unbuffered;
        # an explicit setting in the spec or the environment wins.
        env.setdefault("PYTHONUNBUFFERED", "1")
        env.update(self.env)
        return env

    def condition_for(self, dependency: ProcessSpec) -> DependCondition:
        """What this process waits for in ``dependency``."""
        for name, condition in self.depends_on:
            if name == dependency.name and condition is not None:
                return condition
        return DependCondition.READY if dependency.ready is not None else \
            DependCondition.STARTED


@dataclass(frozen=True, slots=True)
class Overrides:
    """Command-line options that apply to every process, over the file's values."""

    stop_timeout: float | None = None
    kill_timeout: float | None = None
    on_timeout: OnTimeout | None = None
    stop_signal: int | None = None

    def apply(self, spec: ProcessSpec) -> ProcessSpec:
        changes = {k: getattr(self, k) for k in self.__slots__ if getattr(self, k) is not None}
        return replace(spec, **changes) if changes else spec


@dataclass(frozen=True, slots=True)
class Config:
    processes: tuple[ProcessSpec, ...]
    source: str  # the file as the user knows it, or "command line"
    base_dir: Path = field(default_factory=Path.cwd)
    path: Path | None = None  # the file, resolved
    on_hangup: OnHangup = OnHangup.STOP
