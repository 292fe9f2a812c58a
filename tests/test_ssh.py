"""``--host``: attach and control a proctui on another box through the operator's own
SSH, against a real OpenSSH server on 127.0.0.1 (tests/sshd.py), a real supervisor
started with ``proctui up``, and the ssh client killed to drop the link. Also the box's
``proctui stdio`` helper on its own (its ends), and the clock translation against a
supervisor whose monotonic clock is far from ours."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from proctui.protocol import wire
from proctui.protocol.pushes import State
from proctui.protocol.replies import Fault
from proctui.remote.client import Connection, NoSupervisor, RemoteCore
from proctui.remote.dial import over_ssh
from tests import table as commands
from tests.conftest import PY, alive, processes_with_token, wait_until
from tests.sshd import SecondSshd, Sshd, sshd_server  # noqa: F401  (the fixture sshd)
from tests.test_detach import Detached, write_config

# The real console on a pty, the wheel, ssh or hundreds of processes: the second
# CI stage (README: "Tests").
pytestmark = pytest.mark.slow


def ctl(env: dict[str, str], *args: str, timeout: float = 90.0) -> \
        subprocess.CompletedProcess[str]:
    got = subprocess.run([PY, "-m", "proctui", *args], capture_output=True, text=True,
                         timeout=timeout, env=env, stdin=subprocess.DEVNULL)
    assert "Traceback" not in got.stderr, got.stderr
    return got


def ssh_children() -> list[int]:
    """Our ssh children, alive or not yet reaped (zombies count: they were not reaped)."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                raw = f.read()
        except OSError:
            continue
        comm = raw[raw.index(b"(") + 1:raw.rindex(b")")]
        ppid = int(raw[raw.rindex(b")") + 2:].split()[1])
        if comm == b"ssh" and ppid == os.getpid():
            found.append(int(name))
    return found


def comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def rss(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) << 10
    return 0


def helpers(token: str) -> list[int]:
    """The box's ``proctui stdio`` helpers this test started (they carry its token)."""
    found = []
    for pid in processes_with_token(token):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if b"stdio" in argv and alive(pid):
            found.append(pid)
    return found


@pytest.fixture
def box(tmp_path, sshd: Sshd, child_reaper, monkeypatch):  # type: ignore[no-untyped-def]
    """A supervisor on the box (svc exits on SIGTERM, hung needs SIGKILL), and the
    environment that reaches it over ssh."""
    env = sshd.env(child_reaper)
    for key in ("PROCTUI_SSH", "PROCTUI_REMOTE"):
        monkeypatch.setenv(key, env[key])
    d = Detached(tmp_path, write_config(tmp_path))
    yield d, env
    d.kill()


def test_status_stop_logs_and_down_over_host_and_the_journal_says_who(box):
    d, env = box
    where = ("--host", "box", "--run-dir", str(d.run_dir))
    got = ctl(env, "status", *where)
    assert got.returncode == 0, got.stderr
    assert got.stdout.splitlines()[0].split() == ["NAME", "STATE", "PID"]
    assert f"supervisor pid {d.pid}" in got.stdout
    status = json.loads(ctl(env, "status", "--json", *where).stdout)
    pids = {p["name"]: p["pid"] for p in status["processes"]}
    assert set(pids) == {"svc", "hung"} and all(alive(p) for p in pids.values())
    wait_until(lambda: "ready" in ctl(env, "logs", "svc", *where).stdout, timeout=30,
               what="svc's output over ssh")

    got = ctl(env, "stop", "svc", *where)
    assert got.returncode == 0 and "stopping svc" in got.stdout, (got.stdout, got.stderr)
    wait_until(lambda: not alive(pids["svc"]), timeout=20, what="svc to end")
    assert alive(pids["hung"])

    got = ctl(env, "down", *where)
    assert "hung: killed with SIGKILL after 1s stop timeout" in got.stdout, got.stdout
    assert got.returncode == 1, got.stdout  # as run: a process had to be killed
    wait_until(lambda: not alive(d.pid), timeout=20, what="the supervisor to end")
    assert not alive(pids["hung"])

    journal = [json.loads(line) for line in
               (d.run_dir / "journal.jsonl").read_text().splitlines()]
    said = [e for e in journal if e["kind"] == "command"]
    assert [(e["op"], e.get("name")) for e in said] == [("stop", "svc"), ("stop_all", None)]
    for e in said:
        assert e["uid"] == os.getuid()
        address, port = e["ssh"].split()
        assert address == "127.0.0.1" and port.isdigit()
    # The stop's own entries follow the command that asked for it.
    kinds = [e["kind"] for e in journal]
    assert kinds.index("command") < kinds.index("stop")
    timeline = ctl(env, "timeline", "--run-dir", str(d.run_dir), "--width", "120").stdout
    assert "stop svc" in timeline and "ssh 127.0.0.1" in timeline


