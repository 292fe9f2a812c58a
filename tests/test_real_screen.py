"""The installed console on a real pseudo-terminal, read cell by cell through a terminal
emulator: what the operator sees, at the sizes operators use."""

from __future__ import annotations

import time

import pytest

from tests.screen import KEYS, Screen, together

# The real console on a pty, the wheel, ssh or hundreds of processes: the second
# CI stage (README: "Tests").
pytestmark = pytest.mark.slow

SIZES = [(30, 120), (24, 80), (15, 60)]
FINAL = ("final=for i in $(seq 1 40); do echo line $i; done; echo FINAL LINE; sleep 100")


def console(installed, tmp_path, *commands: str, rows: int, columns: int) -> Screen:
    return Screen([str(installed / "venv/bin/proctui"), "run", "--run-dir",
                   str(tmp_path / "run"), *commands], tmp_path, rows, columns)


def asking(installed, tmp_path, rows: int, columns: int, *more: str) -> Screen:
    """A console on a process that ignores SIGTERM, asked about at a 0.5 s deadline."""
    return Screen([str(installed / "venv/bin/proctui"), "run", "--run-dir",
                   str(tmp_path / "run"), "--stop-timeout", "0.5", "--on-timeout", "ask",
                   "stub=trap '' TERM; while :; do sleep 0.2; done", *more], tmp_path,
                  rows, columns)


def three_running(installed, tmp_path, rows: int, columns: int) -> Screen:
    """A console on a, b and c, once all three are running."""
    screen = console(installed, tmp_path, "a=sleep 100", "b=sleep 100", "c=sleep 100",
                     rows=rows, columns=columns)
    try:
        screen.wait(lambda lines: sum("running" in line for line in lines) >= 3,
                    what="three running")
    except BaseException:
        screen.close()
        raise
    return screen


def kill_and_quit(screen: Screen) -> None:
    """K on the selected process, then q: the console ends."""
    screen.press(b"K")
    screen.wait_text("killed with SIGKILL")
    screen.press(b"q")
    screen.finish()


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
        # The wheel (SGR mouse reports over the pane): up holds, back at the end follows.
        row = rows - 3
        screen.press(f"\x1b[<64;5;{row}M".encode() * 3)
        screen.wait(lambda lines: "held at" in "\n".join(lines) and
                    "FINAL LINE" not in [line.strip() for line in lines],
                    what="the wheel holding the pane")
        screen.press(f"\x1b[<65;5;{row}M".encode() * 40)
        screen.wait(lambda lines: newest_above_key_bar(lines, "FINAL LINE") and
                    "held at" not in "\n".join(lines), what="the wheel back at the end")
        screen.press(b"q")
        assert screen.finish() == 0
    finally:
        screen.close()


def test_the_oldest_textual_allowed_shows_the_newest_line_too(installed_oldest, tmp_path):
    """pyproject.toml's lower bound is tested, not hoped for: the same wheel with the
    oldest Textual it allows, FINAL LINE on screen and kept by End."""
    import subprocess

    python = installed_oldest / "venv/bin/python"
    version = subprocess.run([str(python), "-c", "import textual; print(textual.__version__)"],
                             capture_output=True, text=True, check=True).stdout.strip()
    screen = console(installed_oldest, tmp_path, FINAL, rows=24, columns=80)
    try:
        screen.wait(lambda lines: newest_above_key_bar(lines, "FINAL LINE"),
                    what=f"FINAL LINE as the pane's last row (Textual {version})")
        screen.press(KEYS["pgup"] + KEYS["end"])
        screen.wait(lambda lines: newest_above_key_bar(lines, "FINAL LINE"),
                    what=f"End showing the last line again (Textual {version})")
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


def help_items() -> list[str]:
    """Each key of the help as its row begins: the key, then its first words."""
    from proctui.frontends.console.keys import every_row

    rows = every_row()
    width = max(len(key) for _, key, _ in rows)
    return [f"{key.ljust(width)}  {words[:20]}" for _, key, words in rows]


@pytest.mark.parametrize(("rows", "columns"), SIZES, ids=[f"{c}x{r}" for r, c in SIZES])
def test_help_scrolls_with_the_keys_people_press(installed, tmp_path, rows, columns):
    from proctui.frontends.console.keys import reading_line

    screen = console(installed, tmp_path, "a=sleep 100", rows=rows, columns=columns)
    try:
        screen.wait_text("sleep" if columns > 60 else "a")
        screen.wait(lambda lines: "Help" in lines[-1] or "?" in lines[-1], what="key bar")
        screen.press(b"?")
        screen.wait_text("proctui keys")
        items = help_items()
        seen: set[str] = set()

        def visible(lines: list[str]) -> set[str]:
            return {item for item in items if any(item in line for line in lines)}

        screen.settle()
        assert reading_line()[:20] in screen.text(), "the help says how to scroll it"
        first = visible(screen.lines())
        seen |= first
        # PgDn, then End, then back with PgUp, Home, and line by line with j, ↓, k, ↑.
        for _ in range(12):
            screen.press(KEYS["pgdn"])
            screen.settle(quiet=0.2)
            seen |= visible(screen.lines())
        assert seen == set(items), f"never shown: {set(items) - seen}\n{screen.text()}"
        screen.press(KEYS["home"])
        screen.wait(lambda lines: visible(lines) == first, what="Home back at the top")
        screen.press(KEYS["end"])
        screen.wait(lambda lines: items[-1] in "\n".join(lines), what="End at the bottom")
        if len(first) < len(items):  # it scrolls here: the line keys move it too
            def top(lines: list[str]) -> str:
                """The first row of the help under its title."""
                at = next(i for i, line in enumerate(lines) if "proctui keys" in line)
                rest = [line for line in lines[at + 1:] if line.strip("█ ")]
                return rest[0] if rest else ""

            screen.press(KEYS["home"])
            screen.wait(lambda lines: visible(lines) == first, what="Home at the top")
            at_top = top(screen.lines())
            for down, up in ((b"j", b"k"), (KEYS["down"], KEYS["up"])):
                screen.press(down)
                screen.wait(lambda lines: top(lines) != at_top, what=f"{down!r} a line down")
                screen.press(up)
                screen.wait(lambda lines: top(lines) == at_top, what=f"{up!r} a line up")
            # Keys that arrive in one read (key repeat, a paste, SSH) each move it: five j
            # or two PgDn in one write go as far as the same keys pressed one by one.
            for key, times in ((b"j", 5), (KEYS["pgdn"], 2)):
                screen.press(KEYS["home"])
                screen.wait(lambda lines: top(lines) == at_top, what="Home at the top")
                for _ in range(times):
                    screen.press(key)
                    screen.settle(quiet=0.2)
                one_by_one = screen.lines()
                assert top(one_by_one) != at_top, f"{key!r} x{times} moved nothing"
                screen.press(KEYS["home"])
                screen.wait(lambda lines: top(lines) == at_top, what="Home at the top")
                screen.press(key * times)
                screen.settle(quiet=0.3)
                assert screen.lines() == one_by_one, (
                    f"{key!r} x{times} in one read:\n{screen.text()}\none by one:\n"
                    + "\n".join(one_by_one))
        screen.press(KEYS["escape"])
        screen.wait(lambda lines: "proctui keys" not in "\n".join(lines), what="Esc closing")
        screen.press(b"q")
        assert screen.finish() == 0
    finally:
        screen.close()


SLOW_STOP = "trap 'sleep 3; exit 0' TERM; while :; do sleep 0.2; done"


def test_dialogs_and_the_quit_panel_fit_25_processes(installed, tmp_path):
    """80x24 with 25 processes: the confirm dialog keeps its question and buttons and
    counts what it cannot list; the quit panel says "+N more"."""
    import re

    # Names long enough that one fits a line: 25 of them cannot all be listed in 24 rows.
    commands = [f"worker-with-a-long-name-{i:02}={SLOW_STOP}" for i in range(1, 26)]
    screen = console(installed, tmp_path, *commands, rows=24, columns=80)
    try:
        screen.wait_text("running")

        def dialog_counts(lines: list[str]) -> tuple[int, int] | None:
            text = "\n".join(lines)
            more = re.search(r"\+(\d+) more", text)
            if "Abandon everything still running" not in text or not more or \
                    "Yes y" not in text or "No n" not in text:
                return None
            names = re.findall(r"\bworker-with-a-long-name-\d+ \(pid \d+\)", text)
            return len(names), int(more.group(1))

        for _ in range(20):  # until all 25 have started (they start at once, but not instantly)
            screen.press(b"Q")
            screen.wait(lambda lines: dialog_counts(lines) is not None,
                        what="the question, Yes/No and +N more")
            listed, more = dialog_counts(screen.lines())
            screen.press(b"n")
            screen.wait(lambda lines: "Abandon everything" not in "\n".join(lines),
                        what="No closing the dialog")
            if listed + more == 25:
                break
        assert listed + more == 25 and listed >= 3, (listed, more)
        screen.press(b"q")
        counts: list[str] = []  # what every frame of the panel said, from the first

        def panel(lines: list[str]) -> bool:
            text = "\n".join(lines)
            counts.extend(re.findall(r"Quitting: (?:waiting for )?(\d+)", text))
            return "Quitting" in text and re.search(r"\+\d+ more: worker", text) is not None

        screen.wait(panel, what="the quit panel's +N more")
        assert counts and "0" not in counts, counts  # never "0 stopping" beside 25 rows
        more = next(line for line in screen.lines() if re.search(r"\+\d+ more: ", line))
        listed_names = more.split(" more: ", 1)[1].rstrip()
        # Whole names only, then "…": a name cut in half read as another process's.
        assert re.fullmatch(r"(worker-with-a-long-name-\d\d, )*"
                            r"(worker-with-a-long-name-\d\d|…)", listed_names), more
        assert screen.finish(timeout=60) == 0
    finally:
        screen.close()


