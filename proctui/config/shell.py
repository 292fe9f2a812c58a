"""Commands that run through /bin/sh: Procfile lines and command-line arguments."""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from proctui.config.spec import COMMAND_LINE, Config, ConfigError, ProcessSpec
from proctui.config.values import Where, check_name, no_nul, not_utf8

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
    try:
        tokens = shell_words(cmd)
    except ValueError:
        return False
    if not tokens or tokens[0] in _SHELL_WORDS or _ASSIGNMENT.match(tokens[0]):
        return False
    operators = [t for t in tokens if t and all(c in _OPERATORS for c in t)]
    # Redirections (>, 2>&1) keep a command simple; lists, pipes and subshells do not.
    return not any(any(c in t for c in ";|()\n") or t in ("&", "&&") for t in operators)


# -- splitting words ----------------------------------------------------------------------
#
# shlex builds each word a character at a time by string concatenation, which copies the
# word so far each time: a 2 MB word (a Procfile line, a cmd string) took over a minute.
# Here each run of plain characters is taken whole by a regular expression and a word's
# pieces are joined once, so the work is linear in the length of the command.

_BLANKS = " \t\r\n"  # shlex's whitespace: other Unicode spaces are part of a word
_OPERATORS = "();<>|&\n"


def split(text: str) -> list[str]:
    """The words of ``text`` as ``shlex.split`` gives them (POSIX rules, no comments), in
    time linear in its length; ValueError ("No closing quotation", "No escaped
    character") as shlex raises it."""
    return _words(text, _BLANKS, "", comments=False)


def shell_words(text: str, comments: bool = True) -> list[str]:
    """Words and runs of operator characters (``;``, ``|``, ``&&``, ``2>&1`` is ``2``
    and ``>&``, a newline) as a shell would first cut ``text``: what shlex gives with
    ``punctuation_chars`` and ``whitespace_split``. A ``#`` that begins a word starts a
    comment up to the end of its line, as in sh (shlex also cut a word at a ``#`` inside
    it, and took the newline with the comment: ``echo a#b; rm x`` looked simple)."""
    return _words(text, " \t\r", _OPERATORS, comments=comments)


@functools.cache
def _patterns(blanks: str, operators: str) -> tuple[re.Pattern[str], ...]:
    """Compiled at the first command split, not at import (a small board pays for it)."""
    plain = re.escape(blanks + operators + "'\"\\")
    return (re.compile(f"[{re.escape(blanks)}]+"),
            re.compile(f"[{re.escape(operators)}]+") if operators else re.compile("(?!)"),
            re.compile(f"[^{plain}]+"),
            re.compile(r'[^"\\]*'))


def _words(text: str, blanks: str, operators: str, comments: bool) -> list[str]:
    spaces, operator_run, plain, quoted_run = _patterns(blanks, operators)
    words: list[str] = []
    word: list[str] | None = None  # the pieces of the word being read; None: between words
    at, end = 0, len(text)
    while at < end:
        c = text[at]
        if c in blanks:
            if word is not None:
                words.append("".join(word))
                word = None
            m = spaces.match(text, at)
            assert m is not None
            at = m.end()
        elif c in operators:
            if word is not None:
                words.append("".join(word))
                word = None
            m = operator_run.match(text, at)
            assert m is not None
            words.append(m.group())
            at = m.end()
        elif comments and c == "#" and word is None:
            newline = text.find("\n", at)
            at = end if newline < 0 else newline  # the newline itself separates commands
        else:
            if word is None:
                word = []
            if c == "'":
                close = text.find("'", at + 1)
                if close < 0:
                    raise ValueError("No closing quotation")
                word.append(text[at + 1:close])
                at = close + 1
            elif c == '"':
                at = _double_quoted(text, at + 1, word, quoted_run)
            elif c == "\\":
                if at + 1 >= end:
                    raise ValueError("No escaped character")
                word.append(text[at + 1])  # any character, a newline too (as shlex)
                at += 2
            else:
                m = plain.match(text, at)
                assert m is not None
                word.append(m.group())
                at = m.end()
    if word is not None:
        words.append("".join(word))
    return words


def _double_quoted(text: str, at: int, word: list[str], run: re.Pattern[str]) -> int:
    """Reads after an opening ``"`` into ``word``; returns where its closing quote ends.
    A backslash escapes only ``"`` and itself; before anything else it stays."""
    end = len(text)
    while True:
        m = run.match(text, at)
        assert m is not None
        word.append(m.group())
        at = m.end()
        if at >= end:
            raise ValueError("No closing quotation")
        if text[at] == '"':
            return at + 1
        if at + 1 >= end:
            raise ValueError("No escaped character")
        escaped = text[at + 1]
        word.append(escaped if escaped in '"\\' else "\\" + escaped)
        at += 2


# -- Procfile -----------------------------------------------------------------------------

_PROCFILE_LINE = r"^([A-Za-z0-9_.-]+)\s*:\s*(.*)$"  # compiled when a Procfile is read


def parse_procfile(text: str, source: str, base: Path, path: Path | None = None) -> Config:
    specs: list[ProcessSpec] = []
    seen: set[str] = set()
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if not_utf8(stripped) is not None:
            raise _not_utf8_line(stripped, f"{source}:{number}")
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
        from proctui.config.env_file import load_env_file

        env = tuple(load_env_file(dotenv, Where(str(dotenv), None)).items())
        specs = [replace(spec, env=env) for spec in specs]
    return Config(tuple(specs), source, base, path)


def _not_utf8_line(line: str, source: str) -> ConfigError:
    """The error for a Procfile line holding a byte that is not UTF-8 (read as a lone
    surrogate): in its name, or in its command."""
    name, colon, cmd = line.partition(":")
    name = name.strip()
    if not colon:
        return ConfigError(source, f"expected 'name: command', in UTF-8 text (a byte "
                                   f"{not_utf8(line)} is not)")
    if (byte := not_utf8(name)) is not None:
        return ConfigError(source, f"process name contains a byte that is not UTF-8 "
                                   f"({byte})", name)
    return ConfigError(source, f"contains a byte that is not UTF-8 ({not_utf8(cmd)})", name,
                       "cmd")


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
        words = split(cmd)
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


_C_ESCAPES = {"\\": "\\\\", "'": "\\'", "\n": "\\n", "\t": "\\t", "\r": "\\r"}


def shell_quote(word: str) -> str:
    """``word`` as a shell reads it back: shlex's quoting, or ``$'...'`` when it holds a
    control character (a newline in a ``python -c`` program), which ``'...'`` cannot
    carry on one line: ``check`` printed ``'import time\\nfor ...'``, which a shell reads
    as a backslash and an n."""
    import shlex

    if not any(ord(c) < 32 or ord(c) == 127 for c in word):
        return shlex.quote(word)
    return "$'" + "".join(_C_ESCAPES.get(c) or (f"\\x{ord(c):02x}" if ord(c) < 32 or
                                                 ord(c) == 127 else c)
                          for c in word) + "'"


def shell_join(argv: Sequence[str]) -> str:
    return " ".join(shell_quote(word) for word in argv)
