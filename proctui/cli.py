"""The ``proctui`` command. Textual is imported only when the console opens, so
``--version``, ``check`` and the headless runner start fast."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from proctui import launch
from proctui.cli_base import (
    EXIT_USAGE,
    _fail,
    _file_option,
    _load,
    cli,
    run_options,
)
from proctui.cli_quick import PRINT_CONFIG
from proctui.config import ConfigError, Overrides, load

# run, up and demo start here when cli_quick could not read their arguments (and are
# read there, without click, when it could): both call launch.py.


@cli.command()
@_file_option
@run_options
@click.argument("commands", nargs=-1)
def run(file: Path | None, commands: tuple[str, ...], **options: object) -> None:
    """Run processes from a config file or from COMMANDS ('NAME=CMD' or 'CMD', each run
    through /bin/sh -c) until they end or you stop them."""
    launch.run(file, commands, **options)


@cli.command()
@_file_option
@run_options(with_detach=False)
@click.argument("commands", nargs=-1)
def up(file: Path | None, commands: tuple[str, ...], **options: object) -> None:
    """The same as run --detach: start a supervisor in the background and return once
    every process has started."""
    launch.up(file, commands, **options)


@cli.command()
@run_options
@click.option(PRINT_CONFIG.flag, is_flag=True, help=PRINT_CONFIG.help)
def demo(print_config: bool, **options: object) -> None:
    """Play the built-in tour of shutdown behaviour: eight small programs, each ending
    in its own way, two of them speaking sd_notify and starting in order. Press q to
    quit and watch the countdowns."""
    launch.demo(print_config, **options)


@cli.command()
@_file_option
@click.option("--run-dir", type=click.Path(path_type=Path, file_okay=False),
              help="The run directory whose journal to draw (default: the config's).")
@click.option("-o", "--output", type=click.Path(path_type=Path, dir_okay=False),
              help="Write an SVG picture to this file (default: draw in text here).")
@click.option("--previous", is_flag=True, help="The run before the last one.")
@click.option("--width", type=click.IntRange(40, 400), default=None,
              help="Columns of the text picture (default: the terminal's).")
def timeline(file: Path | None, run_dir: Path | None, output: Path | None, previous: bool,
             width: int | None) -> None:
    """Draw a run's timeline from its journal: one lane per process, its phases, the
    signals sent and the decisions made."""
    import shutil
    import time

    from proctui.core.store.journal import NAME, PREVIOUS, BadLine, Unreadable, read_file
    from proctui.core.store.rundir import default_run_dir
    from proctui.frontends import timeline as pictures
    from proctui.frontends.answers import held

    directory = run_dir or _run_dir_of(file)
    path = directory / (PREVIOUS if previous else NAME)
    if run_dir is None and file is None and not os.path.lexists(path) and not any(
            (Path.cwd() / n).is_file() for n in ("proctui.toml", "Procfile")):
        # No run here: the demo's, when there is one (it runs anchored nowhere on disk).
        demo_path = default_run_dir(Path("/proctui/demo")) / path.name
        if os.path.lexists(demo_path):
            directory, path = demo_path.parent, demo_path
    shown = pictures.visible(os.fsdecode(path), 1000)
    builder = pictures.Builder()
    try:
        for entry in read_file(path):
            if isinstance(entry, BadLine):
                _fail(f"{shown}: line {entry.number}: {pictures.visible(entry.why)}")
            else:
                builder.add(entry)
    except Unreadable as e:
        _fail(f"{shown}: {e}")
    except MemoryError:
        _fail(f"{shown}: too large to draw in the memory available")
    if builder.start > builder.end:
        _fail(f"{shown}: no journal entries")
    # The current run, its supervisor still holding the run directory: drawn up to now.
    picture = builder.picture(time.time() if not previous and held(directory / "lock")
                              else None)
    if output is not None:
        try:
            output.write_text(pictures.svg(picture, title=f"proctui timeline: {directory}"),
                              encoding="utf-8")
        except OSError as e:
            _fail(f"{pictures.visible(os.fsdecode(output), 1000)}: {e.strerror or e}")
        click.echo(f"wrote {pictures.visible(os.fsdecode(output), 1000)}")
        return
    columns = width or shutil.get_terminal_size((100, 24)).columns
    for line in pictures.text(picture, columns):
        click.echo(line)


def _run_dir_of(file: Path | None) -> Path:
    """The default run directory of the config in ``file`` (or here), as run uses it."""
    from proctui.core.store.rundir import default_run_dir

    try:
        config = load(file, (), None)
        anchor = config.path or config.base_dir
    except ConfigError as e:
        if file is not None:
            _fail(str(e))
        anchor = Path.cwd()  # commands given on the command line anchor at the cwd
    return default_run_dir(anchor)


@cli.command()
@_file_option
@click.argument("commands", nargs=-1)
def check(file: Path | None, commands: tuple[str, ...]) -> None:
    """Validate the config and print every setting of each process as resolved; warn
    (on stderr, exit status 0) about a program that is neither on PATH nor a file."""
    from proctui.frontends.settings import report

    config = _load(file, commands, Overrides())
    lines, warnings = report(config, config.path or config.base_dir)
    for line in lines:
        click.echo(line)
    for line in warnings:
        click.echo(f"proctui check: warning: {line}", err=True)


# The commands that talk to a running supervisor, export, events, ls, clean and reload
# live in their own modules, imported when asked for (cli_base.LAZY).


def main() -> None:
    """Entry point: usage errors become one line and exit status 2."""
    try:
        cli.main(standalone_mode=False, prog_name="proctui")
    except click.exceptions.NoArgsIsHelpError as e:
        click.echo(e.ctx.get_help() if e.ctx else str(e))
        sys.exit(EXIT_USAGE)
    except click.UsageError as e:
        where = f"proctui {e.ctx.command.name}" if e.ctx and e.ctx.command.name != "cli" \
            else "proctui"
        click.echo(f"{where}: error: {e.format_message()}", err=True)
        sys.exit(EXIT_USAGE)
    except click.ClickException as e:
        click.echo(f"proctui: error: {e.format_message()}", err=True)
        sys.exit(EXIT_USAGE)
    except click.Abort:
        sys.exit(130)