def test_attach_over_ssh_survives_a_dropped_link_and_leaves_nothing_behind(box,
                                                                          child_reaper):
    d, env = box
    conn = over_ssh("box", ["--run-dir", str(d.run_dir)])()
    core = RemoteCore(conn)
    try:
        assert core.names == ["svc", "hung"]
        assert helpers(child_reaper), "the box's stdio helper while attached"
        before = {v.name: v.pid for v in core.snapshot().views}
        ssh = ssh_children()
        assert len(ssh) == 1
        os.kill(ssh[0], signal.SIGKILL)  # the link drops
        wait_until(lambda: core.snapshot().link.gone is not None, timeout=30,
                   what="the console to notice")
    finally:
        core.close()
    assert ssh_children() == []  # reaped
    # Nothing on the box changed; its helper has ended by itself.
    wait_until(lambda: not helpers(child_reaper), timeout=30,
               what="the box's stdio helper to end")
    status = json.loads(ctl(env, "status", "--json", "--host", "box", "--run-dir",
                            str(d.run_dir)).stdout)
    assert {p["name"]: p["pid"] for p in status["processes"]} == before
    assert all(p["phase"] == "running" for p in status["processes"])
    got = ctl(env, "down", "--host", "box", "--run-dir", str(d.run_dir))
    assert "svc: stopped after" in got.stdout, got.stdout
    assert "hung: killed with SIGKILL" in got.stdout
    wait_until(lambda: not alive(d.pid), timeout=20, what="the supervisor to end")
    assert not any(alive(pid) for pid in before.values() if pid)
    wait_until(lambda: not helpers(child_reaper), timeout=20, what="no helper left")


def test_attach_over_ssh_on_a_terminal_and_detach(box, child_reaper):
    from tests.terminal import Pty, printed

    d, env = box
    pty = Pty([PY, "-m", "proctui", "attach", "--host", "box", "--run-dir",
               str(d.run_dir)], d.tmp_path, env=env)
    try:
        pty.wait_for(b"attached to supervisor", timeout=60)
        assert helpers(child_reaper)
        pty.press(b"d")
        assert pty.finish(30) == 0
        said = printed(pty.screen)
        assert f"\nproctui |   proctui attach --host box --run-dir {d.run_dir}\n" in said, \
            said[-400:]
    finally:
        pty.close()
    wait_until(lambda: not helpers(child_reaper), timeout=20, what="the helper to end")
    assert not [pid for pid in processes_with_token(child_reaper) if comm(pid) == "ssh"]


def test_attach_read_only_over_ssh_is_told_read_only_by_the_box(box, child_reaper):
    from tests.terminal import Pty

    d, env = box
    pty = Pty([PY, "-m", "proctui", "attach", "--read-only", "--host", "box", "--run-dir",
               str(d.run_dir)], d.tmp_path, env=env)
    try:
        pty.wait_for(b"attached read-only to supervisor", timeout=60)
        pty.press(b"s")  # stop the selected process: refused on the box
        pty.wait_for(b"read-only", timeout=30)
        pty.press(b"d")
        assert pty.finish(30) == 0
    finally:
        pty.close()
    status = json.loads(ctl(env, "status", "--json", "--run-dir", str(d.run_dir)).stdout)
    assert all(p["phase"] == "running" for p in status["processes"])
    journal = (d.run_dir / "journal.jsonl").read_text()
    assert '"kind": "command"' not in journal  # refused before anything was done


