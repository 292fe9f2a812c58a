"""proctui timeline and every reader of a journal, on journals an attacker wrote (issue 17):
a drawing, or one line naming the file and what is wrong with exit status 2; never a
traceback, never an escape sent to the terminal, always valid XML."""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from proctui.core.store.journal import BadLine, parse_lines, read_lines
from proctui.frontends import timeline as pictures
from proctui.frontends import timeline_svg

EVIL = "w\x1b[31me\x07b\ud800\udcff\u202e\x00\x85"


def proctui(*args: str | os.PathLike[str], cwd: Path | None = None,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "proctui", *map(os.fsencode, args)],
                          capture_output=True, timeout=60, cwd=cwd, env=env)


def journal(directory: Path, text: bytes) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "journal.jsonl").write_bytes(text)
    return directory


def run_of(name: str) -> bytes:
    import json

    entries = [{"t": 1.0, "kind": "start", "name": name},
               {"t": 1.5, "kind": "stage", "name": name, "stage": name},
               {"t": 2.0, "kind": "stop", "name": name},
               {"t": 2.0, "kind": "deadline", "name": name, "phase": "stopping",
                "deadline": 5.0},
               {"t": 2.0, "kind": "signal", "name": name, "signal": "SIGTERM"},
               {"t": 3.0, "kind": "outcome", "name": name, "outcome": "stopped",
                "text": f"stopped after 1.0s: {name}"}]
    return "".join(json.dumps(e) + "\n" for e in entries).encode()


# -- the words shown ------------------------------------------------------------------

def test_visible_shows_every_hidden_character_as_its_escape():
    assert pictures.visible(EVIL) == "w\\x1b[31me\\x07b\\ud800\\xff\\u202e\\x00\\x85"
    assert pictures.visible("plain é ✓") == "plain é ✓"
    assert pictures.visible("x" * 1000, 10) == "x" * 10


def test_hostile_names_and_words_are_drawn_as_visible_text_and_valid_xml():
    entries = parse_lines(run_of(EVIL).decode())
    assert len(entries) == 6
    picture = pictures.build(entries)
    text = "\n".join(pictures.text(picture, 100))
    assert "\\x1b[31m" in text and "\\u202e" in text
    assert not any(c in text for c in "\x1b\x07\x00\x85\u202e\ud800")
    svg = timeline_svg.svg(picture, title="proctui timeline: /run/a\x01\udcff")
    svg.encode("utf-8")  # no lone surrogate left
    root = ET.fromstring(svg)
    assert "\\x01\\xff" in "".join(root.itertext())


# -- the reader -------------------------------------------------------------------------

@pytest.mark.parametrize(("line", "why"), [
    (b'{"t": Infinity, "kind": "start"}', "Infinity is not JSON"),
    (b'{"t": NaN, "kind": "start"}', "NaN is not JSON"),
    (b'{"t": 1e308, "kind": "start"}', "out of range"),
    (b'{"t": 1e999, "kind": "start"}', "out of range"),
    (b'{"t": true, "kind": "start"}', "no kind or no time"),
    (b'[1, 2]', "not a JSON object"),
    (b'\xff\xfe', "not UTF-8"),
    (b'[' * 100_000, "not JSON"),  # any of the words of a bad document
])
def test_a_bad_line_is_named_never_raised(line, why):
    got = list(read_lines([b'{"t": 1, "kind": "x"}\n', line + b"\n"]))
    assert len(got) == 2 and isinstance(got[1], BadLine) and got[1].number == 2
    if why != "not JSON":
        assert why in got[1].why


def test_a_lone_surrogate_escape_is_an_entry_shown_as_its_escape():
    [entry] = read_lines([b'{"t": 1, "kind": "start", "name": "a\\ud800"}\n'])
    assert isinstance(entry, dict)
    assert pictures.build([entry]).lanes[0].name == "a\\ud800"


# -- the command ---------------------------------------------------------------------------

@pytest.mark.parametrize(("content", "words"), [
    (b'{"t": 1, "kind": "start", "name": "a"}\n{"t": Infinity, "kind": "stop"}\n',
     b"line 2: Infinity is not JSON"),
    (b'{"t": 1e308, "kind": "start", "name": "a"}\n', b"line 1: time 1e+308 out of range"),
    (b'{"t": 1, "kind": "start", "name": "a"}\n\x1b[2J\n', b"line 2: "),
    (b"", b"no journal entries"),
])
def test_timeline_names_the_file_and_the_fault_in_one_line_and_exits_2(tmp_path, content,
                                                                       words):
    directory = journal(tmp_path / "run\x01\udcff",
                        content)
    for extra in ((), ("-o", str(tmp_path / "out.svg"))):
        result = proctui("timeline", "--run-dir", directory, *extra)
        assert result.returncode == 2, result
        assert result.stdout == b""
        assert result.stderr.count(b"\n") == 1, result.stderr
        assert words in result.stderr
        assert b"run\\x01\\xff/journal.jsonl" in result.stderr
        assert b"\x1b" not in result.stderr and b"Traceback" not in result.stderr


