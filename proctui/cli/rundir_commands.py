"""The commands that read what supervisors keep in their run directories, talking to
none of them: ``ls`` (this user's supervisors and stale run directories), ``clean``
(removes the stale ones) and ``timeline`` (a run drawn from its journal)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from proctui.cli.echo import fail
from proctui.cli.options import file_option
from proctui.config import ConfigError, load


@click.command("ls")
@click.option("--json", "as_json", is_flag=True, help="One JSON object, for scripts.")
def ls(as_json: bool) -> None:
    """This user's run directories: each live supervisor (pid, config, started, how many
    processes) and each stale directory a supervisor left."""
    from proctui.frontends import rundirs

    sys.exit(rundirs.list_all(as_json, sys.stdout))


@click.command()
@click.option("--dry-run", is_flag=True, help="Say what would be removed; remove nothing.")
def clean(dry_run: bool) -> None:
    """Remove this user's stale run directories (no supervisor holds their lock and no
    process of theirs is left running); never a live one."""
    from proctui.frontends import rundirs

    sys.exit(rundirs.clean(dry_run, sys.stdout))


@click.command()
@file_option
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
    from proctui.frontends.rundirs import held

    directory = run_dir or _run_dir_of(file)
    path = directory / (PREVIOUS if previous else NAME)
    if run_dir is None and file is None and not os.path.lexists(path) and not any(
            (Path.cwd() / n).is_file() for n in ("proctui.toml", "Procfile")):
        # No run here: the demo's, when there is one (it runs anchored nowhere on disk).
        demo_path = default_run_dir(Path("/proctui/demo")) / path.name
        if os.path.lexists(demo_path):
            directory, path = demo_path.parent, demo_path
            # Said, or it draws another run than the one asked for without a word.
            click.echo("proctui: no proctui.toml or Procfile here: the demo's "
                       f"{'previous' if previous else 'last'} run", err=True)
    shown = pictures.visible(os.fsdecode(path), 1000)
    where = pictures.visible(os.fsdecode(directory), 1000)
    if not os.path.lexists(path):
        if previous:
            fail(f"no run before the last one is recorded in {where} (no {PREVIOUS}: it "
                 "is kept once a second run has started there)")
        fail(f"no run is recorded in {where} (no {NAME}): nothing was started with this "
             "config here yet, or --run-dir names another directory")
    builder = pictures.Builder()
    try:
        for entry in read_file(path):
            if isinstance(entry, BadLine):
                fail(f"{shown}: line {entry.number}: {pictures.visible(entry.why)}")
            else:
                builder.add(entry)
    except Unreadable as e:
        fail(f"{shown}: {e}")
    except MemoryError:
        fail(f"{shown}: too large to draw in the memory available")
    if builder.start > builder.end:
        fail(f"{shown}: no journal entries")
    # The current run, its supervisor still holding the run directory: drawn up to now.
    picture = builder.picture(time.time() if not previous and held(directory / "lock")
                              else None)
    if output is not None:
        from proctui.frontends import timeline_svg

        try:
            output.write_text(timeline_svg.svg(picture, title=f"proctui timeline: {directory}"),
                              encoding="utf-8")
        except OSError as e:
            fail(f"{pictures.visible(os.fsdecode(output), 1000)}: {e.strerror or e}")
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
            fail(str(e))
        anchor = Path.cwd()  # commands given on the command line anchor at the cwd
    return default_run_dir(anchor)