def test_status_of_two_boxes_one_of_which_does_not_answer(box):
    d, env = box
    where = ("--host", "box", "--host", "dead", "--run-dir", str(d.run_dir))
    got = ctl(env, "status", *where)
    assert got.returncode == 2, got.stdout
    lines = got.stdout.splitlines()
    assert lines[0].split() == ["HOST", "NAME", "STATE", "PID"]
    assert any(line.split()[:3] == ["box", "svc", "running"] for line in lines)
    dead = [line for line in lines if line.startswith("dead")]
    assert len(dead) == 1 and "no answer" in dead[0] and "Connection refused" in dead[0]
    assert f"box: supervisor pid {d.pid}" in got.stdout
    listed = json.loads(ctl(env, "status", "--json", *where).stdout)
    assert [h["host"] for h in listed] == ["box", "dead"]
    assert listed[0]["error"] is None and listed[0]["status"]["supervisor"]["pid"] == d.pid
    assert listed[1]["status"] is None and "Connection refused" in listed[1]["error"]


def test_a_link_that_fails_is_one_line_naming_the_box(box, sshd: Sshd, child_reaper):
    d, env = box
    got = ctl(env, "stop", "svc", "--host", "dead")
    assert got.returncode == 2
    assert got.stderr.startswith("proctui: error: dead: ssh: connect to host 127.0.0.1")
    assert len(got.stderr.splitlines()) == 1
    got = ctl(env, "status", "--host", "box", "--run-dir", str(d.tmp_path / "nothing"))
    assert got.returncode == 2
    assert got.stderr == ("proctui: error: box: no supervisor is running (no run directory "
                          f"{d.tmp_path / 'nothing'})\n")
    got = ctl({**env, "PROCTUI_REMOTE": "/nowhere/proctui"}, "status", "--host", "box")
    assert got.returncode == 2 and "box: " in got.stderr and "/nowhere/proctui" in got.stderr
    assert "set PROCTUI_REMOTE to proctui's path on box" in got.stderr
    got = ctl(env, "status", "--host", "-oProxyCommand=touch x")
    assert got.returncode == 2 and "not a destination for ssh" in got.stderr
    got = ctl({**env, "PROCTUI_HOST": "dead"}, "status")  # the environment's host
    assert got.returncode == 2 and "dead: ssh:" in got.stderr


def test_read_only_is_refused_every_command_with_its_words(box):
    d, _env = box
    conn = over_ssh("box", ["--run-dir", str(d.run_dir)], read_only=True)()
    try:
        reply = conn.call(commands.Stop("svc"))
        assert reply.fault is Fault.READ_ONLY and "read-only" in reply.text
        assert conn.call(commands.StopAll()).fault is Fault.READ_ONLY
        assert conn.call(commands.Reload()).fault is Fault.READ_ONLY  # it acts too
        # A later via cannot take it back; looking still works.
        conn.sock.sendall(wire.dumps(commands.Via(read_only=False).wire()))
        assert conn.call(commands.Kill("hung")).fault is Fault.READ_ONLY
        assert conn.call(commands.Tail("svc")).ok
    finally:
        conn.close()
    status = json.loads(ctl(box[1], "status", "--json", "--run-dir", str(d.run_dir)).stdout)
    assert all(p["phase"] == "running" for p in status["processes"])


# -- the box's helper on its own --------------------------------------------------------


