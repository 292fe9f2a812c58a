"""``proctui signal NAME SIGNAL``, a command added as one module (proctui/commands/signal.py):
its words, its faults, a real child that traps the signal, the journal saying who sent
it, and every door the table gives it (the command line, ``--host``, the console's
palette, the README's table)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
from pathlib import Path

import pytest

from proctui.commands import COMMANDS
from proctui.commands.signal import Signal, signal_number
from proctui.core.life.stop import Phase
from proctui.core.reply import Fault
from proctui.core.store.rundir import RunDir
from proctui.core.supervisor import Supervisor
from tests.conftest import PY, alive, pyspec, wait_until
from tests.sshd import sshd_server  # noqa: F401  (the fixture sshd)
from tests.test_detach import Detached, toml_str
from tests.test_ssh import box  # noqa: F401  (a fixture)
from tests.test_ssh import ctl as ssh_ctl

# Says which signal came, and goes on running; ends on SIGTERM.
TRAPS = (
    "import signal,sys,time\n"
    "def said(sig, frame): print('got', signal.Signals(sig).name, flush=True)\n"
    "for s in (signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2): signal.signal(s, said)\n"
    "signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))\n"
    "print('ready', flush=True)\n"
    "while True: time.sleep(0.05)\n"
)


@pytest.mark.parametrize(("word", "number"), [
    ("HUP", signal.SIGHUP), ("sighup", signal.SIGHUP), (" usr1 ", signal.SIGUSR1),
    (str(int(signal.SIGUSR2)), signal.SIGUSR2), ("STOP", signal.SIGSTOP),
    ("RTMIN+1", signal.SIGRTMIN + 1)])
def test_a_signal_by_name_or_number(word: str, number: int) -> None:
    assert signal_number(word) == number
    assert Signal.from_words(("web", word)) == [Signal("web", word)]


@pytest.mark.parametrize("words", [(), ("web",), ("web", "HUP", "USR1"), ("web", "NOPE"),
                                   ("web", "99"), ("web", "0"), ("web", "²"),
                                   ("web", "x" * 5000)])
def test_bad_words_are_one_line(words: tuple[str, ...]) -> None:
    said = Signal.from_words(words)
    assert isinstance(said, str) and "\n" not in said and len(said) < 200, said


def test_it_is_in_the_table_with_words_for_every_door() -> None:
    assert COMMANDS["signal"] is Signal and Signal.cli is not None and Signal.acts
    assert Signal.journaled  # who sent it is kept
    words = [w for w, _ in Signal.palette_entries()]
    assert any("SIGHUP" in w for w in words) and any("SIGUSR1" in w for w in words)
    made = dict(Signal.palette_entries())
    assert made[words[0]]("web") == Signal("web", "SIGHUP")


def printed(sup: Supervisor) -> str:
    return "\n".join(sup.output.buffer("svc").read(0).lines)


@pytest.fixture
def traps(tmp_path: Path):  # type: ignore[no-untyped-def]
    run_dir = RunDir(tmp_path / "run")
    run_dir.open()
    sup = Supervisor([pyspec("svc", TRAPS), pyspec("gone", "print('bye')")],
                     run_dir=run_dir)
    sup.start()
    try:
        wait_until(lambda: "ready" in printed(sup),
                   what="svc ready")
        yield sup, run_dir
    finally:
        from proctui.commands.abandon_all import AbandonAll
        from proctui.commands.kill_all import KillAll

        sup.send(KillAll()).result(timeout=10)
        sup.send(AbandonAll()).result(timeout=10)
        sup.close()
        run_dir.close()


def test_the_process_gets_it_goes_on_running_and_the_journal_says_who(traps) -> None:  # type: ignore[no-untyped-def]
    sup, run_dir = traps
    svc = next(v for v in sup.snapshot().views if v.name == "svc")
    reply = sup.send(Signal("svc", "hup"), who={"uid": os.getuid()}).result(timeout=10)
    assert reply.ok, reply
    assert reply.text == f"SIGHUP sent to svc (process group {svc.pid})"
    wait_until(lambda: "got SIGHUP" in printed(sup),
               what="svc to say it got SIGHUP")
    reply = sup.send(Signal("svc", str(int(signal.SIGUSR1)))).result(timeout=10)
    assert reply.ok and "SIGUSR1 sent to svc" in reply.text, reply
    wait_until(lambda: "got SIGUSR1" in printed(sup),
               what="svc to say it got SIGUSR1")
    after = next(v for v in sup.snapshot().views if v.name == "svc")
    assert after.phase is Phase.RUNNING and after.pid == svc.pid and alive(svc.pid)

    journal = [json.loads(line) for line in
               (run_dir.path / "journal.jsonl").read_text().splitlines()]
    said = [e for e in journal if e["kind"] == "command" and e.get("op") == "signal"]
    assert said and said[0]["name"] == "svc" and said[0]["signal"] == "SIGHUP"
    assert said[0]["uid"] == os.getuid()
    sent = [e for e in journal if e["kind"] == "signal" and e.get("name") == "svc"]
    assert sent and sent[0]["signal"] == "SIGHUP"


def test_its_faults(traps) -> None:  # type: ignore[no-untyped-def]
    sup, _ = traps
    wait_until(lambda: next(v for v in sup.snapshot().views if v.name == "gone").outcome,
               what="gone to end")
    got = sup.send(Signal("nobody", "HUP")).result(timeout=10)
    assert not got.ok and got.fault is Fault.UNKNOWN_NAME
    got = sup.send(Signal("gone", "HUP")).result(timeout=10)
    assert not got.ok and got.fault is Fault.NOT_RUNNING, got
    # A value no door's words would make, sent as it is: refused, nothing sent.
    got = sup.send(Signal("svc", "NOPE")).result(timeout=10)
    assert not got.ok and got.fault is Fault.BAD_VALUE and "NOPE" in got.text, got


def config(tmp_path: Path) -> Path:
    path = tmp_path / "proctui.toml"
    path.write_text(f"""
