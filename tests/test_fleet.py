"""Fleet files: the boxes ``status`` and ``down`` reach at once. Bad input is one line
naming the file, the box and the key, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from proctui.config import ConfigError
from proctui.config.fleet import Box, boxes, load_fleet


def test_boxes_in_the_files_order_then_each_host(tmp_path):
    fleet = tmp_path / "fleet.toml"
    fleet.write_text('[boxes.zeta]\nssh = "pi@zeta"\nrun_dir = "/srv/run"\n\n'
                     '[boxes.alpha]\nssh = "alpha"\nfile = "/srv/proctui.toml"\n')
    assert boxes(["extra"], fleet, None, Path("/r")) == [
        Box("zeta", "pi@zeta", Path("/srv/run")),
        Box("alpha", "alpha", file=Path("/srv/proctui.toml")),
        Box("extra", "extra", Path("/r"))]


@pytest.mark.parametrize(("text", "said"), [
    ("", "no boxes: add at least one [boxes.NAME] with ssh = DEST"),
    ("[boxes.a]\nnothing = 1\n", "box 'a': key 'nothing': unknown key"),
    ("[boxes.a]\n", "box 'a': key 'ssh': missing (the box's ssh destination; or, for a "
                    "supervisor on this machine, run_dir or file)"),
    ("[boxes.a]\nssh = '-oProxyCommand=x'\n",
     "box 'a': key 'ssh': must not start with '-' (ssh would read an option)"),
    ("[boxes.a]\nssh = 'a'\nport = 22\n",
     "box 'a': key 'port': unknown key (known: ssh, run_dir, file)"),
    ("[boxes.a]\nssh = 5\n", "box 'a': key 'ssh': must be a non-empty string on one line"),
    ("[boxes.a]\nssh = \"a\\nb\"\n",
     "box 'a': key 'ssh': must be a non-empty string on one line"),
    ("[boxes.'a b']\nssh = 'a'\n", "box name 'a b': letters, digits and _.@- only, 64 at most"),
    ("[hosts.a]\nssh = 'a'\n", "unknown table 'hosts' (only [boxes.NAME])"),
    ("[boxes\n", "not valid TOML: "),
    ("boxes = 3\n", "no boxes: add at least one [boxes.NAME] with ssh = DEST"),
    ("[boxes]\na = 3\n", "box 'a': must be a table with ssh = DEST"),
])
def test_bad_fleet_files_are_one_line(tmp_path, text, said):
    fleet = tmp_path / "fleet.toml"
    fleet.write_text(text)
    with pytest.raises(ConfigError) as e:
        load_fleet(fleet)
    assert str(e.value).startswith(f"{fleet}: {said}"), str(e.value)
    assert "\n" not in str(e.value)


def test_a_box_named_twice_is_refused(tmp_path):
    fleet = tmp_path / "fleet.toml"
    fleet.write_text('[boxes.a]\nssh = "a"\n')
    with pytest.raises(ConfigError, match="box 'a' given twice"):
        boxes(["a"], fleet, None, None)


def test_a_fleet_file_that_is_not_utf8_or_missing_is_one_line(tmp_path):
    fleet = tmp_path / "fleet.toml"
    fleet.write_bytes(b'[boxes.a]\nssh = "\xff"\n')
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_fleet(fleet)
    with pytest.raises(ConfigError, match="cannot read it: No such file"):
        load_fleet(tmp_path / "none.toml")


def test_a_fleet_down_summary_is_folded_at_spaces_under_the_outcome_on_a_terminal():
    """A fleet down's summary was written whole: at 100 columns the terminal cut it
    mid-word ("exit cod" / "e 0"). Into a pipe (no width) each line stays one line."""
    from proctui.frontends.hosts import summary

    outcome = ("killed with SIGKILL after 3s stop timeout (the leader ended, exit code 0; "
               "the rest of its group did not)")
    rows = [("edge-3", f"forks-child  {outcome}"), ("edge-10", "web  stopped after 0.3s")]
    lines = summary(rows, 7, 100)
    assert lines[0] == "proctui | summary:"
    assert all(len(line) <= 100 for line in lines)
    assert lines[1].startswith("proctui | edge-3   forks-child  killed")
    hang = lines[1].index("killed")
    assert lines[2].startswith("proctui | ") and lines[2][len("proctui | "):hang].strip() == ""
    assert lines[2][hang] != " "  # its continuation under the outcome
    assert " ".join(" ".join(line[hang:].split()) for line in lines[1:3]) == outcome
    assert summary(rows, 7, None)[1] == f"proctui | edge-3   forks-child  {outcome}"
