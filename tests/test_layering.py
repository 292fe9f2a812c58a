"""The core and the headless runner never import Textual (checked in a fresh interpreter)."""

from __future__ import annotations

import subprocess
import sys


def test_core_cli_and_headless_do_not_import_textual():
    code = (
        "import sys\n"
        "import proctui.config, proctui.cli, proctui.headless\n"
        "import proctui.core.supervisor, proctui.core.run, proctui.core.rundir\n"
        "bad = sorted(m for m in sys.modules if m == 'textual' or m.startswith('textual.'))\n"
        "print(bad)\n"
        "sys.exit(1 if bad else 0)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr


def test_version_does_not_import_textual():
    code = (
        "import sys, runpy\n"
        "sys.argv = ['proctui', '--version']\n"
        "try:\n"
        "    runpy.run_module('proctui', run_name='__main__')\n"
        "except SystemExit:\n"
        "    pass\n"
        "assert 'textual' not in sys.modules, 'textual imported'\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stderr
    assert "proctui, version" in result.stdout
