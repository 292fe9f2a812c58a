"""``proctui export``: the config carried into another engine (systemd units)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from proctui.cli_base import Overrides, _fail, _file_option, _load, cli
from proctui.config import ConfigError


@cli.group()
def export() -> None:
    """Carry the config into another engine."""


@export.command("systemd")
@_file_option
@click.option("-o", "--output", type=click.Path(path_type=Path, file_okay=False),
              help="Write the units into this directory (default: print them).")
@click.option("--force", is_flag=True,
              help="Replace unit files that differ (never a symbolic link: remove it first).")
@click.option("--supervisor", is_flag=True,
              help="One unit that runs proctui itself (it keeps every policy), instead of "
                   "one unit per process.")
@click.option("--prefix", default="proctui-", show_default=True,
              help="Unit names are PREFIX + process name + .service.")
@click.option("--systemd-version", type=click.IntRange(200, 1000), metavar="N",
              help="The target's systemd (default: this machine's); 254 and later get "
                   "RestartSteps= for the backoff.")
def export_systemd(file: Path | None, output: Path | None, force: bool, supervisor: bool,
                   prefix: str, systemd_version: int | None) -> None:
    """systemd units that keep each process's stop policy; what systemd cannot keep is
    said on stderr, one line per process and setting."""
    from proctui.export import systemd

    config = _load(file, (), Overrides())
    try:
        if supervisor:
            # The proctui running now, not whichever one PATH finds first.
            found = Path(sys.argv[0]).resolve()
            exported = systemd.export_supervisor(
                config, (str(found),) if found.name == "proctui" and found.is_file() else
                (sys.executable, "-m", "proctui"), prefix)
        else:
            version = systemd_version or systemd.systemd_version()
            exported = systemd.export_units(config, files=systemd.env_files(config),
                                            prefix=prefix, version=version)
        for line in exported.warnings:
            click.echo(line, err=True)
        if output is None:
            click.echo(systemd.as_stream(exported), nl=False)
            return
        done = systemd.write_units(exported, output, force=force)
    except ConfigError as e:
        _fail(str(e))
        return
    for path in done.written:
        click.echo(f"wrote {path}")
    for path in done.unchanged:
        click.echo(f"unchanged {path}")