def test_every_key_is_answered_on_screen(installed, tmp_path):
    """9 with three processes, 0 (bound to nothing), k on the first row, j on the last,
    and w all say what happened; k does not jump round to the last row."""
    screen = console(installed, tmp_path, "a=sleep 100", "b=sleep 100", "c=sleep 100",
                     rows=24, columns=80)
    try:
        screen.wait(lambda lines: any(line.startswith("1▶") for line in lines),
                    what="the first row selected")
        screen.press(b"9")
        screen.wait_text("no process 9: there are 3")
        screen.press(b"0")  # bound to nothing: it did nothing and said nothing
        screen.wait_text("0: no key does that here")
        screen.press(b"\t")  # Textual's focus key, with nothing to focus here: as silent
        screen.wait_text("tab: no key does that here")
        screen.press(b"\x1b[Z")  # shift+tab
        screen.wait_text("shift+tab: no key does that here")
        screen.press(b"k")
        screen.wait_text("a is the first process")
        assert any(line.startswith("1▶") for line in screen.lines()), screen.text()
        screen.press(b"jjj")
        screen.wait_text("c is the last process")
        assert any(line.startswith("3▶") for line in screen.lines()), screen.text()
        def header(lines: list[str]) -> str:
            return next((line for line in lines if line.startswith(" ● c ")), "")

        screen.press(b"w")
        screen.wait(lambda lines: "wrap off" in header(lines), what="wrap off in the header")
        screen.wait_text("long lines are cut")
        screen.press(b"w")
        screen.wait_text("wrap on: long lines wrap")
        assert "wrap off" not in header(screen.lines()), screen.text()
        screen.press(b"q")
        assert screen.finish() == 0
    finally:
        screen.close()


def test_x_while_everything_stops_says_so(installed, tmp_path):
    """X (stop all now) after q, with everything stopping already: nothing changed and
    nothing was said, where s, r and S each answered. The answer stands above the quit
    panel: toasts covered its countdowns."""
    screen = Screen([str(installed / "venv/bin/proctui"), "run", "--run-dir",
                     str(tmp_path / "run"), "--stop-timeout", "30",
                     "a=trap '' TERM; while :; do sleep 0.2; done",
                     "b=trap '' TERM; sleep 100"], tmp_path, 24, 80)
    try:
        screen.wait(lambda lines: sum("running" in line for line in lines) >= 2,
                    what="both running")
        screen.press(b"q")
        screen.wait_text("Quitting")
        screen.press(b"X")
        screen.wait_text("everything is already stopping")
        # Above the quit panel, not over its countdowns ("SIGTERM sent 1.4s ag▌").
        lines = screen.lines()
        panel = lines[next(i for i, line in enumerate(lines) if "Quitting" in line):]
        assert not any("▌" in line for line in panel), screen.text()
        assert sum("SIGKILL in" in line for line in panel) == 2, screen.text()
        screen.press(b"q")  # again: kill all, once confirmed
        screen.wait_text("Yes")
        screen.press(b"y")
        assert screen.finish() == 1
    finally:
        screen.close()


def test_c_says_it_cleared_and_an_empty_pane_is_held_at_its_end(installed, tmp_path):
    """c blanked the pane and said nothing; held then (f, Home, PgUp) the header read
    "held at 43/42", a line past the last."""
    screen = console(installed, tmp_path,
                     "final=for i in $(seq 1 40); do echo line $i; done; echo FINAL LINE; "
                     "sleep 100", rows=24, columns=80)
    try:
        screen.wait_text("FINAL LINE")
        screen.press(b"c")
        screen.wait_text("final's pane cleared")
        assert "FINAL LINE" not in screen.text(), screen.text()
        for key in (b"f", KEYS["home"]):
            screen.press(key)
            screen.wait_text("held at the end (End follows)")
            assert "held at 43/42" not in screen.text(), screen.text()
            screen.press(KEYS["end"])
            screen.wait(lambda lines: "held" not in "".join(lines), what="following")
        screen.press(b"q")
        assert screen.finish() == 0
    finally:
        screen.close()


def test_a_line_cut_at_the_top_of_a_pane_shows_its_beginning(installed, tmp_path):
    """Beside a question at 60x15 the pane has a few rows: the notice of the deadline,
    wrapped in two, scrolled up under the ticks and showed only its tail, "extend, abandon
    or wait)". A line cut at the top now shows its beginning, and "…" where it goes on."""
    screen = Screen([str(installed / "venv/bin/proctui"), "run", "--run-dir",
                     str(tmp_path / "run"), "--stop-timeout", "1", "--on-timeout", "ask",
                     "stub=trap '' TERM; while :; do sleep 0.5; echo tick; done"],
                    tmp_path, 15, 60)

    def top(lines: list[str]) -> str:
        """The pane's first row of output (under the table's rule and the pane's header),
        unless it is the notice whole."""
        rule = next(i for i, line in enumerate(lines) if line.startswith("────"))
        return lines[rule + 2] if not lines[rule + 3].startswith("extend") else ""

    try:
        screen.wait_text("tick")
        screen.press(b"q")
        screen.wait_text("kill now")  # the question, armed
        screen.press(KEYS["escape"])  # later: the pane beside the quit panel
        # The notice scrolls up a row a tick; once not whole, its head or its tail shows.
        screen.wait(lambda lines: "stop timeout" in top(lines) or
                    top(lines).startswith(("extend", "abandon", "or wait")),
                    what="the notice of the deadline at the top of the pane")
        row = top(screen.lines())
        assert row.startswith("── stop timeout") and row.endswith("…"), screen.text()
        kill_and_quit(screen)
    finally:
        screen.close()


def test_ages_and_restart_countdowns_agree_and_never_go_back(installed, tmp_path):
    """One clock: a row's age and its pane's age are the same figure and only go up,
    across the 10 s step (up 9s, then up 10s, never back to up 5s) and while keys are
    pressed; a restart's countdown reads the same in the row and in the pane."""
    import re
    import time

    (tmp_path / "proctui.toml").write_text(
        '[processes.up]\ncmd = "sleep 100"\n'
        # flaky fails fast only after its first run: while up's age is read, nothing is
        # in a restart's backoff (which made the old console tick every second anyway).
        '[processes.flaky]\ncmd = "test -e ran && exit 1; touch ran; sleep 17; exit 1"\n'
        'shell = true\nrestart = "on-failure"\n')
    screen = Screen([str(installed / "venv/bin/proctui"), "run", "--run-dir",
                     str(tmp_path / "run"), "-f", str(tmp_path / "proctui.toml")],
                    tmp_path, 30, 120)

    def ages(lines: list[str]) -> tuple[int | None, int | None]:
        """The age in up's row and in up's pane header."""
        row = next((m for line in lines if (m := re.match(r"^1.. up +\d+ running +up (\d+)s",
                                                           line))), None)
        head = next((m for line in lines if (m := re.match(r"^ ● up +running +pid \d+ +up "
                                                           r"(\d+)s", line))), None)
        return (int(row.group(1)) if row else None), (int(head.group(1)) if head else None)

    try:
        screen.wait(lambda lines: None not in ages(lines), what="up's age in row and pane")
        seen: list[tuple[int, int]] = []
        # Past the 10 s step and on for a few seconds: the old console rounded the clock to
        # the step (10 s from age 11), and the age fell back to a few seconds there.
        until = time.monotonic() + 15
        deadline = until + 25
        while time.monotonic() < until:
            screen.press(b"k")  # a key between frames: the bug showed an older age after it
            screen.settle(quiet=0.3, timeout=2)
            row, head = ages(screen.lines())
            if row is None or head is None:
                continue
            assert row == head, f"row says up {row}s, pane up {head}s:\n{screen.text()}"
            assert not seen or row >= seen[-1][0], f"went back: {seen} then {row}"
            seen.append((row, head))
        assert seen[-1][0] >= 10, seen

        screen.press(b"2")

        def restart(lines: list[str]) -> tuple[str | None, str | None]:
            row = next((m.group(1) for line in lines
                        if (m := re.match(r"^2.. flaky .*restart in (\d+)s", line))), None)
            head = next((m.group(1) for line in lines
                         if (m := re.match(r"^ . flaky .*restart in (\d+)s", line))), None)
            return row, head

        agreed = 0
        while agreed < 3 and time.monotonic() < deadline + 30:
            screen.settle(quiet=0.3, timeout=2)
            row, head = restart(screen.lines())
            if row is not None and head is not None:
                assert row == head, f"row: restart in {row}s, pane: {head}s\n{screen.text()}"
                agreed += 1
        assert agreed == 3, screen.text()
        screen.press(b"q")
        screen.finish()
    finally:
        screen.close()


@pytest.mark.parametrize(("rows", "columns"), [(24, 80), (15, 60)], ids=["80x24", "60x15"])
def test_outcomes_and_the_summary_are_never_cut_mid_word(installed, tmp_path, rows, columns):
    import re

    screen = console(installed, tmp_path, "a-service-name=sleep 100", "b=sleep 100",
                     rows=rows, columns=columns)
    outcome = "stopped after"
    try:
        screen.wait(lambda lines: "? Help" in lines[-1], what="? Help in the key bar")
        screen.wait_text("running")
        screen.press(b"s")
        screen.wait(lambda lines: any(outcome in line and "a-service" in line
                                      for line in lines[:4]), what="the outcome in the row")
        screen.settle()
        row = next(line for line in screen.lines()[:4] if outcome in line)
        status = [*row[row.index(outcome):].split("…")[0].split(), "…"]
        full = re.search(r"stopped after \d+\.\ds: terminated by SIGTERM( \(\d+s ago\))?",
                         row)
        # At 80 columns the outcome is whole: it starts in the STATE column (it begins
        # with its state) and takes the CPU and memory columns an ended process has not.
        assert columns < 80 or full is not None, row
        if full is None:  # cut: only after a whole word, and it says so with …
            assert status[-1] == "…", row
            words = "stopped after 0.0s: terminated by SIGTERM".split()
            assert status[2:-1] == words[2:len(status) - 1], row
        assert "? Help" in screen.lines()[-1], screen.lines()[-1]
        screen.press(b"q")
        assert screen.finish() == 0
        tail = screen.pty.screen.decode(errors="replace").rsplit("summary:", 1)[1]
        printed = [re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", line).rstrip("\r")
                   for line in tail.split("\n")]
        assert all(len(line) <= columns for line in printed), printed
        words = " ".join(line.split("|", 1)[-1] for line in printed).split()
        assert "terminated" in words and "SIGTERM" in words, printed
        # A continuation never begins with a number torn from its word.
        assert not any(re.match(r"\s*\d", line.split("|", 1)[-1])
                       for line in printed if "|" in line), printed
    finally:
        screen.close()


