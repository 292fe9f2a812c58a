"""The printer's quick check: ``needs_cleaning`` may say yes for nothing, never no for
something ``clean`` would change (or a terminal would act on)."""

from __future__ import annotations

import pytest

from proctui.core.output.text import clean, needs_cleaning


@pytest.mark.parametrize("colour", [True, False])
@pytest.mark.parametrize("around", ["plain ascii", "non-ascii é ✓"])
def test_every_character_that_clean_changes_is_seen(colour, around):
    for code in range(0x300):
        ch = chr(code)
        if ch == "\n":
            continue  # the printer joins lines with it
        text = f"name | {around} {ch} tail\nname | next line\n"
        changed = any(clean(line, colour) != line for line in text.split("\n"))
        if changed or ch == "\t" or code < 0x20 or 0x7f <= code <= 0x9f:
            assert needs_cleaning(text, colour), (hex(code), around)


def test_plain_text_needs_nothing():
    assert not needs_cleaning("a | 1\na | 2\n" * 1000, True)
    assert not needs_cleaning("a | é ✓ 1\n" * 1000, False)
    assert needs_cleaning("a | 1\n" * 1000 + "a | \x1b[31mred\x1b[0m\n", True)
