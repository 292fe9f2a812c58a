"""The commands that talk to a running supervisor over its control socket, here or on
another machine (``--host``, over ssh): what it runs (``status``, ``why``, ``is-ready``,
``logs``, ``events``), stopping it all (``down``), the console on it (``attach``), and
the hidden ``stdio``, the box's end of ``--host``. (What it is to do to one process,
``stop``, ``kill``, ``extend``..., and ``reload``, are the command table's:
table_commands.py.) Each is a thin shell over a frontend (``proctui.frontends.control``
and its neighbours); every failure is one line."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from proctui.cli.echo import fail
from proctui.cli.options import SECONDS

HOST_ENV = "PROCTUI_HOST"

F = TypeVar("F", bound=Callable[..., Any])


def where_options(*, short: bool = True, hosts: bool = False,
                  remote: bool = True) -> Callable[[F], F]:
    """-f FILE (``logs``: --file only, its -f follows), --run-dir and --host: which
    supervisor, and on which machine (``status``: on several; ``stdio``: on this one)."""
    names = ("-f", "--file") if short else ("--file",)
    options = [
        click.option(*names, "file", type=click.Path(path_type=Path, dir_okay=False),
                     help="The config the supervisor was started with (default: "
                          "./proctui.toml or ./Procfile, else the only supervisor running)."),
        click.option("--run-dir", type=click.Path(path_type=Path, file_okay=False),
                     help="The supervisor's run directory."),
        click.option("--host", "host", metavar="DEST", envvar=HOST_ENV, multiple=hosts,
                     help="The supervisor on another machine, over ssh: anything ssh "
                          "accepts (user@box, an alias); -f and --run-dir are then the "
                          f"box's. Also ${HOST_ENV}." + (" Repeat it for several boxes at "
                                                         "once." if hosts else "")),
    ]
    if hosts:
        options.append(click.option(
            "--fleet", type=click.Path(path_type=Path, dir_okay=False), metavar="FILE",
            help="Every box a fleet file names ([boxes.NAME] with ssh = DEST, and "
                 "run_dir or file), with any --host."))
    if not remote:
        options = options[:2]

    def decorate(fn: F) -> F:
        for option in reversed(options):
            fn = option(fn)
        return fn
    return decorate


def _control(file: Path | None, run_dir: Path | None, call,  # type: ignore[no-untyped-def]
             host: str | None = None, read_only: bool = False) -> None:
    """Connect, run ``call(connection)``, exit with its status; every failure is one line."""
    from proctui.frontends.control import dialer
    from proctui.frontends.status import UnknownProcess
    from proctui.remote.client import NoSupervisor

    try:
        conn = dialer(file, run_dir, host, read_only)()
    except NoSupervisor as e:
        fail(str(e))
    try:
        status = call(conn)
    except UnknownProcess as e:
        fail(str(e))
    except NoSupervisor as e:
        fail(str(e))
    except BrokenPipeError:
        # Our reader went away (logs -f | head -2): done, as logs -n and status are
        # then, not 130 as for a ctrl+c (that failed a script's `set -o pipefail`).
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        status = 0
    except KeyboardInterrupt:
        status = 130
    except OSError as e:
        click.echo(f"proctui: error: the supervisor connection failed: {e.strerror or e}",
                   err=True)
        status = 1
    finally:
        conn.close()
    sys.exit(status)


@click.command()
@where_options(hosts=True)
@click.option("--json", "as_json", is_flag=True, help="One JSON object, for scripts.")
def status(file: Path | None, run_dir: Path | None, host: tuple[str, ...],
           fleet: Path | None, as_json: bool) -> None:
    """One row per process of a running supervisor: its state, pid, and its uptime, its
    countdown or how it ended."""
    from proctui.frontends import status as table

    if len(host) > 1 or fleet is not None:
        from proctui.frontends import hosts

        names, dials = _boxes(host, fleet, file, run_dir)
        sys.exit(hosts.status(names, dict(zip(names, dials, strict=True)).__getitem__,
                              as_json, sys.stdout))
    _control(file, run_dir, lambda conn: table.status(conn, as_json, sys.stdout),
             host[0] if host else None)


def _boxes(host: tuple[str, ...], fleet: Path | None, file: Path | None,
           run_dir: Path | None) -> tuple[list[str], list[Callable[[], Any]]]:
    """The boxes named by --fleet and --host: their names and how to reach each."""
    from proctui.config import ConfigError
    from proctui.config.fleet import boxes
    from proctui.frontends import control

    try:
        found = boxes(host, fleet, file, run_dir)
    except ConfigError as e:
        fail(str(e))
    return ([b.name for b in found],
            [control.dialer(b.file, b.run_dir, b.ssh) for b in found])


@click.command()
@where_options()
@click.argument("name")
def why(file: Path | None, run_dir: Path | None, host: str | None, name: str) -> None:
    """Why NAME is not running, or not ready: waiting for a dependency, backoff, a
    failure, held, a stop's countdown or a decision."""
    from proctui.frontends import status

    _control(file, run_dir, lambda conn: status.explain(conn, name, sys.stdout), host)


