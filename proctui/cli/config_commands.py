"""The commands that read a config and run nothing: ``check`` prints every setting of
each process as resolved, ``export`` carries the config into another engine (systemd
units)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from proctui.cli.echo import fail
from proctui.cli.options import file_option, load_config
from proctui.config import ConfigError, Overrides


@click.command()
@file_option
@click.argument("commands", nargs=-1)
def check(file: Path | None, commands: tuple[str, ...]) -> None:
    """Validate the config and print every setting of each process as resolved; warn
    (on stderr, exit status 0) about a program that is neither on PATH nor a file."""
    from proctui.frontends.settings import report

    config = load_config(file, commands, Overrides())
    lines, warnings = report(config, config.path or config.base_dir)
    for line in lines:
        click.echo(line)
    for line in warnings:
        click.echo(f"proctui check: warning: {line}", err=True)


@click.group()
def export() -> None:
    """Carry the config into another engine."""


@export.command("systemd")
@file_option
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

    config = load_config(file, (), Overrides())
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
        fail(str(e))
    for path in done.written:
        click.echo(f"wrote {path}")
    for path in done.unchanged:
        click.echo(f"unchanged {path}")