def _helper(d: Detached, **kw: object) -> subprocess.Popen[bytes]:
    return subprocess.Popen([PY, "-m", "proctui", "stdio", "--run-dir", str(d.run_dir)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, **kw)  # type: ignore[call-overload]


def _first_line(p: subprocess.Popen[bytes]) -> dict[str, object]:
    assert p.stdout is not None
    return wire.loads(p.stdout.readline())


@pytest.fixture
def supervisor(tmp_path):  # type: ignore[no-untyped-def]
    d = Detached(tmp_path, write_config(tmp_path))
    yield d
    d.kill()


def test_the_stdio_helper_ends_with_its_link(supervisor, monkeypatch):
    d = supervisor
    monkeypatch.setenv("SSH_CONNECTION", "192.0.2.7 40123 192.0.2.1 22")
    # EOF on its stdin: it ends.
    p = _helper(d)
    assert _first_line(p)["t"] == "hello"
    assert p.stdin is not None
    p.stdin.close()
    assert p.wait(10) == 0
    # SIGHUP, even when its parent ignored it (nohup): it ends.
    p = _helper(d, preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN))
    assert _first_line(p)["t"] == "hello"
    p.send_signal(signal.SIGHUP)
    assert p.wait(10) == -signal.SIGHUP
    p = _helper(d, preexec_fn=lambda: signal.signal(signal.SIGTERM, signal.SIG_IGN))
    assert _first_line(p)["t"] == "hello"
    p.terminate()
    assert p.wait(10) == -signal.SIGTERM
    # Its reader gone: the next write is SIGPIPE.
    p = _helper(d)
    assert _first_line(p)["t"] == "hello"
    assert p.stdout is not None and p.stdin is not None
    p.stdout.close()
    # It may have written (and met the closed pipe) already, and ended: then our write
    # finds its stdin closed too.
    with contextlib.suppress(BrokenPipeError):
        p.stdin.write(wire.dumps(commands.Tail("svc").wire()))
        p.stdin.flush()
    assert p.wait(10) in (0, -signal.SIGPIPE)
    with contextlib.suppress(BrokenPipeError):
        p.stdin.close()
    # The supervisor gone: it ends, having passed on the last news.
    p = _helper(d)
    assert _first_line(p)["t"] == "hello"
    assert p.stdin is not None and p.stdout is not None
    p.stdin.write(wire.dumps(commands.SetInteractive(False).wire()) +  # (ask acts as kill)
                  wire.dumps(commands.StopAll(why="proctui down").wire()))
    p.stdin.flush()
    deadline = time.monotonic() + 30
    while p.stdout.readline():  # to the end, which comes when the supervisor ends
        assert time.monotonic() < deadline
    assert p.wait(10) == 0
    wait_until(lambda: not alive(d.pid), timeout=20, what="the supervisor to end")
    journal = (d.run_dir / "journal.jsonl").read_text()
    assert '"ssh": "192.0.2.7 40123"' in journal
    # No supervisor: one line, exit 2.
    p = _helper(d)
    _out, err = p.communicate(timeout=20)
    assert p.returncode == 2
    assert err.decode().count("\n") == 1 and "no supervisor is running" in err.decode()


def test_the_helper_holds_little_for_a_client_that_does_not_read(tmp_path):
    """A process floods its output; the client asked for all of it and reads nothing.
    The helper holds at most HOLD bytes of it: its memory stays where it was."""
    config = tmp_path / "proctui.toml"
    config.write_text('[processes.flood]\ncmd = ["yes", "%s"]\n' % ("x" * 200))
    d = Detached(tmp_path, config)
    p = _helper(d)
    try:
        assert p.stdin is not None
        p.stdin.write(wire.dumps(commands.Watch("all").wire()))
        p.stdin.flush()
        # Its first line says it is relaying: its imports are done (on a busy machine
        # the RSS measured a second after the start was still that of the imports).
        assert _first_line(p)["t"] == "hello"
        time.sleep(1.0)  # (nothing to await: the point is that nothing grows)
        before = rss(p.pid)
        time.sleep(3.0)
        assert rss(p.pid) - before < 4 << 20, (before, rss(p.pid))
    finally:
        p.kill()
        p.wait(10)
        d.kill()


def test_hidden_from_help():
    got = subprocess.run([PY, "-m", "proctui", "--help"], capture_output=True, text=True,
                         timeout=30)
    assert "stdio" not in got.stdout and "attach" in got.stdout


