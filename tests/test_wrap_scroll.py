"""With wrap on the output pane scrolls by rows, so its scrollbar tells the truth: the
scroll range is every held line's wrapped rows, its end puts the newest line's last row
on the pane's bottom row, and holding, paging, End, search jumps and the ``w`` toggle all
keep working while lines arrive and old ones leave the ring. Real Textual apps driven
with Pilot over real OutputBuffers; the counting is held to Rich's own wrapping."""

from __future__ import annotations

import random
import time
from collections.abc import Callable

import pytest
from rich.console import Console
from rich.text import Text
from textual.app import App

from proctui.core.output.lines import OutputBuffer, Stream
from proctui.frontends.console.output import OutputView
from proctui.frontends.console.wrapped_rows import RowMap, count_rows, estimate

SIZE = (60, 20)  # the pane: 59 columns beside its scrollbar, 20 rows
WIDTH, HEIGHT = 59, 20
RICH = Console(width=200)


def wrapped(line: str, width: int = WIDTH) -> list[str]:
    """The rows Rich makes of ``line`` (what the pane draws), as plain text."""
    text = Text(line)
    if text.cell_len <= width:
        return [line.rstrip()]
    return [piece.plain.rstrip()
            for piece in text.wrap(RICH, width, overflow="fold", no_wrap=False)]


def long_line(i: int) -> str:
    """A line that word-wraps to a few rows, with words of several lengths, so counting
    its cells alone would get its rows wrong."""
    words = ["alpha", "be", "gamma-delta", "epsilon", "z", "etaetaetaeta", "theta"]
    return f"line {i} " + " ".join(words[(i + k) % len(words)] for k in range(14 + i % 9))


class One(App[None]):
    def __init__(self, buffer: OutputBuffer) -> None:
        super().__init__()
        self.buffer = buffer

    def compose(self):  # type: ignore[no-untyped-def]
        yield OutputView(self.buffer)


