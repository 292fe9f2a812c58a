"""The README's table of the command table's commands, made from ``proctui.commands``:
each command with words on the command line, its usage and its docstring. A new command
module is a new row: ``python -m tests.readme_commands`` writes it, and
test_readme_commands.py fails while the README is behind."""

from __future__ import annotations

import sys
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"
BEGIN = "<!-- the command table, made by: python -m tests.readme_commands -->"
END = "<!-- end of the command table -->"


def _row(usage: str, words: str) -> str:
    return f"| `{usage.replace('|', chr(92) + '|')}` | {words.replace('|', chr(92) + '|')} |"


def table() -> str:
    from proctui.cli.table_commands import ops
    from proctui.commands import COMMANDS

    lines = ["| command | what it does |", "|---|---|"]
    for op in ops():
        cls = COMMANDS[op]
        assert cls.cli is not None
        lines.append(_row(f"proctui {op} {cls.cli.args}".rstrip(),
                          " ".join((cls.__doc__ or "").split())))
    return "\n".join([BEGIN, *lines, END])


def current(text: str) -> str:
    """The table as the README has it now."""
    start, end = text.index(BEGIN), text.index(END) + len(END)
    return text[start:end]


def main() -> int:
    text = README.read_text()
    made = table()
    if current(text) == made:
        print("README.md: the command table is up to date")
        return 0
    README.write_text(text.replace(current(text), made))
    print("README.md: the command table written")
    return 0


if __name__ == "__main__":
    sys.exit(main())
