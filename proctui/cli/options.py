"""What several ``proctui`` commands take alike: ``-f FILE`` and the config it names (read
here, or the one-line failure), a number of seconds with its one wording when it is bad,
and the options of the commands that start supervision (``run``, ``up``, ``demo``).

The options that say which running supervisor to talk to (``--file``, ``--run-dir``,
``--host``) are with the commands that use them (``control_commands.py``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import click

from proctui.cli.echo import fail
from proctui.config import Config, ConfigError, OnHangup, OnTimeout, Overrides, load
from proctui.config.values import Where, parse_duration, seconds

F = TypeVar("F", bound=Callable[..., Any])


# Generic only from click 8.4, and subscripted at run time it fails before that.
class Seconds(click.ParamType):  # type: ignore[type-arg]
    """A number of seconds (10, 1.5, 10s, 2m, 1h30m), finite, >= 0 and within the bounds
    the config file has."""

    name = "seconds"

    def convert(self, value: object, param: click.Parameter | None,
                ctx: click.Context | None) -> float:
        if isinstance(value, float):
            return value
        number = parse_duration(str(value))
        try:
            if number is not None:
                return seconds(number, None, Where("", None), positive=False)
        except ConfigError:
            pass
        self.fail(bad_duration(str(value), positive=False), param, ctx)


def bad_duration(value: str, positive: bool = True) -> str:
    """The one wording for every bad number of seconds."""
    from proctui.config.values import duration_words

    return duration_words(value, positive)


SECONDS = Seconds()

file_option = click.option(
    "-f", "--file", "file", type=click.Path(path_type=Path, dir_okay=True),
    help="A proctui.toml (by its .toml suffix) or a Procfile. Default: ./proctui.toml, "
         "else ./Procfile.")


def load_config(file: Path | None, commands: Sequence[str], over: Overrides) -> Config:
    """The config in ``file`` (or here, or ``commands``), or the one-line failure."""
    try:
        return load(file, commands, over)
    except ConfigError as e:
        fail(str(e))


_DETACH = click.option(
    "--detach", is_flag=True,
    help="Supervise in the background, in a session of its own; returns once every "
         "process has started (proctui attach, status, down reach it).")

# The options run, up and demo share, in the order their help lists them.
_STARTING = (
    click.option("--headless", is_flag=True,
                 help="Print output lines instead of opening the console (automatic when "
                      "stdout is not a terminal)."),
    click.option("--stop-timeout", type=SECONDS, metavar="SECONDS",
                 help="Seconds from the stop request to the timeout action."),
    click.option("--kill-timeout", type=SECONDS, metavar="SECONDS",
                 help="Seconds after SIGKILL before a process is reported unkillable."),
    click.option("--on-timeout", type=click.Choice(tuple(p.value for p in OnTimeout)),
                 help="At the stop deadline: kill, abandon, or ask the operator (headless: "
                      "ask acts as kill)."),
    click.option("--stop-signal", metavar="SIGNAL",
                 help="The stop signal, e.g. TERM, INT, SIGQUIT."),
    click.option("--stop-after", type=SECONDS, metavar="SECONDS",
                 help="Stop everything gracefully after SECONDS (for scripts and demos)."),
    click.option("--refresh", type=click.FloatRange(min=0.5, max=60), metavar="HZ",
                 help="Redraw the console at most HZ times a second (default 10); lower it "
                      "on a slow link."),
    click.option("--run-dir", type=click.Path(path_type=Path, file_okay=False),
                 help="Where the lock and PID files live. Default: $XDG_RUNTIME_DIR/proctui/"
                      "NAME-HASH (or /tmp/proctui-UID/...), one per config file or "
                      "directory."),
    click.option("--on-hangup", type=click.Choice(tuple(h.value for h in OnHangup)),
                 help="When the console's terminal goes away: stop everything (default), or "
                      "detach and supervise on (as [defaults] on_hangup)."),
)


def start_options(*, detach: bool = True) -> Callable[[F], F]:
    """The options of ``run``, ``up`` and ``demo`` (``up`` has no ``--detach``: it is
    ``run --detach``)."""
    def decorate(fn: F) -> F:
        for option in reversed((_DETACH, *_STARTING) if detach else _STARTING):
            fn = option(fn)
        return fn
    return decorate
