"""The ``proctui`` command: its click group, the table of where each subcommand lives, and
the entry point (``proctui``, ``python -m proctui``).

A subcommand's module is imported when it is asked for (or every one is: ``--help``),
click's documented way to load subcommands lazily: ``proctui status`` loads neither
Textual nor the supervisor (``proctui.core.supervisor`` and its engine), ``run`` none of
the control commands' code. The modules, by what their commands do: ``launch.py``
starts supervision, ``config_commands.py`` reads a config and runs nothing,
``control_commands.py`` talks to a running supervisor, ``rundir_commands.py`` reads what
supervisors keep on disk; ``options.py`` and ``echo.py`` hold what they share."""

from __future__ import annotations

import gc
import importlib
import sys

import click

from proctui import __version__
from proctui.cli.echo import EXIT_USAGE

# Every command but the command table's, in the module that holds it as an attribute of
# its name ("is-ready": is_ready); the table's (stop, kill, extend, reload...) are made
# from proctui.commands by table_commands.py. tests/test_cli_lazy.py holds this to the
# truth.
COMMANDS: dict[str, tuple[str, ...]] = {
    "proctui.cli.launch": ("run", "up", "demo"),
    "proctui.cli.config_commands": ("check", "export"),
    "proctui.cli.control_commands": ("status", "why", "is-ready", "logs", "events", "down",
                                     "attach", "stdio", "mcp"),
    "proctui.cli.rundir_commands": ("ls", "clean", "timeline"),
}
_MODULE = {name: module for module, names in COMMANDS.items() for name in names}


class LazyGroup(click.Group):
    """A click group that imports a command's module on first use (click's documented
    way to load subcommands lazily: override get_command and list_commands)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        from proctui.cli import table_commands

        return sorted([*_MODULE, *table_commands.ops()])

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        module = _MODULE.get(cmd_name)
        if module is not None:
            return self._load(cmd_name)
        from proctui.cli import table_commands

        command = table_commands.command(cmd_name)
        if command is None:
            # A mistyped name: click's error suggests the close ones among the commands
            # the group holds ("Did you mean ...?"), so it is given them all.
            for name in _MODULE:
                self.commands.setdefault(name, self._load(name))
            for op in table_commands.ops():
                self.commands.setdefault(op, table_commands.command(op))  # type: ignore[arg-type]
        return command

    @staticmethod
    def _load(name: str) -> click.Command:
        command = getattr(importlib.import_module(_MODULE[name]), name.replace("-", "_"))
        assert isinstance(command, click.Command)
        return command


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
    finally:
        # The interpreter's last collection at exit frees, one by one, every module,
        # class and function the command loaded, which the process is about to give back
        # anyway: frozen, they are left to the OS (atexit handlers run as before). It was
        # 12 % of status, check and --version here (9 to 20 ms, medians of 21 runs).
        gc.freeze()