def test_the_demo_db_keeps_its_status_beside_its_countdown(installed, tmp_path):
    """db asks for more time at 3/7 (EXTEND_TIMEOUT_USEC): from then on its STATUS stays
    beside the countdown, in its row and in its pane's header, at every size (the three
    sizes play at once: the demo's pace is the test's)."""
    import re

    countdown = re.compile(r"\d+\.\ds")

    def beside(lines: list[str], step: int, bar: bool) -> bool:
        """In db's row and in db's header: the STATUS at ``step``/7 and a countdown (and,
        with ``bar``, the header's countdown bar: at 80 columns it went when the words
        grew at the extension)."""
        status = f"flushing WAL {step}/7"
        row = any(re.match(r"^\d▶. db ", line) and status in line and
                  countdown.search(line.split(status, 1)[1]) for line in lines)
        head = any(re.match(r"^ . db ", line) and status in line and
                   countdown.search(line.split(status, 1)[1]) and
                   (not bar or re.search(r"\d\.\ds.* [█░]{7}", line)) for line in lines)
        return row and head

    def play(screen: Screen):
        yield (lambda lines: any("NAME" in line for line in lines)), "NAME", 30
        screen.press(b"7")
        # Running, or already ready (at 1.8 s): a console that took longer than that to
        # draw (three at once, on a loaded machine) never sees "running".
        yield ((lambda lines: any(re.match(r"^7▶. db .*(running|ready)", line)
                                  for line in lines)
                and any(re.match(r"^ . db ", line) for line in lines)),
               "db selected and running", 40)
        screen.press(b"s")
        for step in (4, 5, 6):  # after the extension at 3/7
            yield ((lambda lines, step=step: beside(lines, step, screen.columns >= 80)),
                   f"WAL {step}/7 beside a countdown in db's row and header", 20)
        screen.press(b"q")

    screens = []
    try:
        for rows, columns in SIZES:
            # (--on-timeout kill: ignores-term would otherwise ask, and hold the quit)
            work = tmp_path / f"{columns}x{rows}"
            work.mkdir()
            screens.append(Screen([str(installed / "venv/bin/proctui"), "demo",
                                   "--on-timeout", "kill", "--run-dir", str(work / "run")],
                                  work, rows, columns))
        together(*[(screen, play(screen)) for screen in screens])
        for screen in screens:
            screen.finish(timeout=60)
    finally:
        for screen in screens:
            screen.close()


def test_a_process_is_picked_by_name_beyond_nine(installed, tmp_path):
    """Twelve processes: p, a few letters of the eleventh's name, Enter: it is selected
    (numbers reach only nine)."""
    import re

    commands = [f"svc-{name}=sleep 100" for name in
                ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel",
                 "india", "juliet", "kilo", "lima")]
    screen = console(installed, tmp_path, *commands, rows=24, columns=80)
    try:
        screen.wait(lambda lines: any(line.startswith("1▶") for line in lines),
                    what="the first row selected")
        screen.press(b"p")
        screen.wait_text("pick a process by name")
        screen.press(b"kilo")
        screen.wait(lambda lines: [line.strip() for line in lines].count("svc-kilo") == 1 and
                    "select it · running" in "\n".join(lines), what="svc-kilo alone offered")
        screen.press(KEYS["enter"])
        screen.wait(lambda lines: any(re.match(r"^ ▶. svc-kilo ", line) for line in lines),
                    what="svc-kilo's row selected")
        screen.wait(lambda lines: any(re.match(r"^ . svc-kilo +running", line)
                                      for line in lines), what="svc-kilo's pane")
        screen.press(b"q")
        assert screen.finish() == 0
    finally:
        screen.close()


def test_the_grid_draws_every_pane_at_once_and_again_at_a_new_size(installed, tmp_path):
    """z shows every pane's header as the table has it, at once: a pane made or shown
    earlier kept its first header (`up 1s` beside a table at `up 20s`) and one never shown
    had none, until the ages next moved, ten seconds later. And the grid's page is worked
    out again when the terminal changes size."""
    import re

    # No COLUMNS and LINES in its environment: Textual (shutil) would take them over the
    # terminal's size, and a terminal that users resize does not set them.
    screen = Screen([str(installed / "venv/bin/proctui"), "run", "--run-dir",
                     str(tmp_path / "run"), *(f"{n}=sleep 100" for n in "abc")],
                    tmp_path, 30, 120, env={"COLUMNS": "", "LINES": ""})
    try:
        screen.wait_text("running")
        screen.press(b"j")
        screen.settle(quiet=0.2)
        screen.press(b"k")  # b's pane made and drawn now, then hidden
        # Ages that move only every ten seconds: a stale header would stay stale.
        screen.wait(lambda lines: len(re.findall(r"up [2-5]\ds", "\n".join(lines))) >= 3,
                    what="three ages of twenty seconds or more in the table", timeout=60)
        screen.press(b"z")
        header = re.compile(r"● (\w)\s+running\s+pid \d+\s+up (\d+)s")

        def headers(lines: list[str]) -> dict[str, int]:
            return {m.group(1): int(m.group(2)) for line in lines
                    for m in header.finditer(line)}

        screen.wait(lambda lines: headers(lines).keys() == set("abc") and
                    min(headers(lines).values()) >= 20, what="every pane's header, current",
                    timeout=3)
        screen.resize(rows=15, columns=60)
        screen.wait(lambda lines: "of 3" in "\n".join(lines),
                    what="the grid paged at 60x15 (a pane needs its header and three lines)",
                    timeout=5)
        screen.resize(rows=30, columns=120)
        screen.wait(lambda lines: "of 3" not in "\n".join(lines) and
                    headers(lines).keys() == set("abc"),
                    what="the three panes back at 120x30", timeout=5)
        screen.press(b"q")
        screen.finish()
    finally:
        screen.close()


def test_a_long_name_leaves_the_summary_room_at_60_columns(installed, tmp_path):
    """Labels are padded to 20 columns at most: a 43-character name padded every label to
    43, left 14 columns beside it, and the summary went unfolded, cut mid-word by the
    terminal. Only the name itself, longer than the room, may run past the edge."""
    import re

    name = "a-rather-long-process-name-for-testing-wrap"
    screen = console(installed, tmp_path, f"{name}=sleep 100", "short=sleep 100",
                     rows=15, columns=60)
    try:
        screen.wait_text("running")
        screen.press(b"q")
        assert screen.finish() == 0
        tail = screen.pty.screen.decode(errors="replace").rsplit("summary:", 1)[1]
        printed = [re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", line).rstrip("\r")
                   for line in tail.split("\n")]
        assert all(len(line) <= 60 for line in printed if name not in line), printed
        words = " ".join(line.split("|", 1)[-1] for line in printed).split()
        assert words.count("SIGTERM") == 2 and words.count("terminated") == 2, printed
    finally:
        screen.close()


SPACED = "ignores-term-forever (leftover copy)"  # a name with spaces, cut at every size
ENDLESS = "a-very-long-process-name-that-goes-on-and-on-forever-and-ever"


def cut_between_pieces(line: str, name: str) -> bool:
    """Each place ``name`` is cut with "…" in ``line`` cuts it between whole pieces (at a
    space, after a - _ . / : or before a "("), never inside one ("ignores-term…ftover)")."""
    def boundary(k: int) -> bool:  # between name[:k] and name[k:]
        return k in (0, len(name)) or name[k - 1] in " -_./:," or name[k] in " ("

    for at in [i for i, char in enumerate(line) if char == "…"]:
        before, after = line[:at], line[at + 1:]
        head = max((k for k in range(1, len(name) + 1) if before.endswith(name[:k])),
                   default=0)
        if head < 3:
            continue  # not this name's "…" (an outcome's, a status's)
        tail = min((j for j in range(len(name)) if after.startswith(name[j:])),
                   default=len(name))
        if not boundary(head) or not boundary(tail):
            return False
    return True


@pytest.mark.parametrize(("rows", "columns"), SIZES, ids=[f"{c}x{r}" for r, c in SIZES])
def test_long_names_are_cut_and_folded_between_words(installed, tmp_path, rows, columns):
    """A name was cut in the middle of a word at 60 columns ("ignores-term…ftover)" in the
    quit panel and the pane's header, "a-very-long-p…and-ever" in the table), and the
    summary let a 61-column name run past the terminal's edge, which split it mid-word at
    80 ("...forever-an" / "d-ever"), its outcome's continuation under the name. Names
    are cut between whole pieces, folded at hyphens and spaces, and an outcome's
    continuation stands under its beginning."""
    import re

    stubborn = "(trap '' TERM; while :; do sleep 0.2; done) & trap 'exit 0' TERM; wait"
    (tmp_path / "proctui.toml").write_text("".join(
        f'[processes."{name}"]\ncmd = "{stubborn}"\nshell = true\nstop_timeout = 3\n'
        for name in (SPACED, ENDLESS)))
    screen = Screen([str(installed / "venv/bin/proctui"), "run", "--run-dir",
                     str(tmp_path / "run"), "-f", str(tmp_path / "proctui.toml")],
                    tmp_path, rows, columns)
    try:
        screen.wait(lambda lines: sum("running" in line for line in lines) >= 2,
                    what="both running")
        screen.settle()
        for name in (SPACED, ENDLESS):
            assert all(cut_between_pieces(line, name) for line in screen.lines()), \
                screen.text()
        screen.press(b"q")
        screen.wait(lambda lines: sum("SIGKILL in" in line for line in lines) >= 2,
                    what="both countdowns in the quit panel")
        for name in (SPACED, ENDLESS):
            assert all(cut_between_pieces(line, name) for line in screen.lines()), \
                screen.text()
        screen.finish(timeout=60)
        tail = screen.pty.screen.decode(errors="replace").rsplit("summary:", 1)[1]
        printed = [re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", line).rstrip("\r")
                   for line in tail.split("\n") if "|" in line]
        assert all(len(line) <= columns for line in printed), printed
        rows_ = [line.split("| ", 1)[1] for line in printed]
        # The long name whole, folded only after its hyphens.
        assert ENDLESS in "".join(row.strip() for row in rows_), rows_
        assert all(row.strip().endswith("-") or ENDLESS.endswith(row.strip())
                   for row in rows_ if row.strip() and row.strip() in ENDLESS), rows_
        # Each outcome's continuation under its beginning (the group's leader ended on
        # SIGTERM, the rest of it was killed: an outcome that takes two rows at 80).
        outcomes = [i for i, row in enumerate(rows_) if "killed with" in row]
        assert len(outcomes) == 2, rows_
        for first in outcomes:
            column = rows_[first].index("killed with")
            for row in rows_[first + 1:]:
                if len(row) - len(row.lstrip()) < column:
                    break
                assert len(row) - len(row.lstrip()) == column, rows_
        first, column = outcomes[0], rows_[outcomes[0]].index("killed with")
        assert columns > 80 or len(rows_[first + 1]) - len(rows_[first + 1].lstrip()) == \
            column, rows_  # (a continuation there is)
    finally:
        screen.close()


