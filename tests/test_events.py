"""``proctui events`` (a stream of changes for scripts that watch), ``extend NAME
--no-deadline`` and how long a decision has waited in ``status``: the installed CLI against
a real detached supervisor and real processes."""

from __future__ import annotations

import json
import re
import subprocess
import threading
from pathlib import Path

import pytest

from tests.children import STUBBORN
from tests.conftest import PY, wait_until
from tests.test_detach import detached, proctui, toml_str  # noqa: F401 (a fixture)

CRASH = "import time; print('up', flush=True); time.sleep(0.5); raise SystemExit(3)"


def config(tmp_path: Path) -> Path:
    path = tmp_path / "events.toml"
    path.write_text(f"""
[processes.crash]
cmd = [{toml_str(PY)}, "-c", {toml_str(CRASH)}]
restart = "on-failure"
ready = {{ log = "up" }}

[processes.stubborn]
cmd = [{toml_str(PY)}, "-c", {toml_str(STUBBORN)}]
ready = {{ log = "ready" }}
stop_timeout = 1
on_timeout = "ask"
""")
    return path


class Watcher:
    """``proctui events ARGS`` read line by line on a thread, as a script would."""

    def __init__(self, run_dir: Path, *args: str) -> None:
        self.proc = subprocess.Popen(
            [PY, "-m", "proctui", "events", "--run-dir", str(run_dir), *args],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            stdin=subprocess.DEVNULL)
        self.lines: list[str] = []
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))

    def events(self) -> list[dict]:  # type: ignore[type-arg]
        return [json.loads(line) for line in list(self.lines)]

    def wait_for(self, kind: str, name: str | None = None, timeout: float = 30.0) -> dict:  # type: ignore[type-arg]
        try:
            return wait_until(lambda: next((e for e in self.events() if e["event"] == kind
                                            and (name is None or e["name"] == name)), None),
                              timeout=timeout, what=f"event {kind} {name}")  # type: ignore[return-value]
        except AssertionError as e:
            said = ""
            if self.proc.poll() is not None and self.proc.stderr is not None:
                said = f"; it exited {self.proc.returncode}: {self.proc.stderr.read()!r}"
            raise AssertionError(f"{e}; got {[x['event'] for x in self.events()]}{said}") \
                from None

    def finish(self, timeout: float = 30.0) -> int:
        try:
            code = self.proc.wait(timeout)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
        self.thread.join(5)
        if code != 0 and self.proc.stderr is not None:
            print(f"events {self.proc.args[4:]} exited {code}: {self.proc.stderr.read()!r}")
        return code


