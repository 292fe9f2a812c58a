"""The installed console on a real pseudo-terminal, read cell by cell through a terminal
emulator: what the operator sees, at the sizes operators use."""

from __future__ import annotations

import pytest

from tests.screen import KEYS, Screen

SIZES = [(30, 120), (24, 80), (15, 60)]
FINAL = ("final=for i in $(seq 1 40); do echo line $i; done; echo FINAL LINE; sleep 100")


def console(installed, tmp_path, *commands: str, rows: int, columns: int) -> Screen:
    return Screen([str(installed / "venv/bin/proctui"), "run", "--run-dir",
                   str(tmp_path / "run"), *commands], tmp_path, rows, columns)


def newest_above_key_bar(lines: list[str], text: str) -> bool:
    """``text`` is the last line of output: the row just above the key bar."""
    filled = [line for line in lines if line.strip()]
    return len(filled) >= 2 and filled[-2].strip() == text


@pytest.mark.parametrize(("rows", "columns"), SIZES, ids=[f"{c}x{r}" for r, c in SIZES])
def test_the_newest_line_is_on_screen_and_end_keeps_it(installed, tmp_path, rows, columns):
    screen = console(installed, tmp_path, FINAL, rows=rows, columns=columns)
    try:
        screen.wait(lambda lines: newest_above_key_bar(lines, "FINAL LINE"),
                    what="FINAL LINE as the pane's last row")
        # Nothing under it but the key bar: no scrollbar row hides a line.
        assert "▏" not in screen.text()
        screen.press(KEYS["pgup"])
        screen.wait(lambda lines: "FINAL LINE" not in [line.strip() for line in lines],
                    what="PgUp holding the pane above the end")
        screen.press(KEYS["pgdn"] * 8)
        screen.wait(lambda lines: newest_above_key_bar(lines, "FINAL LINE"),
                    what="PgDn reaching the last line")
        screen.press(KEYS["pgup"] + KEYS["end"])
        screen.wait(lambda lines: newest_above_key_bar(lines, "FINAL LINE"),
                    what="End showing the last line again")
        screen.press(b"q")
        assert screen.finish() == 0
    finally:
        screen.close()


@pytest.mark.parametrize(("rows", "columns"), SIZES, ids=[f"{c}x{r}" for r, c in SIZES])
def test_the_outcome_line_ends_the_pane(installed, tmp_path, rows, columns):
    screen = console(installed, tmp_path, "a=seq 1 40; echo LAST; exit 3",
                     rows=rows, columns=columns)
    try:
        screen.wait(lambda lines: newest_above_key_bar(lines, "── exited: exit code 3"),
                    what="the outcome as the pane's last row")
        screen.press(b"q")
        screen.finish()
    finally:
        screen.close()