def test_timeline_draws_hostile_words_in_text_and_svg(tmp_path):
    directory = journal(tmp_path / "run\x01", run_of(EVIL) + b'{"t": 4, "kind": "sta')
    text = proctui("timeline", "--run-dir", directory, "--width", "120")
    assert text.returncode == 0, text
    assert b"\x1b" not in text.stdout and b"\\x1b[31m" in text.stdout
    out = tmp_path / "out.svg"
    svg = proctui("timeline", "--run-dir", directory, "-o", out)
    assert svg.returncode == 0, svg
    ET.parse(out)


def test_a_symlinked_or_fifo_journal_is_refused(tmp_path):
    real = journal(tmp_path / "real", run_of("a"))
    link = tmp_path / "link"
    link.mkdir()
    (link / "journal.jsonl").symlink_to(real / "journal.jsonl")
    result = proctui("timeline", "--run-dir", link)
    assert result.returncode == 2 and b"a symlink (not followed)" in result.stderr
    fifo = tmp_path / "fifo"
    fifo.mkdir()
    os.mkfifo(fifo / "journal.jsonl")
    result = proctui("timeline", "--run-dir", fifo)  # would block for ever if opened blocking
    assert result.returncode == 2 and b"not a regular file" in result.stderr


def test_memory_holds_summaries_not_entries():
    """A million marks on a thousand processes: bounded lanes and marks, counted."""
    def entries():
        for i in range(200_000):
            yield {"t": float(i), "kind": "extend", "name": f"p{i % 1000}", "who": "process"}
    picture = pictures.build(entries())
    assert len(picture.lanes) == pictures.MAX_LANES
    assert picture.lanes_left_out == 900
    assert all(len(ln.marks) <= pictures.MAX_MARKS for ln in picture.lanes)
    # thinned evenly: the marks kept still span the whole run
    assert all(ln.marks[-1][0] > 0.9 * picture.end for ln in picture.lanes)
    assert "900 more processes" in "\n".join(pictures.text(picture))
    ET.fromstring(timeline_svg.svg(picture))


# -- the picture (issue 20) ---------------------------------------------------------------

def test_the_legend_names_every_kind_of_mark_and_a_wait_is_marked_once():
    entries = [{"t": float(t), "kind": "waiting", "name": "web"} for t in range(3)]
    entries += [{"t": 3.0, "kind": "start", "name": "web"}]
    picture = pictures.build(entries)
    assert [label for _, label in picture.lanes[0].marks] == ["waits"]
    lines = pictures.text(picture, 60)
    legend = " ".join(lines[lines.index(""):])
    assert "▲ signal ·" not in legend and "a wait" in legend and "a decision" in legend
    assert all(len(line) <= 60 for line in lines)


def test_a_deadline_after_the_process_ended_is_not_drawn():
    later: dict[str, object] = {"t": 9.0, "kind": "start", "name": "b"}
    picture = pictures.build([*parse_lines(run_of("a").decode()), later])
    assert picture.lanes[0].deadlines == []


def test_labels_stay_inside_the_picture():
    entries = [{"t": 0.0, "kind": "start", "name": "a"},
               {"t": 10.0, "kind": "decision", "name": "a", "action": "abandon-everything"}]
    root = ET.fromstring(timeline_svg.svg(pictures.build(entries), width=600))
    for node in root.iter("{http://www.w3.org/2000/svg}text"):
        if node.get("font-size") == "10":
            assert float(node.get("x", 0)) + 6.2 * len(node.text or "") <= 600


def test_timeline_after_the_demo_finds_the_demos_run(tmp_path, monkeypatch):
    from proctui.core.store.rundir import default_run_dir

    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "xdg"))
    here = tmp_path / "empty"
    here.mkdir()
    journal(default_run_dir(Path("/proctui/demo")), run_of("slow"))
    result = proctui("timeline", cwd=here, env=dict(os.environ))
    assert result.returncode == 0, result
    assert b"slow" in result.stdout
    # Another run than the one asked for is never drawn without a word.
    assert result.stderr == b"proctui: no proctui.toml or Procfile here: the demo's last run\n"


