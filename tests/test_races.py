"""What the life machine decides, met as users met it: a start or restart during a
shutdown, leftovers stopped after a crash in dependency order, a command line that is
not UTF-8. Real processes, a real supervisor, the real commands."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time

import pytest

from proctui.commands.restart import Restart
from proctui.commands.start import Start
from proctui.commands.stop_all import StopAll
from proctui.core.life.stop import Phase
from tests.children import POLITE, STUBBORN
from tests.conftest import PY, alive, processes_with_token, pyspec, wait_until
from tests.test_detach import proctui, toml_str


@pytest.mark.slow
def test_a_start_or_restart_during_a_shutdown_is_refused_and_the_shutdown_ends(harness):
    h = harness([pyspec("stubborn", STUBBORN, stop_timeout=2.0),
                 pyspec("ticker", POLITE)], interactive=False)
    h.wait_output("stubborn", "ready")
    h.wait_output("ticker", "ready")
    began = time.monotonic()
    assert h.sup.send(StopAll()).result(timeout=10).ok
    h.outcome("ticker")
    for ask in (Start, Restart):
        reply = h.sup.send(ask("ticker")).result(timeout=10)
        assert not reply.ok and "everything is stopping" in reply.text, reply
    reply = h.sup.send(Restart("stubborn")).result(timeout=10)
    assert not reply.ok, reply
    h.wait_all_ended(timeout=20)
    # Within its stop timeout and the kill, with room for a busy machine: never for ever.
    assert time.monotonic() - began < 2.0 + 5.0 + 5.0
    assert h.view("ticker").phase is Phase.ENDED
    assert "killed with SIGKILL after 2s stop timeout" in h.outcome("stubborn").text
    started = [e for e in h.log if getattr(e, "text", "").startswith("started (pid")]
    assert len(started) == 2  # nothing started again


@pytest.mark.slow
def test_start_during_down_is_refused_and_down_returns(tmp_path, child_reaper):
    config = tmp_path / "proctui.toml"
    config.write_text(f"""
[processes.ticker]
cmd = [{toml_str(PY)}, "-c", {toml_str(POLITE)}]

[processes.hung]
cmd = [{toml_str(PY)}, "-c", {toml_str(STUBBORN)}]
stop_timeout = 3
""")
    where = ("--run-dir", str(tmp_path / "run"))
    up = proctui("up", "-f", str(config), *where, cwd=tmp_path)
    assert up.returncode == 0, up.stderr
    supervisor = int(up.stdout.split("(pid ")[1].split(")")[0])
    try:
        wait_until(lambda: "ready" in proctui("logs", "hung", *where, cwd=tmp_path).stdout,
                   what="hung ready")
        began = time.monotonic()
        down = subprocess.Popen([PY, "-m", "proctui", "down", *where], cwd=tmp_path,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wait_until(lambda: (json.loads(proctui("status", "--json", *where, cwd=tmp_path)
                                       .stdout or "{}").get("supervisor") or {})
                   .get("shutting_down"), what="the shutdown to begin")
        for verb in ("start", "restart"):
            got = proctui(verb, "ticker", *where, cwd=tmp_path)
            assert "everything is stopping" in got.stdout + got.stderr, (got.stdout, got.stderr)
            assert got.returncode != 0
        out, _err = down.communicate(timeout=30)
        assert time.monotonic() - began < 3 + 5 + 10, out
        assert "hung: killed with SIGKILL after 3s stop timeout" in out, out
        assert not alive(supervisor)
        assert not processes_with_token(child_reaper)
        journal = [json.loads(line) for line in
                   (tmp_path / "run" / "journal.jsonl").read_text().splitlines()]
        assert [e["why"] for e in journal if e["kind"] == "shutdown"] == ["proctui down"]
    finally:
        if alive(supervisor):
            os.kill(supervisor, signal.SIGKILL)


TERM_NOTES = (
    "import signal,sys,time,os\n"
    "def bye(*a):\n"
    "    open(os.environ['NOTE'], 'a').write(f'{{sys.argv[1]}} term {{time.monotonic()}}\\n')\n"
    "    time.sleep({delay})\n"
    "    open(os.environ['NOTE'], 'a').write(f'{{sys.argv[1]}} exit {{time.monotonic()}}\\n')\n"
    "    sys.exit(0)\n"
    "signal.signal(signal.SIGTERM, bye)\n"
    "print('ready', flush=True)\n"
    "while True: time.sleep(0.05)\n"
)


@pytest.mark.slow
def test_leftovers_of_a_crashed_supervisor_stop_in_dependency_order(tmp_path, child_reaper):
    note = tmp_path / "notes"
    config = tmp_path / "proctui.toml"
    config.write_text(f"""