def bars(lines: list[str]) -> list[tuple[int, int]]:
    """Where each countdown bar in ``lines`` begins, and how long it is."""
    import re

    return [(m.start(), len(m.group(0))) for line in lines
            for m in [re.search(r"[█░]{3,}", line)] if m]


@pytest.mark.parametrize(("rows", "columns"), SIZES, ids=[f"{c}x{r}" for r, c in SIZES])
def test_countdown_bars_in_one_column_are_one_length(installed, tmp_path, rows, columns):
    """At 80 columns the table's bars were 8 and 9 cells long one under the other, and the
    quit panel's 11, 12 and 17 ("decision in" is a cell longer than "SIGKILL in"): they
    read as different amounts of time left. A column's bars begin in one column and
    have one length."""
    stubborn = "trap '' TERM; while :; do sleep 0.2; done"
    (tmp_path / "proctui.toml").write_text(
        f'[processes.asks]\ncmd = "{stubborn}"\nshell = true\nstop_timeout = 30\n'
        'on_timeout = "ask"\n'
        f'[processes.kills]\ncmd = "{stubborn}"\nshell = true\nstop_timeout = 30\n')
    screen = Screen([str(installed / "venv/bin/proctui"), "run", "--run-dir",
                     str(tmp_path / "run"), "-f", str(tmp_path / "proctui.toml")],
                    tmp_path, rows, columns)

    def groups(lines: list[str]) -> tuple[list[str], list[str]]:
        at = next((i for i, line in enumerate(lines) if "Quitting" in line), len(lines))
        table = [line for line in lines[:at] if line[:1].isdigit()]
        return table, lines[at + 1:]

    try:
        screen.wait(lambda lines: sum("running" in line for line in lines) >= 2,
                    what="both running")
        screen.press(b"q")
        screen.wait(lambda lines: all(len(bars(group)) == 2 for group in groups(lines)),
                    what="two bars in the table and two in the quit panel")
        screen.settle()
        for group in groups(screen.lines()):
            found = bars(group)
            assert len(found) == 2 and len(set(found)) == 1, screen.text()
        screen.press(b"q")  # again: kill all, once confirmed
        screen.wait_text("Yes")
        screen.press(b"y")
        screen.finish(timeout=60)
    finally:
        screen.close()


@pytest.mark.parametrize(("rows", "columns"), SIZES, ids=[f"{c}x{r}" for r, c in SIZES])
def test_the_demo_db_grid_header_says_its_state_and_pid(installed, tmp_path, rows, columns):
    """In the grid db's header gave its state and pid up for its STATUS ("● db  up 8s,
    ready in 1.9s · accepting connections") where every other header said "running  pid
    N". The STATUS comes after them, cut after a word; the pid only where the others'
    have room for theirs (not in a 38-column cell at 80 columns)."""
    import re

    screen = Screen([str(installed / "venv/bin/proctui"), "demo", "--on-timeout", "kill",
                     "--run-dir", str(tmp_path / "run")], tmp_path, rows, columns)
    try:
        screen.wait_text("running")
        screen.press(b"z7")
        pid = r"  pid \d+" if columns != 80 else ""
        screen.wait(lambda lines: any(re.search(rf"│ ● db  ready{pid}  up \d+s, ready in",
                                                line) for line in lines),
                    what=f"db's grid header with its state{' and pid' if pid else ''}")
        screen.press(b"q")
        screen.finish(timeout=60)
    finally:
        screen.close()


def test_the_quit_panel_keeps_the_countdown_beside_a_long_name(installed, tmp_path):
    """60x15: a 34-column name left its panel row '20850  19s' (no 'SIGKILL in', no
    bar), a 62-column one only its mark. The name is cut with '…' instead."""
    import re

    name = "postgres-replica-eu-west-1-primary"
    longer = "a-very-long-process-name-that-goes-on-and-on-for-sixty-four-c"
    screen = Screen([str(installed / "venv/bin/proctui"), "run", "--run-dir",
                     str(tmp_path / "run"), "--stop-timeout", "30",
                     f"{name}=trap '' TERM; while :; do sleep 0.2; done",
                     f"{longer}=trap '' TERM; while :; do sleep 0.2; done"],
                    tmp_path, 15, 60)
    try:
        screen.wait_text("running")
        screen.press(b"q")

        def rows(lines: list[str]) -> list[str]:  # the panel's, under its title
            at = next((i for i, line in enumerate(lines) if "Quitting" in line), len(lines))
            return [line for line in lines[at + 1:] if "SIGKILL in" in line and "…" in line
                    and ("█" in line or "░" in line)]

        screen.wait(lambda lines: len(rows(lines)) == 2,
                    what="both panel rows with their countdown, bar and a cut name")
        # Cut in the middle: its start and its end both show.
        assert any(re.search(r"postgres-\S*…\S*mary", row) for row in rows(screen.lines())), \
            screen.text()
        screen.press(b"q")  # again: kill all now
        assert screen.finish(timeout=60) == 1
    finally:
        screen.close()


def test_a_main_key_at_a_question_is_answered_and_acts_on_nothing(installed, tmp_path):
    """d, z, s under a question (the key bar below still shows them) did nothing and said
    nothing: each now says the question comes first, and still nothing is done. The key
    bar offers the question's keys while it is open (it offered "q Kill all", refused)."""
    screen = asking(installed, tmp_path, 30, 120)
    try:
        screen.wait_text("running")
        screen.press(b"s")
        screen.wait_text("kill now")  # armed
        screen.wait(lambda lines: "K Kill" in lines[-1] and "Esc Later" in lines[-1] and
                    "Kill all" not in lines[-1] and "z Layout" not in lines[-1],
                    what="the question's keys in the key bar")
        for key in ("d", "z", "s"):
            screen.press(key.encode())
            screen.wait_text(f"{key}: a question is open first", timeout=10)
        assert "stop timeout reached" in screen.text() and "panes" not in screen.text()
        kill_and_quit(screen)
    finally:
        screen.close()


LONG = "word " * 44  # a line of about 230 characters with its number and END
SCROLLBAR = " ▁▂▃▄▅▆▇█▔"  # the pane's scrollbar, in its last column


@pytest.mark.parametrize(("rows", "columns"), SIZES, ids=[f"{c}x{r}" for r, c in SIZES])
def test_an_answer_leaves_the_newest_line_whole(installed, tmp_path, rows, columns):
    """9 over a pane of ~230-character lines: "no process 9" was drawn in a toast over the
    end of the newest line for 2 s. The answer has a row of its own above the key bar,
    and every cell of the newest line stays in view above it."""
    screen = console(installed, tmp_path,
                     f"long=for i in $(seq 1 30); do echo \"$(printf %03d $i) {LONG}END\"; "
                     "done; sleep 100", rows=rows, columns=columns)
    try:
        screen.wait(lambda lines: any(line.startswith("030 ") for line in lines),
                    what="the newest line")
        screen.settle()
        screen.press(b"9")
        screen.wait_text("no process 9")
        lines = screen.lines()
        said = next(i for i, line in enumerate(lines) if "no process 9" in line)
        assert "? Help" in lines[-1] and said >= len(lines) - 4, screen.text()
        assert "word" not in lines[said], screen.text()  # a row of its own
        # The newest line, from its number to END, whole in the rows above the answer.
        first = max(i for i, line in enumerate(lines[:said]) if line.startswith("030 "))
        newest = " ".join(line.rstrip(SCROLLBAR).strip() for line in lines[first:said])
        assert " ".join(newest.split()) == f"030 {LONG}END".replace("  ", " ").strip(), \
            screen.text()
        screen.press(b"q")
        assert screen.finish() == 0
    finally:
        screen.close()


def test_an_answer_about_a_process_goes_when_the_process_changes(installed, tmp_path):
    """"once has already ended ...; nothing to abandon" stayed on screen after S had
    started once again. The answer stays while it is true, and goes once its process
    changes, long before its 5 s are up."""
    screen = console(installed, tmp_path, "a=sleep 100", "once=sleep 1",
                     rows=24, columns=80)
    try:
        screen.wait_text("exited: exit code 0")
        screen.press(b"2a")
        screen.wait_text("nothing to abandon")
        still = time.monotonic() + 1.0  # true still: it stays
        while time.monotonic() < still:
            screen.pump()
            assert "nothing to abandon" in screen.text(), screen.text()
        screen.press(b"S")
        screen.wait(lambda lines: "nothing to abandon" not in "\n".join(lines), timeout=2.0,
                    what="the stale answer gone")
        screen.press(b"q")
        assert screen.finish() == 0
    finally:
        screen.close()


def test_a_questions_answer_to_a_key_is_in_the_dialog_not_over_it(installed, tmp_path):
    """z at a question at 60x15: the toast saying the question comes first covered the
    dialog's text and buttons (and at 80x24 the quit panel's countdowns). The dialog
    says it in place of its keys, then shows them again."""
    screen = asking(installed, tmp_path, 15, 60)
    try:
        screen.wait_text("running")
        screen.press(b"s")
        screen.wait_text("kill now")  # armed
        screen.press(b"z")
        screen.wait_text("z: a question is open first")
        assert "▌" not in screen.text(), screen.text()  # no toast
        assert "Kill K" in screen.text(), screen.text()  # the buttons in view
        screen.wait_text("kill now", timeout=10)  # its keys again
        kill_and_quit(screen)
    finally:
        screen.close()


