"""The ``proctui`` command. Textual is imported only when the console opens, so
``--version``, ``check`` and the headless runner start fast."""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

import click

from proctui.cli_base import (
    EXIT_USAGE,
    _fail,
    _file_option,
    _load,
    _overrides,
    cli,
    run_options,
)
from proctui.config import (
    Config,
    ConfigError,
    OnHangup,
    Overrides,
    ProcessSpec,
    load,
)


@cli.command()
@_file_option
@run_options
@click.argument("commands", nargs=-1)
def run(file: Path | None, commands: tuple[str, ...], **options: object) -> None:
    """Run processes from a config file or from COMMANDS ('NAME=CMD' or 'CMD', each run
    through /bin/sh -c) until they end or you stop them."""
    overrides = _overrides_from(options)
    config = _load(file, commands, overrides)
    sys.exit(start(config, overrides, anchor=config.path or config.base_dir, file=file,
                   **options))


@cli.command()
@_file_option
@run_options(with_detach=False)
@click.argument("commands", nargs=-1)
def up(file: Path | None, commands: tuple[str, ...], **options: object) -> None:
    """The same as run --detach: start a supervisor in the background and return once
    every process has started."""
    overrides = _overrides_from(options)
    config = _load(file, commands, overrides)
    sys.exit(start(config, overrides, anchor=config.path or config.base_dir, file=file,
                   detach=True, **options))


@cli.command()
@run_options
@click.option("--print-config", is_flag=True,
              help="Print the demo as a proctui.toml to copy and edit, and exit.")
def demo(print_config: bool, **options: object) -> None:
    """Play the built-in tour of shutdown behaviour: eight small programs, each ending
    in its own way, two of them speaking sd_notify and starting in order. Press q to
    quit and watch the countdowns."""
    from proctui import demo as tour

    if print_config:
        click.echo(tour.config_text(), nl=False)
        return
    overrides = _overrides_from(options)
    config = tour.config()
    config = replace(config, processes=tuple(overrides.apply(s) for s in config.processes))
    sys.exit(start(config, overrides, anchor=Path("/proctui/demo"), hint=tour.HINT,
                   **options))


def _overrides_from(options: dict[str, object]) -> Overrides:
    try:
        return _overrides(options.pop("stop_timeout"), options.pop("kill_timeout"),  # type: ignore[arg-type]
                          options.pop("on_timeout"), options.pop("stop_signal"))  # type: ignore[arg-type]
    except ConfigError as e:
        _fail(str(e))
        raise AssertionError("unreachable") from None


def start(config: Config, overrides: Overrides, *, headless: bool, run_dir: Path | None,
          anchor: Path, stop_after: float | None = None, refresh: float | None = None,
          hint: tuple[tuple[str, str], ...] = (), detach: bool = False,
          on_hangup: str | None = None, file: Path | None = None) -> int:
    """Take the run directory's lock, run the processes, return proctui's exit status."""
    from proctui.core.store.rundir import RunDir, RunDirError, default_run_dir

    path = Path(os.path.abspath(run_dir or default_run_dir(anchor)))
    template = overrides.apply(ProcessSpec(name="leftover", argv=("true",), cmd="",
                                           cwd=config.base_dir))
    reload_from = _reloader(config, overrides)
    if detach:
        return _detach(config, path, template, stop_after, file, reload_from)
    directory = RunDir(path)
    try:
        directory.open()
    except RunDirError as e:
        _fail(str(e))
    hangup = OnHangup(on_hangup) if on_hangup else config.on_hangup
    try:
        if not headless and sys.stdout.isatty() and sys.stdin.isatty():
            from proctui.frontends.console import run_console

            return run_console(config.processes, run_dir=directory, leftover_defaults=template,
                               hint=hint, stop_after=stop_after, refresh_hz=refresh,
                               on_hangup=hangup, source=config.source,
                               reload_from=reload_from)
        from proctui.frontends import headless as runner

        return runner.run(config.processes, run_dir=directory, leftover_defaults=template,
                          stop_after=stop_after, source=config.source,
                          reload_from=reload_from)
    finally:
        directory.close()


def _reloader(config: Config, overrides: Overrides) -> \
        Callable[[], Sequence[ProcessSpec]] | None:
    """``proctui reload`` reads the file the supervisor was started from again (by its
    absolute path: a detached supervisor's cwd is /), with the same options."""
    path = config.path
    if path is None:
        return None
    return lambda: load(path, overrides=overrides).processes


def _detach(config: Config, path: Path, template: ProcessSpec, stop_after: float | None,
            file: Path | None,
            reload_from: Callable[[], Sequence[ProcessSpec]] | None = None) -> int:

    from proctui.core.store.rundir import default_run_dir
    from proctui.frontends.daemon import detach

    status, text = detach(config.processes, run_dir=path, source=config.source,
                          leftover_defaults=template, stop_after=stop_after,
                          reload_from=reload_from)
    if status != 0:
        click.echo(f"proctui: error: {text}", err=True)
        return status
    started, lines, failures = _settle(path)
    here = Path.cwd()
    local = [default_run_dir(here / n) for n in ("proctui.toml", "Procfile")
             if (here / n).is_file()] or [default_run_dir(here)]
    if local[0] == path:
        where = ""
    elif file is not None and default_run_dir(file) == path:
        # --file, not -f: for logs, -f means follow (every control command has --file).
        where = f" --file {shlex.quote(str(file))}"
    else:
        where = f" --run-dir {shlex.quote(str(path))}"
    click.echo(f"proctui: {started} of {len(config.processes)} process"
               f"{'es' if len(config.processes) != 1 else ''} started under a "
               f"detached supervisor (pid {text})")
    for line in lines:
        click.echo(f"  {line}")
    for line in failures:
        click.echo(line, err=True)
    for command, what in (("attach", "the console (d detaches again)"),
                          ("status", "one line per process"),
                          ("logs NAME -f", "follow a process's output"),
                          ("down", "stop everything, with countdowns")):
        click.echo(f"  proctui {command}{where}".ljust(len(where) + 24) + f"  # {what}")
    return 1 if failures else 0


def _settle(path: Path) -> tuple[int, list[str], list[str]]:
    """Wait until no process is still starting; what up says about each."""
    from proctui.frontends import answers
    from proctui.remote.client import Connection, NoSupervisor

    try:
        conn = Connection.open(path)
    except NoSupervisor as e:
        return 0, [], [f"proctui: the supervisor does not answer: {e}"]
    try:
        answers.follow(conn, answers.settled, answers.SETTLE_TIMEOUT)
        return answers.up_report(conn.ordered_views())
    except (NoSupervisor, OSError) as e:
        return 0, [], [f"proctui: the supervisor stopped answering: {e}"]
    finally:
        conn.close()


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
