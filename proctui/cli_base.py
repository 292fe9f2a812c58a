"""What every ``proctui`` command module shares: the click group, the options that read a
config, and the one-line failure. The commands themselves: cli.py (running),
cli_control.py (talking to a running supervisor), cli_export.py (export)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import click

from proctui import __version__
from proctui.cli_quick import DETACH, FILE, HZ_RANGE, OPTIONS, Kind, StartOption, to_seconds
from proctui.config import ConfigError, Overrides
from proctui.launch import EXIT_USAGE, fail, load_config

# What the command modules take from here, with what is made here (ConfigError and
# Overrides for export).
__all__ = ["EXIT_USAGE", "LAZY", "POSITIVE_SECONDS", "SECONDS", "ConfigError", "Overrides",
           "_fail", "_file_option", "_load", "bad_duration", "cli", "run_options"]

# The one-line failure and the reading of a config live in launch.py, free of click, for
# the quick reader of run, up and demo (cli_quick.py).
_fail = fail
_load = load_config


class Seconds(click.ParamType):
    """A number of seconds, finite and within the bounds the config file has."""

    name = "seconds"

    def convert(self, value: object, param: click.Parameter | None,
                ctx: click.Context | None) -> float:
        if isinstance(value, float):
            return value
        number = to_seconds(str(value), positive=self.positive)
        if number is None:
            self.fail(bad_duration(str(value), self.positive), param, ctx)
        return number

    def __init__(self, positive: bool = False) -> None:
        self.positive = positive


def bad_duration(value: str, positive: bool = True) -> str:
    """The one wording for every bad number of seconds."""
    bound = "> 0" if positive else ">= 0"
    return (f"{value!r} is not a duration {bound} and at most 100 days (10, 1.5, 10s, 2m, "
            "1h30m)")


SECONDS = Seconds()
POSITIVE_SECONDS = Seconds(positive=True)


def _click_option(option: StartOption) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """One of the start commands' options (cli_quick.OPTIONS) as a click option."""
    flags = [f for f in (option.short, option.flag) if f]
    if option.kind is Kind.FLAG:
        return click.option(*flags, is_flag=True, help=option.help)
    kind: click.ParamType | None = {
        Kind.SECONDS: SECONDS,
        Kind.HZ: click.FloatRange(min=HZ_RANGE[0], max=HZ_RANGE[1]),
        Kind.CHOICE: click.Choice(option.choices),
        Kind.DIRECTORY: click.Path(path_type=Path, file_okay=False),
        Kind.PATH: click.Path(path_type=Path, dir_okay=True),
        Kind.TEXT: None,
    }[option.kind]
    return click.option(*flags, option.dest, type=kind, metavar=option.metavar,
                        help=option.help)


_file_option = _click_option(FILE)


def run_options(fn=None, *, with_detach: bool = True):  # type: ignore[no-untyped-def]
    """The options shared by ``run``, ``up`` and ``demo``."""
    if fn is None:
        return lambda f: run_options(f, with_detach=with_detach)
    for option in reversed((DETACH, *OPTIONS) if with_detach else OPTIONS):
        fn = _click_option(option)(fn)
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
