"""Commands that run through /bin/sh: Procfile lines and command-line arguments."""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from proctui.config.spec import COMMAND_LINE, Config, ConfigError, ProcessSpec
from proctui.config.values import Where, check_name, no_nul

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

_PROCFILE_LINE = r"^([A-Za-z0-9_.-]+)\s*:\s*(.*)$"  # compiled when a Procfile is read


def parse_procfile(text: str, source: str, base: Path, path: Path | None = None) -> Config:
    specs: list[ProcessSpec] = []
    seen: set[str] = set()
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        m = re.match(_PROCFILE_LINE, stripped)
        if not m:
            raise ConfigError(f"{source}:{number}", "expected 'name: command'")
        name, cmd = m.group(1), m.group(2).strip()
        where = Where(f"{source}:{number}", name)
        check_name(name, where)
        if name in seen:
            raise where.error(None, "duplicate process name")
        if not cmd:
            raise where.error("cmd", "empty command")
        no_nul(cmd, "cmd", where)
        seen.add(name)
        specs.append(ProcessSpec(name=name, argv=shell_argv(cmd), cmd=cmd, cwd=base,
                                 shell=True, source=source))
    if not specs:
        raise ConfigError(source, "no processes defined (expected 'name: command' lines)")
    dotenv = base / ".env"
    if path is not None and dotenv.is_file():
        # As honcho and foreman: KEY=VALUE lines beside the Procfile, never evaluated;
        # each line runs through /bin/sh with them, so $PORT in a command works.
        from proctui.config.toml import load_env_file

        env = tuple(load_env_file(dotenv, Where(str(dotenv), None)).items())
        specs = [replace(spec, env=env) for spec in specs]
    return Config(tuple(specs), source, base, path)


# -- command line -------------------------------------------------------------------------

# A name in any script (as a TOML config allows: 'wörker', '日本', 'deploy-🚀'), of no
# space, slash or character the shell gives a meaning: with ASCII alone, 'wörker=echo hi'
# ran as the command "wörker=echo hi", named "wrkerecho". ('make CC=gcc' stays a command.)
_NAMED = re.compile(r"^([^\s=/'\"$`\\;|&<>(){}*?\[\]~#!]+)=(.*)$", re.DOTALL)


def from_commands(commands: Sequence[str], cwd: Path | None = None) -> Config:
    """``NAME=CMD`` or ``CMD`` arguments, each run through /bin/sh -c like a Procfile line.
    An unnamed command is named after its program (``python``, ``python-2``, ...)."""
    base = cwd or Path.cwd()
    named: list[tuple[str | None, str]] = []
    for arg in commands:
        m = _NAMED.match(arg)
        if m and not m.group(2).startswith("="):
            # "NAME=" names a process with no command (refused below): it ran "NAME=",
            # a shell assignment, and reported "exited: exit code 0".
            named.append((m.group(1), m.group(2).strip()))
        else:
            named.append((None, arg.strip()))
    taken = {n for n, _ in named if n} | {"proctui"}  # (proctui's own label: proctui-2)
    specs: list[ProcessSpec] = []
    seen: set[str] = set()
    for name, cmd in named:
        where = Where(COMMAND_LINE, name)
        if not cmd:
            raise where.error("cmd", "empty command")
        no_nul(cmd, "cmd", where)
        if name is None:
            name = _unique(_program_name(cmd), taken)
            taken.add(name)
        elif name in seen:
            raise where.error(None, "duplicate process name")
        check_name(name, Where(COMMAND_LINE, name))
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
    return re.sub(r"[^A-Za-z0-9_.-]", "", name)[:40] or "cmd"


def _unique(name: str, taken: set[str]) -> str:
    if name not in taken:
        return name
    n = 2
    while f"{name}-{n}" in taken:
        n += 1
    return f"{name}-{n}"
