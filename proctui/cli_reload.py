"""``proctui reload``: the running supervisor reads its config file again and carries out
the difference (see proctui/core/reload.py). One line per change; a config that no longer
parses is its one-line error and exit status 2, and nothing changes."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from proctui.cli_base import EXIT_USAGE, cli
from proctui.cli_control import _control, where_options
from proctui.commands.reload import Reload


@cli.command(help=Reload.help())
@where_options
def reload(file: Path | None, run_dir: Path | None, host: str | None) -> None:
    _control(file, run_dir, _reload, host)


def _reload(conn) -> int:  # type: ignore[no-untyped-def]
    from proctui.core.output.text import clean
    from proctui.core.reply import Fault

    reply = conn.call(Reload())
    if reply.fault is Fault.BAD_VALUE:
        click.echo(f"proctui: error: {clean(reply.text)}", err=True)
        return EXIT_USAGE
    if not reply.ok:
        click.echo(f"proctui: {clean(reply.text)}", err=True)
        return 1
    sys.stdout.write("".join(clean(line) + "\n" for line in reply.text.splitlines()))
    return 0
