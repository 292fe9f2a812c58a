"""A command's module is imported only when it is asked for: the table that says which
module holds which command (``proctui.cli.COMMANDS``) must be the truth, or a command
would vanish, and ``run`` or ``status`` must not pay for the others."""

from __future__ import annotations

import importlib
import subprocess

import click

from tests.conftest import PY


def test_the_table_names_every_command_where_it_is_defined():
    from proctui.cli import COMMANDS, cli

    ctx = cli.make_context("proctui", ["--help"], resilient_parsing=True)
    for module, names in COMMANDS.items():
        found = [value for value in vars(importlib.import_module(module)).values()
                 if isinstance(value, click.Command)]
        inner = {id(c) for group in found if isinstance(group, click.Group)
                 for c in group.commands.values()}  # export's systemd
        assert {c.name for c in found if id(c) not in inner} == set(names), module
        for name in names:
            command = cli.get_command(ctx, name)
            assert command is not None and command.name == name
            assert command.callback is not None and command.callback.__module__ == module
    assert cli.get_command(ctx, "stauts") is None


def test_run_and_status_import_only_their_own_commands_and_each_command_is_found():
    for name, own in (("run", "launch"), ("status", "control_commands")):
        probe = ("import sys; from proctui.cli import cli; "
                 f"ctx = cli.make_context('proctui', ['{name}', '--help'], "
                 "resilient_parsing=True); "
                 f"cli.get_command(ctx, '{name}'); "
                 "print(*sorted(m for m in sys.modules if m.startswith('proctui.cli')), "
                 "any(m.startswith(('textual', 'proctui.core.supervisor', "
                 "'proctui.core.engine')) for m in sys.modules))")
        got = subprocess.run([PY, "-c", probe], capture_output=True, text=True, check=True)
        expected = sorted(["proctui.cli", "proctui.cli.echo", f"proctui.cli.{own}",
                           "proctui.cli.options"])
        assert got.stdout.split() == [*expected, "False"], got.stdout
    for name in ("status", "reload", "ls", "export", "stdio", "is-ready"):
        help_ = subprocess.run([PY, "-m", "proctui", name, "--help"], capture_output=True,
                               text=True, timeout=60)
        assert help_.returncode == 0 and "Usage: proctui " + name in help_.stdout, help_
    listing = subprocess.run([PY, "-m", "proctui", "--help"], capture_output=True,
                             text=True, timeout=60).stdout
    for name in ("status", "reload", "events", "export", "run", "timeline", "is-ready"):
        assert f"  {name} " in listing, listing
    assert "stdio" not in listing  # hidden, as before
    typo = subprocess.run([PY, "-m", "proctui", "stauts"], capture_output=True, text=True,
                          timeout=60)
    assert typo.returncode == 2 and "stauts" in typo.stderr and "Traceback" not in typo.stderr


def test_the_console_reads_the_command_table_only_when_its_palette_opens():
    """Every command's module is imported when the table is first read: before the
    console's first frame only the modules of the requests its keys send may load (the
    picker once read the table at import, and a console paid for all of them; the control
    socket's decoder did too, with the socket bound before the first frame)."""
    probe = ("import sys; import proctui.frontends.console.app, proctui.core.supervisor, "
             "proctui.remote.listener, proctui.remote.server, proctui.protocol.decode; "
             "import proctui.commands as c; "
             "print('COMMANDS' in vars(c), sorted(m.rsplit('.', 1)[1] for m in sys.modules "
             "if m.startswith('proctui.commands.')))")
    got = subprocess.run([PY, "-c", probe], capture_output=True, text=True, check=True)
    made, loaded = got.stdout.split(" ", 1)
    assert made == "False", got.stdout
    for later in ("reload", "event_log", "print_notices", "signal", "trouble"):
        assert f"'{later}'" not in loaded, got.stdout
