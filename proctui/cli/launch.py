"""Starting supervision: ``run``, ``up`` and ``demo``, and what they do once their options
are read. The run directory's lock is taken, then the console (Textual loads only now),
the headless line printer, or a detached supervisor runs the processes; ``up`` (and
``--detach``) waits until none is still starting and says how each one started."""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import NoReturn, cast

import click

from proctui.cli.echo import fail, say
from proctui.cli.options import file_option, load_config, start_options
from proctui.config import (
    Config,
    ConfigError,
    OnHangup,
    OnTimeout,
    Overrides,
    ProcessSpec,
    load,
    parse_signal,
)


@click.command()
@file_option
@start_options()
@click.argument("commands", nargs=-1)
def run(file: Path | None, commands: tuple[str, ...], **options: object) -> None:
    """Run processes from a config file or from COMMANDS ('NAME=CMD' or 'CMD', each run
    through /bin/sh -c) until they end or you stop them."""
    _run(file, commands, **options)


@click.command()
@file_option
@start_options(detach=False)
@click.argument("commands", nargs=-1)
def up(file: Path | None, commands: tuple[str, ...], **options: object) -> None:
    """The same as run --detach: start a supervisor in the background and return once
    every process has started."""
    _run(file, commands, detach=True, **options)


@click.command()
@start_options()
@click.option("--print-config", is_flag=True,
              help="Print the demo as a proctui.toml to copy and edit, and exit.")
@click.option("--fleet", is_flag=True,
              help="Three supervisors on this machine, each a box, in the fleet console "
                   "(attach --host A --host B on real boxes); leaving it stops them.")
def demo(print_config: bool, fleet: bool, **options: object) -> None:
    """Play the built-in tour of shutdown behaviour: eight small programs, each ending
    in its own way, two of them speaking sd_notify and starting in order. Press q to
    quit and watch the countdowns."""
    from proctui import demo as tour

    if print_config:
        say(tour.config_text(), end="")
        return
    if fleet:
        from proctui.frontends import fleet_demo

        sys.exit(fleet_demo.run(cast("float | None", options.get("refresh"))))
    over = _overrides_from(options)
    config = tour.config()
    config = replace(config, processes=tuple(over.apply(s) for s in config.processes))
    sys.exit(start(config, over, anchor=Path("/proctui/demo"), hint=tour.HINT,
                   **options))  # type: ignore[arg-type]


def _run(file: Path | None, commands: Sequence[str], **options: object) -> NoReturn:
    """From a config file or from commands, until they end or are stopped."""
    over = _overrides_from(options)
    config = load_config(file, commands, over)
    sys.exit(start(config, over, anchor=config.path or config.base_dir, file=file,
                   **options))  # type: ignore[arg-type]


def _overrides_from(options: dict[str, object]) -> Overrides:
    """The options that change every process's stop, taken out of ``options``."""
    stop_timeout = cast("float | None", options.pop("stop_timeout"))
    kill_timeout = cast("float | None", options.pop("kill_timeout"))
    on_timeout = cast("str | None", options.pop("on_timeout"))
    stop_signal = cast("str | None", options.pop("stop_signal"))
    try:
        sig = None if stop_signal is None else parse_signal(stop_signal, "--stop-signal")
    except ConfigError as e:
        fail(str(e))
    return Overrides(stop_timeout=stop_timeout, kill_timeout=kill_timeout,
                     on_timeout=OnTimeout(on_timeout) if on_timeout else None, stop_signal=sig)


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
        fail(str(e))
    hangup = OnHangup(on_hangup) if on_hangup else config.on_hangup
    try:
        if not headless and sys.stdout.isatty() and sys.stdin.isatty():
            from proctui.daemon import go_on_detached
            from proctui.frontends.console import run_console

            return run_console(config.processes, run_dir=directory, leftover_defaults=template,
                               hint=hint, stop_after=stop_after, refresh_hz=refresh,
                               on_hangup=hangup, source=_source(config),
                               reload_from=reload_from, go_on_detached=go_on_detached)
        from proctui.frontends import headless as runner

        return runner.run(config.processes, run_dir=directory, leftover_defaults=template,
                          stop_after=stop_after, source=_source(config),
                          reload_from=reload_from)
    finally:
        directory.close()


def _source(config: Config) -> str:
    """What the supervisor says it runs (status, ls, events): the file's absolute path,
    which reads the same from any directory (ls showed a bare proctui.toml), or the
    commands it was given."""
    return str(config.path) if config.path is not None else config.source


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
    """A supervisor in a session of its own; what ``up`` says about each process once
    none is still starting, and how to reach it."""
    from proctui.core.store.rundir import default_run_dir
    from proctui.daemon import detach

    status, text = detach(config.processes, run_dir=path, source=_source(config),
                          leftover_defaults=template, stop_after=stop_after,
                          reload_from=reload_from)
    if status != 0:
        say(f"proctui: error: {text}", err=True)
        return status
    started, lines, failures, warnings = _settle(path)
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
    from proctui.frontends.printer import terminal_columns, wrap_words

    # On a terminal, folded at spaces (the terminal cut "superviso" / "r (pid 2012)").
    columns = terminal_columns(sys.stdout)
    for row in wrap_words(f"proctui: {started} of {len(config.processes)} process"
                          f"{'es' if len(config.processes) != 1 else ''} started under a "
                          f"detached supervisor (pid {text})", columns, 2):
        say(row)
    for line in lines:
        for row in wrap_words(f"  {line}", columns, 4):
            say(row)
    for line in failures + warnings:
        say(line, err=True)
    for command, what in (("attach", "the console (d detaches again)"),
                          ("status", "one line per process"),
                          ("logs NAME -f", "follow a process's output"),
                          ("down", "stop everything, with countdowns")):
        line = f"  proctui {command}{where}".ljust(len(where) + 24) + f"  # {what}"
        if columns is None or len(line) <= columns:
            say(line)
        else:  # a command to copy stays whole: what it does goes above it
            say(f"  # {what}")
            say(f"  proctui {command}{where}")
    return 1 if failures else 0


def _settle(path: Path) -> tuple[int, list[str], list[str], list[str]]:
    """Wait until no process is still starting; what up says about each."""
    from proctui.frontends import status
    from proctui.remote.client import Connection, NoSupervisor

    try:
        conn = Connection.open(path)
    except NoSupervisor as e:
        return 0, [], [f"proctui: the supervisor does not answer: {e}"], []
    try:
        from proctui.frontends.status import troubles

        status.follow(conn, status.settled, status.SETTLE_TIMEOUT)
        started, lines, failures = status.up_report(conn.ordered_views())
        # Nothing is stopped for them, but up names them (a full disk under the run
        # directory once read as "3 of 3 started" and nothing more).
        return started, lines, failures, [f"proctui: warning: {t}"
                                          for t in troubles(conn.state)]
    except (NoSupervisor, OSError) as e:
        return 0, [], [f"proctui: the supervisor stopped answering: {e}"], []
    finally:
        conn.close()