@pytest.mark.slow
def test_events_json_follows_a_run_from_hello_to_end(tmp_path, detached):  # noqa: F811
    d = detached(config(tmp_path))
    everything = Watcher(d.run_dir, "--json")
    only = Watcher(d.run_dir, "--json", "--name", "stubborn")
    words = Watcher(d.run_dir)
    try:
        hello = everything.wait_for("hello")
        assert hello["schema"] == 1 and hello["supervisor"]["pid"] == d.pid
        assert {p["name"] for p in hello["processes"]} == {"crash", "stubborn"}
        ready = everything.wait_for("ready", "crash")
        assert ready["after_s"] is not None and 0 <= ready["after_s"] < 30
        restart = everything.wait_for("restart", "crash")
        assert restart["restarts"] >= 1
        outcome = everything.wait_for("outcome", "crash")
        assert outcome["outcome"]["kind"] == "exited" and outcome["outcome"]["exit_code"] == 3
        assert d.ctl("stop", "stubborn").returncode == 0
        pending = everything.wait_for("decision-pending", "stubborn")
        assert pending["choices"] == "kill|extend|abandon|wait"
        # status says how long the decision has waited, in words and in JSON.
        wait_until(lambda: d.status()["stubborn"]["decision_since_s"] >= 1.0,
                   what="a decision waiting a second")
        text = d.ctl("status").stdout
        assert re.search(r"decide! .*waiting for a decision, [1-9][0-9]?s so far", text), text
        waited = d.ctl("extend", "stubborn", "--no-deadline")
        assert waited.returncode == 0, waited.stderr
        answered = everything.wait_for("decision-answered", "stubborn")
        assert answered["then"] == "stopping"
        assert "waiting without a deadline" in d.status()["stubborn"]["detail"]
        assert d.ctl("kill", "stubborn").returncode == 0
        killed = everything.wait_for("outcome", "stubborn")
        assert killed["outcome"]["signal"] == "SIGKILL"
        assert proctui("down", "--run-dir", str(d.run_dir), cwd=tmp_path).returncode == 1
        begun = everything.wait_for("shutdown-begun")
        assert begun["why"] == "proctui down"
        ended = everything.wait_for("shutdown-ended")
        assert ended["exit_status"] == 1
        assert everything.finish() == 0
        assert only.finish() == 0
        assert words.finish() == 0
    finally:
        for w in (everything, only, words):
            if w.proc.poll() is None:
                w.proc.kill()
                w.proc.wait()
    got = everything.events()
    assert got[-1]["event"] == "end"
    assert all(e["schema"] == 1 and "time" in e for e in got)
    assert [e for e in got if e["event"] == "state" and e["name"] == "stubborn"
            and e["state"] == "deciding"]
    # --name: only that process's changes, and the supervisor's own.
    assert {e["name"] for e in only.events()} <= {None, "stubborn"}
    assert any(e["event"] == "decision-pending" for e in only.events())
    # Text: one line a change, with the time first.
    text = "\n".join(words.lines)
    assert "stubborn: stop timeout reached: waiting for a decision" in text, text
    assert "stopping everything (proctui down)" in text, text
    assert words.lines[-1].endswith("the supervisor has ended (exit status 1)")


@pytest.mark.slow
def test_a_reader_without_the_journal_file_gets_the_last_page_before_the_goodbye(
        tmp_path, detached, monkeypatch):  # noqa: F811
    """Over --host there is no journal file to read the rest from: the supervisor's
    goodbye waits for an events reader to ask for the pages its last state announced.
    The reader is made slow to ask on purpose (as a reader at the end of a long link is);
    before, the connection closed first and the last outcomes and the end were lost."""
    import io
    import time

    from proctui.frontends import events
    from proctui.remote.client import Connection

    path = tmp_path / "quiet.toml"
    path.write_text(f"""
[processes.quiet]
cmd = [{toml_str(PY)}, "-c", "import time; print('ready', flush=True); time.sleep(300)"]
ready = {{ log = "ready" }}
""")
    d = detached(path)
    conn = Connection.open(d.run_dir)
    call = conn.call

    def slow_call(request):  # type: ignore[no-untyped-def]
        if conn.state.all_ended:
            time.sleep(0.5)  # the last state is here: its page is asked for late
        return call(request)

    monkeypatch.setattr(conn, "call", slow_call)
    out = io.StringIO()
    got: list[int] = []
    reader = threading.Thread(target=lambda: got.append(
        events.stream(conn, True, [], out, local=False)), daemon=True)
    reader.start()
    try:
        wait_until(lambda: '"event": "hello"' in out.getvalue(), what="the hello")
        assert proctui("down", "--run-dir", str(d.run_dir), cwd=tmp_path).returncode == 0
        reader.join(30)
    finally:
        conn.close()
    said = [json.loads(line) for line in out.getvalue().splitlines()]
    kinds = [e["event"] for e in said]
    assert got == [0], kinds
    assert "shutdown-ended" in kinds, kinds
    assert any(e["event"] == "outcome" and e["name"] == "quiet" for e in said), kinds
    assert kinds[-1] == "end" and said[-1]["exit_status"] is not None


def test_events_without_a_supervisor_is_one_line_and_exit_2(tmp_path):
    got = proctui("events", "--json", "--run-dir", str(tmp_path / "none"), cwd=tmp_path)
    assert got.returncode == 2
    assert got.stdout == ""
    assert len(got.stderr.strip().splitlines()) == 1, got.stderr
    assert "no supervisor is running" in got.stderr


