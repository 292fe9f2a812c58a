"""TOML files, Procfiles and command-line commands, turned into immutable process specs.

All validation happens here. Every error names the file, the process and the key, in one
line, so the CLI can print it and exit 2.
"""

from __future__ import annotations

import math
import os
import re
import shlex
import signal
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import Enum
from pathlib import Path

COMMAND_LINE = "command line"
DEFAULT_SCROLLBACK = 10_000  # lines kept per process
DEFAULT_MAX_LINE_LENGTH = 8192  # characters; longer lines are cut into pieces


class ConfigError(Exception):
    """Bad input. ``str()`` is the one line to show the user."""

    def __init__(self, source: str, message: str, process: str | None = None,
                 key: str | None = None) -> None:
        where = [source]
        if process is not None:
            where.append(f"process {process!r}")
        if key is not None:
            where.append(f"key {key!r}")
        super().__init__(f"{': '.join(where)}: {message}")
        self.source, self.process, self.key = source, process, key


class OnTimeout(Enum):
    KILL = "kill"
    ABANDON = "abandon"
    ASK = "ask"


class RestartPolicy(Enum):
    NO = "no"
    ON_FAILURE = "on-failure"
    ALWAYS = "always"


@dataclass(frozen=True, slots=True)
class ProcessSpec:
    name: str
    argv: tuple[str, ...]
    cmd: str  # as the user wrote it, for display
    cwd: Path
    shell: bool = False
    env: tuple[tuple[str, str], ...] = ()  # on top of proctui's own environment
    stop_timeout: float = 10.0
    kill_timeout: float = 5.0
    on_timeout: OnTimeout = OnTimeout.KILL
    stop_signal: signal.Signals = signal.SIGTERM
    extend_step: float = 30.0
    restart: RestartPolicy = RestartPolicy.NO
    scrollback: int = DEFAULT_SCROLLBACK
    max_line_length: int = DEFAULT_MAX_LINE_LENGTH
    source: str = COMMAND_LINE

    def environ(self, base: Mapping[str, str] | None = None) -> dict[str, str]:
        env = dict(os.environ if base is None else base)
        # A Python child writes nothing through a pipe until it exits unless unbuffered;
        # an explicit setting in the spec or the environment wins.
        env.setdefault("PYTHONUNBUFFERED", "1")
        env.update(self.env)
        return env


@dataclass(frozen=True, slots=True)
class Overrides:
    """Command-line options that apply to every process, over the file's values."""

    stop_timeout: float | None = None
    kill_timeout: float | None = None
    on_timeout: OnTimeout | None = None
    stop_signal: signal.Signals | None = None

    def apply(self, spec: ProcessSpec) -> ProcessSpec:
        changes = {k: getattr(self, k) for k in self.__slots__ if getattr(self, k) is not None}
        return replace(spec, **changes) if changes else spec


@dataclass(frozen=True, slots=True)
class Config:
    processes: tuple[ProcessSpec, ...]
    source: str  # the file as the user knows it, or "command line"
    base_dir: Path = field(default_factory=Path.cwd)
    path: Path | None = None  # the file, resolved


# Keys allowed in [defaults] and in each process; the process keys add to these.
_SETTING_KEYS = (
    "stop_timeout", "kill_timeout", "on_timeout", "stop_signal", "extend_step",
    "restart", "scrollback", "max_line_length",
)
_PROCESS_KEYS = ("cmd", "shell", "cwd", "env", "env_file", *_SETTING_KEYS)
_NAME_BAD = re.compile(r"[\x00-\x1f\x7f]")


# -- value parsers: each takes (value, where) and raises ConfigError via where() ----------

class _Where:
    def __init__(self, source: str, process: str | None) -> None:
        self.source, self.process = source, process

    def error(self, key: str | None, message: str) -> ConfigError:
        return ConfigError(self.source, message, self.process, key)


