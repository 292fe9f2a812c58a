"""What every ``proctui`` command module shares: the click group, the options that read a
config, and the one-line failure. The commands themselves: cli.py (running),
cli_control.py (talking to a running supervisor), cli_export.py (export)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from proctui import __version__
from proctui.config import (
    Config,
    ConfigError,
    OnHangup,
    OnTimeout,
    Overrides,
    load,
    parse_signal,
)

EXIT_USAGE = 2


def _fail(message: str) -> None:
    click.echo(f"proctui: error: {message}", err=True)
    sys.exit(EXIT_USAGE)


class Seconds(click.ParamType):
    """A number of seconds, finite and within the bounds the config file has."""

    name = "seconds"

    def convert(self, value: object, param: click.Parameter | None,
                ctx: click.Context | None) -> float:
        from proctui.config.values import Where, parse_duration, seconds

        if isinstance(value, float):
            return value
        number = parse_duration(str(value))
        if number is None:
            self.fail(bad_duration(str(value)), param, ctx)
        try:
            return seconds(number, None, Where("", None), positive=self.positive)
        except ConfigError:
            self.fail(bad_duration(str(value), self.positive), param, ctx)

    def __init__(self, positive: bool = False) -> None:
        self.positive = positive


def bad_duration(value: str, positive: bool = True) -> str:
    """The one wording for every bad number of seconds."""
    bound = "> 0" if positive else ">= 0"
    return (f"{value!r} is not a duration {bound} and at most 100 days (10, 1.5, 10s, 2m, "
            "1h30m)")


SECONDS = Seconds()
POSITIVE_SECONDS = Seconds(positive=True)


def _overrides(stop_timeout: float | None, kill_timeout: float | None,
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


def _load(file: Path | None, commands: tuple[str, ...], overrides: Overrides) -> Config:
    try:
        return load(file, commands, overrides)
    except ConfigError as e:
        _fail(str(e))
        raise AssertionError("unreachable") from None


_file_option = click.option(
    "-f", "--file", "file", type=click.Path(path_type=Path, dir_okay=True),
    help="A proctui.toml (by its .toml suffix) or a Procfile. Default: ./proctui.toml, "
         "else ./Procfile.",
)


def run_options(fn=None, *, with_detach: bool = True):  # type: ignore[no-untyped-def]
    """The options shared by ``run``, ``up`` and ``demo``."""
    if fn is None:
        return lambda f: run_options(f, with_detach=with_detach)
    options = [
        click.option("--headless", is_flag=True,
                     help="Print output lines instead of opening the console (automatic "
                          "when stdout is not a terminal)."),
        click.option("--stop-timeout", type=SECONDS, metavar="SECONDS",
                     help="Seconds from the stop request to the timeout action."),
        click.option("--kill-timeout", type=SECONDS, metavar="SECONDS",
                     help="Seconds after SIGKILL before a process is reported unkillable."),
        click.option("--on-timeout", type=click.Choice([p.value for p in OnTimeout]),
                     help="At the stop deadline: kill, abandon, or ask the operator "
                          "(headless: ask acts as kill)."),
        click.option("--stop-signal", metavar="SIGNAL",
                     help="The stop signal, e.g. TERM, INT, SIGQUIT."),
        click.option("--stop-after", type=SECONDS, metavar="SECONDS",
                     help="Stop everything gracefully after SECONDS (for scripts and demos)."),
        click.option("--refresh", type=click.FloatRange(min=0.5, max=60), metavar="HZ",
                     help="Redraw the console at most HZ times a second (default 10); "
                          "lower it on a slow link."),
        click.option("--run-dir", type=click.Path(path_type=Path, file_okay=False),
                     help="Where the lock and PID files live. Default: "
                          "$XDG_RUNTIME_DIR/proctui/NAME-HASH (or /tmp/proctui-UID/...), "
                          "one per config file or directory."),
        click.option("--on-hangup", type=click.Choice([h.value for h in OnHangup]),
                     help="When the console's terminal goes away: stop everything "
                          "(default), or detach and supervise on (as [defaults] "
                          "on_hangup)."),
    ]
    if with_detach:
        options.insert(0, click.option(
            "--detach", is_flag=True,
            help="Supervise in the background, in a session of its own; returns once "
                 "every process has started (proctui attach, status, down reach it)."))
    for option in reversed(options):
        fn = option(fn)
    return fn


# The commands kept outside cli.py, by module. A module is imported when one of its
# commands is asked for (or the whole list is: --help, a mistyped name), so `run`, the
# console and the demo start without the control commands' code (about 30 ms on the
# host, more on a small board). tests/test_cli_lazy.py holds this table to the truth.
LAZY: dict[str, tuple[str, ...]] = {
    "proctui.cli_control": ("abandon", "attach", "down", "extend", "is-ready", "kill", "logs",
                            "restart", "start", "status", "stdio", "stop", "why"),
    "proctui.cli_more": ("clean", "events", "ls"),
    "proctui.cli_export": ("export",),
    "proctui.cli_reload": ("reload",),
}


class LazyGroup(click.Group):
    """A click group that imports a command's module on first use (click's documented
    way to load subcommands lazily: override get_command and list_commands)."""

    def _load(self, name: str | None) -> None:
        import importlib

        for module, names in LAZY.items():
            if name is None or name in names:
                importlib.import_module(module)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands:
            known = any(cmd_name in names for names in LAZY.values())
            self._load(cmd_name if known else None)
        return super().get_command(ctx, cmd_name)

    def list_commands(self, ctx: click.Context) -> list[str]:
        self._load(None)
        return super().list_commands(ctx)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "-V", "--version", prog_name="proctui")
def cli() -> None:
    """Run several supervised commands; stop them visibly and steerably.

    \b
    proctui run                     # ./proctui.toml or ./Procfile
    proctui run 'web=python -m http.server' 'worker=./work.sh'
    proctui run --headless -f Procfile
    proctui check -f proctui.toml
    proctui up; proctui attach      # supervise in the background; the console on it
    proctui status; proctui down    # from scripts, and over SSH
    """
    if click.get_current_context().invoked_subcommand not in _START:
        from proctui.startup import resume

        resume()  # anything but a supervisor collects as usual from here on


# What turns the collector back on once it has started (proctui/startup.py): the rest
# have no start-up worth sparing it.
_START = ("run", "up", "demo")