# -- the clock of another machine ---------------------------------------------------------


def test_countdowns_come_out_right_from_a_supervisor_with_another_clock():
    """A fake supervisor whose monotonic clock is 5000 s ahead of ours (and another boot):
    its deadline 30 s from its now is 30 s from ours, to within the link's delay."""
    from proctui.frontends.words import countdown

    ours, theirs = socket.socketpair()
    skew = 5000.0

    def server() -> None:
        now = time.monotonic() + skew
        view = {"name": "web", "phase": "stopping", "cmd": "x", "pid": 7,
                "stop_requested_at": now - 2, "window_start": now - 2, "deadline": now + 30,
                "started_at": now - 100, "stop_signal": "SIGTERM"}
        for message in ({"t": "hello", "v": wire.VERSION, "pid": 1, "now": now,
                         "boot": "another-machine", "names": ["web"], "scrollback": [10]},
                        {"t": "views", "now": now, "views": [view]},
                        {"t": "state", "now": now, "consoles": 0}):
            theirs.sendall(wire.dumps(message))

    threading.Thread(target=server).start()
    conn = Connection.over(Connection(ours, where="fake", local=False))
    try:
        view = conn.views["web"]
        now = time.monotonic()
        assert view.deadline is not None and abs(view.deadline - (now + 30)) < 1.0
        cd = countdown(view, now)
        assert cd is not None and "SIGTERM sent 2.0s ago" in cd.text, cd.text
        assert cd.least in ("30s", "29s"), cd.text
        # Its "now" moved the clock, and is no part of what the state says.
        assert conn.offset is not None and abs(conn.offset + skew) < 1.0
        assert conn.state == State()
    finally:
        conn.close()
        theirs.close()


def test_the_same_boot_shares_the_clock_and_a_bad_now_is_ignored():
    ours, theirs = socket.socketpair()
    boot = wire.boot_id()
    theirs.sendall(b"".join(wire.dumps(m) for m in (
        {"t": "hello", "v": wire.VERSION, "now": 1.0, "boot": boot, "names": ["a"]},
        {"t": "views", "now": 1.0, "views": [{"name": "a", "phase": "running", "cmd": "",
                                              "started_at": 42.0}]},
        {"t": "state", "now": "soon"})))
    conn = Connection.over(Connection(ours, where="fake"))
    assert conn.offset is None and conn.views["a"].started_at == 42.0
    conn.close()
    ours, theirs = socket.socketpair()
    theirs.sendall(b"".join(wire.dumps(m) for m in (
        {"t": "hello", "v": wire.VERSION, "now": True, "boot": "other", "names": []},
        {"t": "state"})))
    conn = Connection.over(Connection(ours, where="fake", local=False))
    assert conn.offset is None
    conn.close()
    theirs.close()
    ours, theirs = socket.socketpair()
    theirs.close()
    with pytest.raises(NoSupervisor, match="fake: the supervisor closed"):
        Connection.over(Connection(ours, where="fake", local=False))


def test_the_timeline_lists_commands_and_who_sent_them(tmp_path: Path):
    from proctui.frontends import timeline

    entries = [{"t": 1.0, "kind": "begin"},
               {"t": 2.0, "kind": "command", "name": "web", "op": "stop", "uid": 1000,
                "pid": 9, "ssh": "10.0.0.5 50000"},
               {"t": 3.0, "kind": "command", "op": "stop_all", "uid": 0, "pid": 10},
               {"t": 4.0, "kind": "command", "op": "\x1b[31mred", "uid": "x"}]
    text = "\n".join(timeline.text(timeline.build(entries), 100))
    assert "stop web  uid 1000 · ssh 10.0.0.5 port 50000" in text
    assert "stop_all  uid 0" in text
    assert "\x1b" not in text