[processes.svc]
cmd = [{toml_str(PY)}, "-c", {toml_str(TRAPS)}]
""")
    return path


@pytest.mark.slow
def test_from_the_command_line(tmp_path, child_reaper) -> None:  # type: ignore[no-untyped-def]
    d = Detached(tmp_path, config(tmp_path))
    try:
        d.wait_for("svc", "running", lambda p: p["state"] == "running")
        got = d.ctl("signal", "svc", "USR2")
        assert got.returncode == 0, (got.stdout, got.stderr)
        assert got.stdout.startswith("SIGUSR2 sent to svc (process group "), got.stdout
        wait_until(lambda: "got SIGUSR2" in d.ctl("logs", "svc").stdout,
                   what="svc to say it got SIGUSR2")
        got = d.ctl("signal", "svc", "NOPE")
        assert got.returncode == 2 and got.stdout == ""
        assert got.stderr.splitlines() == [
            "proctui: error: signal: 'NOPE' is not a signal on this system (a name such as "
            "HUP, USR1, TERM, or its number)"], got.stderr
        got = d.ctl("signal", "nobody", "HUP")
        assert got.returncode == 2 and got.stderr == (
            "proctui: error: no process named 'nobody' (there are: svc)\n"), got.stderr
        helped = d.ctl("signal", "--help")
        assert "Send SIGNAL to NAME" in helped.stdout and "NAME SIGNAL" in helped.stdout
        listed = subprocess.run([PY, "-m", "proctui", "--help"], capture_output=True,
                                text=True, timeout=60).stdout
        assert re.search(r"^  signal +Send SIGNAL to NAME", listed, re.M), listed
    finally:
        d.kill()


def test_the_readme_table_lists_it() -> None:
    readme = (Path(__file__).parent.parent / "README.md").read_text()
    assert "| `proctui signal NAME SIGNAL` |" in readme


@pytest.mark.slow
def test_over_host_the_box_reads_the_name_and_the_journal_says_who(box):  # noqa: F811
    d, env = box
    where = ("--host", "box", "--run-dir", str(d.run_dir))
    status = json.loads(ssh_ctl(env, "status", "--json", *where).stdout)
    svc = next(p["pid"] for p in status["processes"] if p["name"] == "svc")
    got = ssh_ctl(env, "signal", "svc", "term", *where)
    assert got.returncode == 0, (got.stdout, got.stderr)
    assert got.stdout == f"SIGTERM sent to svc (process group {svc})\n"
    wait_until(lambda: not alive(svc), timeout=20, what="svc to end on its SIGTERM")
    journal = [json.loads(line) for line in
               (d.run_dir / "journal.jsonl").read_text().splitlines()]
    (said,) = [e for e in journal if e["kind"] == "command" and e["op"] == "signal"]
    assert said["name"] == "svc" and said["signal"] == "SIGTERM"
    assert said["uid"] == os.getuid() and said["ssh"].split()[0] == "127.0.0.1"


async def test_the_console_palette_offers_it_on_the_selected_process() -> None:
    from tests import fake_core
    from tests.fake_core import FakeCore
    from tests.test_console_controllers import SIZE, console, said, sent

    core = FakeCore(fake_core.running())
    core.answers["signal"] = {"ok": True, "text": "SIGHUP sent to web (process group 7)"}
    app = console(core)
    async with app.run_test(size=SIZE) as pilot:
        commands = {c.title: c for c in app.get_system_commands(app.screen)}
        hup = commands["Send SIGHUP to the selected process (re-read its configuration)"]
        assert hup.help.startswith("web")
        assert "Send SIGUSR1 to the selected process (reopen its logs)" in commands
        hup.callback()
        await pilot.pause(0.1)
        assert sent(core)[-1] == Signal("web", "SIGHUP")
        assert any("SIGHUP sent to web" in line for line in said(app)), said(app)