[defaults]
stop_timeout = 10

[processes.db]
cmd = [{toml_str(PY)}, "-c", {toml_str(TERM_NOTES.format(delay=0.1))}, "db"]
env = {{ NOTE = {toml_str(str(note))} }}

[processes.web]
cmd = [{toml_str(PY)}, "-c", {toml_str(TERM_NOTES.format(delay=1.5))}, "web"]
env = {{ NOTE = {toml_str(str(note))} }}
depends_on = ["db"]
""")
    run_dir = tmp_path / "run"
    first = subprocess.Popen([PY, "-m", "proctui", "run", "--headless", "-f", str(config),
                              "--run-dir", str(run_dir)], cwd=tmp_path,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                             start_new_session=True)
    try:
        # Both printed "ready" (a print after proctui died would end them by SIGPIPE).
        logs = [run_dir / "logs" / f"{n}.log" for n in ("db", "web")]
        wait_until(lambda: all(log.exists() and "ready" in log.read_text() for log in logs)
                   and len(list(run_dir.glob("*.pid"))) == 2, timeout=30,
                   what="db and web ready")
        first.kill()  # SIGKILL: no shutdown, PID files stay, both keep running
        first.wait(10)
        second = subprocess.run([PY, "-m", "proctui", "run", "--headless", "-f", str(config),
                                 "--run-dir", str(run_dir), "--stop-after", "0"],
                                cwd=tmp_path, capture_output=True, text=True, timeout=60)
        assert "Traceback" not in second.stderr, second.stderr
        first_journal = (run_dir / "journal.1.jsonl").read_text()[-3000:]
        assert "db (leftover)" in second.stdout and "stops after web (leftover)" in \
            second.stdout, (second.stdout, note.read_text() if note.exists() else "",
                            first_journal)
        notes = {tuple(line.split()[:2]): float(line.split()[2])
                 for line in note.read_text().splitlines()}
        # db got its stop signal only once web had ended.
        assert notes[("db", "term")] >= notes[("web", "exit")], notes
    finally:
        if first.poll() is None:
            first.kill()


def test_a_command_line_that_is_not_utf8_runs_and_is_stopped_like_any_other(tmp_path,
                                                                            child_reaper):
    argv = [os.fsencode(PY), b"-m", b"proctui", b"run", b"--headless", b"--run-dir",
            os.fsencode(str(tmp_path / "run")), b"--stop-after", b"1",
            b"odd=sleep 100 # caf\xe9 \xff"]
    got = subprocess.run(argv, capture_output=True, timeout=60, cwd=tmp_path)
    out = got.stdout.decode(errors="replace")
    assert b"Traceback" not in got.stderr, got.stderr
    assert got.returncode == 0, (out, got.stderr)
    assert "odd: stopped after" in out and "terminated by SIGTERM" in out, out
    assert not processes_with_token(child_reaper)
    journal = (tmp_path / "run" / "journal.jsonl").read_bytes()
    assert b'"kind": "outcome"' in journal


@pytest.mark.slow
def test_the_journal_says_why_a_shutdown_began(tmp_path, child_reaper):
    def why_of(*extra: str, signum: int | None = None) -> list[str]:
        run_dir = tmp_path / f"run{signum}"
        proc = subprocess.Popen([PY, "-m", "proctui", "run", "--headless", "--run-dir",
                                 str(run_dir), *extra, "a=sleep 100"], cwd=tmp_path,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert proc.stdout is not None
        proc.stdout.readline()  # started
        if signum is not None:
            proc.send_signal(signum)
        proc.communicate(timeout=30)
        entries = [json.loads(line) for line in (run_dir / "journal.jsonl").read_text()
                   .splitlines()]
        return [e["why"] for e in entries if e["kind"] == "shutdown"]

    assert why_of("--stop-after", "0.2") == ["--stop-after"]
    assert why_of(signum=signal.SIGTERM) == ["SIGTERM"]
    assert why_of(signum=signal.SIGINT) == ["SIGINT"]
