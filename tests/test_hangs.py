"""Things that used to hang proctui or lose a stop: a signal in the first instant, a
reader that never reads or goes away, and two thousand processes stopping at once."""

from __future__ import annotations

import io
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from proctui.core.output.events import EventQueue
from proctui.core.supervisor import Supervisor
from proctui.frontends.headless import HeadlessRunner
from proctui.frontends.printer import Printer
from tests.conftest import processes_with_token, spec, wait_until

# The real console on a pty, the wheel, ssh or hundreds of processes: the second
# CI stage (README: "Tests").
pytestmark = pytest.mark.slow


def proctui_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "proctui", "run", "--headless", *args]


def test_a_stop_asked_for_before_start_up_is_kept_and_nothing_starts(child_reaper):
    events = EventQueue()
    sup = Supervisor([spec("a", "sleep 60"), spec("b", "sleep 60")], events=events,
                     interactive=False)
    out = io.StringIO()
    runner = HeadlessRunner(sup, events, Printer(["a", "b"], out, colour=False))
    runner._on_signal(signal.SIGTERM, None)  # what the handler does, before start()
    assert runner.run() == 0
    text = out.getvalue()
    assert "received SIGTERM: stopping everything" in text
    assert "not started: everything is stopping" in text
    assert not processes_with_token(child_reaper)


def test_a_sigterm_while_the_core_thread_starts_is_said(child_reaper, monkeypatch):
    """A full suite run printed every process "not started: everything is stopping"
    and the summary after a SIGTERM, never "received SIGTERM". The signal had come while
    ``Thread.start()`` brought the core's thread up: the thread was made but not yet
    alive, and the words were refused as if the core had ended (its stop still held)."""
    events = EventQueue()
    sup = Supervisor([spec("a", "sleep 60"), spec("b", "sleep 60")], events=events,
                     interactive=False)
    out = io.StringIO()
    runner = HeadlessRunner(sup, events, Printer(["a", "b"], out, colour=False))
    start = threading.Thread.start

    def signalled_as_it_starts(thread: threading.Thread) -> None:
        if thread.name == "proctui-core":
            runner._on_signal(signal.SIGTERM, None)  # as if it landed in start()'s wait
        start(thread)

    monkeypatch.setattr(threading.Thread, "start", signalled_as_it_starts)
    assert runner.run() == 0
    text = out.getvalue()
    assert "not started: everything is stopping" in text
    assert "received SIGTERM: stopping everything" in text.split("summary:")[0], text
    assert not processes_with_token(child_reaper)