def test_no_run_or_no_previous_run_is_said_in_words(tmp_path):
    empty = tmp_path / "run"
    empty.mkdir()
    got = proctui("timeline", "--run-dir", empty)
    assert got.returncode == 2 and got.stderr == (
        f"proctui: error: no run is recorded in {empty} (no journal.jsonl): nothing was "
        "started with this config here yet, or --run-dir names another directory\n"
    ).encode()
    journal(empty, run_of("a"))
    got = proctui("timeline", "--run-dir", empty, "--previous")
    assert got.returncode == 2 and got.stderr == (
        f"proctui: error: no run before the last one is recorded in {empty} (no "
        "journal.1.jsonl: it is kept once a second run has started there)\n").encode()


def test_thinning_keeps_what_happened_to_a_process():
    entries: list[dict[str, object]] = [{"t": 0.0, "kind": "start", "name": "a"}]
    entries += [{"t": i / 1000, "kind": "extend", "name": "a", "who": "process"}
                for i in range(1, 100_000)]
    entries += [{"t": 100.0 + i, "kind": "signal", "name": "a", "signal": "SIGTERM"}
                for i in range(10)]
    [lane] = pictures.build(entries).lanes
    assert [label for _, label in lane.marks].count("TERM") == 10
    assert lane.left_out > 0 and len(lane.marks) <= pictures.MAX_MARKS


def test_a_line_too_long_is_named_without_holding_it(tmp_path):
    from proctui.core.store.journal import MAX_LINE, read_file

    path = tmp_path / "journal.jsonl"
    with path.open("wb") as f:
        f.write(b'{"t": 1, "kind": "start", "name": "' + b"x" * (MAX_LINE + (4 << 20)) + b'"}\n')
        f.write(b'{"t": 2, "kind": "start", "name": "b"}\n')
    got = list(read_file(path))
    assert got[0] == BadLine(1, "longer than 16 MB")
    assert got[1] == {"t": 2, "kind": "start", "name": "b"}


def test_long_names_leave_room_for_the_lane():
    picture = pictures.build([{"t": 0.0, "kind": "start", "name": "n" * 200},
                              {"t": 1.0, "kind": "stop", "name": "n" * 200}])
    assert all(len(line) <= 80 for line in pictures.text(picture, 80))


def test_long_names_sharing_a_prefix_are_cut_in_the_middle_and_stay_apart():
    """Two names sharing a long prefix both read "a-very-long-process-name │": cut at the
    end, with no "…", they could not be told apart. Wide names are measured in columns."""
    names = ["a-very-long-process-name-for-testing-the-table-width-01",
             "a-very-long-process-name-for-testing-the-table-width-02", "日本語の名前"]
    entries = [{"t": float(i), "kind": "start", "name": n} for i, n in enumerate(names)]
    lanes = [line for line in pictures.text(pictures.build(entries), 80) if "│" in line]
    heads = [line.split(" │")[0] for line in lanes[:3]]
    # (Cut between whole pieces of the name, the room a piece would not fill left blank.)
    assert "…" in heads[0] and heads[0].rstrip().endswith("01") and \
        heads[1].rstrip().endswith("02"), heads
    assert len({len(h) for h in heads[:2]}) == 1 and heads[2].startswith("日本語の名前")
    from proctui.frontends.printer import cells

    # Every lane's bar in the same column: 日本語の名前 takes 12 columns, not 6.
    assert len({cells(line.split("│")[0]) for line in lanes[:3]}) == 1, lanes
    assert all(len(line) <= 80 for line in lanes[:2])


def test_long_outcomes_and_commands_fold_at_words_not_at_the_edge():
    """At 60 and 80 columns an outcome read "killed with SIGKILL 10s after the stop request
    (3s" and a command "stop ignorer-00-with-a-rather-long-name-to-test-": cut at the
    edge, the rest lost. Folded at words now, every word kept."""
    from proctui.frontends.printer import cells

    name = "ignorer-00-with-a-rather-long-name-to-test-the-quit-panel-ok"
    outcome = "killed with SIGKILL 10s after the stop request (3s stop timeout)"
    entries = [{"t": 0.0, "kind": "start", "name": name},
               {"t": 1.0, "kind": "command", "op": "stop", "name": name, "uid": 0},
               {"t": 2.0, "kind": "outcome", "name": name, "text": outcome,
                "outcome": "killed"}]
    for width in (60, 80):
        lines = pictures.text(pictures.build(entries), width)
        assert all(cells(line) <= width for line in lines), (width, lines)
        words = " ".join(" ".join(lines).replace("│", " ").split())
        # (The name, longer than a row, is cut where the row ends.)
        assert outcome in words and f"stop{name}uid0" in "".join(words.split()), lines