def _seconds(value: object, key: str, where: _Where, *, positive: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise where.error(key, f"expected a number of seconds, got {_show(value)}")
    if not math.isfinite(value) or value < 0 or (positive and value == 0):
        bound = "> 0" if positive else ">= 0"
        raise where.error(key, f"expected a number of seconds {bound}, got {_show(value)}")
    return float(value)


def _count(value: object, key: str, where: _Where, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise where.error(key, f"expected a whole number >= {minimum}, got {_show(value)}")
    return value


def parse_signal(value: object, key: str = "stop_signal",
                 where: _Where | None = None) -> signal.Signals:
    where = where or _Where(COMMAND_LINE, None)
    if not isinstance(value, str) or not value.strip():
        raise where.error(key, f"expected a signal name such as \"TERM\", got {_show(value)}")
    name = value.strip().upper()
    if not name.startswith("SIG"):
        name = "SIG" + name
    try:
        sig = signal.Signals[name]
    except KeyError:
        raise where.error(key, f"unknown signal {value!r}") from None
    return sig


def _enum(enum: type[Enum], value: object, key: str, where: _Where) -> Enum:
    choices = " | ".join(f'"{m.value}"' for m in enum)  # type: ignore[attr-defined]
    if isinstance(value, str):
        for member in enum:
            if member.value == value.strip().lower():
                return member
    raise where.error(key, f"expected one of {choices}, got {_show(value)}")


def _show(value: object) -> str:
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return "a list"
    return repr(value)


def _settings(table: Mapping[str, object], where: _Where) -> dict[str, object]:
    """Validate the [defaults]-style keys present in ``table``."""
    out: dict[str, object] = {}
    for key in _SETTING_KEYS:
        if key not in table:
            continue
        value = table[key]
        if key in ("stop_timeout", "kill_timeout"):
            out[key] = _seconds(value, key, where)
        elif key == "extend_step":
            out[key] = _seconds(value, key, where, positive=True)
        elif key == "on_timeout":
            out[key] = _enum(OnTimeout, value, key, where)
        elif key == "restart":
            out[key] = _enum(RestartPolicy, value, key, where)
        elif key == "stop_signal":
            out[key] = parse_signal(value, key, where)
        elif key == "scrollback":
            out[key] = _count(value, key, where, 1)
        elif key == "max_line_length":
            out[key] = _count(value, key, where, 80)
    return out


def check_name(name: str, where: _Where) -> str:
    if not isinstance(name, str) or not name.strip():
        raise where.error(None, "process name is empty")
    if _NAME_BAD.search(name):
        raise where.error(None, f"process name {name!r} contains a control character")
    return name


# -- TOML ---------------------------------------------------------------------------------

def load_toml(path: Path, display: str | None = None) -> Config:
    source = display or str(path)
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise ConfigError(source, f"cannot read: {e.strerror or e}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ConfigError(source, f"not UTF-8 text ({e.reason} at byte {e.start})") from None
    return parse_toml(text, source, path.resolve().parent, path.resolve())


def parse_toml(text: str, source: str, base: Path, path: Path | None = None) -> Config:
    """A proctui.toml given as text; ``base`` is where relative paths start."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(source, f"TOML syntax error: {e}") from None
    top = _Where(source, None)
    unknown = sorted(set(data) - {"defaults", "processes"})
    if unknown:
        raise top.error(unknown[0], "unknown top-level key (expected [defaults] and "
                                    "[processes.NAME])")
    defaults_table = data.get("defaults", {})
    if not isinstance(defaults_table, dict):
        raise top.error("defaults", "expected a table [defaults]")
    bad = sorted(set(defaults_table) - set(_SETTING_KEYS))
    if bad:
        raise ConfigError(source, f"unknown key in [defaults] (known: "
                                  f"{', '.join(_SETTING_KEYS)})", None, bad[0])
    defaults = _settings(defaults_table, _Where(source, None))
    processes = data.get("processes")
    if processes is None or processes == {}:
        raise top.error("processes", "no processes defined (add a [processes.NAME] table "
                                     "with a cmd)")
    if not isinstance(processes, dict):
        raise top.error("processes", "expected tables [processes.NAME]")
    specs = []
    for name, table in processes.items():
        where = _Where(source, name)
        check_name(name, where)
        if not isinstance(table, dict):
            raise where.error(None, f"expected a table [processes.{name}], got {_show(table)}")
        specs.append(_toml_process(name, table, defaults, base, where))
    return Config(tuple(specs), source, base, path)


def _toml_process(name: str, table: dict[str, object], defaults: dict[str, object],
                  base: Path, where: _Where) -> ProcessSpec:
    bad = sorted(set(table) - set(_PROCESS_KEYS))
    if bad:
        raise where.error(bad[0], f"unknown key (known: {', '.join(_PROCESS_KEYS)})")
    if "cmd" not in table:
        raise where.error("cmd", "missing: every process needs a cmd")
    shell = table.get("shell", False)
    if not isinstance(shell, bool):
        raise where.error("shell", f"expected true or false, got {_show(shell)}")
    cmd = table["cmd"]
    argv, display = _command(cmd, shell, where)
    cwd = base
    if "cwd" in table:
        value = table["cwd"]
        if not isinstance(value, str) or not value:
            raise where.error("cwd", f"expected a directory path, got {_show(value)}")
        cwd = (base / os.path.expanduser(value))
    env: dict[str, str] = {}
    if "env_file" in table:
        value = table["env_file"]
        if not isinstance(value, str) or not value:
            raise where.error("env_file", f"expected a file path, got {_show(value)}")
        env.update(load_env_file(base / os.path.expanduser(value), where))
    if "env" in table:
        value = table["env"]
        if not isinstance(value, dict):
            raise where.error("env", f"expected a table of strings, got {_show(value)}")
        for k, v in value.items():
            if not isinstance(v, str | int | float) or isinstance(v, bool):
                raise where.error(f"env.{k}", f"expected a string, got {_show(v)}")
            if not k or "=" in k or "\0" in k:
                raise where.error(f"env.{k}", "not a valid environment variable name")
            env[k] = str(v)
    settings = {**defaults, **_settings(table, where)}
    return ProcessSpec(name=name, argv=argv, cmd=display, cwd=cwd, shell=shell,
                       env=tuple(env.items()), source=where.source, **settings)  # type: ignore[arg-type]


def _command(cmd: object, shell: bool, where: _Where) -> tuple[tuple[str, ...], str]:
    if isinstance(cmd, str):
        if not cmd.strip():
            raise where.error("cmd", "empty command")
        if shell:
            return shell_argv(cmd), cmd
        try:
            argv = shlex.split(cmd)
        except ValueError as e:
            raise where.error("cmd", f"cannot split command: {e}") from None
        if not argv:
            raise where.error("cmd", "empty command")
        return tuple(argv), cmd
    if isinstance(cmd, list):
        if not cmd or not all(isinstance(a, str) for a in cmd) or not cmd[0]:
            raise where.error("cmd", "expected a non-empty list of strings")
        if shell:
            return shell_argv(shlex.join(cmd)), shlex.join(cmd)
        return tuple(cmd), shlex.join(cmd)
    raise where.error("cmd", f"expected a string or a list of strings, got {_show(cmd)}")


_ENV_LINE = re.compile(r"^(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*)$")
_DQ_ESCAPES = {"n": "\n", "t": "\t", "\\": "\\", '"': '"', "$": "$"}


def load_env_file(path: Path, where: _Where) -> dict[str, str]:
    """KEY=VALUE lines. Values are data: nothing is expanded or evaluated."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise where.error("env_file", f"file not found: {path}") from None
    except (OSError, UnicodeDecodeError) as e:
        raise where.error("env_file", f"cannot read {path}: {e}") from None
    env: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        m = _ENV_LINE.match(stripped)
        if not m:
            raise where.error("env_file", f"{path}:{number}: expected KEY=VALUE")
        key, value = m.group(1), m.group(2).strip()
        if len(value) >= 2 and value[0] == value[-1] == "'":
            value = value[1:-1]
        elif len(value) >= 2 and value[0] == value[-1] == '"':
            value = re.sub(r"\\(.)", lambda g: _DQ_ESCAPES.get(g.group(1), "\\" + g.group(1)),
                           value[1:-1])
        else:
            value = re.split(r"\s+#", value, maxsplit=1)[0].rstrip()
        env[key] = value
    return env


# -- running through the shell ------------------------------------------------------------

_SHELL_WORDS = frozenset(
    "if then else elif fi case esac for while until do done { } ! [[ function select "
    "cd export trap set unset eval exec source . : readonly shift return exit wait ulimit "
    "umask alias local read times break continue command type hash".split()
)
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


def shell_argv(cmd: str) -> tuple[str, ...]:
    """``/bin/sh -c CMD``, with ``exec`` in front of a simple command so that the program
    itself, not a shell around it, is the process proctui watches: it gets the stop
    signal first and its own exit code is the one reported. Compound commands (pipes,
    lists, subshells, keywords, builtins, leading assignments) are left to the shell."""
    return ("/bin/sh", "-c", f"exec {cmd}" if _is_simple(cmd) else cmd)


def _is_simple(cmd: str) -> bool:
    lexer = shlex.shlex(cmd, posix=True, punctuation_chars="();<>|&\n")
    lexer.whitespace = " \t\r"
    lexer.whitespace_split = True
    try:
        tokens = list(lexer)
    except ValueError:
        return False
    if not tokens or tokens[0] in _SHELL_WORDS or _ASSIGNMENT.match(tokens[0]):
        return False
    operators = [t for t in tokens if t and all(c in "();<>|&\n" for c in t)]
    # Redirections (>, 2>&1) keep a command simple; lists, pipes and subshells do not.
    return not any(any(c in t for c in ";|()\n") or t in ("&", "&&") for t in operators)


# -- Procfile -----------------------------------------------------------------------------

_PROCFILE_LINE = re.compile(r"^([A-Za-z0-9_.-]+)\s*:\s*(.*)$")


def load_procfile(path: Path, display: str | None = None) -> Config:
    source = display or str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(source, f"cannot read: {e}") from None
    base = path.resolve().parent
    specs: list[ProcessSpec] = []
    seen: set[str] = set()
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        m = _PROCFILE_LINE.match(stripped)
        if not m:
            raise ConfigError(f"{source}:{number}", "expected 'name: command'")
        name, cmd = m.group(1), m.group(2).strip()
        where = _Where(f"{source}:{number}", name)
        if name in seen:
            raise where.error(None, "duplicate process name")
        if not cmd:
            raise where.error("cmd", "empty command")
        seen.add(name)
        specs.append(ProcessSpec(name=name, argv=shell_argv(cmd), cmd=cmd, cwd=base,
                                 shell=True, source=source))
    if not specs:
        raise ConfigError(source, "no processes defined (expected 'name: command' lines)")
    return Config(tuple(specs), source, base, path.resolve())


# -- command line -------------------------------------------------------------------------

_NAMED = re.compile(r"^([A-Za-z0-9_.-]+)=(.*)$", re.DOTALL)


def from_commands(commands: Sequence[str], cwd: Path | None = None) -> Config:
    """``NAME=CMD`` or ``CMD`` arguments, each run through /bin/sh -c like a Procfile line.
    An unnamed command is named after its program (``python``, ``python-2``, ...)."""
    base = cwd or Path.cwd()
    named: list[tuple[str | None, str]] = []
    for arg in commands:
        m = _NAMED.match(arg)
        if m and m.group(2).strip() and not m.group(2).startswith("="):
            named.append((m.group(1), m.group(2).strip()))
        else:
            named.append((None, arg.strip()))
    taken = {n for n, _ in named if n}
    specs: list[ProcessSpec] = []
    seen: set[str] = set()
    for name, cmd in named:
        where = _Where(COMMAND_LINE, name)
        if not cmd:
            raise where.error("cmd", "empty command")
        if name is None:
            name = _unique(_program_name(cmd), taken)
            taken.add(name)
        elif name in seen:
            raise where.error(None, "duplicate process name")
        seen.add(name)
        specs.append(ProcessSpec(name=name, argv=shell_argv(cmd), cmd=cmd, cwd=base,
                                 shell=True))
    if not specs:
        raise ConfigError(COMMAND_LINE, "no processes given")
    return Config(tuple(specs), COMMAND_LINE, base)


def _program_name(cmd: str) -> str:
    try:
        words = shlex.split(cmd)
    except ValueError:
        words = cmd.split()
    # Skip leading VAR=value assignments, as a shell would.
    words = [w for w in words if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", w)] or words
    name = os.path.basename(words[0]) if words else "cmd"
    return re.sub(r"[^A-Za-z0-9_.-]", "", name) or "cmd"


def _unique(name: str, taken: set[str]) -> str:
    if name not in taken:
        return name
    n = 2
    while f"{name}-{n}" in taken:
        n += 1
    return f"{name}-{n}"


# -- finding the config -------------------------------------------------------------------

def load(path: Path | None = None, commands: Sequence[str] = (),
         overrides: Overrides | None = None, cwd: Path | None = None) -> Config:
    """The config from ``commands``, ``path``, or ./proctui.toml, or ./Procfile."""
    here = cwd or Path.cwd()
    if commands and path is not None:
        raise ConfigError(COMMAND_LINE, "give either -f FILE or commands, not both")
    if commands:
        config = from_commands(commands, here)
    elif path is not None:
        if path.is_dir():
            raise ConfigError(str(path), "is a directory, expected a proctui.toml or Procfile")
        if not path.exists():
            raise ConfigError(str(path), "file not found")
        config = load_toml(path) if path.suffix == ".toml" else load_procfile(path)
    elif (here / "proctui.toml").is_file():
        config = load_toml(here / "proctui.toml", "proctui.toml")
    elif (here / "Procfile").is_file():
        config = load_procfile(here / "Procfile", "Procfile")
    else:
        raise ConfigError(str(here), "no proctui.toml or Procfile here; pass -f FILE or "
                                     "commands (proctui run 'web=python -m http.server')")
    if overrides is not None:
        config = replace(config, processes=tuple(overrides.apply(s) for s in config.processes))
    return config
