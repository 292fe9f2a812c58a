"""proctui.toml: [defaults] and [processes.NAME] tables into process specs."""

from __future__ import annotations

import os
import re
import shlex
import tomllib
from pathlib import Path

from proctui.config.env_file import load_env_file
from proctui.config.files import UnreadableFile, read_text
from proctui.config.graph import check_dependencies
from proctui.config.shell import shell_argv, split
from proctui.config.spec import (
    Config,
    ConfigError,
    DependCondition,
    OnHangup,
    ProcessSpec,
    ReadyCheck,
)
from proctui.config.values import (
    SETTING_KEYS,
    Where,
    check_name,
    enum,
    no_nul,
    seconds,
    settings,
    show,
)

_DEFAULT_KEYS = (*SETTING_KEYS, "on_hangup")
_PROCESS_KEYS = ("cmd", "shell", "cwd", "env", "env_file", "ready", "depends_on",
                 "restart_with", "stop_command", "stop_command_then_signal", *SETTING_KEYS)


def load_toml(path: Path, display: str | None = None) -> Config:
    source = display or str(path)
    try:
        text = read_text(path)
    except UnreadableFile as e:
        raise ConfigError(source, str(e)) from None
    return parse_toml(text, source, path.resolve().parent, path.resolve())


def parse_toml(text: str, source: str, base: Path, path: Path | None = None) -> Config:
    """A proctui.toml given as text; ``base`` is where relative paths start."""
    text = text.removeprefix("\ufeff")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(source, f"TOML syntax error: {e}") from None
    except RecursionError:
        raise ConfigError(source, "TOML syntax error: nested too deeply") from None
    except ValueError:  # not a TOMLDecodeError: int() refuses over 4300 digits
        raise ConfigError(source, "TOML syntax error: a number of too many digits (at most "
                                  "4300)") from None
    top = Where(source, None)
    unknown = sorted(set(data) - {"defaults", "processes"})
    if unknown:
        raise top.error(unknown[0], "unknown top-level key (expected [defaults] and "
                                    "[processes.NAME])")
    defaults_table = data.get("defaults", {})
    if not isinstance(defaults_table, dict):
        raise top.error("defaults", "expected a table [defaults]")
    bad = sorted(set(defaults_table) - set(_DEFAULT_KEYS))
    if bad:
        raise ConfigError(source, f"unknown key in [defaults]{_nearest(bad[0], _DEFAULT_KEYS)}",
                          None, bad[0])
    defaults = settings(defaults_table, top)
    on_hangup = OnHangup.STOP
    if "on_hangup" in defaults_table:
        on_hangup = enum(OnHangup, defaults_table["on_hangup"], "on_hangup", top)  # type: ignore[assignment]
    processes = data.get("processes")
    if processes is None or processes == {}:
        raise top.error("processes", "no processes defined (add a [processes.NAME] table "
                                     "with a cmd)")
    if not isinstance(processes, dict):
        raise top.error("processes", "expected tables [processes.NAME]")
    specs = []
    for name, table in processes.items():
        where = Where(source, name)
        check_name(name, where)
        if not isinstance(table, dict):
            raise where.error(None, f"expected a table [processes.{name}], got {show(table)}")
        specs.append(_process(name, table, defaults, base, where))
    check_dependencies(specs, source)
    return Config(tuple(specs), source, base, path, on_hangup)


def _process(name: str, table: dict[str, object], defaults: dict[str, object],
             base: Path, where: Where) -> ProcessSpec:
    bad = sorted(set(table) - set(_PROCESS_KEYS))
    if bad:
        raise where.error(bad[0], f"unknown key{_nearest(bad[0], _PROCESS_KEYS)}")
    if "cmd" not in table:
        raise where.error("cmd", "missing: every process needs a cmd")
    shell = table.get("shell", False)
    if not isinstance(shell, bool):
        raise where.error("shell", f"expected true or false, got {show(shell)}")
    argv, display = _command(table["cmd"], shell, where)
    cwd = _cwd(table.get("cwd"), base, where) if "cwd" in table else base
    env: dict[str, str] = {}
    if "env_file" in table:
        value = table["env_file"]
        if not isinstance(value, str) or not value:
            raise where.error("env_file", f"expected a file path, got {show(value)}")
        no_nul(value, "env_file", where)  # else open() raised ValueError: a traceback
        env.update(load_env_file(base / os.path.expanduser(value), where))
    if "env" in table:
        env.update(_env(table["env"], where))
    extra: dict[str, object] = {}
    if "ready" in table:
        extra["ready"] = _ready(table["ready"], where)
    if "depends_on" in table:
        extra["depends_on"] = _depends(table["depends_on"], where)
    if "restart_with" in table:
        value = table["restart_with"]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise where.error("restart_with", "expected a list of process names")
        extra["restart_with"] = tuple(value)
    if "stop_command" in table:
        extra["stop_command"] = _stop_command(table["stop_command"], where)
    if "stop_command_then_signal" in table:
        value = table["stop_command_then_signal"]
        if not isinstance(value, bool):
            raise where.error("stop_command_then_signal", f"expected true or false, got "
                                                          f"{show(value)}")
        if "stop_command" not in table:
            raise where.error("stop_command_then_signal", "needs a stop_command")
        extra["stop_command_then_signal"] = value
    merged = {**defaults, **settings(table, where), **extra}
    return ProcessSpec(name=name, argv=argv, cmd=display, cwd=cwd, shell=shell,
                       env=tuple(env.items()), source=where.source, **merged)  # type: ignore[arg-type]