@click.command("is-ready")
@where_options()
@click.argument("names", nargs=-1)
@click.option("--wait", is_flag=True,
              help="Wait until ready (or --timeout; not for what has ended).")
@click.option("--timeout", type=SECONDS, default=60.0, metavar="SECONDS",
              help="How long --wait waits (default 60).")
def is_ready(file: Path | None, run_dir: Path | None, host: str | None,
             names: tuple[str, ...], wait: bool, timeout: float) -> None:
    """Exit 0 when every process (or each NAME) is ready: it said so, or it runs and has
    no ready check; else 1, with one line saying who is not and why."""
    from proctui.frontends import status

    _control(file, run_dir, lambda conn: status.check_ready(conn, names, wait, timeout,
                                                            sys.stdout), host)


@click.command()
@where_options(short=False)
@click.argument("name")
@click.option("-f", "--follow", is_flag=True, help="Keep printing new output.")
@click.option("-n", "--lines", type=click.IntRange(min=0), default=None,
              help="Only the last LINES lines (default: all that are kept).")
def logs(file: Path | None, run_dir: Path | None, host: str | None, name: str,
         follow: bool, lines: int | None) -> None:
    """Print NAME's output kept by a running supervisor (its scrollback); the whole of it
    is in RUN_DIR/logs/NAME.log."""
    from proctui.frontends.logs import logs as print_logs
    from proctui.frontends.logs import offline_logs

    if host is None and not follow and \
            offline_logs(file, run_dir, name, lines, sys.stdout):
        sys.exit(0)
    _control(file, run_dir, lambda conn: print_logs(conn, name, follow, lines, sys.stdout),
             host)


@click.command()
@where_options(hosts=True)
@click.option("--json", "as_json", is_flag=True,
              help="One JSON object a line (schema 1, in the README), for scripts.")
@click.option("--name", "names", multiple=True, metavar="NAME",
              help="Only this process's changes (again for more).")
def events(file: Path | None, run_dir: Path | None, host: tuple[str, ...],
           fleet: Path | None, as_json: bool, names: tuple[str, ...]) -> None:
    """Print each change of a running supervisor as it happens (states, readiness,
    outcomes, restarts, decisions, the shutdown) until it ends. On several boxes: one
    stream, each event with its box (a "host" field)."""
    from proctui.frontends import events as stream

    if len(host) > 1 or fleet is not None:
        from proctui.frontends import hosts

        boxes, dials = _boxes(host, fleet, file, run_dir)
        sys.exit(hosts.events(boxes, dials, as_json, names, sys.stdout, sys.stderr))
    one = host[0] if host else None
    _control(file, run_dir, lambda conn: stream.stream(conn, as_json, names, sys.stdout,
                                                       local=one is None), one)


@click.command()
@where_options(hosts=True)
def down(file: Path | None, run_dir: Path | None, host: tuple[str, ...],
         fleet: Path | None) -> None:
    """Stop everything a running supervisor runs, with countdowns, and end it. Exits as
    proctui run would have. On several boxes (--host repeated, --fleet): all at once,
    each line after its box's name, one summary, the worst exit status."""
    from proctui.frontends import control

    if len(host) > 1 or fleet is not None:
        from proctui.frontends import hosts

        names, dials = _boxes(host, fleet, file, run_dir)
        sys.exit(hosts.down(names, dials, sys.stdout))
    _control(file, run_dir, lambda conn: control.Down(conn, sys.stdout).run(),
             host[0] if host else None)


@click.command()
@where_options(hosts=True)
@click.option("--refresh", type=click.FloatRange(min=0.5, max=60), metavar="HZ",
              help="Redraw at most HZ times a second (default 10).")
@click.option("--read-only", is_flag=True,
              help="Look, never act: the supervisor refuses every command from this "
                   "console.")
