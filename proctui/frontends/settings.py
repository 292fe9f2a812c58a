"""``proctui check``: every setting of every process as proctui resolved it, and warnings
for what will fail at start (a program that is neither on PATH nor a file).

Arguments are shown quoted as a shell would need them, so an empty one is visible (``''``).
Environment values are shown only for what the config itself sets (``env``): a value read
from an env file may be a secret, and proctui's own inherited environment is never shown,
only counted.
"""

from __future__ import annotations

import os
import shlex
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from proctui.config import Config, ProcessSpec
from proctui.config.shell import shell_join, shell_quote
from proctui.core.life.outcome import setting, signal_name
from proctui.core.output.text import visible
from proctui.core.store.logfiles import DIRECTORY, log_name
from proctui.core.store.rundir import default_run_dir


@dataclass
class EnvSources:
    """Where a process's environment comes from, besides proctui's own."""

    config: tuple[str, ...] = ()  # names set by `env` in the config (values shown)
    files: list[tuple[Path, bool, tuple[str, ...]]] = field(default_factory=list)
    # ^ (file, read?, names it set): env_file, or a Procfile's .env


def env_sources(config: Config, spec: ProcessSpec) -> EnvSources:
    """Which names came from the config's `env` and which from a file. Re-reads the
    (already validated) TOML: the spec holds only the merged result."""
    names = tuple(k for k, _ in spec.env)
    if config.path is None:
        return EnvSources(config=names)
    if config.path.suffix != ".toml":  # a Procfile: .env beside it
        dotenv = config.base_dir / ".env"
        return EnvSources(files=[(dotenv, dotenv.is_file(), names if dotenv.is_file() else ())])
    import tomllib

    from proctui.config.files import UnreadableFile, read_text

    try:
        raw = tomllib.loads(read_text(config.path).removeprefix("\ufeff"))
        table = raw["processes"][spec.name]
    except (UnreadableFile, tomllib.TOMLDecodeError, KeyError, TypeError, RecursionError):
        return EnvSources(config=names)
    env = table.get("env") if isinstance(table, dict) else None
    own = tuple(k for k in names if isinstance(env, dict) and k in env)
    found = EnvSources(config=own)
    env_file = table.get("env_file") if isinstance(table, dict) else None
    if isinstance(env_file, str):
        path = config.base_dir / os.path.expanduser(env_file)
        found.files.append((path, True, tuple(k for k in names if k not in own)))
    return found


def program_warning(spec: ProcessSpec) -> str | None:
    """Why its program cannot start, when that can be told now: neither on PATH nor an
    existing file. A shell command is judged by its first word when it is a simple one."""
    if spec.shell:
        if not spec.argv[-1].startswith("exec "):
            return None  # a compound command: the shell decides
        try:
            words = shlex.split(spec.cmd)
        except ValueError:
            return None
        program = words[0] if words else ""
        if not program or any(c in program for c in "$`*?[~"):
            return None
    else:
        program = spec.argv[0]
    path = spec.environ().get("PATH", os.defpath)
    if "/" in program:
        where = spec.cwd / program
        if where.is_file():
            return None if os.access(where, os.X_OK) else \
                f"{program!r} is not executable"
        return f"{program!r} is not an existing file"
    if shutil.which(program, path=path) is not None:
        return None
    return f"{program!r} is not on PATH and not a file"


def describe(config: Config, spec: ProcessSpec, run_dir: Path) -> list[str]:
    argv = shell_join(spec.argv)
    rows = [("cmd", argv)]
    if spec.shell:
        rows.append(("as written", spec.cmd))
    rows.append(("cwd", str(spec.cwd)))
    rows.append(("ready", spec.ready.describe() + (
        f", within {setting(spec.ready_timeout)}" if spec.ready_timeout else "")
        if spec.ready is not None else "no check: running is ready"))
    deps = ", ".join(f"{name} ({spec.condition_for(_named(config, name)).value})"
                     for name, _ in spec.depends_on)
    rows.append(("depends_on", deps or "none"))
    if spec.restart_with:
        rows.append(("restart_with", ", ".join(spec.restart_with)))
    sources = env_sources(config, spec)
    values = dict(spec.env)
    own = " ".join(f"{k}={shell_quote(values[k])}" for k in sources.config)
    rows.append(("env", own or "none set in the config"))
    for path, read, names in sources.files:
        what = f"read: {', '.join(names) or 'no variables'} (values not shown)" if read \
            else "not there, not read"
        rows.append(("env file", f"{path}: {what}"))
    rows.append(("environment", f"proctui's own ({len(os.environ)} variables, not shown) "
                                "under these; PYTHONUNBUFFERED=1 unless set"))
    rows.append(("restart", spec.restart.value + (
        " (backoff 1s, 2s, 4s ... 30s)" if spec.restart.value != "no" else "")))
    rows.append(("stop", f"{signal_name(spec.stop_signal)}, then {spec.on_timeout.value} "
                         f"after {setting(spec.stop_timeout)}; SIGKILL gives up after "
                         f"{setting(spec.kill_timeout)}; extend by "
                         f"{setting(spec.extend_step)}"))
    rows.append(("max_stop_time", setting(spec.max_stop_time)
                 if spec.max_stop_time is not None else "none (the process may extend "
                                                        "its stop without a cap)"))
    rows.append(("success codes", ", ".join(map(str, spec.success_exit_codes)) or "none"))
    if spec.stop_command:
        then = ", then " if spec.stop_command_then_signal else " instead of "
        rows.append(("stop_command", f"{shell_join(spec.stop_command)}{then}"
                                     f"{signal_name(spec.stop_signal)}"))
    rows.append(("silence", f"marked silent after {setting(spec.silence_warning)} without "
                            "output" if spec.silence_warning is not None else "not watched"))
    if spec.watchdog_sec is not None:
        rows.append(("watchdog", setting(spec.watchdog_sec)))
    log = run_dir / DIRECTORY / log_name(spec.name)
    rows.append(("logs", f"{log}, rotated at {spec.log_max_size} bytes, {spec.log_keep} "
                         "kept" if spec.log_max_size else "none (log_max_size = 0)"))
    rows.append(("scrollback", f"{spec.scrollback} lines, max line length "
                               f"{spec.max_line_length}"))
    return [f"[{spec.name}]"] + [f"  {key:<15}{value}" for key, value in rows]


def _named(config: Config, name: str) -> ProcessSpec:
    return next(s for s in config.processes if s.name == name)


def report(config: Config, anchor: Path) -> tuple[list[str], list[str]]:
    """(lines for stdout, warnings for stderr)."""
    count = len(config.processes)
    run_dir = default_run_dir(anchor)
    lines = [f"{config.source}: {count} process{'es' if count != 1 else ''}, OK",
             f"on_hangup = {config.on_hangup.value}; run directory {run_dir}"]
    warnings = []
    for spec in config.processes:
        lines += describe(config, spec, run_dir)
        problem = program_warning(spec)
        if problem is not None:
            warnings.append(f"{spec.name}: {problem}: run and up will fail to start it")
    # Control characters as visible escapes, as run says them: removed (clean), an env
    # value of OSC 2 read X='', and a command that prints OSC 52 read printf ' hi\n'.
    return [visible(line) for line in lines], [visible(w) for w in warnings]