def test_a_hostile_via_is_refused_and_changes_nothing(supervisor):
    d = supervisor
    conn = Connection.open(d.run_dir)
    try:
        for bad, fault in (({"ssh": "1.2.3.4 80; rm -rf /"}, "BAD_VALUE"),
                           ({"ssh": "x" * 100_000}, "BAD_REQUEST"),
                           ({"ssh": 5}, "BAD_VALUE"), ({"read_only": "yes"}, "BAD_REQUEST"),
                           ({"ssh": ["1.2.3.4", "80"]}, "BAD_REQUEST")):
            conn.sock.sendall(wire.dumps({"op": "via", "id": "v", **bad}))
            while (reply := conn.receive()) is not None and reply.get("id") != "v":
                pass
            assert reply is not None and reply["fault"] == fault, (bad, reply)
        assert conn.call(commands.Stop("svc")).ok  # not read-only, and no address taken
    finally:
        conn.close()
    said = [json.loads(line) for line in (d.run_dir / "journal.jsonl").read_text().splitlines()
            if '"command"' in line]
    assert len(said) == 1 and "ssh" not in said[0] and said[0]["uid"] == os.getuid()


def test_the_whole_story_over_ssh_drop_come_back_decide_detach_and_down(box, child_reaper):
    """Issue 19's "done when", played on a real terminal against a real sshd: attach to the
    box, the link drops (the ssh client is killed), a decision comes up on the box while
    it is down, the console comes back by itself and shows it, the operator kills, detaches
    with nothing left behind, and ends it all with ``down --host``."""
    from tests.screen import Screen

    d, env = box
    where = ("--host", "box", "--run-dir", str(d.run_dir))
    pids = {p["name"]: p["pid"] for p in
            json.loads(ctl(env, "status", "--json", *where).stdout)["processes"]}

    def our_ssh() -> list[int]:
        return [pid for pid in processes_with_token(child_reaper) if comm(pid) == "ssh"]

    screen = Screen([PY, "-m", "proctui", "attach", *where], d.tmp_path, 30, 120, env=env)
    try:
        screen.wait_text("attached to supervisor", timeout=60)
        (first,) = our_ssh()
        os.kill(first, signal.SIGKILL)  # the link drops
        screen.wait_text("reconnecting", timeout=30)
        # While the console is away, a stop on the box reaches its deadline and waits.
        got = ctl(env, "stop", "hung", *where)
        assert got.returncode == 0, got.stderr
        wait_until(lambda: json.loads(ctl(env, "status", "--json", *where).stdout)
                   ["processes"][1]["state"] == "deciding", timeout=30,
                   what="hung waiting for a decision")
        # Back by itself over a new ssh, and the decision is asked.
        screen.wait(lambda lines: "reconnecting" not in "\n".join(lines) and
                    "stop timeout reached" in "\n".join(lines), timeout=60,
                    what="the console back with the question")
        assert first not in our_ssh()
        screen.wait_text("kill now")  # shown once armed (it ignores its first half second)
        screen.press(b"K")
        wait_until(lambda: not alive(pids["hung"]), timeout=30, what="hung killed")
        screen.press(b"d")
        assert screen.finish(30) == 0
    finally:
        screen.close()
    wait_until(lambda: not helpers(child_reaper), timeout=30, what="no stdio helper left")
    wait_until(lambda: not our_ssh(), timeout=30, what="no ssh client left")
    assert alive(pids["svc"]) and alive(d.pid)
    got = ctl(env, "down", *where)
    assert re.search(r"hung +killed with SIGKILL by operator", got.stdout), got.stdout
    assert "svc: stopped after" in got.stdout, got.stdout
    wait_until(lambda: not alive(d.pid), timeout=30, what="the supervisor to end")


@contextlib.contextmanager
def _reading(env: dict[str, str], *args: str) -> \
        Iterator[tuple[subprocess.Popen[str], list[str]]]:
    """``proctui ARGS`` started, its stdout's lines gathered as they come by a thread;
    killed (if still running) and its lines all read on the way out."""
    proc = subprocess.Popen([PY, "-m", "proctui", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env,
                            stdin=subprocess.DEVNULL)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stdout or ()), daemon=True)
    reader.start()
    try:
        yield proc, lines
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        reader.join(5)