@pytest.mark.parametrize("delay", [0.05, 0.1, 0.15, 0.2, 0.3, 0.5])
def test_sigterm_in_the_first_instants_is_never_lost(tmp_path, delay, child_reaper):
    proc = subprocess.Popen(proctui_cmd("--run-dir", str(tmp_path / "run"), "a=sleep 60",
                                        "b=sleep 60", "c=sleep 60"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(delay)
    proc.send_signal(signal.SIGTERM)
    try:
        out, err = proc.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        raise AssertionError(f"proctui did not exit after SIGTERM at {delay}s:\n{out}") from None
    assert "Traceback" not in err, err
    wait_until(lambda: not processes_with_token(child_reaper), timeout=5,
               what="no process left behind")
    # Either it had not installed its handlers yet (killed by the signal, nothing
    # started) or it stopped everything it started.
    if proc.returncode != -signal.SIGTERM:
        assert proc.returncode == 0, out
        assert "received SIGTERM: stopping everything" in out


def test_exiting_never_waits_for_a_reader_that_never_reads(tmp_path, child_reaper):
    """stdout is a pipe nobody reads: the children are stopped on time, and proctui
    itself exits soon after, instead of living until the backlog is read."""
    read_end, write_end = os.pipe()
    flood = "import sys\nwhile True: sys.stdout.write('x' * 100 + '\\n')\n"
    started = time.monotonic()
    proc = subprocess.Popen(proctui_cmd("--run-dir", str(tmp_path / "run"), "--stop-after",
                                        "1", f"flood={sys.executable} -c {_quote(flood)}"),
                            stdout=write_end, stderr=subprocess.DEVNULL)
    os.close(write_end)
    try:
        status = proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(read_end)
    assert time.monotonic() - started < 15
    assert status == 0
    assert not processes_with_token(child_reaper)


def test_a_broken_pipe_stops_everything_like_a_hangup(tmp_path, child_reaper):
    """``proctui run ... | head -3``: once head is gone, proctui stops its processes
    with the configured timeouts and exits with their outcomes' status."""
    ticker = "import time\nwhile True:\n    print('tick', flush=True); time.sleep(0.02)\n"
    cmd = " ".join(map(_quote, proctui_cmd("--run-dir", str(tmp_path / "run"),
                                           f"ticker={sys.executable} -c {_quote(ticker)}")))
    started = time.monotonic()
    result = subprocess.run(f"{cmd} | head -3", shell=True, capture_output=True, text=True,
                            timeout=30)
    assert time.monotonic() - started < 20
    assert len(result.stdout.splitlines()) == 3
    assert "proctui: output broken pipe: stopping everything" in result.stderr
    wait_until(lambda: not processes_with_token(child_reaper), timeout=10,
               what="the children to be stopped")
    assert not list((tmp_path / "run").glob("*.pid"))


def _quote(text: str) -> str:
    import shlex

    return shlex.quote(text)


def test_a_short_run_leaves_no_warning_on_stderr(tmp_path):
    for _ in range(3):
        result = subprocess.run(proctui_cmd("--run-dir", str(tmp_path / "run"), "a=true",
                                            "b=echo hi"), capture_output=True, text=True,
                                timeout=30)
        assert result.returncode == 0
        assert result.stderr == "", result.stderr


def test_two_thousand_processes_stop_within_their_timeouts_and_say_so_truly(tmp_path,
                                                                           child_reaper):
    """stop_timeout 5, kill_timeout 2: nothing hangs, nothing is killed that died at once,
    and every outcome says so truly. The bounds are what a busy 2-core CI meets; how fast
    it really is (0.5 s words, about 9 s from SIGINT to exit here; 25-32 s while every run
    walked the whole tree again) is measured by tests/bench/bench.py --only 10."""
    n = 2000
    (tmp_path / "Procfile").write_text("".join(f"p{i}: exec sleep 600\n" for i in range(n)))
    proc = subprocess.Popen(proctui_cmd("--run-dir", str(tmp_path / "run"), "-f",
                                        str(tmp_path / "Procfile"), "--stop-timeout", "5",
                                        "--kill-timeout", "2"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=tmp_path)
    try:
        wait_until(lambda: len(list((tmp_path / "run").glob("*.pid"))) == n, timeout=120,
                   what=f"{n} processes to start")
        stop = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        took = time.monotonic() - stop
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err[-2000:]
    # No process waits for a deadline it does not need: well under the 5 s stop timeout
    # per process plus the 2 s kill timeout, with room for a loaded machine.
    assert took < 5 + 2 + 13, f"stopping {n} processes took {took:.1f}s"
    summary = out[out.index("proctui | summary:"):].splitlines()[1:]
    assert len(summary) == n
    times = [float(m.group(1)) for m in
             (re.search(r"stopped after (\d+\.\d)s: terminated by SIGTERM", line)
              for line in summary) if m]
    assert len(times) == n, [line for line in summary if "stopped after" not in line][:5]
    # Each died at once: none may be said to have needed anything like its stop timeout.
    assert max(times) < 5, f"reported up to {max(times)}s for a process that died at once"
    assert not processes_with_token(child_reaper)
    assert not list(Path(tmp_path / "run").glob("*.pid"))

