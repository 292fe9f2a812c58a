"""The control socket is bound before the console loads and served after its first frame:
a client that comes in between waits and is answered, never told nobody is there."""

from __future__ import annotations

import json
import subprocess
import threading
import time

import pytest

from proctui.core.store.rundir import RunDir
from proctui.protocol import wire
from proctui.remote import listener
from proctui.remote.client import Connection, NoSupervisor
from proctui.remote.listener import Listener
from tests.conftest import PY, wait_until


class Client(threading.Thread):
    """Connects at once, in a thread: what it got, or why not."""

    def __init__(self, run_dir: RunDir) -> None:
        super().__init__(daemon=True)
        self.run_dir = run_dir
        self.names: list[str] | None = None
        self.error: Exception | None = None
        self.start()

    def run(self) -> None:
        try:
            conn = Connection.open(self.run_dir.path, timeout=20)
        except Exception as e:  # NoSupervisor, OSError: what the test asserts on
            self.error = e
            return
        try:
            self.names = [v.name for v in conn.ordered_views()]
        finally:
            conn.close()


def test_a_client_that_comes_before_the_server_waits_and_is_answered(supervised):
    sup, run_dir = supervised
    control = Listener(sup, run_dir, source="test")
    try:
        assert control.bind() is None
        client = Client(run_dir)
        client.join(1.0)
        assert client.is_alive(), f"it must wait, not give up: {client.error}"
        control.serve()
        client.join(20)
        assert not client.is_alive() and client.error is None, client.error
        assert client.names == ["svc"]
        control.serve()  # again: nothing more happens
    finally:
        control.close()
    assert not (run_dir.path / wire.SOCKET).exists()


def test_a_socket_never_served_is_removed_and_its_waiting_client_told(supervised):
    sup, run_dir = supervised
    control = Listener(sup, run_dir, source="test")
    assert control.bind() is None
    client = Client(run_dir)
    client.join(0.5)
    control.close()
    client.join(20)
    assert not client.is_alive() and client.names is None
    assert isinstance(client.error, (NoSupervisor, OSError)), client.error
    assert not (run_dir.path / wire.SOCKET).exists()
    control.serve()  # after close: never serves
    assert control.server is None
    with pytest.raises(NoSupervisor):
        Connection.open(run_dir.path, timeout=5)


def test_without_a_first_frame_it_is_served_all_the_same(supervised, monkeypatch):
    monkeypatch.setattr(listener, "SERVE_AT_THE_LATEST", 0.3)
    sup, run_dir = supervised
    control = Listener(sup, run_dir, source="test")
    try:
        control.bind()
        client = Client(run_dir)
        client.join(20)
        assert client.names == ["svc"], client.error
    finally:
        control.close()


def test_on_knock_a_client_is_served_when_it_comes_and_never_sooner(supervised,
                                                                     monkeypatch):
    """A headless run binds with on_knock: the first client is answered at once (long
    before SERVE_AT_THE_LATEST), and until one comes the server is not even loaded."""
    monkeypatch.setattr(listener, "SERVE_AT_THE_LATEST", 60.0)
    sup, run_dir = supervised
    control = Listener(sup, run_dir, source="test")
    try:
        assert control.bind(on_knock=True) is None
        time.sleep(0.3)  # nobody knocks: nothing is served
        assert control.server is None
        asked = time.monotonic()
        client = Client(run_dir)
        client.join(20)
        assert client.names == ["svc"], client.error
        assert time.monotonic() - asked < 15, "served when it knocked, not at 60 s"
        # Recorded by the knock's thread once the server is up, which can be just after
        # the client's answer (a CI run read it a moment too soon).
        wait_until(lambda: control.server is not None, what="the server recorded")
    finally:
        control.close()
    assert not (run_dir.path / wire.SOCKET).exists()


def test_a_short_headless_run_never_loads_the_server(tmp_path):
    probe = ("import sys\nfrom proctui.frontends import headless\n"
             "from proctui.config.shell import from_commands\n"
             "from proctui.core.store.rundir import RunDir\n"
             f"from pathlib import Path\nrd = RunDir(Path({str(tmp_path / 'run')!r})); rd.open()\n"
             "status = headless.run(from_commands(['true']).processes, run_dir=rd)\n"
             "print(status, 'proctui.remote.server' in sys.modules)\n")
    got = subprocess.run([PY, "-c", probe], capture_output=True, text=True, timeout=60)
    assert got.stdout.split()[-2:] == ["0", "False"], (got.stdout, got.stderr)