def test_a_fleet_status_and_down_two_boxes_and_one_lost(tmp_path, sshd: Sshd, child_reaper,
                                                        monkeypatch):
    """Two supervisors behind the box's sshd (each its own run directory), a third box
    whose ssh finds nobody: `status --fleet` lists both and says why the third did not
    answer; `down --fleet` stops both at once, each line after its box's name, one
    summary with the box on every line, and the worst exit status (2: a box unreached)."""
    env = sshd.env(child_reaper)
    for key in ("PROCTUI_SSH", "PROCTUI_REMOTE"):
        monkeypatch.setenv(key, env[key])
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
    a = Detached(tmp_path / "a", write_config(tmp_path / "a", hung_timeout=0.5))
    b = Detached(tmp_path / "b", write_config(tmp_path / "b", hung_timeout=0.5))
    try:
        fleet = tmp_path / "fleet.toml"
        fleet.write_text(f'[boxes.alpha]\nssh = "box"\nrun_dir = "{a.run_dir}"\n\n'
                         f'[boxes.beta]\nssh = "box"\nrun_dir = "{b.run_dir}"\n\n'
                         '[boxes.gone]\nssh = "dead"\n')
        got = ctl(env, "status", "--fleet", str(fleet))
        assert got.returncode == 2, got.stdout  # gone did not answer
        rows = [line.split() for line in got.stdout.splitlines()]
        assert rows[1][:3] == ["alpha", "svc", "running"], got.stdout
        assert {r[0] for r in rows[1:5]} == {"alpha", "beta"}, got.stdout
        assert any(r[:3] == ["gone", "-", "no"] for r in rows), got.stdout
        with _reading(env, "events", "--json", "--fleet", str(fleet)) as (watch, seen):
            wait_until(lambda: sum('"event": "hello"' in line for line in seen) == 2,
                       timeout=30, what="both boxes' hellos")
            got = ctl(env, "down", "--fleet", str(fleet))
            assert watch.wait(60) == 2
        watched, why = "".join(seen), (watch.stderr.read() if watch.stderr else "")
        # One stream: every event says its box; both boxes' ends are in it; the box
        # never reached is one line on stderr, and the exit status.
        said = [json.loads(line) for line in watched.splitlines()]
        assert {e["host"] for e in said} == {"alpha", "beta"}, watched
        assert sorted(e["host"] for e in said if e["event"] == "shutdown-ended") == \
            ["alpha", "beta"], watched
        assert [e["exit_status"] for e in said if e["event"] == "end"] == [1, 1], watched
        assert why.startswith("proctui: gone: not reached: "), why
        assert got.returncode == 2, got.stdout
        lines = got.stdout.splitlines()
        assert any(re.match(r"alpha +proctui \| hung: stop timeout \(0.5s\) reached: SIGKILL",
                            line) for line in lines), got.stdout
        assert any(re.match(r"beta +proctui \| stopping everything", line) for line in lines)
        summary = lines[lines.index("proctui | summary:") + 1:]
        assert [line.split()[2:5] for line in summary[:4]] == [
            ["alpha", "svc", "stopped"], ["alpha", "hung", "killed"],
            ["beta", "svc", "stopped"], ["beta", "hung", "killed"]], got.stdout
        assert len(summary) == 5 and summary[-1].startswith(
            "proctui | gone   not reached: dead: ssh: connect to host"), got.stdout
        wait_until(lambda: not alive(a.pid) and not alive(b.pid), timeout=20,
                   what="both supervisors ended")
    finally:
        a.kill()
        b.kill()


def test_a_bad_fleet_file_is_one_line_naming_the_box_and_key(tmp_path):
    fleet = tmp_path / "fleet.toml"
    fleet.write_text('[boxes.alpha]\nssh = "box"\nport = 22\n')
    got = subprocess.run([PY, "-m", "proctui", "down", "--fleet", str(fleet)],
                         capture_output=True, text=True, timeout=60)
    assert got.returncode == 2 and got.stdout == ""
    assert got.stderr == (f"proctui: error: {fleet}: box 'alpha': key 'port': unknown key "
                          "(known: ssh, run_dir, file)\n")