@pytest.mark.slow
def test_extend_words_for_every_bad_form(tmp_path, detached):  # noqa: F811
    d = detached(config(tmp_path))
    for args, words in ((["-5"], "extend: SECONDS '-5' is not a duration > 0"),
                        ([], "extend: give SECONDS (10, 1.5, 10s, 2m, 1h30m) or "
                             "--no-deadline"),
                        (["5", "--no-deadline"], "or --no-deadline, not both")):
        got = d.ctl("extend", "stubborn", *args)
        assert got.returncode == 2, (args, got)
        assert words in got.stderr and "No such option" not in got.stderr, got.stderr
        assert len(got.stderr.strip().splitlines()) == 1
    # Not stopping: the core's own words, exit 1.
    got = d.ctl("extend", "stubborn", "--no-deadline")
    assert got.returncode == 1, got
    assert got.stdout.strip()
    proctui("down", "--run-dir", str(d.run_dir), cwd=tmp_path)


def test_a_reader_that_goes_away_ends_the_stream_while_nothing_changes(tmp_path,
                                                                       detached):  # noqa: F811
    quiet = tmp_path / "quiet.toml"
    quiet.write_text(f'[processes.idle]\ncmd = [{toml_str(PY)}, "-c", '
                     f'"import time; time.sleep(300)"]\n')
    d = detached(quiet)
    piped = subprocess.run(f"{PY} -m proctui events --json --run-dir {d.run_dir} | head -1",
                           shell=True, capture_output=True, text=True, timeout=30)
    assert json.loads(piped.stdout)["event"] == "hello" and piped.stderr == ""
    proctui("down", "--run-dir", str(d.run_dir), cwd=tmp_path)


def test_what_the_supervisor_journaled_as_it_ended_is_read_from_its_journal(tmp_path):
    """Its last state came, then the connection closed before the pages it announced
    could be asked for (``shutdown-begun`` was lost 1 run in 4): they are read from the
    journal it left, by number, each once."""
    import io
    from types import SimpleNamespace

    from proctui.core.reply import Fault, failed
    from proctui.frontends.events import stream

    entries = [{"seq": 1, "kind": "start", "name": "web", "pid": 7, "wall": 1.0, "t": 1.0},
               {"seq": 2, "kind": "shutdown", "why": "proctui down", "wall": 2.0, "t": 2.0},
               {"seq": 3, "kind": "outcome", "name": "web", "outcome": "stopped",
                "text": "stopped after 0.1s: exit code 0", "wall": 3.0, "t": 3.0},
               {"seq": 4, "kind": "all-ended", "exit_status": 0, "wall": 4.0, "t": 4.0}]
    (tmp_path / "journal.jsonl").write_text("".join(json.dumps(e) + "\n" for e in entries))

    class Ending:
        names = ["web"]
        hello = SimpleNamespace(pid=1, version="x", source="f", run_dir=str(tmp_path),
                                started=0.0)
        state = SimpleNamespace(journal_seq=1, shutting_down=False, shutdown_why=None,
                                all_ended=False, exit_status=None)
        said = 0

        def ordered_views(self) -> list[object]:
            return []

        def send(self, message: object) -> None:
            pass

        def call(self, request: object) -> object:
            return failed(Fault.GONE, "the supervisor is not running")

        def event(self) -> object:
            self.said += 1
            return {"t": "state"} if self.said == 1 else None

        def keep(self, push: object) -> bool:
            self.state = SimpleNamespace(journal_seq=4, shutting_down=True,
                                         shutdown_why="proctui down", all_ended=True,
                                         exit_status=0)
            return True

    out = io.StringIO()
    assert stream(Ending(), True, [], out) == 0  # type: ignore[arg-type]
    got = [json.loads(line)["event"] for line in out.getvalue().splitlines()]
    assert got == ["hello", "shutdown-begun", "outcome", "state", "shutdown-ended", "end"], got