def _command(cmd: object, shell: bool, where: Where) -> tuple[tuple[str, ...], str]:
    if isinstance(cmd, str):
        if not cmd.strip():
            raise where.error("cmd", "empty command")
        no_nul(cmd, "cmd", where)
        if shell:
            return shell_argv(cmd), cmd
        try:
            argv = split(cmd)
        except ValueError as e:
            raise where.error("cmd", f"cannot split command: {e}") from None
        if not argv:
            raise where.error("cmd", "empty command")
        return tuple(argv), cmd
    if isinstance(cmd, list):
        if not cmd or not all(isinstance(a, str) for a in cmd) or not cmd[0]:
            raise where.error("cmd", "expected a non-empty list of strings")
        for arg in cmd:
            no_nul(arg, "cmd", where)
        if shell:
            return shell_argv(shlex.join(cmd)), shlex.join(cmd)
        return tuple(cmd), shlex.join(cmd)
    raise where.error("cmd", f"expected a string or a list of strings, got {show(cmd)}")


def _stop_command(value: object, where: Where) -> tuple[str, ...]:
    """A string runs through /bin/sh -c; a list is the argv itself."""
    if isinstance(value, str) and value.strip():
        return shell_argv(no_nul(value, "stop_command", where))
    if isinstance(value, list) and value and all(isinstance(a, str) for a in value) \
            and value[0]:
        return tuple(no_nul(a, "stop_command", where) for a in value)
    raise where.error("stop_command", f"expected a command (a string, or a list of "
                                      f"strings), got {show(value)}")


def _cwd(value: object, base: Path, where: Where) -> Path:
    if not isinstance(value, str) or not value:
        raise where.error("cwd", f"expected a directory path, got {show(value)}")
    no_nul(value, "cwd", where)
    cwd = base / os.path.expanduser(value)
    if not cwd.exists():
        raise where.error("cwd", f"no such directory: {cwd}")
    if not cwd.is_dir():
        raise where.error("cwd", f"not a directory: {cwd}")
    # Resolved: "../x" is the directory it names, not a path systemd refuses as "not
    # normalized" (export), and the same directory named two ways is one cwd (reload).
    return Path(os.path.realpath(cwd))


def _env(value: object, where: Where) -> dict[str, str]:
    if not isinstance(value, dict):
        raise where.error("env", f"expected a table of strings, got {show(value)}")
    env: dict[str, str] = {}
    for k, v in value.items():
        if not isinstance(v, str | int | float) or isinstance(v, bool):
            raise where.error(f"env.{k}", f"expected a string, got {show(v)}")
        if not k or "=" in k or "\0" in k:
            raise where.error(f"env.{k}", "not a valid environment variable name")
        env[k] = no_nul(str(v), f"env.{k}", where)
    return env


def _ready(value: object, where: Where) -> ReadyCheck:
    if not isinstance(value, dict) or not value:
        raise where.error("ready", "expected a table such as { notify = true }, { log = "
                                   "\"regex\" }, { tcp = \"host:port\" } or { exec = \"cmd\" }")
    kinds = [k for k in ("notify", "log", "tcp", "exec") if k in value]
    bad = sorted(set(value) - {"notify", "log", "tcp", "exec", "interval"})
    if bad:
        raise where.error(f"ready.{bad[0]}", "unknown key (known: notify, log, tcp, exec, "
                                             "interval)")
    if len(kinds) != 1:
        raise where.error("ready", "give exactly one of notify, log, tcp, exec")
    kind = kinds[0]
    interval = seconds(value.get("interval", 1.0), "ready.interval", where, positive=True)
    raw = value[kind]
    if kind == "notify":
        if raw is not True:
            raise where.error("ready.notify", "expected true")
        return ReadyCheck(notify=True)
    if kind == "log":
        if not isinstance(raw, str) or not raw:
            raise where.error("ready.log", "expected a regular expression")
        try:
            re.compile(raw)
        except re.error as e:
            raise where.error("ready.log", f"not a regular expression: {e}") from None
        return ReadyCheck(log=raw)
    if kind == "tcp":
        m = re.fullmatch(r"\[?([^\]]*)\]?:([0-9]{1,5})", raw) if isinstance(raw, str) else None
        if not m or not 0 < int(m.group(2)) < 65536:
            raise where.error("ready.tcp", f"expected \"host:port\", got {show(raw)}")
        return ReadyCheck(tcp=(m.group(1) or "127.0.0.1", int(m.group(2))), interval=interval)
    if isinstance(raw, str) and raw.strip():
        return ReadyCheck(exec=shell_argv(no_nul(raw, "ready.exec", where)), interval=interval)
    if isinstance(raw, list) and raw and all(isinstance(a, str) and a for a in raw):
        return ReadyCheck(exec=tuple(raw), interval=interval)
    raise where.error("ready.exec", f"expected a command, got {show(raw)}")


def _depends(value: object, where: Where) -> tuple[tuple[str, DependCondition | None], ...]:
    if isinstance(value, list):
        if not all(isinstance(v, str) and v for v in value):
            raise where.error("depends_on", "expected a list of process names")
        return tuple((v, None) for v in value)
    if isinstance(value, dict):
        out = []
        for k, v in value.items():
            cond = enum(DependCondition, v, f"depends_on.{k}", where)
            out.append((k, cond))
        return tuple(out)  # type: ignore[arg-type]
    raise where.error("depends_on", "expected a list of names, or a table such as "
                                    "{ db = \"ready\" }")


def _nearest(key: str, known: tuple[str, ...]) -> str:
    """A typo's nearest valid key, else every valid key."""
    import difflib

    close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
    return f": did you mean {close[0]}?" if close else f" (known: {', '.join(known)})"