@pytest.mark.slow
def test_a_run_still_going_is_drawn_up_to_now(tmp_path):
    """Three processes started within milliseconds and running since: the picture runs to
    now ("2.5s in all" and more), each lane drawn, not to the last entry ("0.0s in all",
    the lanes scaled to those milliseconds and the last one empty). A finished run, or
    the previous one, ends at its last entry."""
    import re
    import time

    run_dir = tmp_path / "run"
    up = proctui("up", "--run-dir", run_dir, *(f"{n}=sleep 100" for n in "abc"))
    assert up.returncode == 0, up.stderr.decode()
    try:
        began = time.monotonic()
        while time.monotonic() - began < 2.5:  # what is measured is time going by
            time.sleep(0.1)
        got = proctui("timeline", "--run-dir", run_dir, "--width", "80")
        assert got.returncode == 0, got.stderr.decode()
        span = re.search(r"([0-9.]+)s in all", got.stdout.decode())
        assert span and float(span.group(1)) >= 2.5, got.stdout.decode()
        lanes = {line.split("│")[0].strip(): line for line in got.stdout.decode().splitlines()
                 if "│" in line}
        assert set(lanes) >= {"a", "b", "c"}, got.stdout.decode()
        assert all("─" in lanes[n] for n in "abc"), got.stdout.decode()  # each running, drawn
    finally:
        down = proctui("down", "--run-dir", run_dir)
    assert down.returncode == 0, (down.stdout + down.stderr).decode()
    ended = proctui("timeline", "--run-dir", run_dir, "--width", "80")
    span = re.search(r"([0-9.]+)s in all", ended.stdout.decode())
    assert span and float(span.group(1)) < 60, ended.stdout.decode()


@pytest.mark.slow
def test_extend_at_a_question_is_journaled_as_the_decision_it_is(tmp_path):
    """`proctui extend NAME 5` answering a question was written as an extension, never
    as a decision, and the timeline's command list did not say by how much."""
    import json
    import time

    run_dir = tmp_path / "run"
    up = proctui("up", "--run-dir", run_dir, "--stop-timeout", "0.5", "--on-timeout", "ask",
                 "stub=trap '' TERM; while :; do sleep 0.2; done")
    assert up.returncode == 0, up.stderr.decode()
    try:
        assert proctui("stop", "--run-dir", run_dir, "stub").returncode == 0
        deadline = time.monotonic() + 30
        while b"decide" not in proctui("status", "--run-dir", run_dir).stdout:
            assert time.monotonic() < deadline, "no question"
            time.sleep(0.1)
        extend = proctui("extend", "--run-dir", run_dir, "stub", "5")
        assert extend.returncode == 0, (extend.stdout + extend.stderr).decode()
        got = proctui("timeline", "--run-dir", run_dir, "--width", "100").stdout.decode()
        assert "extend stub by 5s" in got, got
    finally:
        proctui("kill", "--run-dir", run_dir, "stub")
        down = proctui("down", "--run-dir", run_dir)
    assert b"killed with SIGKILL by operator" in down.stdout, down.stdout + down.stderr
    entries = [json.loads(line) for line in (run_dir / "journal.jsonl").read_text().splitlines()]
    decisions = [e for e in entries if e["kind"] == "decision" and e.get("name") == "stub"]
    assert decisions[0]["action"] == "extend" and decisions[0]["by"] == 5, decisions
    assert not [e for e in entries if e["kind"] == "extend"], "the answer is not an extension"


def test_a_wait_with_no_deadline_is_drawn_as_stopping_not_as_a_question():
    """The operator's "wait, no deadline" was drawn as "?" (waiting for a decision) for
    the rest of the stop."""
    from proctui.frontends import timeline as pictures

    builder = pictures.Builder()
    for e in ({"t": 1.0, "kind": "start", "name": "stub"},
              {"t": 2.0, "kind": "stop", "name": "stub"},
              {"t": 2.0, "kind": "deadline", "name": "stub", "phase": "stopping",
               "deadline": 3.0},
              {"t": 3.0, "kind": "deadline", "name": "stub", "phase": "deciding",
               "deadline": None},
              {"t": 4.0, "kind": "decision", "name": "stub", "action": "wait"},
              {"t": 9.0, "kind": "outcome", "name": "stub", "outcome": "stopped",
               "text": "stopped after 7.0s: exit code 0"}):
        builder.add(e)
    (lane,) = builder.picture().lanes
    assert [(a, b, phase) for a, b, phase in lane.segments if a >= 2.0] == [
        (2.0, 3.0, "stopping"), (3.0, 4.0, "deciding"), (4.0, 9.0, "stopping")]