async def until(pilot, predicate: Callable[[], object], what: str,
                timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await pilot.pause(0.05)


def total_rows(buffer: OutputBuffer, width: int = WIDTH) -> int:
    got = buffer.read(buffer.first)
    return sum(len(wrapped(line, width)) for line in got.lines)


def rows_before(buffer: OutputBuffer, number: int) -> int:
    got = buffer.read(buffer.first, number - buffer.first)
    return sum(len(wrapped(line)) for line in got.lines)


def shown(view: OutputView) -> list[str]:
    return [row.rstrip() for row in view.text().split("\n")]


# -- the counting --------------------------------------------------------------------


def test_rows_are_counted_as_rich_wraps():
    """count_rows walks the words as Rich's wrap does: held to Rich's answer over many
    random lines (spaces in runs, words longer than the row, leading spaces)."""
    rng = random.Random(18)
    for _ in range(4000):
        width = rng.randint(1, 40)
        parts = []
        for _ in range(rng.randint(0, 12)):
            parts.append(" " * rng.choice([0, 1, 1, 1, 2, 5]))
            parts.append("x" * rng.choice([1, 2, 3, 5, 8, 13, 40, 90]))
        line = "".join(parts) + " " * rng.choice([0, 0, 1, 3])
        assert count_rows(line, width) == len(wrapped(line, width)), (line, width)


def test_an_estimate_is_sure_only_where_it_is_exact():
    lines = [long_line(i) for i in range(50)] + ["short"] * 5 + ["x" * 130]
    rows, unsure = estimate(lines, [Stream.STDOUT] * len(lines), WIDTH)
    for i, line in enumerate(lines):
        if i not in unsure:
            assert rows[i] == len(wrapped(line)), line
    # Cells over width is no count of word-wrapped rows: some estimates are off.
    assert any(rows[i] != len(wrapped(lines[i])) for i in unsure)
    flood = ["1234"] * 1000
    assert estimate(flood, [Stream.STDOUT] * 1000, WIDTH) == ([1] * 1000, [])  # at once
    # Colours take no cells: a coloured line that fits is one row for sure.
    red = f"\x1b[31m{'r' * 50}\x1b[0m \x1b[1;32m{'g' * 7}\x1b[0m"
    assert len(red) > WIDTH
    assert estimate([red, red + "x" * 9], [Stream.STDOUT] * 2, WIDTH) == ([1, 2], [1])
    # proctui's notices have a mark before them: counted exactly, the rest still sure.
    streams = [Stream.STDOUT] * 999 + [Stream.PROCTUI]
    assert estimate(flood, streams, WIDTH) == ([1] * 1000, [999])


def test_the_row_map_follows_the_ring():
    """Rows by line: lines added at the end, dropped at the front (across the cuts it
    makes now and then), set exactly; row_of and line_at agree with a plain list."""
    rng = random.Random(7)
    rows = RowMap()
    plain: dict[int, int] = {}
    first = end = 0
    for _ in range(300):
        new = [rng.randint(1, 6) for _ in range(rng.randint(0, 400))]
        rows.extend(new)
        for r in new:
            plain[end] = r
            end += 1
        first = max(first, end - rng.randint(1, 3000))
        rows.drop_to(first)
        for line in rng.sample(range(first, end), min(5, end - first)):
            plain[line] = rng.randint(1, 6)
            rows.set(line, plain[line])
        held = [plain[n] for n in range(first, end)]
        assert rows.total == sum(held)
        for _ in range(5):
            line = rng.randrange(first, end)
            assert rows.row_of(line) == sum(held[:line - first])
            row = rng.randrange(rows.total)
            got, into = rows.line_at(row)
            assert rows.row_of(got) + into == row and 0 <= into < plain[got]
    assert rows.line_at(rows.total + 2) == (end, 2)


# -- the pane ------------------------------------------------------------------------


async def test_the_scroll_range_is_every_wrapped_row_and_its_end_the_last_row():
    buffer = OutputBuffer(1000)
    buffer.append(Stream.STDOUT, [long_line(i) for i in range(500)])
    expected = total_rows(buffer)
    assert expected > 2 * 500  # the lines do wrap
    app = One(buffer)
    async with app.run_test(size=SIZE) as pilot:
        view = app.query_one(OutputView)
        view.sync()
        await until(pilot, lambda: view.virtual_size.height == expected,
                    f"{expected} rows in the scroll range (it has {view.virtual_size.height})")
        assert view.scrollable_content_region.size == (WIDTH, HEIGHT)
        assert view.max_scroll_y == expected - HEIGHT
        assert view.follow and view.scroll_y == view.max_scroll_y
        # The scrollbar's thumb is drawn from these: a window of 20 of the rows, at the end.
        bar = view.vertical_scrollbar
        await until(pilot, lambda: bar.window_virtual_size == expected and
                    bar.position == view.max_scroll_y, "the scrollbar at the end")
        assert bar.window_size == HEIGHT
        # The end of the range: the newest line's last row on the bottom row.
        last = wrapped(long_line(499))
        assert shown(view)[-len(last):] == last
        # Held at the very end of the range (the wheel's way there) shows the same rows.
        view.scroll_to(y=view.max_scroll_y - 1, animate=False, immediate=True)
        await pilot.pause(0.05)
        assert not view.follow
        assert shown(view)[-1] == last[-2] if len(last) > 1 else True
        view.scroll_to(y=view.max_scroll_y, animate=False, immediate=True)
        await pilot.pause(0.05)
        assert view.follow and shown(view)[-len(last):] == last
        # Half way down the range is half way down the rows (not the lines).
        view.scroll_to(y=expected // 2, animate=False, immediate=True)
        await pilot.pause(0.05)
        top = view.top_line
        assert rows_before(buffer, top) <= expected // 2 < rows_before(buffer, top + 1)
        assert bar.position == expected // 2


async def test_coloured_lines_tabs_wide_characters_and_notices_are_counted_as_drawn():
    """Lines the quick count cannot take (colours, tabs, wide characters, proctui's own
    notices with their mark) are counted by Rich's wrap, as they are drawn."""
    buffer = OutputBuffer(1000)
    coloured = [f"\x1b[3{i % 8}mline {i}\x1b[0m " + long_line(i)[7:] for i in range(40)]
    tabbed = [f"tab\t{i}\t" + long_line(i) for i in range(40)]
    wide = [f"宽字符 {i} " + "漢字かな " * (10 + i % 7) for i in range(40)]
    buffer.append(Stream.STDOUT, coloured + tabbed + wide)
    buffer.append(Stream.PROCTUI, ["p: restarted (pid 12) " + "why " * 20])
    rows = [Text.from_ansi(line.expandtabs(8)) for line in coloured + tabbed + wide]
    rows.append(Text("── p: restarted (pid 12) " + "why " * 20))
    expected = sum(len(text.wrap(RICH, WIDTH, overflow="fold", no_wrap=False))
                   if text.cell_len > WIDTH else 1 for text in rows)
    assert expected > 2 * len(rows)
    app = One(buffer)
    async with app.run_test(size=SIZE) as pilot:
        view = app.query_one(OutputView)
        view.sync()
        await until(pilot, lambda: view.virtual_size.height == expected,
                    f"{expected} rows (the range has {view.virtual_size.height})")


async def test_following_keeps_the_newest_line_on_the_last_row():
    buffer = OutputBuffer(400)  # the ring drops old lines as these come
    buffer.append(Stream.STDOUT, [long_line(i) for i in range(300)])
    app = One(buffer)
    async with app.run_test(size=SIZE) as pilot:
        view = app.query_one(OutputView)
        view.sync()
        await pilot.pause(0.1)
        for n in range(300, 700, 40):
            buffer.append(Stream.STDOUT, [long_line(i) for i in range(n, n + 40)])
            view.sync()
            await pilot.pause(0.02)
            last = wrapped(long_line(n + 39))
            assert shown(view)[-len(last):] == last, (n, shown(view))
            assert view.scroll_y == view.max_scroll_y
        expected = total_rows(buffer)
        await until(pilot, lambda: view.virtual_size.height == expected,
                    "the range counting the lines held, not those dropped")


async def test_end_and_page_down_reach_the_newest_line():
    buffer = OutputBuffer(1000)
    buffer.append(Stream.STDOUT, [long_line(i) for i in range(200)])
    app = One(buffer)
    async with app.run_test(size=SIZE) as pilot:
        view = app.query_one(OutputView)
        view.sync()
        await pilot.pause(0.1)
        last = wrapped(long_line(199))
        view.scroll_to(y=view.max_scroll_y - 100, animate=False, immediate=True)
        await pilot.pause(0.05)
        assert not view.follow and last[-1] not in shown(view)
        view.end()
        await pilot.pause(0.05)
        assert view.follow and shown(view)[-len(last):] == last
        view.home()
        await pilot.pause(0.05)
        assert shown(view)[0] == wrapped(long_line(0))[0]
        pages = 0
        while not view.follow:
            view.page(1)
            await pilot.pause(0.01)
            pages += 1
            assert pages < 200, "PgDn never reached the end"
        # A page is a screen of rows less one, so PgDn took about rows/19 presses.
        rows = view.virtual_size.height
        assert abs(pages - (rows - HEIGHT) / (HEIGHT - 1)) <= 1, (pages, rows)
        assert shown(view)[-len(last):] == last


@pytest.mark.slow
async def test_a_held_line_stays_on_top_while_lines_arrive_and_old_ones_leave():
    buffer = OutputBuffer(2000)
    buffer.append(Stream.STDOUT, [long_line(i) for i in range(1500)])
    app = One(buffer)
    async with app.run_test(size=SIZE) as pilot:
        view = app.query_one(OutputView)
        view.sync()
        await pilot.pause(0.1)
        await until(pilot, lambda: view.virtual_size.height == total_rows(buffer),
                    "the range counted exactly")
        # The top of the screen inside a wrapped line: its second row.
        top = 1200
        view.scroll_to(y=rows_before(buffer, top) + 1, animate=False, immediate=True)
        await pilot.pause(0.05)
        first_rows = shown(view)[:3]
        assert view.top_line == top and not view.follow
        assert first_rows[0] == wrapped(long_line(top))[1]
        for n in range(1500, 2500, 100):
            buffer.append(Stream.STDOUT, [long_line(i) for i in range(n, n + 100)])
            view.sync()
            await pilot.pause(0.02)
            assert view.top_line == top and shown(view)[:3] == first_rows, n
        assert buffer.first == 500  # a thousand lines left the ring meanwhile
        await until(pilot, lambda: view.virtual_size.height == total_rows(buffer),
                    "the range counted exactly")
        assert view.scroll_y == rows_before(buffer, top) + 1
        assert shown(view)[:3] == first_rows
        assert view.position == f"held at {top + 1}/2500 (End follows)"


async def test_wrap_toggle_keeps_the_top_line_and_wrap_off_counts_lines():
    buffer = OutputBuffer(1000)
    buffer.append(Stream.STDOUT, [long_line(i) for i in range(300)])
    app = One(buffer)
    async with app.run_test(size=SIZE) as pilot:
        view = app.query_one(OutputView)
        view.sync()
        await pilot.pause(0.1)
        view.show_line(150)
        await pilot.pause(0.05)
        top = view.top_line
        view.wrap = False
        await pilot.pause(0.05)
        assert view.top_line == top
        assert shown(view)[0].startswith(f"line {top} ")
        assert view.virtual_size.height == 300  # a line is a row
        assert view.max_scroll_y == 300 - HEIGHT
        view.wrap = True
        await pilot.pause(0.05)
        assert view.top_line == top
        assert shown(view)[0] == wrapped(long_line(top))[0]
        await until(pilot, lambda: view.virtual_size.height == total_rows(buffer),
                    "the rows counted again")


async def test_the_scrollbar_coming_takes_a_column_and_the_rows_are_counted_again():
    """Five lines of 119 cells fit without a scrollbar in 60 columns (two rows each);
    ten more bring it, and each takes three rows of the 59 columns left: counted again
    with no new output (Textual sends no Resize for its scrollbar)."""
    buffer = OutputBuffer(1000)
    buffer.append(Stream.STDOUT, [f"{i:03}" + "x" * 116 for i in range(5)])
    app = One(buffer)
    async with app.run_test(size=SIZE) as pilot:
        view = app.query_one(OutputView)
        view.sync()
        await pilot.pause(0.1)
        assert view.scrollable_content_region.width == 60
        assert view.virtual_size.height == 10
        buffer.append(Stream.STDOUT, [f"{i:03}" + "x" * 116 for i in range(5, 15)])
        view.sync()
        await until(pilot, lambda: view.scrollable_content_region.width == WIDTH and
                    view.virtual_size.height == 45, "the range counted at 59 columns")
        assert view.max_scroll_y == 45 - HEIGHT
        assert view.follow and shown(view)[-3:] == wrapped("014" + "x" * 116)


async def test_a_search_jump_shows_the_line_a_third_down():
    buffer = OutputBuffer(1000)
    buffer.append(Stream.STDOUT, [long_line(i) for i in range(300)])
    app = One(buffer)
    async with app.run_test(size=SIZE) as pilot:
        view = app.query_one(OutputView)
        view.sync()
        await pilot.pause(0.1)
        view.show_line(222)
        await pilot.pause(0.05)
        assert shown(view).index(wrapped(long_line(222))[0]) == HEIGHT // 3
        assert view.position.startswith("held at ")


async def test_a_flood_of_short_lines_is_settled_without_counting():
    """A flood's lines fit the row: each is one row for sure, nothing is left to count,
    and the range is the lines held."""
    buffer = OutputBuffer(10_000)
    app = One(buffer)
    async with app.run_test(size=SIZE) as pilot:
        view = app.query_one(OutputView)
        for n in range(0, 200_000, 20_000):
            buffer.append(Stream.STDOUT, [str(i) for i in range(n, n + 20_000)])
            view.sync()
            await pilot.pause(0.01)
            assert shown(view)[-1] == str(n + 19_999)
        assert view.virtual_size.height == 10_000
        assert not view._space.map.pending


# -- on a real screen ----------------------------------------------------------------

WORDS = "lorem ipsum dolor sit amet " * 8  # 216 cells: three rows of a 99-column pane
LONG = f"p=for i in $(seq 0 99); do echo \"line $i {WORDS}\"; done; echo FINAL LINE; sleep 100"
THUMB_EDGES = "▁▂▃▄▅▆▇"  # a thumb's ends are eighths of a cell; its middle is reversed


@pytest.mark.slow
def test_the_thumb_on_a_real_screen_is_a_window_of_the_rows(installed, tmp_path):
    """The installed console on a pty read through pyte: 100 lines of three rows each
    in a 25-row pane make a thumb of about two cells (25 of 301 rows), at the bottom
    while following and at the top after Home. Counting lines, it was five or six."""
    from tests.screen import KEYS, Screen

    screen = Screen([str(installed / "venv/bin/proctui"), "run", "--run-dir",
                     str(tmp_path / "run"), LONG], tmp_path, 30, 100)

    def pane(lines: list[str]) -> range:
        """The pane's rows: under its header, above the key bar."""
        header = next(i for i, line in enumerate(lines) if line.startswith(" ● p "))
        return range(header + 1, len(lines) - 1)

    def thumb() -> list[int]:
        rows = pane(screen.lines())
        return [r for r in rows if screen.vt.buffer[r][99].reverse or
                screen.vt.buffer[r][99].data in THUMB_EDGES]

    try:
        screen.wait(lambda lines: [line.strip() for line in lines if line.strip()][-2:-1]
                    == ["FINAL LINE"], what="FINAL LINE as the pane's last row")
        screen.settle()
        rows = pane(screen.lines())
        per_line = len(wrapped(f"line 50 {WORDS}", 99))
        assert len(rows) == 25 and per_line == 3
        size = len(rows) * len(rows) / (100 * per_line + 1)  # the thumb, in cells
        cells = thumb()
        assert cells and cells[-1] == rows[-1], screen.text()  # at the end: at the bottom
        assert size <= len(cells) <= size + 2, (cells, size)
        screen.press(KEYS["home"])
        screen.wait(lambda lines: any(line.startswith("line 0 lorem") for line in lines),
                    what="Home showing the first line")
        screen.settle()
        cells = thumb()
        assert cells and cells[0] == rows[0] and size <= len(cells) <= size + 2, cells
        screen.press(b"q")
        assert screen.finish() == 0
    finally:
        screen.close()
