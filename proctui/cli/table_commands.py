"""The command table on the command line: every command of ``proctui.commands`` that has
words for it (``cli``) is ``proctui OP ARGS...`` here, with its help from its docstring,
its words read by its own ``from_words``, and its reply printed by its own ``said``.
A new command module is a new subcommand, with no line here."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from proctui.cli.control_commands import _control, where_options
from proctui.cli.echo import fail
from proctui.commands import COMMANDS, Request


def ops() -> list[str]:
    """Every op the command line says."""
    return sorted(op for op, cls in COMMANDS.items() if cls.cli is not None)


def command(op: str) -> click.Command | None:
    cls = COMMANDS.get(op)
    if cls is None or cls.cli is None:
        return None
    usage = cls.cli.args

    @click.command(op, help=cls.help(), context_settings={"ignore_unknown_options": True})
    @where_options()
    @click.argument("words", nargs=-1, metavar=usage or None)
    def run(file: Path | None, run_dir: Path | None, host: str | None,
            words: tuple[str, ...]) -> None:
        from proctui.frontends import control

        requests: list[Request[Any]] | str = cls.from_words(words)
        if isinstance(requests, str):
            fail(f"{op}: {requests}")
        assert not isinstance(requests, str)
        _control(file, run_dir, lambda conn: control.send_all(conn, requests, sys.stdout,
                                                               sys.stderr), host)

    return run
