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


@pytest.mark.parametrize("colour", [True, False])
def test_the_printer_writes_a_chunk_as_it_writes_its_lines(colour, monkeypatch):
    """A chunk read from a pipe is printed in one replace, the same text as line by line;
    at a terminal too, where the name's own colour must not make every chunk look as if
    it needed cleaning (it did: a plain flood was cleaned one line at a time)."""
    import io

    from proctui.core.output.lines import Chunk
    from proctui.frontends import printer as printer_module
    from proctui.frontends.printer import Printer

    plain = [f"line {i} é" for i in range(1000)]
    dirty = [*plain[:10], "\x1b[31mred\x1b[0m \x1b]2;title\x07 tab\there", *plain[10:20]]
    for lines in (plain, dirty):
        by_list, by_chunk = io.StringIO(), io.StringIO()
        Printer(["web", "db"], by_list, colour).lines("db", list(lines))
        Printer(["web", "db"], by_chunk, colour).lines(
            "db", Chunk(text="\n".join(lines), count=len(lines)))
        assert by_chunk.getvalue() == by_list.getvalue()
        assert by_list.getvalue().count("\n") == len(lines)
    assert "title" not in by_chunk.getvalue() and "\t" not in by_chunk.getvalue()
    for said in ("boom: x\ny", "tab\tx\ny", "\x1b[31mred\x1b[0m\ny"):  # clean or not
        by_say = io.StringIO()
        Printer(["web"], by_say, colour).say(said)
        assert by_say.getvalue().count(" | ") == 2, by_say.getvalue()  # y has its prefix
    cleaned: list[str] = []
    monkeypatch.setattr(printer_module, "clean", lambda line, _c: cleaned.append(line))
    Printer(["web"], io.StringIO(), colour).lines("web", Chunk(plain))
    assert cleaned == []


@pytest.mark.parametrize("colour", [True, False])
def test_through_the_writer_every_chunk_is_the_bytes_its_text_would_be(colour, tmp_path):
    """Plain ASCII goes out as bytes, prefixed in one replace and never joined; anything
    else as text: a file written through the Writer holds the same bytes either way, in
    order, however the chunks mix."""
    import io
    import os
    import random

    from proctui.core.output.lines import Chunk
    from proctui.frontends.printer import Printer
    from proctui.frontends.writer import Writer

    rng = random.Random(7)
    samples = ["plain", "é ✓ wide", "\x1b[31mred\x1b[0m", "tab\there", "", "x" * 300]
    batches = [[rng.choice(samples) + f" {i}" for i in range(rng.randint(1, 50))]
               for _ in range(60)]
    path = tmp_path / "out"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT)
    try:
        writer = Writer(fd)
        through, expected = Printer(["web", "db"], writer, colour), io.StringIO()
        by_text = Printer(["web", "db"], expected, colour)
        for i, lines in enumerate(batches):
            name = ("web", "db", None)[i % 3]
            through.lines(name, Chunk(text="\n".join(lines), count=len(lines)))
            by_text.lines(name, list(lines))
        assert writer.drain(10)
    finally:
        os.close(fd)
    assert path.read_bytes() == expected.getvalue().encode()


def test_the_writer_finishes_what_a_short_write_left(monkeypatch):
    """A write may take less than it was given (a signal, a full pipe): the rest follows,
    in order, never twice."""
    import os

    from proctui.frontends import writer as writer_module

    got: list[bytes] = []

    def writev(_fd: int, views: list[memoryview]) -> int:
        taken = b"".join(bytes(v) for v in views)[:3]  # at most three bytes a call
        got.append(taken)
        return len(taken)

    monkeypatch.setattr(os, "writev", writev)
    for pieces in ([b"abc", b"", b"defgh", b"i" * 10, b"\n"],  # a few: as they are
                   [b"abc", b"", b"defgh"] + [b"j"] * 2000):  # many: joined first
        got.clear()
        writer_module._write_all(1, pieces)
        assert b"".join(got) == b"".join(pieces)
