"""More ``proctui`` commands, each a thin shell over a frontend: ``events`` (what changes in
a running supervisor, for scripts that watch), ``ls`` (this user's supervisors and stale
run directories) and ``clean`` (removes the stale ones)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from proctui.cli_base import cli
from proctui.cli_control import _control, where_options


@cli.command()
@where_options
@click.option("--json", "as_json", is_flag=True,
              help="One JSON object a line (schema 1, in the README), for scripts.")
@click.option("--name", "names", multiple=True, metavar="NAME",
              help="Only this process's changes (again for more).")
def events(file: Path | None, run_dir: Path | None, host: str | None, as_json: bool,
           names: tuple[str, ...]) -> None:
    """Print each change of a running supervisor as it happens (states, readiness,
    outcomes, restarts, decisions, the shutdown) until it ends."""
    from proctui.frontends import events as stream

    _control(file, run_dir, lambda conn: stream.stream(conn, as_json, names, sys.stdout),
             host)


@cli.command("ls")
@click.option("--json", "as_json", is_flag=True, help="One JSON object, for scripts.")
def ls(as_json: bool) -> None:
    """This user's run directories: each live supervisor (pid, config, started, how many
    processes) and each stale directory a supervisor left."""
    from proctui.frontends import rundirs

    sys.exit(rundirs.list_all(as_json, sys.stdout))


@cli.command()
@click.option("--dry-run", is_flag=True, help="Say what would be removed; remove nothing.")
def clean(dry_run: bool) -> None:
    """Remove this user's stale run directories (no supervisor holds their lock and no
    process of theirs is left running); never a live one."""
    from proctui.frontends import rundirs

    sys.exit(rundirs.clean(dry_run, sys.stdout))