@pytest.mark.parametrize("own", [True, False])
def test_status_says_the_supervisor_has_a_console_of_its_own(supervised, own):
    """proctui run's console is no client: status said '0 consoles attached' beside it."""
    import io

    from proctui.frontends.status import status

    sup, run_dir = supervised
    control = Listener(sup, run_dir, source="test", own_console=own)
    try:
        control.bind()
        control.serve()
        conn = Connection.open(run_dir.path, timeout=20)
        try:
            out = io.StringIO()
            assert status(conn, False, out) == 0
        finally:
            conn.close()
    finally:
        control.close()
    said = out.getvalue().splitlines()[-1]
    assert ("its own console and 0 consoles attached" in said) is own, said
    assert "0 consoles attached" in said, said


def test_closing_wakes_the_knock_wait_at_once(supervised, monkeypatch):
    """A run that ends before anyone knocked leaves no thread waiting on a closed
    socket (it waited up to SERVE_AT_THE_LATEST, holding the socket in the kernel)."""
    monkeypatch.setattr(listener, "SERVE_AT_THE_LATEST", 60.0)
    sup, run_dir = supervised
    control = Listener(sup, run_dir, source="test")
    assert control.bind(on_knock=True) is None
    knocks = [t for t in threading.enumerate() if t.name == "proctui-knock"]
    assert len(knocks) == 1
    control.close()
    knocks[0].join(10)
    assert not knocks[0].is_alive(), "close() must wake it"
    assert control.server is None


_AT_THE_LIMIT = """
import json, os, resource, sys, threading, time
from pathlib import Path
from proctui.commands.journal_read import ReadJournal
from proctui.commands.stop_all import StopAll
from proctui.core.store.rundir import RunDir
from proctui.core.supervisor import Supervisor
from proctui.config.shell import from_commands
from proctui.protocol import wire
from proctui.remote.listener import Listener
import proctui.remote.server, proctui.remote.pages  # now: loading a module needs a descriptor

crashed = []
threading.excepthook = lambda a: crashed.append(repr(a.exc_value))
sys.unraisablehook = lambda u: crashed.append(repr(u.exc_value))
run_dir = RunDir(Path(sys.argv[1]))
run_dir.open()
sup = Supervisor(from_commands(["svc=exec sleep 60"]).processes, run_dir=run_dir)
sup.start()
control = Listener(sup, run_dir, source="test")
assert control.bind() is None
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
lowest = os.dup(0)  # the lowest free number: a limit there leaves none free
os.close(lowest)
began = time.monotonic()
resource.setrlimit(resource.RLIMIT_NOFILE, (lowest, hard))
try:
    control.serve()
finally:
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
took = time.monotonic() - began
served = control.server is not None
control.close()
# What the core was told, as any client reads it (the notices in its journal).
page = sup.send(ReadJournal(0)).result(timeout=20)
said = [str(e.get("text")) for e in page.entries if e.get("kind") == "notice"]
sup.send(StopAll()).result(timeout=20)
while not sup.snapshot().all_ended:
    time.sleep(0.02)
sup.close()
left = (run_dir.path / wire.SOCKET).exists()
run_dir.close()
print(json.dumps({"crashed": crashed, "served": served, "said": said, "took": took,
                  "left": left}))
"""


def test_a_server_with_no_descriptor_left_says_why_in_one_line(tmp_path, child_reaper):
    """Served when the supervisor is at its descriptor limit: the server's thread could
    not make its event loop and died with a traceback on stderr, asyncio's half-made
    loop printed another from its ``__del__``, and ``serve`` waited 5 s for it. Now the
    core is told why in one line, and the socket goes. (In a process of its own: the
    limit is the whole process's, and a test worker's other threads must not meet it.)"""
    got = subprocess.run([PY, "-c", _AT_THE_LIMIT, str(tmp_path / "run")],
                         capture_output=True, text=True, timeout=60)
    assert got.returncode == 0 and "Traceback" not in got.stderr, got.stderr
    result = json.loads(got.stdout.splitlines()[-1])
    assert result["crashed"] == [], result
    assert not result["served"]
    assert any("control socket" in s and "Too many open files" in s
               for s in result["said"]), result
    assert result["took"] < 3, f"serve() waited {result['took']:.1f}s for a server that had died"
    assert not result["left"]