def test_ctrl_c_during_a_fleet_down_reaches_every_box(tmp_path, sshd: Sshd, child_reaper,
                                                      monkeypatch):
    """Two boxes whose hung process waits 60 s for its stop: one ctrl+c to the fleet's
    down kills what is still stopping on both, as it does on one box."""
    env = sshd.env(child_reaper)
    for key in ("PROCTUI_SSH", "PROCTUI_REMOTE"):
        monkeypatch.setenv(key, env[key])
    boxes = []
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        boxes.append(Detached(tmp_path / name, write_config(tmp_path / name,
                                                            hung_timeout=60)))
    try:
        fleet = tmp_path / "fleet.toml"
        fleet.write_text("".join(f'[boxes.{n}]\nssh = "box"\nrun_dir = "{d.run_dir}"\n'
                                 for n, d in zip("ab", boxes, strict=True)))
        with _reading(env, "down", "--fleet", str(fleet)) as (down, lines):
            wait_until(lambda: sum("svc: stopped after" in line for line in lines) == 2,
                       timeout=30, what="svc stopped on both boxes")
            down.send_signal(signal.SIGINT)
            assert down.wait(30) == 1
        text = "".join(lines)
        assert "a  hung  killed with SIGKILL by operator" in text, text
        assert "b  hung  killed with SIGKILL by operator" in text, text
    finally:
        for d in boxes:
            d.kill()


def test_the_fleet_console_over_ssh_loses_a_box_and_gets_it_back_by_itself(
        tmp_path, sshd: Sshd, child_reaper, monkeypatch):
    """Issue 41's "done when" on real sshd: two boxes in the fleet console, each behind
    its own sshd. The second box's sshd is killed with every session it holds: its row
    says the box is lost within 10 s while the first box's row goes on updating; its
    sshd is started again and the row is up by itself, on a new link."""
    from tests.screen import Screen

    env = sshd.env(child_reaper)
    for key in ("PROCTUI_SSH", "PROCTUI_REMOTE"):
        monkeypatch.setenv(key, env[key])
    other = SecondSshd(sshd, "boxc")
    other.start()
    made = {}
    try:
        for name in ("boxa", "boxc"):
            (tmp_path / name).mkdir()
            made[name] = Detached(tmp_path / name, write_config(tmp_path / name))
        fleet = tmp_path / "fleet.toml"
        fleet.write_text(f'[boxes.boxa]\nssh = "box"\nrun_dir = "{made["boxa"].run_dir}"\n'
                         f'[boxes.boxc]\nssh = "boxc"\nrun_dir = "{made["boxc"].run_dir}"\n')

        def row(name: str, lines: list[str]) -> str:
            return next((line for line in lines if f" {name} " in line), "")

        screen = Screen([PY, "-m", "proctui", "attach", "--fleet", str(fleet)], tmp_path,
                        30, 120, env=env)
        try:
            screen.wait(lambda lines: " up " in row("boxa", lines) and
                        " up " in row("boxc", lines), timeout=60, what="both boxes up")
            other.kill()
            lost_at = time.monotonic()
            screen.wait(lambda lines: "lost" in row("boxc", lines), timeout=10,
                        what="boxc's row saying it is lost")
            assert time.monotonic() - lost_at < 10
            # The other box goes on: its own link's age moves on screen meanwhile.
            before = row("boxa", screen.lines())
            assert " up " in before, screen.text()
            screen.wait(lambda lines: row("boxa", lines) not in ("", before), timeout=10,
                        what="boxa's row to go on updating")
            other.start()
            screen.wait(lambda lines: re.search(r"boxc +up ", row("boxc", lines)) is not None,
                        timeout=30, what="boxc back by itself")
            screen.press(b"q")
            assert screen.finish(30) == 0
        finally:
            screen.close()
        for d in made.values():
            assert alive(d.pid)
    finally:
        other.kill()
        for d in made.values():
            d.kill()
