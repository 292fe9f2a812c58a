"""The ``proctui`` commands that talk to a running supervisor over its control socket:
status, stop, start, restart, kill, abandon, extend, logs, down and attach. Each is a thin
shell over ``proctui.frontends.control``; every failure is one line."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from proctui.cli_base import SECONDS, _fail, cli
from proctui.protocol.commands import BY_NAME, Extend


def where_options(fn=None, *, short: bool = True):  # type: ignore[no-untyped-def]
    """-f FILE (``logs``: --file only, its -f follows) and --run-dir: which supervisor."""
    if fn is None:
        return lambda f: where_options(f, short=short)
    names = ("-f", "--file") if short else ("--file",)
    options = [
        click.option(*names, "file", type=click.Path(path_type=Path, dir_okay=False),
                     help="The config the supervisor was started with (default: "
                          "./proctui.toml or ./Procfile, else the only supervisor running)."),
        click.option("--run-dir", type=click.Path(path_type=Path, file_okay=False),
                     help="The supervisor's run directory."),
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn


def _control(file: Path | None, run_dir: Path | None, call) -> None:  # type: ignore[no-untyped-def]
    """Connect, run ``call(connection)``, exit with its status; every failure is one line."""
    from proctui.frontends.control import UnknownProcess, connect
    from proctui.remote.client import NoSupervisor

    try:
        conn = connect(file, run_dir)
    except NoSupervisor as e:
        _fail(str(e))
        raise AssertionError("unreachable") from None
    try:
        status = call(conn)
    except UnknownProcess as e:
        _fail(str(e))
    except NoSupervisor as e:
        _fail(str(e))
    except (BrokenPipeError, KeyboardInterrupt):
        status = 130
    except OSError as e:
        click.echo(f"proctui: error: the supervisor connection failed: {e.strerror or e}",
                   err=True)
        status = 1
    finally:
        conn.close()
    sys.exit(status)


@cli.command()
@where_options
@click.option("--json", "as_json", is_flag=True, help="One JSON object, for scripts.")
def status(file: Path | None, run_dir: Path | None, as_json: bool) -> None:
    """One row per process of a running supervisor: its state, pid, and its uptime, its
    countdown or how it ended."""
    from proctui.frontends import control

    _control(file, run_dir, lambda conn: control.status(conn, as_json, sys.stdout))


def _process_command(op: str, verb: str) -> None:
    @cli.command(op, help=verb)
    @where_options
    @click.argument("names", nargs=-1, required=True)
    def command(file: Path | None, run_dir: Path | None, names: tuple[str, ...]) -> None:
        from proctui.frontends import control

        _control(file, run_dir, lambda conn: control.act(conn, op, names, sys.stdout))


# Their help is the first line of the command's docstring in the table: written once.
for _op in ("stop", "start", "restart", "kill", "abandon"):
    _process_command(_op, BY_NAME[_op].help())


@cli.command(help=Extend.help(), context_settings={"ignore_unknown_options": True})
@where_options
@click.argument("name")
@click.argument("seconds", required=False)
@click.option("--no-deadline", is_flag=True,
              help="Wait for it with no deadline (the console's w), instead of SECONDS.")
def extend(file: Path | None, run_dir: Path | None, name: str, seconds: str | None,
           no_deadline: bool) -> None:
    from proctui.cli_base import bad_duration
    from proctui.config.values import MAX_SECONDS, parse_duration
    from proctui.frontends import control

    if no_deadline or seconds is None:
        if no_deadline == (seconds is not None):
            _fail("extend: give SECONDS (10, 1.5, 10s, 2m, 1h30m) or --no-deadline"
                  + (", not both" if no_deadline else ""))
        _control(file, run_dir, lambda conn: control.act(conn, "wait", (name,), sys.stdout))
    # A string, not a click type: "-5" must be a bad value, not an unknown option.
    by = parse_duration(seconds or "")
    if by is None or not 0 < by <= MAX_SECONDS:
        _fail(f"extend: SECONDS {bad_duration(seconds)}")
    _control(file, run_dir, lambda conn: control.act(conn, "extend", (name,), sys.stdout,
                                                     by=by))


@cli.command("is-ready")
@where_options
@click.argument("names", nargs=-1)
@click.option("--wait", is_flag=True, help="Wait until ready (or --timeout).")
@click.option("--timeout", type=SECONDS, default=60.0, metavar="SECONDS",
              help="How long --wait waits (default 60).")
def is_ready(file: Path | None, run_dir: Path | None, names: tuple[str, ...], wait: bool,
             timeout: float) -> None:
    """Exit 0 when every process (or each NAME) is ready: it said so, or it runs and has
    no ready check; else 1, with one line saying who is not and why."""
    from proctui.frontends import answers

    _control(file, run_dir, lambda conn: answers.check_ready(conn, names, wait, timeout,
                                                             sys.stdout))


@cli.command()
@where_options
@click.argument("name")
def why(file: Path | None, run_dir: Path | None, name: str) -> None:
    """Why NAME is not running, or not ready: waiting for a dependency, backoff, a
    failure, held, a stop's countdown or a decision."""
    from proctui.frontends import answers

    _control(file, run_dir, lambda conn: answers.explain(conn, name, sys.stdout))


@cli.command()
@where_options(short=False)
@click.argument("name")
@click.option("-f", "--follow", is_flag=True, help="Keep printing new output.")
@click.option("-n", "--lines", type=click.IntRange(min=0), default=None,
              help="Only the last LINES lines (default: all that are kept).")
def logs(file: Path | None, run_dir: Path | None, name: str, follow: bool,
         lines: int | None) -> None:
    """Print NAME's output kept by a running supervisor (its scrollback); the whole of it
    is in RUN_DIR/logs/NAME.log."""
    from proctui.frontends import answers, control

    if not follow and answers.offline_logs(file, run_dir, name, lines, sys.stdout):
        sys.exit(0)
    _control(file, run_dir, lambda conn: control.logs(conn, name, follow, lines, sys.stdout))


@cli.command()
@where_options
def down(file: Path | None, run_dir: Path | None) -> None:
    """Stop everything a running supervisor runs, with countdowns, and end it. Exits as
    proctui run would have."""
    from proctui.frontends import control

    _control(file, run_dir, lambda conn: control.Down(conn, sys.stdout).run())


@cli.command()
@where_options
@click.option("--refresh", type=click.FloatRange(min=0.5, max=60), metavar="HZ",
              help="Redraw at most HZ times a second (default 10).")
def attach(file: Path | None, run_dir: Path | None, refresh: float | None) -> None:
    """Open the console on a running supervisor. d detaches (everything goes on); q asks
    whether to detach or stop everything."""
    from proctui.frontends import control

    _control(file, run_dir, lambda conn: control.attach(conn, refresh))
