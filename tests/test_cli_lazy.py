"""The control commands' modules are imported only when asked for: the table that says
which module holds which command must be the truth, or a command would vanish."""

from __future__ import annotations

import subprocess

from tests.conftest import PY


def test_the_lazy_table_names_every_command_where_it_is_defined():
    from proctui.cli import cli
    from proctui.cli_base import LAZY

    ctx = cli.make_context("proctui", ["--help"], resilient_parsing=True)
    listed = cli.list_commands(ctx)  # imports every module
    where: dict[str, list[str]] = {}
    for name in listed:
        command = cli.get_command(ctx, name)
        assert command is not None and command.callback is not None
        where.setdefault(command.callback.__module__, []).append(name)
    assert {m: tuple(sorted(n)) for m, n in where.items() if m != "proctui.cli"} == \
        {m: tuple(sorted(n)) for m, n in LAZY.items()}


def test_run_does_not_import_the_control_commands_and_each_command_is_found():
    probe = ("import sys; from proctui.cli import cli; "
             "ctx = cli.make_context('proctui', ['run', '--help'], resilient_parsing=True); "
             "cli.get_command(ctx, 'run'); "
             "print(sorted(m for m in sys.modules if m.startswith('proctui.cli')))")
    got = subprocess.run([PY, "-c", probe], capture_output=True, text=True, check=True)
    assert got.stdout.strip() == "['proctui.cli', 'proctui.cli_base', 'proctui.cli_quick']", \
        got.stdout
    for name in ("status", "reload", "ls", "export", "stdio"):
        help_ = subprocess.run([PY, "-m", "proctui", name, "--help"], capture_output=True,
                               text=True, timeout=60)
        assert help_.returncode == 0 and "Usage: proctui " + name in help_.stdout, help_
    listing = subprocess.run([PY, "-m", "proctui", "--help"], capture_output=True,
                             text=True, timeout=60).stdout
    for name in ("status", "reload", "events", "export", "run"):
        assert f"  {name} " in listing, listing
    assert "stdio" not in listing  # hidden, as before
    typo = subprocess.run([PY, "-m", "proctui", "stauts"], capture_output=True, text=True,
                          timeout=60)
    assert typo.returncode == 2 and "stauts" in typo.stderr and "Traceback" not in typo.stderr
