"""A supervisor that stops answering (SIGSTOP, a debugger, a stuck thread): every client
gives up within its timeout with one line naming the supervisor's pid and since when, exit
status 2, instead of waiting for ever. A real detached supervisor, really stopped."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import PY, wait_until
from tests.screen import Screen
from tests.terminal import Pty
from tests.test_detach import Detached, detached, proctui, write_config  # noqa: F401

TIMEOUT = 2.0  # seconds a client waits for a silent supervisor, in these tests
LINE = re.compile(r"^proctui: error: the supervisor \(pid (\d+)\) is not answering "
                  r"\(since \d\d:\d\d:\d\d\); it is stopped")


@pytest.fixture
def stopped(tmp_path: Path, detached, monkeypatch) -> Iterator[Detached]:  # type: ignore[no-untyped-def]  # noqa: F811
    monkeypatch.setenv("PROCTUI_ANSWER_TIMEOUT", str(TIMEOUT))
    # hung's stop lasts: down is still waiting for it when the supervisor is stopped
    # (a 1 s stop was over, and the supervisor gone, before a slow `status` saw it begin).
    d = detached(write_config(tmp_path, hung_timeout=60.0))
    d.wait_for("svc", "running", lambda p: p["phase"] == "running")
    try:
        yield d
    finally:
        with contextlib.suppress(OSError):
            os.kill(d.pid, signal.SIGCONT)


def freeze(d: Detached) -> None:
    os.kill(d.pid, signal.SIGSTOP)
    wait_until(lambda: _state(d.pid) == "T", what="the supervisor stopped")


def _state(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


def says_not_answering(got: subprocess.CompletedProcess[str], pid: int) -> None:
    assert got.returncode == 2, (got.stdout, got.stderr)
    lines = got.stderr.strip().splitlines()
    assert len(lines) == 1 and LINE.match(lines[0]), got.stderr
    assert LINE.match(lines[0]).group(1) == str(pid)  # type: ignore[union-attr]


@pytest.mark.parametrize("args", [("status",), ("status", "--json"), ("stop", "svc"),
                                  ("logs", "svc"), ("down",), ("extend", "hung", "5")])
def test_a_stopped_supervisor_is_one_line_and_exit_2(stopped, args):
    freeze(stopped)
    start = time.monotonic()
    got = stopped.ctl(*args)
    took = time.monotonic() - start
    says_not_answering(got, stopped.pid)
    assert took < TIMEOUT + 10, f"{args} took {took:.1f}s"
    # Woken again, it answers as before: the clients changed nothing.
    os.kill(stopped.pid, signal.SIGCONT)
    assert stopped.status()["svc"]["phase"] == "running"


@pytest.mark.slow
@pytest.mark.parametrize("args", [("logs", "-f", "svc"), ("down",)])
def test_a_client_waiting_for_events_notices_the_silence(stopped, args):
    """``logs -f`` and ``down`` wait for as long as events take, but ping meanwhile: a
    supervisor stopped while they watch is noticed within the timeout."""
    d = stopped
    if args == ("down",):  # a hung process keeps down waiting; the supervisor then stops
        d.wait_for("hung", "ready", lambda p: True)
    where = ("--run-dir", str(d.run_dir))
    proc = subprocess.Popen([PY, "-m", "proctui", *args, *where], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
    try:
        if args == ("down",):
            wait_until(lambda: d.status()["hung"]["phase"] != "running", timeout=20,
                       what="down to begin stopping")
        else:
            time.sleep(1.0)  # (nothing to await: logs -f prints nothing more on its own)
        freeze(d)
        start = time.monotonic()
        out, err = proc.communicate(timeout=TIMEOUT * 4 + 20)
        took = time.monotonic() - start
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    says_not_answering(subprocess.CompletedProcess(args, proc.returncode, out, err), d.pid)
    assert took < TIMEOUT * 2 + 10, f"noticed after {took:.1f}s"


def test_attach_to_a_stopped_supervisor_says_so_instead_of_a_blank_screen(stopped):
    freeze(stopped)
    pty = Pty([PY, "-m", "proctui", "attach", "--run-dir", str(stopped.run_dir)],
              stopped.tmp_path)
    try:
        pty.wait_for(b"is not answering", timeout=TIMEOUT + 20)
        assert pty.finish() == 2
        assert f"pid {stopped.pid}".encode() in pty.screen
    finally:
        if pty.proc.poll() is None:
            pty.proc.kill()


@pytest.mark.slow
def test_an_attached_console_reconnects_when_the_supervisor_stops_answering(stopped):
    """Silent past its timeout, the supervisor is a dropped link: the console says
    "reconnecting" and why, refuses keys that act, and is back by itself once the
    supervisor answers again; d then detaches, and nothing on the box changed."""
    d = stopped
    screen = Screen([PY, "-m", "proctui", "attach", "--run-dir", str(d.run_dir)], d.tmp_path,
                    rows=30, columns=110)
    try:
        screen.wait_text("attached to supervisor")
        freeze(d)
        screen.wait(lambda lines: any(re.search(
            r"reconnecting · link lost \d+s ago · (next try in \d+s|trying now…) · d "
            r"detaches · (the supervisor \(pid \d+\) is not answering|it is stopped: "
            r"kill -CONT \d+)", line)
            for line in lines), timeout=TIMEOUT * 2 + 20, what="the banner")
        screen.press(b"s")
        screen.wait_text("not connected: reconnecting")
        os.kill(d.pid, signal.SIGCONT)
        screen.wait(lambda lines: not any("reconnecting ·" in line for line in lines),
                    timeout=TIMEOUT + 30, what="the banner gone")
        screen.press(b"d")
        assert screen.finish() == 0
        assert b"detached" in screen.pty.screen
    finally:
        screen.close()
    assert d.status()["svc"]["phase"] == "running"
    assert d.status()["hung"]["phase"] == "running"


@pytest.mark.slow
def test_a_full_backlog_is_not_answering_too(stopped):
    """Stopped long enough, its listen backlog fills and even connecting would wait: the
    connect has its timeout too, and the pid comes from the lock file."""
    import socket

    d = stopped
    freeze(d)
    pending = []
    try:
        while len(pending) < 256:  # until the kernel refuses one more without waiting
            sock = socket.socket(socket.AF_UNIX)
            sock.setblocking(False)
            try:
                sock.connect(str(d.run_dir / "control.sock"))
            except BlockingIOError:
                sock.close()
                break
            pending.append(sock)
        assert len(pending) < 256, "the backlog never filled"
        says_not_answering(d.ctl("status"), d.pid)
    finally:
        for sock in pending:
            sock.close()


@pytest.mark.slow
def test_down_shows_no_countdown_a_stopped_supervisor_is_not_keeping(tmp_path, detached,  # noqa: F811
                                                                     monkeypatch):
    """down worked its countdowns out from the last views: with the supervisor stopped,
    it printed 'hung: still stopping after 5.0s: SIGKILL in 0.0s' (and again at 10 s)
    for a kill nobody was sending. It says it has no word from the supervisor instead."""
    monkeypatch.setenv("PROCTUI_ANSWER_TIMEOUT", "12")
    d = detached(write_config(tmp_path, hung_timeout=3.0))
    d.wait_for("hung", "ready", lambda p: True)
    proc = subprocess.Popen([PY, "-m", "proctui", "down", "--run-dir", str(d.run_dir)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            stdin=subprocess.DEVNULL)
    try:
        wait_until(lambda: d.status()["hung"]["phase"] != "running", timeout=20,
                   what="down to begin stopping")
        freeze(d)
        out, err = proc.communicate(timeout=60)
    finally:
        os.kill(d.pid, signal.SIGCONT)
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 2, (out, err)
    assert "no word from the supervisor for" in out, out
    assert "SIGKILL in 0.0s" not in out, out


@pytest.mark.slow
@pytest.mark.parametrize("args", [("status",), ("attach",)])
def test_a_supervisor_seen_stopped_is_said_at_once(tmp_path, detached, monkeypatch,  # noqa: F811
                                                   args):
    """The hello never comes from a stopped supervisor, and this machine can see it is
    stopped: said within a second, not after the whole timeout (an attach's screen stayed
    blank for 10 s)."""
    monkeypatch.setenv("PROCTUI_ANSWER_TIMEOUT", "30")
    d = detached(write_config(tmp_path))
    d.wait_for("svc", "running", lambda p: p["phase"] == "running")
    freeze(d)
    try:
        pty = Pty([PY, "-m", "proctui", *args, "--run-dir", str(d.run_dir)], d.tmp_path)
        try:
            start = time.monotonic()
            pty.wait_for(b"it is stopped: kill -CONT", timeout=25)
            assert time.monotonic() - start < 10
            assert pty.finish() == 2
        finally:
            if pty.proc.poll() is None:
                pty.proc.kill()
    finally:
        os.kill(d.pid, signal.SIGCONT)


def test_a_supervisor_that_closes_as_a_quiet_client_pings_has_ended_not_crashed():
    """A client waiting on events pings a quiet supervisor; one that closed its end just
    then (its goodbye) made the ping a BrokenPipeError: `events` died with a traceback on
    its thread, and the CLI took it for its own stdout's reader gone (exit 0, no end)."""
    import socket

    from proctui.remote.connection import Connection

    ours, theirs = socket.socketpair()
    try:
        conn = Connection(ours, timeout=0.4)
        theirs.shutdown(socket.SHUT_RD)  # it reads no more: our ping cannot go
        assert conn.event() is None
    finally:
        ours.close()
        theirs.close()
