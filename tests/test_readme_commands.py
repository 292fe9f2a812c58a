"""The README's table of commands is the command table's (tests/readme_commands.py)."""

from tests.readme_commands import README, current, table


def test_the_readme_lists_every_command_of_the_table_in_its_own_words():
    assert current(README.read_text()) == table(), \
        "the README's command table is behind: run python -m tests.readme_commands"