def test_a_question_due_under_the_help_is_said(installed, tmp_path):
    """The help covers the whole screen: a decision that came due meanwhile gave no sign
    until Esc (10 s late in a trial). A line under it says so (a toast covered the help's
    last line); Esc then shows the question."""
    screen = asking(installed, tmp_path, 30, 120)
    try:
        screen.wait_text("running")
        screen.press(b"s?")  # the stop, and the help before its 0.5 s deadline
        screen.wait_text("stub waits for a decision: Esc closes this to answer it")
        assert "stop timeout reached" not in screen.text()  # still under the help
        # On a row of its own under the help's frame, not over the help's last line.
        lines = screen.lines()
        said = next(i for i, line in enumerate(lines) if "waits for a decision" in line)
        assert lines[said - 1].strip("█").startswith("▄▄▄"), screen.text()
        screen.press(KEYS["escape"])
        screen.wait_text("stop timeout reached")
        screen.wait_text("kill now")  # armed
        # Its work done, the toast goes (it stayed 8 s over the buttons at 60x15).
        screen.wait(lambda lines: "waits for a decision" not in "".join(lines), timeout=3,
                    what="the toast gone once the question shows")
        kill_and_quit(screen)
    finally:
        screen.close()


def test_the_help_over_a_question_leaves_no_toast_over_it(installed, tmp_path):
    """? over an open question, then Esc: the help said that very question waited, and
    the toast stayed 8 s, over the question's buttons at 60x15."""
    screen = asking(installed, tmp_path, 15, 60)
    try:
        screen.press(b"s")
        screen.wait_text("kill now")  # the question, armed
        screen.press(b"?")
        screen.wait_text("proctui keys")
        # A reader's while in the help, fifteen of the console's ticks, watched throughout.
        reading = time.monotonic() + 1.5
        while time.monotonic() < reading:
            screen.pump()
            assert "waits for a decision" not in screen.text(), screen.text()
        screen.press(KEYS["escape"])
        screen.wait_text("kill now")
        assert "waits for a decision" not in screen.text(), screen.text()
        kill_and_quit(screen)
    finally:
        screen.close()


def test_a_question_due_under_a_dialog_leaves_its_text_clear(installed, tmp_path):
    """Q's question ("abandon all?") open when a decision came due: a toast said so for
    8 s over the dialog's list of pids at 60x15. The table under a dialog shows the
    decision; the question comes once the dialog is answered."""
    screen = asking(installed, tmp_path, 15, 60)
    try:
        screen.wait_text("running")
        screen.press(b"sQ")  # the stop, and Q's question before its 0.5 s deadline
        screen.wait_text("Yes y")
        watching = time.monotonic() + 2.0  # the deadline, and fifteen ticks after it
        while time.monotonic() < watching:
            screen.pump()
            assert "waits for a decision" not in screen.text(), screen.text()
        screen.press(b"n")
        screen.wait_text("kill now")  # the question, armed
        kill_and_quit(screen)
    finally:
        screen.close()


def test_the_key_bar_offers_what_acts_on_the_selected_process_now(installed, tmp_path):
    """The bar offered s K e a for a process that had ended (each answered "nothing to
    ..."), never S, which starts it; said "q Quit" while q would kill everything; and at
    120 columns left out p, f and w with room to spare."""
    screen = console(installed, tmp_path, f"slow={SLOW_STOP}", "once=true",
                     rows=30, columns=120)

    def bar(lines: list[str]) -> str:
        return lines[-1]

    try:
        screen.wait(lambda lines: "s Stop" in bar(lines), what="the bar of a running process")
        shown = bar(screen.lines())
        for item in ("q Quit", "r Restart", "K Kill", "a Abandon", "p Pick", "f Follow",
                     "w Wrap", "? Help"):
            assert item in shown, shown
        assert "e Extend" not in shown and "S Start" not in shown, shown
        screen.press(b"2")
        screen.wait(lambda lines: "S Start" in bar(lines), what="S Start for the ended one")
        shown = bar(screen.lines())
        assert "s Stop" not in shown and "K Kill" not in shown and "e Extend" not in shown
        screen.press(b"1q")
        screen.wait(lambda lines: "q Kill all" in bar(lines) and "e Extend" in bar(lines),
                    what="q Kill all, and e Extend for the one stopping")
        shown = bar(screen.lines())
        assert "K Kill" in shown and "s Stop" not in shown and "r Restart" not in shown, shown
        assert screen.finish() == 0
    finally:
        screen.close()


def test_a_narrow_pane_header_keeps_the_outcome_and_the_countdown(installed, tmp_path):
    """A grid cell at 80 columns read "exited  pid 11157  exit…" and a pane at 60 columns
    "stopping  pid 13428  7.1s": the pid (in the table anyway) and the state the outcome
    repeats now give way to the exit code and the countdown."""
    screen = console(installed, tmp_path, "web-frontend=sleep 100", "migrate=exit 3",
                     "ok=true", "worker=sleep 100", rows=24, columns=80)
    try:
        screen.wait_text("exit code 3 (")
        screen.press(b"z")
        screen.wait(lambda lines: any("migrate" in line and "exit code 3" in line
                                      and "│" in line for line in lines),
                    what="the exit code in migrate's cell")
        screen.press(b"q")
        screen.finish()
    finally:
        screen.close()
    screen = Screen([str(installed / "venv/bin/proctui"), "run", "--run-dir",
                     str(tmp_path / "run2"), "--stop-timeout", "30",
                     "payments-gateway-worker=trap '' TERM; while :; do sleep 0.2; done"],
                    tmp_path, 15, 60)
    try:
        screen.wait_text("running")
        screen.press(b"s")
        screen.wait(lambda lines: any(line.startswith(" ◐ payments-gateway-worker")
                                      and "SIGKILL in" in line for line in lines),
                    what="the countdown in the pane's header")
        kill_and_quit(screen)
    finally:
        screen.close()