def attach(file: Path | None, run_dir: Path | None, host: tuple[str, ...],
           fleet: Path | None, refresh: float | None, read_only: bool) -> None:
    """Open the console on a running supervisor. d detaches (everything goes on); q asks
    whether to detach or stop everything. On several boxes (--host repeated, --fleet):
    one row a box, Enter opens its console, Esc comes back."""
    from proctui.frontends import control
    from proctui.remote.client import NoSupervisor

    if len(host) > 1 or fleet is not None:
        _attach_fleet(host, fleet, file, run_dir, refresh, read_only)
        return
    host_one = host[0] if host else None

    try:
        dial = control.dialer(file, run_dir, host_one, read_only)
    except NoSupervisor as e:
        fail(str(e))
    again = None
    if host_one is not None:
        from proctui.remote.dial import where_args

        again = ["--host", host_one, *where_args(file, run_dir)]
    _control(file, run_dir,
             lambda conn: control.attach(conn, refresh, read_only=read_only, dial=dial,
                                         again=again),
             host_one, read_only)


def _attach_fleet(host: tuple[str, ...], fleet: Path | None, file: Path | None,
                  run_dir: Path | None, refresh: float | None, read_only: bool) -> None:
    """The fleet console: a row a box, each box's console one Enter away."""
    import shlex

    from proctui.config import ConfigError
    from proctui.config.fleet import boxes
    from proctui.frontends import control
    from proctui.frontends.fleet import FleetBox
    from proctui.remote.dial import where_args

    if not sys.stdin.isatty() or not sys.stdout.isatty():
        fail("attach needs a terminal (use proctui status --fleet or --host in scripts)")
    try:
        found = boxes(host, fleet, file, run_dir)
    except ConfigError as e:
        fail(str(e))
    by_name = {b.name: b for b in found}

    def again(name: str) -> str:
        b = by_name[name]
        return shlex.join(["proctui", "attach", *(["--host", b.ssh] if b.ssh else []),
                           *where_args(b.file, b.run_dir),
                           *(["--read-only"] if read_only else [])])

    from proctui.frontends.console.fleet import run_fleet

    sys.exit(run_fleet([FleetBox(b.name, control.dialer(b.file, b.run_dir, b.ssh, read_only),
                                 read_only) for b in found],
                       refresh_hz=refresh, read_only=read_only, again=again))


@click.command("mcp")
@where_options()
@click.option("--allow", "allow", metavar="TOOLS", default="",
              help="Hand these over to the agent, comma-separated: kill, abandon, down "
                   "(else it may only ask, and an operator decides), and act (start, "
                   "stop, restart, extend, reload, request_decision: allowed here, and "
                   "over --host only so).")
@click.option("--read-only", is_flag=True,
              help="Let the agent look, never act (the supervisor refuses it too).")
def mcp(file: Path | None, run_dir: Path | None, host: str | None, allow: str,
        read_only: bool) -> None:
    """Serve a running supervisor to an agent: an MCP server on stdio (pip install
    'proctui[mcp]'). Tools: status, why, logs, events, is_ready, timeline, decision;
    start, stop, restart, extend, reload and request_decision where it may act; kill,
    abandon and down only with --allow. Over --host it only looks unless --allow act."""
    import importlib

    from proctui.frontends import agent

    allowed = agent.parse_allow(allow)
    if isinstance(allowed, str):
        fail(allowed)
    assert not isinstance(allowed, str)
    if read_only and allowed:
        fail("--read-only and --allow: one or the other")
    try:
        for module in ("mcp.server.lowlevel", "mcp.server.stdio", "anyio"):
            importlib.import_module(module)
    except ImportError as e:
        fail(f"proctui mcp needs the MCP SDK, an optional extra: pip install "
             f"'proctui[mcp]' ({e})")
    from proctui.frontends import control, mcp_server
    from proctui.remote.client import RemoteCore

    policy = agent.Policy.of(allowed, remote=host is not None, read_only=read_only)
    dial = control.dialer(file, run_dir, host, policy.read_only)

    def connect() -> tuple[RemoteCore, Any]:
        conn = dial()
        return (RemoteCore(conn, output=False, kind="mcp", dial=dial,
                           read_only=policy.read_only), conn.hello)

    sys.exit(mcp_server.serve(connect, policy, host or "this machine"))


@click.command(hidden=True)
@where_options(remote=False)
def stdio(file: Path | None, run_dir: Path | None) -> None:
    """The box's end of --host: connect to the supervisor, as attach and status find it,
    and pass bytes between it and stdin/stdout until either side ends."""
    from proctui.frontends.control import locate
    from proctui.remote import stdio as helper
    from proctui.remote.client import NoSupervisor

    try:
        sys.exit(helper.serve(lambda: locate(file, run_dir)))
    except NoSupervisor as e:
        fail(str(e))
