"""Starting processes: what ``run``, ``up`` and ``demo`` do once their options are read,
and the one-line failure every command shares. Free of click, so that the start commands'
quick reader (``cli_quick``) runs them without loading it; the click commands call the
same functions."""

from __future__ import annotations

import codecs
import os
import re
import shlex
import sys
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import NoReturn

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

EXIT_USAGE = 2


_CSI = re.compile(r"\033\[[;?0-9]*[a-zA-Z]")  # what click.echo strips for a non-terminal


def say(text: str, err: bool = False, end: str = "\n") -> None:
    """A line on stdout (or stderr), at once, as click.echo wrote it for every command:
    nothing when the stream is closed (not the other stream), colour codes stripped when
    it is not a terminal, UTF-8 on a stream that says it is ASCII (a C locale). A name or
    path the stream cannot encode (an argument's surrogate escapes) gets replacement
    characters, not a traceback."""
    stream = sys.stderr if err else sys.stdout
    if stream is None:
        return
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):
        tty = False
    line = (text if tty else _CSI.sub("", text)) + end
    encoding = getattr(stream, "encoding", None) or "utf-8"
    try:
        ascii_only = codecs.lookup(encoding).name == "ascii"
    except LookupError:
        ascii_only = False
    buffer = getattr(stream, "buffer", None)
    if ascii_only and buffer is not None:
        stream.flush()
        buffer.write(line.encode("utf-8", "replace"))
    else:
        try:
            stream.write(line)
        except UnicodeEncodeError:
            if buffer is None:
                raise
            stream.flush()
            buffer.write(line.encode(encoding, "replace"))
    stream.flush()


def fail(message: str) -> NoReturn:
    say(f"proctui: error: {message}", err=True)
    sys.exit(EXIT_USAGE)


def read_overrides(stop_timeout: float | None, kill_timeout: float | None,
                   on_timeout: str | None, stop_signal: str | None) -> Overrides:
    sig = None
    if stop_signal is not None:
        sig = parse_signal(stop_signal, "--stop-signal")
    return Overrides(
        stop_timeout=stop_timeout,
        kill_timeout=kill_timeout,
        on_timeout=OnTimeout(on_timeout) if on_timeout else None,
        stop_signal=sig,
    )


def load_config(file: Path | None, commands: Sequence[str], over: Overrides) -> Config:
    try:
        return load(file, commands, over)
    except ConfigError as e:
        fail(str(e))


def run(file: Path | None, commands: Sequence[str], **options: object) -> NoReturn:
    """``proctui run``: from a config file or from commands, until they end or are
    stopped."""
    over = _overrides_from(options)
    config = load_config(file, commands, over)
    sys.exit(start(config, over, anchor=config.path or config.base_dir, file=file,
                   **options))  # type: ignore[arg-type]


def up(file: Path | None, commands: Sequence[str], **options: object) -> NoReturn:
    """``proctui up``: run --detach (up has no --detach of its own to clash with)."""
    run(file, commands, detach=True, **options)


def demo(print_config: bool = False, **options: object) -> None:
    """``proctui demo``: the built-in tour, or its config to copy."""
    from proctui import demo as tour

    if print_config:
        say(tour.config_text(), end="")
        return
    over = _overrides_from(options)
    config = tour.config()
    config = replace(config, processes=tuple(over.apply(s) for s in config.processes))
    sys.exit(start(config, over, anchor=Path("/proctui/demo"), hint=tour.HINT,
                   **options))  # type: ignore[arg-type]


def _overrides_from(options: dict[str, object]) -> Overrides:
    try:
        return read_overrides(
            options.pop("stop_timeout"), options.pop("kill_timeout"),  # type: ignore[arg-type]
            options.pop("on_timeout"), options.pop("stop_signal"))  # type: ignore[arg-type]
    except ConfigError as e:
        fail(str(e))


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
            from proctui.frontends.console import run_console

            return run_console(config.processes, run_dir=directory, leftover_defaults=template,
                               hint=hint, stop_after=stop_after, refresh_hz=refresh,
                               on_hangup=hangup, source=config.source,
                               reload_from=reload_from)
        from proctui.frontends import headless as runner
        from proctui.startup import resume

        return runner.run(config.processes, run_dir=directory, leftover_defaults=template,
                          stop_after=stop_after, source=config.source,
                          reload_from=reload_from, resume=resume)
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
    from proctui.daemon import detach
    from proctui.startup import resume

    status, text = detach(config.processes, run_dir=path, source=config.source,
                          leftover_defaults=template, stop_after=stop_after,
                          reload_from=reload_from, resume=resume)
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
    from proctui.frontends import answers
    from proctui.remote.client import Connection, NoSupervisor

    try:
        conn = Connection.open(path)
    except NoSupervisor as e:
        return 0, [], [f"proctui: the supervisor does not answer: {e}"], []
    try:
        from proctui.frontends.control import troubles

        answers.follow(conn, answers.settled, answers.SETTLE_TIMEOUT)
        started, lines, failures = answers.up_report(conn.ordered_views())
        # Nothing is stopped for them, but up names them (a full disk under the run
        # directory once read as "3 of 3 started" and nothing more).
        return started, lines, failures, [f"proctui: warning: {t}"
                                          for t in troubles(conn.state)]
    except (NoSupervisor, OSError) as e:
        return 0, [], [f"proctui: the supervisor stopped answering: {e}"], []
    finally:
        conn.close()