@pytest.mark.parametrize("read_only", [False, True], ids=["attached", "read-only"])
def test_an_attached_console_shows_a_shutdown_begun_elsewhere(installed, tmp_path, read_only):
    """`proctui down` from another terminal while a console is attached: the console
    showed nothing of the shutdown (no panel, no countdown, no why) until it was gone.
    A read-only console's panel offers only d, which is all it can do."""
    import subprocess

    proctui = str(installed / "venv/bin/proctui")
    run_dir = str(tmp_path / "run")
    subprocess.run([proctui, "up", "--run-dir", run_dir, "--stop-timeout", "20",
                    "slow=trap 'sleep 4; exit 0' TERM; while :; do sleep 0.2; done"],
                   check=True, capture_output=True, timeout=60)
    down = None
    screen = Screen([proctui, "attach", "--run-dir", run_dir,
                     *(["--read-only"] if read_only else [])], tmp_path, 24, 80)
    try:
        screen.wait_text("running")
        down = subprocess.Popen([proctui, "down", "--run-dir", run_dir],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        screen.wait_text("Quitting")
        screen.wait_text("proctui down (from")
        title = next(line for line in screen.lines() if "Quitting" in line)
        assert ("d detaches" in title) == read_only, title
        assert ("kill all" in title) != read_only and "again" not in title, title
        # The hint said "d detaches (everything keeps running)".
        screen.wait_text("the supervisor is stopping everything (proctui down)")
        assert "keeps running" not in screen.text(), screen.text()
        assert down.wait(timeout=60) == 0
    finally:
        screen.close()
        if down is None:
            subprocess.run([proctui, "down", "--run-dir", run_dir], capture_output=True,
                           timeout=60)
        else:
            down.wait(timeout=60)


def test_an_attached_console_stopping_25_keeps_its_key_bar_on_a_small_screen(installed,
                                                                             tmp_path):
    """Attached (one more line: "attached to supervisor ...") and stopping 25 processes:
    at 60x15 the quit panel pushed the key bar off the screen, which then scrolled (a
    scrollbar at its right edge); the same after shrinking from 80x24 mid-stop."""
    import re
    import subprocess

    proctui = str(installed / "venv/bin/proctui")
    run_dir = str(tmp_path / "run")
    subprocess.run([proctui, "up", "--run-dir", run_dir, "--stop-timeout", "60",
                    *[f"p{i}=trap '' TERM; while :; do sleep 0.2; done" for i in range(1, 26)]],
                   check=True, capture_output=True, timeout=60)
    # (No COLUMNS and LINES: Textual would take them over the terminal's new size.)
    screen = Screen([proctui, "attach", "--run-dir", run_dir], tmp_path, 24, 80,
                    env={"COLUMNS": "", "LINES": ""})

    def fits(lines: list[str]) -> bool:
        more = [i for i, line in enumerate(lines) if re.search(r"\+\d+ more: p", line)]
        return bool(more) and "? Help" in lines[-1] and "Kill all" in lines[-1] and \
            more[-1] == len(lines) - 2 and not any(line.rstrip().endswith("▇")
                                                    for line in lines)

    try:
        screen.wait(lambda lines: "attached to supervisor" in "\n".join(lines) and
                    "running" in "\n".join(lines), what="the attached console")
        screen.press(b"q")
        screen.wait_text("Stop everything")
        screen.press(b"S")
        screen.wait(fits, what="the panel's +N more just above the key bar at 80x24")
        screen.resize(15, 60)
        screen.wait(fits, what="the same at 60x15, the key bar still the last row")
        screen.settle()
        assert fits(screen.lines()), "\n".join(screen.lines())
        screen.press(b"q")
        screen.wait_text("Kill all now?")
        screen.press(b"y")  # the supervisor ends, and the console with it
        screen.finish(timeout=60)
    finally:
        screen.close()
        # Whatever failed: every process killed, then the supervisor ended.
        subprocess.run([proctui, "kill", "--run-dir", run_dir,
                        *[f"p{i}" for i in range(1, 26)]], capture_output=True, timeout=60)
        subprocess.run([proctui, "down", "--run-dir", run_dir], capture_output=True,
                       timeout=60)


@pytest.mark.parametrize(("rows", "columns"), SIZES[1:], ids=["80x24", "60x15"])
def test_the_question_keeps_each_key_beside_its_word(installed, tmp_path, rows, columns):
    """The question's hint wrapped as text: "... · a" ended a line and "abandon" began
    the next, at 80 and 60 columns."""
    screen = asking(installed, tmp_path, rows, columns)
    try:
        screen.wait_text("running")
        screen.press(b"s")
        screen.wait_text("kill now")
        text = screen.text()
        for item in ("K kill now", "a abandon", "w wait, no deadline", "Esc later"):
            assert item in text, text
        # Digits change the seconds; the row of buttons is laid out again each time (the
        # Extend button went blank), and with every digit erased it says the step, not 0s.
        screen.press(b"0079999999")
        screen.wait(lambda lines: "by 799999s" in "\n".join(lines) and
                    any("Extend e" in line and "Later Esc" in line for line in lines),
                    what="the seconds typed, the buttons whole")
        screen.press(b"\x7f\x7f\x7f")
        screen.wait(lambda lines: any("Extend 799s e" in line for line in lines),
                    what="Extend 799s e")
        screen.press(b"\x7f\x7f\x7f")
        screen.wait(lambda lines: any("Extend 30s e" in line for line in lines) and
                    "by 30s" in "\n".join(lines), what="the step again, not 0s")
        kill_and_quit(screen)
    finally:
        screen.close()


def test_an_attached_console_says_when_its_supervisor_stops_answering(installed, tmp_path):
    """A frozen supervisor (SIGSTOP) showed nothing for the 10 s until the link was given
    up, the console's picture carrying on as if all were well. After a few seconds of
    silence the banner says so, with what to do; it goes once the supervisor answers."""
    import os
    import re
    import signal
    import subprocess

    proctui = str(installed / "venv/bin/proctui")
    run_dir = str(tmp_path / "run")
    subprocess.run([proctui, "up", "--run-dir", run_dir, "web=sleep 100"], check=True,
                   capture_output=True, timeout=60)
    status = subprocess.run([proctui, "status", "--run-dir", run_dir], capture_output=True,
                            text=True, timeout=60).stdout
    pid = int(re.search(r"supervisor pid (\d+)", status).group(1))
    # The link is not given up during the test: the banner is the silence's, not a redial's.
    screen = Screen([proctui, "attach", "--run-dir", run_dir], tmp_path, 24, 100,
                    env={"PROCTUI_ANSWER_TIMEOUT": "60"})
    try:
        screen.wait_text("running")
        os.kill(pid, signal.SIGSTOP)
        screen.wait_text("no answer from the supervisor for", timeout=20)
        screen.wait_text(f"it is stopped: kill -CONT {pid}")
        os.kill(pid, signal.SIGCONT)
        screen.wait(lambda lines: "no answer" not in "\n".join(lines), what="the banner gone")
    finally:
        os.kill(pid, signal.SIGCONT)
        screen.close()
        subprocess.run([proctui, "down", "--run-dir", run_dir], capture_output=True,
                       timeout=60)


def test_the_table_goes_on_under_the_palette_over_a_question(installed, tmp_path):
    """With the command palette open over a question (two modal screens), the table and
    its ages froze until the palette closed (13 to 18 s seen)."""
    import re

    screen = asking(installed, tmp_path, 30, 120, "web=sleep 100")

    def web_age(lines: list[str]) -> int | None:
        row = next((line for line in lines if re.match(r"2 . web ", line)), "")
        found = re.search(r"up (\d+)s", row)
        return int(found.group(1)) if found else None

    try:
        screen.wait_text("running")
        screen.press(b"s")
        screen.wait_text("kill now")
        screen.press(b"\x10")  # ctrl+p: the palette, over the question
        screen.wait_text("Search for commands")
        first = web_age(screen.lines())
        assert first is not None, screen.text()
        screen.wait(lambda lines: (web_age(lines) or 0) >= first + 2, timeout=15,
                    what="web's age moving under the palette")
        screen.press(b"\x1b")
        screen.wait(lambda lines: "Search for commands" not in "\n".join(lines),
                    what="the palette closed")
        kill_and_quit(screen)
    finally:
        screen.close()


def test_keys_typed_straight_after_slash_or_p_go_into_the_box(installed, tmp_path):
    """'/stop' arriving in one read (typed fast, pasted, or over a laggy link) stopped the
    selected process and opened the timeline: the box had not the focus yet. 'pwor' lost
    its letters. Each now lands in its box, and nothing acts."""
    screen = console(installed, tmp_path, "web=while :; do echo stop here; sleep 1; done",
                     "worker=sleep 100", rows=24, columns=80)
    try:
        screen.wait_text("stop here")
        screen.press(b"/stop")  # one write: s would stop web, t open the timeline
        screen.wait(lambda lines: any("▊  stop " in line for line in lines),
                    what="'stop' in the search box")
        screen.press(b"\x1b")
        screen.wait(lambda lines: not any("▊  stop" in line for line in lines),
                    what="the search box closed")
        screen.press(b"/web")  # w wraps, e extends
        screen.wait(lambda lines: any("▊  web " in line for line in lines),
                    what="'web' alone in a new search")
        screen.press(b"\x1b")
        screen.wait(lambda lines: not any("▊  web" in line for line in lines),
                    what="the search box closed")
        screen.press(b"pwor")
        screen.wait_text("🔎 wor")
        screen.press(b"\r")
        screen.wait(lambda lines: any(line.startswith("2▶") for line in lines),
                    what="worker picked")
        text = screen.text()
        assert "1 ● web" in text and "running" in text and "wrap off" not in text, text
        screen.press(b"q")
        screen.finish()
    finally:
        screen.close()


def test_a_grid_cell_header_keeps_name_countdown_and_note_at_80_columns(installed, tmp_path):
    """At 80 columns a held, stopping cell read "stopping  SIGKILL in 34…" with its note
    gone (or "34s" alone beside "wrap off"), and a long name filled its cell to "│ …"."""
    import re

    screen = console(installed, tmp_path, "--stop-timeout", "60",
                     "ignores=trap '' TERM; while :; do echo x; sleep 0.3; done",
                     "web-frontend-service-with-a-long-name=sleep 100", "db=sleep 100",
                     "q=sleep 100", rows=24, columns=80)
    try:
        screen.wait_text("running")
        screen.press(b"z")
        screen.wait_text("│ ● db")
        screen.press(b"s")
        screen.wait_text("SIGKILL in")
        screen.press(b"f")
        screen.wait(lambda lines: any("◐ ignores  SIGKILL in" in line and "held" in line
                                      for line in lines), what="countdown and note, whole")
        assert any(re.search(r"● web-\S*…\S*name ", line) and "up " in line
                   for line in screen.lines()), screen.text()
        kill_and_quit(screen)
    finally:
        screen.close()


def test_the_folded_summary_never_strands_a_number_or_splits_a_set_phrase():
    """At any width the summary is folded so that a number stays with its word and
    "exit code", "left running" stay whole: at 60 columns a clean stop read "exit code"
    above a lone "0", an abandoned one "pid" above "27743 left running"."""
    import re

    from proctui.frontends.printer import folded as fold

    lines = ["  db          stopped after 0.0s: exit code 0",
             "  worker      abandoned after 29s: pid 27743 left running",
             "  web         killed with SIGKILL after 10s stop timeout"]
    for columns in range(36, 90):
        folded = fold(lines, 13, columns)
        assert " ".join(" ".join(folded).split()) == " ".join(" ".join(lines).split())
        for piece in folded:
            assert not re.match(r"^\s*\d", piece), (columns, folded)
            assert not re.search(r"\b(exit|left)$", piece), (columns, folded)
            assert len(piece) <= columns - 13 - 3 or " " not in piece.strip(), (columns, piece)


def test_up_and_status_fold_their_words_to_the_terminal(installed, tmp_path):
    """`proctui up` and `proctui status` at 60 columns: the terminal cut "superviso" /
    "r (pid 2012)", "attache" / "d", and each hint's words. Folded now at spaces; the
    commands to copy stay whole, what each does above it."""
    import shutil
    import subprocess
    import tempfile

    proctui = str(installed / "venv/bin/proctui")
    short = tempfile.mkdtemp(prefix="pt")  # the commands fit: a copied one stays whole
    run_dir = f"{short}/r"
    try:
        screen = Screen([proctui, "up", "--run-dir", run_dir,
                         "web=sleep 100", "crashes=sleep 0.2; exit 3", "日本語=sleep 100"],
                        tmp_path, 24, 60)
        try:
            assert screen.finish(timeout=60) == 0
            screen.pump()
            rows = [line for line in screen.lines() if line.strip()]
            # A row of its own or a fold under it, never the terminal's wrap at column 0.
            assert rows[0].startswith("proctui: 3 of 3 processes started") and \
                all(row.startswith("  ") for row in rows[1:]), screen.text()
            assert f"  proctui attach --run-dir {run_dir}" in rows, screen.text()
            assert "  # the console (d detaches again)" in rows, screen.text()
        finally:
            screen.close()
        screen = Screen([proctui, "status", "--run-dir", run_dir], tmp_path, 24, 60)
        try:
            assert screen.finish(timeout=60) == 0
            screen.pump()
            rows = [line for line in screen.lines() if line.strip()]
            assert [row.split()[0] for row in rows[:4]] == ["NAME", "web", "crashes",
                                                            "日本語"], screen.text()
            footer = next(i for i, row in enumerate(rows) if row.startswith("supervisor pid"))
            assert all(row.startswith("  ") for row in rows[4:footer] + rows[footer + 1:]), \
                screen.text()
            assert "consoles attached" in " ".join(" ".join(rows[footer:]).split()), \
                screen.text()
        finally:
            screen.close()
        # Into a pipe: one line each, the columns in line by terminal columns (日本語 is
        # six: its row's STATE and PID stood three columns left of the others').
        from proctui.frontends.printer import cells

        piped = subprocess.run([proctui, "status", "--run-dir", run_dir], check=True,
                               capture_output=True, text=True, timeout=60).stdout
        table = piped.splitlines()[:4]
        assert [row.split()[0] for row in table] == ["NAME", "web", "crashes", "日本語"]
        at = {cells(row[:row.index(row.split()[1])]) for row in table}  # STATE's column
        assert len(at) == 1 and len(piped.splitlines()) == 5, piped
    finally:
        subprocess.run([proctui, "down", "--run-dir", run_dir], capture_output=True,
                       timeout=60)
        shutil.rmtree(short, ignore_errors=True)


def test_proctuis_own_lines_fold_on_a_terminal_and_only_there():
    """A line of proctui's own (the attached console's "detached; ..." at 60 columns) is
    folded to the terminal the printer writes to, as wide as it is now; into a pipe it
    stays one line, for scripts."""
    import fcntl
    import os
    import struct
    import termios

    from proctui.frontends.printer import Printer

    words = "detached; supervisor pid 4121 goes on stopping everything (proctui attach " \
            "--host edge-01 comes back to it)"
    master, slave = os.openpty()
    try:
        for columns in (60, 80):
            fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
            with open(os.dup(slave), "w", encoding="utf-8") as out:
                Printer(["web"], out, False).say(words)
            text = os.read(master, 65536).decode().replace("\r\n", "\n")
            rows = text.splitlines()
            assert len(rows) > 1 and all(len(r) <= columns and r.startswith("proctui | ")
                                         for r in rows), (columns, rows)
            assert " ".join(r[len("proctui | "):].strip() for r in rows) == words
        # A word longer than the room (a 56-character name) is cut where the row ends:
        # it went on at the terminal's first column, under no label.
        name = "verylongprocessnamethatgoesonandonandon_abcdefghijklmnop"
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 60, 0, 0))
        with open(os.dup(slave), "w", encoding="utf-8") as out:
            Printer(["web"], out, False).say("started (pid 2418): trap '' TERM", name)
        rows = os.read(master, 65536).decode().replace("\r\n", "\n").splitlines()
        assert len(rows) > 1 and all(len(r) <= 60 and r.startswith("proctui | ")
                                     for r in rows), rows
        assert "".join(r[len("proctui | "):].strip() for r in rows).startswith(name), rows
    finally:
        os.close(master)
        os.close(slave)
    read, write = os.pipe()
    with open(write, "w", encoding="utf-8") as out:
        Printer(["web"], out, False).say(words)
    with open(read, encoding="utf-8") as pipe:
        assert pipe.read() == f"proctui | {words}\n"


