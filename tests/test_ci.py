"""CI runs the README's own test line (the fast stage) and then the slow stage: a change
to one without the other would make the README's promise untested."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_ci_runs_the_readmes_test_line_and_the_slow_stage():
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    line = re.search(r"\.venv/bin/python (-m pytest [^\n`]*)\n", readme)
    assert line is not None, "the README gives no test line"
    fast = line.group(1)
    assert "-m 'not slow'" in fast
    assert f'"$venv/bin/python" {fast}\n' in ci
    assert f'"$venv/bin/python" {fast.replace(chr(39) + "not slow" + chr(39), "slow")}\n' in ci