def test_a_wide_name_longer_than_a_row_is_cut_between_characters():
    """A 40-column 日本語 name in a 37-column row: the cut fell between a character and its
    second column, the row came out 38 wide, and the terminal wrapped its last character
    under no label."""
    from proctui.frontends.printer import cells, wrap_words

    for line in ("日本語のプロセス名前がとても長いです日本: stopped after 0.0s: exit code 0",
                 "  日本語のプロセス名前がとても長いです日本語のプロセス名前  killed"):
        for room in range(20, 61):
            rows = wrap_words(line, room, 2)
            assert all(cells(row) <= room for row in rows), (room, rows)
            assert "".join(rows).replace(" ", "") == line.replace(" ", ""), (room, rows)


def test_the_summary_of_wide_names_lines_up_and_folds_by_columns():
    """日本語 takes two columns a character: the summary padded names and folded lines
    by characters, so its rows did not line up and the terminal broke a word ("oper" /
    "ator") at 60 and 80 columns."""
    from proctui.core.life.outcome import Outcome, OutcomeKind
    from proctui.core.life.stop import Phase
    from proctui.core.snapshot import CoreSnapshot
    from proctui.core.view import ProcessView
    from proctui.frontends.printer import cells
    from proctui.frontends.printer import folded as fold
    from proctui.frontends.report import summary_lines

    text = "killed with SIGKILL by operator after 3.7s"
    finals = [("日本語のサービス名前テスト", Outcome(OutcomeKind.KILLED, text, 1)),
              ("plain", Outcome(OutcomeKind.KILLED, text, 2))]
    lines = summary_lines(CoreSnapshot(all_ended=True, views=tuple(
        ProcessView(name, Phase.ENDED, "sleep 1", outcome=outcome) for name, outcome in finals)))
    assert [line.split()[0] for line in lines[1:]] == [name for name, _ in finals], lines
    assert len({line.index("killed") + sum(cells(c) - 1 for c in line[:line.index("killed")])
                for line in lines[1:]}) == 1, lines  # the outcomes start in one column
    for columns in range(50, 100):
        folded = fold(lines, 7, columns)
        assert " ".join(" ".join(folded).split()) == " ".join(" ".join(lines).split())
        for piece in folded:
            assert cells(piece) <= columns - 7 - 3 or " " not in piece.strip(), \
                (columns, piece)

def test_with_wrap_off_a_match_past_the_cut_is_shown(installed, tmp_path):
    """w (wrap off), then /END42: "match 1 of 1", the pane held at the line, but the line
    was cut well before END42, and nothing showed which line matched. It is shown from
    a little before the match, after a "…". ("/END42⏎" in one write lost its Enter.)"""
    screen = console(installed, tmp_path, "long=printf 'start %0200d END42 tail\\n' 7; "
                     "echo short; sleep 100", rows=24, columns=80)
    try:
        screen.wait_text("short")
        screen.press(b"w")
        screen.wait_text("wrap off")
        screen.press(b"/END42\r")  # in one write, as pasted: the Enter typed ahead too
        screen.wait(lambda lines: any(line.startswith("…") and "END42 tail" in line
                                      for line in lines), what="the match in view")
        screen.press(b"q")
        assert screen.finish() == 0
    finally:
        screen.close()


def test_the_timeline_is_drawn_anew_when_the_terminal_changes_size(installed, tmp_path):
    """t at 120x30, then 60x15: each lane kept its 120-column width and wrapped into three
    rows, the name alone on the first; Esc and t again drew it right."""
    name = "a-very-long-process-name-that-goes-on-and-on"
    screen = Screen([str(installed / "venv/bin/proctui"), "run", "--run-dir",
                     str(tmp_path / "run"), f"{name}=sleep 100", "b=sleep 100"],
                    tmp_path, 30, 120, env={"COLUMNS": "", "LINES": ""})

    def lane(lines: list[str]) -> bool:  # the name (cut in the middle) beside its lane
        return any("…" in line and "│─" in line for line in lines)

    try:
        screen.wait(lambda lines: sum("running" in line for line in lines) >= 2,
                    what="both running")
        screen.press(b"t")
        screen.wait_text("timeline of this run")
        screen.resize(rows=15, columns=60)
        screen.wait(lambda lines: lane(lines) and len(lines[0]) <= 60,
                    what="the lanes drawn anew at 60 columns")
        screen.press(KEYS["escape"])
        screen.wait(lambda lines: "timeline of this run" not in "\n".join(lines) and
                    "q Quit" in lines[-1], what="the timeline closed")
        screen.press(b"q")
        screen.finish()
    finally:
        screen.close()


def test_the_help_keeps_its_place_when_the_terminal_changes_size(installed, tmp_path):
    """End at 120x30, then the terminal shrinks to 60x15: the end is still in view (the
    help showed its middle, the same line number in a text wrapped anew)."""
    screen = Screen([str(installed / "venv/bin/proctui"), "run", "--run-dir",
                     str(tmp_path / "run"), "a=sleep 100"],
                    tmp_path, 30, 120, env={"COLUMNS": "", "LINES": ""})
    items = help_items()
    try:
        screen.wait_text("running")
        screen.press(b"?")
        screen.wait_text("proctui keys")
        screen.press(KEYS["end"])
        screen.wait(lambda lines: items[-1] in "\n".join(lines), what="End at the bottom")
        screen.resize(rows=15, columns=60)
        # Settled: the first frame at the new size still has the old wrapping, and the
        # old place; the text wrapped anew comes after it.
        screen.settle(quiet=0.5)
        assert "Esc q  close it" in screen.text(), screen.text()
        screen.press(b"?")
        screen.wait(lambda lines: "proctui keys" not in "\n".join(lines), what="closed")
        screen.press(b"q")
        screen.finish()
    finally:
        screen.close()


def test_esc_typed_together_with_a_key_is_esc_then_that_key(installed, tmp_path):
    """Esc, 1, s typed fast (one read): Textual read Esc and 1 as one unknown key, the 1
    was lost, and s stopped the process selected before it (c, not a)."""
    import re

    screen = three_running(installed, tmp_path, rows=24, columns=80)
    try:
        screen.press(b"3")
        screen.wait(lambda lines: any(line.startswith("3▶") for line in lines),
                    what="c selected")
        screen.press(b"\x1b1s")
        screen.wait(lambda lines: any(re.match(r"^1▶. a .*stopped", line) for line in lines),
                    what="a selected and stopped")
        assert any(re.match(r"^3 . c .*running", line) for line in screen.lines()), \
            screen.text()
        screen.press(b"\x1bj")  # alt+j: Esc, then j
        screen.wait(lambda lines: any(line.startswith("2▶") for line in lines),
                    what="j after Esc moving to b")
        screen.press(b"q")
        assert screen.finish() == 0
    finally:
        screen.close()


def test_answers_to_keys_in_a_row_do_not_pile_up_over_the_pane(installed, tmp_path):
    """9, k, e, w at 60x15: four toasts stacked up over the pane's header ("wrap off"
    read "…ff") for seconds. The newest answer replaces the one before."""
    screen = three_running(installed, tmp_path, rows=15, columns=60)
    try:
        screen.press(b"9ke")
        screen.wait_text("nothing to extend")  # (the core's answer: it comes last)
        screen.press(b"w")
        screen.wait_text("wrap off: long lines")
        text = screen.text()
        header = next(line for line in screen.lines() if line.startswith(" ● a "))
        assert header.endswith("wrap off"), text
        assert "no process 9" not in text and "first process" not in text and \
            "nothing to extend" not in text, text
        screen.press(b"q")
        assert screen.finish() == 0
    finally:
        screen.close()


@pytest.mark.parametrize(("rows", "columns"), SIZES, ids=["120x30", "80x24", "60x15"])
def test_the_search_box_opens_above_the_key_bar(installed, tmp_path, rows, columns):
    """/ : the box sat on the last rows but one, the key bar above it and the last row
    blank. The key bar stays the last row, the box just above it, and the newest line
    of the pane stays in view above the box."""
    screen = console(installed, tmp_path, FINAL, rows=rows, columns=columns)
    try:
        screen.wait_text("FINAL LINE")
        screen.press(b"/")
        screen.wait_text("search the pane")
        screen.settle()
        lines = screen.lines()
        assert "? Help" in lines[-1], screen.text()
        assert lines[-2].lstrip("▊").startswith("▁"), screen.text()  # the box's bottom edge
        assert any(line.strip() == "FINAL LINE" for line in lines[:-4]), screen.text()
        screen.press(KEYS["escape"])
        screen.wait(lambda lines: not any("search the pane" in line for line in lines),
                    what="the box closed")
        screen.press(b"q")
        assert screen.finish() == 0
    finally:
        screen.close()


def test_wide_and_long_names_keep_the_table_in_columns(installed, tmp_path):
    """日本語 names threw the table's columns out of line (padded by characters, two
    columns each), and names sharing a long prefix were cut to the same words on every
    row ("a-very-long-process-n…"): cut in the middle, they stay apart."""
    import re

    prefix = "a-very-long-process-name-that-goes-on-and-on-"
    screen = console(installed, tmp_path, "日本語のサービス名前テスト=sleep 100",
                     "ünï-名前-🚀=sleep 100", "plain=sleep 100", f"{prefix}01=sleep 100",
                     f"{prefix}02=sleep 100", rows=24, columns=80)
    try:
        screen.wait(lambda lines: sum("running" in line for line in lines) >= 5,
                    what="five running")

        def column_of(word: str, row: int) -> int:
            cells = "".join(screen.vt.buffer[row][x].data or "\0"
                            for x in range(screen.columns))
            return cells.index(word)  # (a wide character's second cell is "\0")

        rows = [y for y, line in enumerate(screen.lines()) if "running" in line][:5]
        state = column_of("STATE", 0)
        assert [column_of("running", y) for y in rows] == [state] * 5, screen.text()
        cut = {m.group(1) for line in screen.lines()
               for m in [re.search(r"(a-very\S*…\S*-0[12])\b", line)] if m}
        assert len(cut) == 2, screen.text()  # two names, told apart
        screen.press(b"q")
        assert screen.finish() == 0
    finally:
        screen.close()


def test_the_key_bar_under_a_yes_no_question_offers_its_keys(installed, tmp_path):
    """Q asks before abandoning everything: the key bar under it went on offering q, s,
    K... and ? Help, which did nothing there. It offers y and n, then the main keys."""
    screen = console(installed, tmp_path, "a=sleep 100", rows=24, columns=80)
    try:
        screen.wait_text("running")
        screen.press(b"Q")
        screen.wait(lambda lines: "y Yes  n Esc No" in lines[-1] and "Help" not in lines[-1],
                    what="y and n in the key bar")
        screen.press(b"n")
        screen.wait(lambda lines: "q Quit" in lines[-1] and "? Help" in lines[-1],
                    what="the main keys again")
        screen.press(b"q")
        assert screen.finish() == 0
    finally:
        screen.close()


def test_the_quit_panel_names_one_more_even_when_names_are_long(installed, tmp_path):
    """60x15, 25 long names: the panel's last line read "+21 more: …", naming none (the
    first name alone did not fit). The first is cut in the middle instead."""
    import re

    name = "a-very-long-process-name-that-goes-on-and-on-forever-"
    screen = console(installed, tmp_path, "--stop-timeout", "30",
                     *[f"{name}{i:02}=trap '' TERM; while :; do sleep 0.2; done"
                       for i in range(1, 26)], rows=15, columns=60)
    try:
        screen.wait_text("running")
        screen.press(b"q")
        screen.wait(lambda lines: any(re.search(r"\+\d+ more: a-very\S*…\S*-\d\d, …$", line)
                                      for line in lines), what="a name in the +N more line")
        screen.press(b"q")
        screen.wait_text("Kill all now?")
        screen.press(b"y")
        assert screen.finish(timeout=60) == 1
    finally:
        screen.close()


def test_a_held_pane_stays_held_when_the_terminal_grows(installed, tmp_path):
    """f, then a taller window: Textual moved the scroll up onto the new end, which read
    as the operator's own scroll to the end, and the pane followed again, the text being
    read scrolling away (and an f pressed just after a resize was undone so)."""
    import re

    def held(lines: list[str]) -> int | None:
        found = re.search(r"held at \d+/(\d+)", "\n".join(lines))
        return int(found.group(1)) if found else None

    screen = Screen([str(installed / "venv/bin/proctui"), "run", "--run-dir",
                     str(tmp_path / "run"),
                     "tick=i=0; while :; do i=$((i+1)); echo tick $i; sleep 0.05; done"],
                    tmp_path, 24, 80, env={"COLUMNS": "", "LINES": ""})
    try:
        screen.wait_text("tick 60")
        screen.press(b"f")
        screen.wait(lambda lines: held(lines) is not None, what="the pane held")
        screen.resize(30, 120)
        screen.wait(lambda lines: "Wrap" in lines[-1], what="the wider key bar")
        then = held(screen.lines())
        assert then is not None, screen.text()
        # Still held while output goes on: the count behind "held at" grows.
        screen.wait(lambda lines: (held(lines) or 0) >= then + 20,
                    what="still held, 20 lines later")
        screen.resize(15, 60)
        screen.press(b"f")  # follows again
        screen.wait(lambda lines: held(lines) is None, what="following")
        screen.resize(24, 80)
        screen.press(b"f")  # held just after the window grew: it stays held
        screen.wait(lambda lines: held(lines) is not None, what="held again")
        then = held(screen.lines())
        screen.wait(lambda lines: (held(lines) or 0) >= then + 20,
                    what="still held after f pressed at the resize")
        screen.press(b"q")
        screen.finish()
    finally:
        screen.close()


def test_down_folds_its_words_to_the_terminal(installed, tmp_path):
    """`proctui down` printed its notices and summary whole, and the terminal cut them
    mid-word ("process g" / "roup 3500") at 60 and 80 columns, where the console's own
    summary was folded."""
    import subprocess

    proctui = str(installed / "venv/bin/proctui")
    run_dir = str(tmp_path / "run")
    name = "payments-gateway-worker"
    subprocess.run([proctui, "up", "--run-dir", run_dir, "--stop-timeout", "0.5",
                    f"{name}=trap '' TERM; while :; do sleep 0.2; done", "b=sleep 100"],
                   check=True, capture_output=True, timeout=60)
    try:
        screen = Screen([proctui, "down", "--run-dir", run_dir], tmp_path, 40, 60)
        try:
            assert screen.finish(timeout=60) == 1  # killed: as run would have exited
            screen.pump()
            rows = [line for line in screen.lines() if line.strip()]
            # Each row begins with a label: none is the terminal's own fold of a line.
            assert rows and all(row.startswith(("proctui ", "b ", name)) for row in rows), \
                screen.text()
            text = " ".join(row.split(" | ", 1)[1].strip() for row in rows)
            assert "SIGKILL sent to process group" in text and "killed with SIGKILL" in text
        finally:
            screen.close()
    finally:
        subprocess.run([proctui, "down", "--run-dir", run_dir], capture_output=True,
                       timeout=60)


@pytest.mark.parametrize(("rows", "columns"), SIZES, ids=[f"{c}x{r}" for r, c in SIZES])
def test_a_process_that_never_started_says_why_in_its_row(installed, tmp_path, rows, columns):
    """Issue 42: a dependent whose dependency failed to start said only "not started" in
    the table, with the reason in its pane alone (and 50 empty columns beside it at 120).
    Its row says why, from the STATE column on, as an outcome does."""
    (tmp_path / "proctui.toml").write_text(
        '[processes.typo]\ncmd = "ngnix -g x"\n'
        '[processes.dep]\ncmd = "sleep 100"\ndepends_on = ["typo"]\n')
    screen = console(installed, tmp_path, rows=rows, columns=columns)
    try:
        screen.wait_text("failed to start")
        screen.wait(lambda lines: any(line.startswith("2 ○ dep ") and
                                      "not started: typo failed" in line for line in lines),
                    what="dep's row saying why it never started")
        row = next(line for line in screen.lines() if line.startswith("2 ○ dep "))
        if columns >= 80:
            assert row.split("not started: ", 1)[1].startswith(
                "typo failed to start: [Errno 2] No such file"), screen.text()
        screen.press(b"q")
        assert screen.finish() == 1
    finally:
        screen.close()


@pytest.mark.parametrize("how", ["run", "down"])
def test_a_line_after_ctrl_c_is_not_pushed_past_the_edge_by_its_echo(installed, tmp_path,
                                                                       how):
    """A ctrl+c is echoed "^C" where proctui's next line begins: that line, folded to fit
    beside its label, went two columns wider than the terminal, which cut it mid-word
    under no label ("...kills what is sti" / "ll" at 80 columns, from run --headless;
    "...abandons it" / ")" from down). It begins at the first column, over the echo."""
    import subprocess

    proctui = str(installed / "venv/bin/proctui")
    run_dir = str(tmp_path / "run")
    stub = "stub=trap '' TERM; echo up; while :; do sleep 0.2; done"
    if how == "run":
        argv = [proctui, "run", "--headless", "--run-dir", run_dir, "--stop-timeout", "30",
                stub]
    else:
        subprocess.run([proctui, "up", "--run-dir", run_dir, "--stop-timeout", "30", stub],
                       check=True, capture_output=True, timeout=60)
        argv = [proctui, "down", "--run-dir", run_dir]
    try:
        screen = Screen(argv, tmp_path, 24, 80, controlling=True)
        try:
            if how == "run":
                screen.wait_text("| up")
                screen.press(b"\x03")
                screen.wait_text("SIGTERM sent")
            else:
                screen.wait_text("stopping everything")
            screen.press(b"\x03")
            screen.wait_text("killed with SIGKILL by operator")
            assert screen.finish(timeout=60) == 1
            screen.pump()
            rows = [line for line in screen.lines() if line.strip()]
            # Each row begins with a label: none is the terminal's own fold of a line.
            assert rows and all(row.startswith(("proctui | ", "stub    | ")) for row in rows), \
                screen.text()
            assert "killing what is still stopping" in screen.text()
        finally:
            screen.close()
    finally:
        if how == "down":
            subprocess.run([proctui, "down", "--run-dir", run_dir], capture_output=True,
                           timeout=60)


@pytest.mark.parametrize(("rows", "columns"), SIZES, ids=[f"{c}x{r}" for r, c in SIZES])
def test_a_pane_header_at_a_decision_says_decide_once(installed, tmp_path, rows, columns):
    """Issue 42's header said its state twice ("stopped  stopped after 8.0s"); at a
    decision put off (Esc) it still did: "? stub  decide!  pid 25698  decide: K / e / a"
    at 80 columns. The countdown's words say it; the mark ? stays."""
    import re

    screen = asking(installed, tmp_path, rows, columns)
    try:
        screen.wait_text("running")
        screen.press(b"s")
        screen.wait_text("kill now")  # the question, armed
        screen.press(b"\x1b")  # later: the pane's header shows again at 60x15
        screen.wait(lambda lines: "kill now" not in "\n".join(lines), what="the question gone")
        screen.wait(lambda lines: any(line.startswith(" ? stub") and
                                      ("decide" in line or "decision" in line)
                                      for line in lines), what="the header at the decision")
        header = next(line for line in screen.lines() if line.startswith(" ? stub"))
        assert len(re.findall(r"\bdecide\b", header)) <= 1, screen.text()
        kill_and_quit(screen)
    finally:
        screen.close()
