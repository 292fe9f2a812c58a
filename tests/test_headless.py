"""The headless runner end to end, through the real CLI, with real signals."""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
import signal
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from proctui.core.output.events import EventQueue
from proctui.core.supervisor import Supervisor
from proctui.frontends.headless import HeadlessRunner
from proctui.frontends.printer import Printer, use_colour
from proctui.frontends.writer import Writer
from tests.children import POLITE, STUBBORN
from tests.conftest import PY, UnkillableOS, alive, pyspec, wait_until


def py(code: str) -> str:
    """A command line that runs ``code`` with this Python, for 'NAME=CMD' arguments."""
    return f"{PY} -c {shlex.quote(code)}"


class Proctui:
    """``proctui run`` in a child process, with its output read line by line."""

    def __init__(self, tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "proctui", "run", "--run-dir", str(tmp_path / "run"), *args],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
            env={**os.environ, **(env or {})},
        )
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))

    def wait_line(self, pattern: str, timeout: float = 15.0) -> str:
        deadline = time.monotonic() + timeout
        regex = re.compile(pattern)
        seen = 0
        while time.monotonic() < deadline:
            for line in self.lines[seen:]:
                if regex.search(line):
                    return line
            seen = 0
            time.sleep(0.02)
        raise AssertionError(f"no line matching {pattern!r}; got:\n" + "\n".join(self.lines))

    def signal(self, sig: int) -> None:
        self.proc.send_signal(sig)

    def finish(self, timeout: float = 30.0) -> int:
        code = self.proc.wait(timeout)
        self._reader.join(5)
        return code

    def pid_of(self, name: str) -> int:
        line = self.wait_line(rf"proctui \| {re.escape(name)}: started \(pid \d+\)")
        return int(re.search(r"pid (\d+)", line).group(1))


@pytest.fixture
def proctui(tmp_path):
    made: list[Proctui] = []

    def start(*args: str, **kw: object) -> Proctui:
        p = Proctui(tmp_path, *args, **kw)  # type: ignore[arg-type]
        made.append(p)
        return p

    yield start
    for p in made:
        if p.proc.poll() is None:
            p.proc.kill()
            p.proc.wait()


def test_sigint_stops_everything_and_reports_each_ending(proctui):
    p = proctui("--stop-timeout", "1", f"polite={py(POLITE)}", f"stub={py(STUBBORN)}",
                "quick=echo quick done")
    polite, stub = p.pid_of("polite"), p.pid_of("stub")
    p.wait_line(r"^polite +\| ready$")
    p.wait_line(r"^stub +\| ready$")
    p.wait_line(r"quick: exited: exit code 0")
    p.signal(signal.SIGINT)
    assert p.finish() == 1  # stub was killed
    out = "\n".join(p.lines)
    assert "proctui | received SIGINT: stopping everything" in out
    assert re.search(r"proctui \| polite: stopped after \d+\.\ds: exit code 0", out)
    assert "proctui | stub: SIGTERM sent to process group" in out
    assert "proctui | stub: killed with SIGKILL after 1s stop timeout" in out
    summary = out[out.index("proctui | summary:"):].splitlines()
    assert len(summary) == 4
    assert re.match(r"proctui \|   polite +stopped after", summary[1])
    assert re.match(r"proctui \|   stub +killed with SIGKILL after 1s stop timeout", summary[2])
    assert re.match(r"proctui \|   quick +exited: exit code 0", summary[3])
    assert not alive(polite) and not alive(stub)


def test_names_are_padded_and_no_colour_in_a_pipe(proctui):
    p = proctui("a=echo one", "longer-name=echo two")
    assert p.finish() == 0
    assert "a           | one" in p.lines
    assert "longer-name | two" in p.lines
    assert not any("\x1b[" in line for line in p.lines)


def test_second_sigint_kills_what_is_still_stopping(proctui):
    p = proctui("--headless", "--stop-timeout", "60", f"stub={py(STUBBORN)}")
    stub = p.pid_of("stub")
    p.wait_line(r"^stub +\| ready$")
    p.signal(signal.SIGINT)
    p.wait_line(r"stub: SIGTERM sent")
    started = time.monotonic()
    p.signal(signal.SIGINT)
    assert p.finish() == 1
    assert time.monotonic() - started < 10
    p.wait_line(r"received SIGINT again: killing")
    p.wait_line(r"stub: killed with SIGKILL by operator \d+\.\ds after the stop request")
    assert not alive(stub)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_sigterm_and_sighup_stop_gracefully(proctui, sig):
    p = proctui(f"web={py(POLITE)}")
    web = p.pid_of("web")
    p.wait_line(r"^web +\| ready$")
    p.signal(sig)
    assert p.finish() == 0
    p.wait_line(rf"received {sig.name}: stopping everything")
    p.wait_line(r"web: stopped after")
    assert not alive(web)


def test_exit_status_for_a_crash(proctui):
    p = proctui("ok=true", "bad=exit 3")
    assert p.finish() == 1
    p.wait_line(r"bad +exited: exit code 3")


def test_runner_ends_by_itself_and_exit_0_when_all_clean(proctui):
    p = proctui("a=echo a", "b=echo b")
    assert p.finish() == 0


def test_second_instance_on_the_same_run_dir_is_refused(proctui, tmp_path):
    first = proctui(f"web={py(POLITE)}")
    first.wait_line(r"^web +\| ready$")
    second = subprocess.run(
        [sys.executable, "-m", "proctui", "run", "--run-dir", str(tmp_path / "run"), "x=true"],
        capture_output=True, text=True, timeout=30)
    assert second.returncode == 2
    assert re.fullmatch(rf"proctui: error: another proctui \(pid {first.proc.pid}\) is running "
                        r"with run directory .*; stop it first or pass --run-dir\n",
                        second.stderr), second.stderr
    first.signal(signal.SIGINT)
    assert first.finish() == 0


def test_failed_to_start_is_reported_and_exit_1(proctui, tmp_path):
    (tmp_path / "proctui.toml").write_text(
        '[processes.typo]\ncmd = "ngnix -g x"\n[processes.ok]\ncmd = "echo fine"\n')
    p = proctui()
    assert p.finish() == 1
    p.wait_line(r"typo: failed to start: \[Errno 2\] No such file or directory: 'ngnix'")
    p.wait_line(r"^ok +\| fine$")


def test_third_sigint_abandons_what_is_left_and_exits(monkeypatch):
    """SIGKILL cannot be made to fail on demand: the fake OS swallows it, and the third
    ctrl+c must then abandon the process and exit at once, naming its pid."""
    events = EventQueue()
    sup = Supervisor([pyspec("stuck", STUBBORN, stop_timeout=0.2, kill_timeout=60)],
                     events=events, interactive=False, os_layer=UnkillableOS())
    out = io.StringIO()
    runner = HeadlessRunner(sup, events, Printer(["stuck"], out, colour=False))

    def operator() -> None:
        # Whatever happens, three SIGINTs end the runner: the test must not hang.
        for seen in ("| ready", "SIGKILL sent", "received SIGINT again"):
            try:
                wait_until(lambda seen=seen: seen in out.getvalue(), what=seen)
            finally:
                os.kill(os.getpid(), signal.SIGINT)

    thread = threading.Thread(target=operator, daemon=True)
    thread.start()
    status = runner.run()
    thread.join(5)
    text = out.getvalue()
    pid = sup.snapshot().views[0].pid
    assert status == 3
    assert f"abandoning what is left (stuck pid {pid}) and exiting" in text
    assert re.search(rf"stuck: abandoned after \d+\.\ds: pid {pid} left running", text)
    assert alive(pid)
    os.kill(pid, signal.SIGKILL)


def test_the_last_outcome_is_printed_before_the_summary_even_when_its_words_are_late(
        monkeypatch):
    """The snapshot that says everything ended is published before the words that go
    with it (a process's outcome line). On a busy machine the printer saw the end and
    printed the summary first, and the outcome's own line was never printed: here the
    words are held back on purpose (the engine's thread sleeps before passing them)."""
    from proctui.core.executor import Executor

    flush = Executor.flush_said

    def late(self: Executor, count: int | None = None) -> None:
        if self._said:
            time.sleep(0.3)  # the reader has seen the snapshot by now
        flush(self, count)

    monkeypatch.setattr(Executor, "flush_said", late)
    events = EventQueue()
    sup = Supervisor([pyspec("quick", "print('hi')")], events=events, interactive=False)
    out = io.StringIO()
    runner = HeadlessRunner(sup, events, Printer(["quick"], out, colour=False),
                            signals=False)
    assert runner.run() == 0
    text = out.getvalue()
    assert re.search(r"quick: exited after \d+\.\ds: exit code 0|quick: exited: exit code 0",
                     text), text
    assert text.index("quick: exited") < text.index("summary:"), text


@pytest.mark.parametrize("writer", [False, True], ids=["stream", "writer"])
def test_the_line_a_ready_check_waits_for_is_printed_before_the_ready_words(
        tmp_path, writer):
    """Issue 42: ``db: ready after 1.0s (printed '…')`` came before db's own line. The
    check sees the line as it is read, and once its words were queued at once, ahead
    of the chunk that held the line. Now the chunk is queued in the same call that
    shows it to the check, and the words only when the next snapshot is published
    (``Engine.publish``, always a later turn of the core's loop). Both ways a line is
    read: by the pipe's reader while the process runs (``slow``, its line in the
    middle of a chunk), and after it exited (``quick``: read with the outcome, on
    stderr); printed by the real Writer or by a plain stream."""
    from proctui.config import ReadyCheck

    slow = pyspec("slow", "import sys,time\nprint('booting', flush=True)\ntime.sleep(0.2)\n"
                          "sys.stdout.write('a\\nslow: listening on 8080\\nb\\n')\n"
                          "sys.stdout.flush()\ntime.sleep(0.3)\n",
                  ready=ReadyCheck(log="listening on"))
    quick = pyspec("quick", "import sys\nsys.stderr.write('warming\\nquick: ready now\\n')\n",
                   ready=ReadyCheck(log="ready now"))
    events = EventQueue()
    sup = Supervisor([slow, quick], events=events, interactive=False)
    path = tmp_path / "out"
    with open(path, "w") as f:
        out: io.StringIO | Writer = Writer(f.fileno()) if writer else io.StringIO()
        runner = HeadlessRunner(sup, events, Printer(["slow", "quick"], out, colour=False),
                                signals=False)
        assert runner.run() == 0
        text = path.read_text() if writer else out.getvalue()  # type: ignore[union-attr]
    lines = text.splitlines()
    for name, line in (("slow", "slow: listening on 8080"), ("quick", "quick: ready now")):
        printed = lines.index(f"{name:7} | {line}")  # (padded as "proctui")
        said = next(i for i, t in enumerate(lines)
                    if t.startswith(f"proctui | {name}: ready after"))
        assert printed < said, text
        assert f"(printed {line!r})" in lines[said]


def test_colour_only_on_a_terminal_and_never_with_no_color(monkeypatch):
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.delenv("NO_COLOR", raising=False)
    assert use_colour(Tty()) is True
    assert use_colour(io.StringIO()) is False
    monkeypatch.setenv("NO_COLOR", "1")
    assert use_colour(Tty()) is False


@pytest.mark.slow
def test_countdown_lines_during_a_long_wait(proctui):
    p = proctui("--stop-timeout", "7", f"stub={py(STUBBORN)}")
    p.wait_line(r"^stub +\| ready$")
    p.signal(signal.SIGINT)
    p.wait_line(r"stub: SIGTERM sent to process group \d+; SIGKILL in 7s")
    line = p.wait_line(r"stub: still stopping after \d+\.\ds: SIGKILL in \d+\.\ds", timeout=10)
    remaining = float(re.search(r"SIGKILL in (\d+\.\d)s", line).group(1))
    assert 0.5 < remaining < 3
    assert p.finish() == 1


def test_an_abandoned_process_outlives_proctui_and_its_output_is_kept(proctui, tmp_path):
    chatty = ("import signal,time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
              "print('ready', flush=True)\n"
              "while True:\n    print('tick', flush=True); time.sleep(0.05)\n")
    p = proctui("--stop-timeout", "0.5", "--on-timeout", "abandon", f"chatty={py(chatty)}")
    pid = p.pid_of("chatty")
    p.wait_line(r"^chatty +\| ready$")
    p.signal(signal.SIGINT)
    assert p.finish() == 3
    p.wait_line(rf"chatty: abandoned after 0.5s stop timeout: pid {pid} left running")
    log = tmp_path / "run" / "chatty.out"
    # proctui has exited; the process goes on writing, into the run directory.
    wait_until(lambda: log.exists() and log.read_text().count("tick") >= 10,
               what="output after proctui exited")
    assert alive(pid)
    assert (tmp_path / "run" / "chatty.pid").exists()
    os.kill(pid, signal.SIGKILL)


NOISY = ("import sys\nsys.stdout.write('\\x1b[2J\\x1b[H\\x1b[?25l\\x1b]2;title\\x07"
         "\\x1b]52;c;cHduZWQ=\\x07\\x1b[?1049h\\x1b[?1000h\\x9b2J\\x07"
         "\\x1b[31mred\\x1b[0m ok\\n')\n")


@pytest.mark.parametrize("no_color", [False, True])
def test_on_a_terminal_only_colours_pass_and_no_color_removes_them(tmp_path, no_color):
    """Headless on a real pseudo-terminal: a child's colours reach the operator (unless
    NO_COLOR), and nothing else it prints can clear the screen, move or hide the cursor,
    set the title, write the clipboard or switch screens."""
    import fcntl
    import select
    import termios

    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    if no_color:
        env["NO_COLOR"] = "1"
    proc = subprocess.Popen(
        [sys.executable, "-m", "proctui", "run", "--headless", "--run-dir",
         str(tmp_path / "run"), f"noisy={py(NOISY)}"], stdin=subprocess.DEVNULL,
        stdout=slave, stderr=slave, env=env, start_new_session=True)
    os.close(slave)
    out = b""
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.1)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:
                    break
                if not chunk:
                    break
                out += chunk
            elif proc.poll() is not None:
                break
        assert proc.wait(timeout=10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    line = next(x for x in out.split(b"\r\n")
                if b"| " in x and b"noisy" in x.split(b"| ")[0] and b"ok" in x)
    body = line.split(b"| ", 1)[1]
    for bad in (b"\x1b[2J", b"\x1b[H", b"\x1b[?25l", b"\x1b]", b"\x1b[?1049h", b"\x1b[?1000h",
                b"\x9b", b"\x07"):
        assert bad not in out, (bad, out)
    if no_color:
        assert body == b"red ok" and b"\x1b[" not in out
    else:
        assert body == b"\x1b[31mred\x1b[0m ok", body


@pytest.mark.slow
@pytest.mark.parametrize("colour", [False, True])
def test_lines_a_stalled_reader_missed_are_counted_in_one_of_proctuis_lines(colour):
    """Our stdout's reader stalls: the lines beyond the writer's budget are dropped, never
    waited for, and whenever there is room again a line of proctui's says how many, padded
    and coloured as its other lines; printed and counted add up to what was written."""
    r, w = os.pipe()
    writer = Writer(w, budget=64 << 10)
    printer = Printer(["a-long-process-name"], writer, colour)
    got = bytearray()
    try:
        for i in range(0, 20_000, 4):  # nobody reads yet: the pipe and the budget fill up
            printer.lines("a-long-process-name", [f"line {k:05d}" for k in range(i, i + 4)])
        reader = threading.Thread(target=lambda: got.extend(_read_all(r)), daemon=True)
        reader.start()
        assert writer.drain(30), "the writer never caught up with a reader that reads"
        printer.lines("a-long-process-name", ["after the stall"])
        assert writer.drain(30)
    finally:
        os.close(w)
    reader.join(10)
    os.close(r)
    text = re.sub(r"\x1b\[[0-9;]*m", "", got.decode())
    lines = text.splitlines()
    notes = [line for line in lines if "lines not printed" in line]
    assert notes
    assert all(n.startswith("proctui".ljust(len("a-long-process-name")) + " | ") for n in notes)
    missed = sum(int(note.split(" | ")[1].split()[0]) for note in notes)
    printed = [line for line in lines if " | line " in line]
    assert missed > 0 and len(printed) + missed == 20_000
    assert lines[-1].endswith("| after the stall")
    if colour:
        assert printer.prefix(None) in got.decode()


def _read_all(fd: int) -> bytes:
    out = bytearray()
    while chunk := os.read(fd, 1 << 16):
        out.extend(chunk)
    return bytes(out)


def test_a_reader_that_keeps_reading_gets_every_line():
    """A reader slower than the output, but steady (a file, ``| wc -l``), loses nothing:
    the runner waits for the writer's thread while the reader takes bytes. Lines were
    dropped as soon as the queue was at its budget, which a fast producer reached before
    the thread had its turn: a 500,000-line run into a file lost 37,000 to 112,000 lines
    in three runs of four."""
    r, w = os.pipe()
    writer = Writer(w, budget=16 << 10, stall=5.0)
    printer = Printer(["a"], writer, False)
    got = bytearray()

    def slow_but_steady() -> None:
        while chunk := os.read(r, 4096):
            got.extend(chunk)
            time.sleep(0.0005)

    reader = threading.Thread(target=slow_but_steady, daemon=True)
    reader.start()
    try:
        for i in range(0, 20_000, 50):
            printer.lines("a", [f"line {k:05d}" for k in range(i, i + 50)])
        assert writer.drain(60)
    finally:
        os.close(w)
    reader.join(10)
    os.close(r)
    lines = got.decode().splitlines()
    assert not [line for line in lines if "not printed" in line]
    assert lines == [f"{printer.prefix('a')}line {k:05d}" for k in range(20_000)]


def test_a_flood_into_a_file_is_all_there(tmp_path):
    """``proctui run --headless ... > file``: every line of a 1,000,000-line flood, in
    order, and nothing said about a reader falling behind."""
    out = tmp_path / "out.txt"
    with open(out, "wb") as f:
        done = subprocess.run(
            [sys.executable, "-m", "proctui", "run", "--headless", "--run-dir",
             str(tmp_path / "run"), "a=seq 1 1000000"],
            stdout=f, stderr=subprocess.PIPE, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = out.read_bytes().split(b"\n")
    mine = [line for line in lines if line.startswith(b"a       | ")]
    assert not [line for line in lines if b"not printed" in line or b"dropped" in line]
    assert len(mine) == 1_000_000
    assert mine[0] == b"a       | 1" and mine[-1] == b"a       | 1000000"


def test_output_that_cannot_be_written_is_not_a_clean_run(tmp_path):
    """stdout on a full disk (/dev/full): the output is lost, so the exit status is 1
    and stderr says why; it exited 0 as if all was well."""
    with open("/dev/full", "wb") as full:
        done = subprocess.run(
            [sys.executable, "-m", "proctui", "run", "--headless", "--run-dir",
             str(tmp_path / "run"), "a=seq 5"],
            stdout=full, stderr=subprocess.PIPE, text=True, timeout=60, cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert "No space left on device" in done.stderr


FLOOD_NOTING_TERM = (
    "import os, signal, sys, time\n"
    "def term(*_):\n"
    "    with open(sys.argv[1], 'a') as f: f.write(f'{time.time()}\\n')\n"
    "signal.signal(signal.SIGTERM, term)\n"
    "line = b'x' * 999 + b'\\n'\n"
    "while True: os.write(1, line * 64)\n")


@pytest.mark.slow
@pytest.mark.parametrize("how", ["stop-after", "ctrl+c twice"])
def test_a_slow_steady_reader_delays_no_stop_and_no_kill(tmp_path, how):
    """Printing a backlog to a slow but steady reader takes seconds: --stop-after 2
    stopped at 7.4 s, and a second ctrl+c killed 5.6 s late, when the runner acted only
    between batches. Signals and --stop-after act at once; the words say so in order."""
    stamps = tmp_path / "term.txt"
    child = f"flood={PY} -c {shlex.quote(FLOOD_NOTING_TERM)} {stamps}"
    extra = ["--stop-after", "1"] if how == "stop-after" else []
    proc = subprocess.Popen(
        [sys.executable, "-m", "proctui", "run", "--headless", "--stop-timeout", "60",
         "--run-dir", str(tmp_path / "run"), *extra, child],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=tmp_path,
        start_new_session=True)
    launched = time.time()
    got = bytearray()

    def steady() -> None:  # 2 MB/s, however much waits
        assert proc.stdout is not None
        fd, due = proc.stdout.fileno(), time.monotonic()
        while chunk := os.read(fd, 65536):
            got.extend(chunk)
            due += len(chunk) / 2e6
            time.sleep(max(0.0, due - time.monotonic()))

    reader = threading.Thread(target=steady, daemon=True)
    reader.start()
    try:
        if how == "stop-after":
            wait_until(lambda: stamps.exists(), timeout=30, what="the SIGTERM")
            assert float(stamps.read_text().split()[0]) - launched < 1 + 3
        else:
            time.sleep(1.0)
            proc.send_signal(signal.SIGINT)
            wait_until(lambda: stamps.exists(), timeout=30, what="the SIGTERM")
            proc.send_signal(signal.SIGINT)
            pressed = time.monotonic()
            # The flood is gone within moments (its group SIGKILLed), not seconds later.
            wait_until(lambda: _group_gone(proc.pid), timeout=30, what="the kill")
            assert time.monotonic() - pressed < 3
            proc.send_signal(signal.SIGINT)  # all ended: no more waiting for the reader
            assert proc.wait(60) == 1
            reader.join(30)
            said = [line for line in bytes(got).split(b"\n") if b"x" * 20 not in line]
            said = [line.split(b" | ", 1)[1] for line in said if b" | " in line]
            order = [next(i for i, line in enumerate(said) if line.startswith(words))
                     for words in (b"received SIGINT: stopping", b"flood: SIGTERM sent",
                                   b"received SIGINT again: killing",
                                   b"flood: SIGKILL sent")]
            assert order == sorted(order), said
    finally:
        # proctui ends its child itself (stop, kill, and the wait for the reader ended):
        # SIGKILLed, it left the child to the test process, a subreaper, and a later
        # test's supervisor in this worker counted it as a stray.
        for _ in range(3):
            if proc.poll() is None:
                with contextlib.suppress(OSError):
                    proc.send_signal(signal.SIGINT)
                time.sleep(0.3)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(30)


def _group_gone(pgid: int) -> bool:
    """No process of proctui's children's groups but proctui itself is left."""
    out = subprocess.run(["ps", "-o", "pid=,args=", "--ppid", str(pgid)],
                         capture_output=True, text=True).stdout
    return "flood" not in out and "-c" not in out


@pytest.mark.slow
def test_at_exit_a_slow_steady_reader_gets_the_rest(tmp_path):
    """At exit the writer waited 2 s in all: a reader at 0.5 MB/s lost the last
    megabytes of a run that had ended, and nothing said so. It waits while the reader
    takes (60 s at most), and says on stderr what it could not write."""
    proc = _burst(tmp_path, 3000)
    assert proc.stdout is not None
    got, fd, due = bytearray(), proc.stdout.fileno(), time.monotonic()
    while chunk := os.read(fd, 65536):
        got.extend(chunk)
        due += len(chunk) / 5e5
        time.sleep(max(0.0, due - time.monotonic()))
    assert proc.wait(60) == 0
    assert sum(1 for line in bytes(got).split(b"\n") if line.endswith(b"y" * 50)) == 3000


def _burst(tmp_path: Path, count: int) -> subprocess.Popen[bytes]:
    """proctui run --headless of one process, burst, that writes ``count`` lines of a
    thousand bytes at once and exits; its stdout and stderr are pipes."""
    code = f"import os\nline = b'y' * 999 + b'\\n'\nos.write(1, line * {count})\n"
    return subprocess.Popen(
        [sys.executable, "-m", "proctui", "run", "--headless", "--run-dir",
         str(tmp_path / "run"), f"burst={PY} -c {shlex.quote(code)}"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path)


def test_wide_names_keep_the_labels_aligned():
    """Labels were padded by characters: 日本語 (six columns) pushed its bar three
    columns right of every other name's."""
    out = io.StringIO()
    printer = Printer(["日本語", "ab"], out, False)
    printer.lines("日本語", ["hi"])
    printer.lines("ab", ["yo"])
    bars = []
    for line in out.getvalue().splitlines():
        head = line.split("|", 1)[0]
        bars.append(sum(2 if ord(c) > 0x2E80 else 1 for c in head))
    assert len(set(bars)) == 1, out.getvalue()


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_once_everything_ended_ends_the_wait_for_a_slow_reader(tmp_path, sig):
    """Everything has ended; a slow reader still has megabytes to take. A SIGTERM there
    killed proctui outright and a ctrl+c was exit 130, both without a summary (the
    handlers were restored before the last wait), or only queued a line after the whole
    backlog (226 s at 300 KB/s). Now it stops waiting: the run's own status, and stderr
    says what was not printed, with the summary."""
    proc = _burst(tmp_path, 4000)
    assert proc.stdout is not None

    def slow() -> None:  # 100 KB/s: 40 s for what waits
        assert proc.stdout is not None
        fd, due = proc.stdout.fileno(), time.monotonic()
        while chunk := os.read(fd, 16384):
            due += len(chunk) / 1e5
            time.sleep(max(0.0, due - time.monotonic()))

    reader = threading.Thread(target=slow, daemon=True)
    reader.start()
    time.sleep(3.0)  # the burst has long ended; its lines still wait for the reader
    proc.send_signal(sig)
    sent = time.monotonic()
    assert proc.wait(30) == 0
    assert time.monotonic() - sent < 6
    err = proc.stderr.read().decode() if proc.stderr else ""
    assert f"exiting at once (received {signal.Signals(sig).name})" in err, err
    assert "burst  exited: exit code 0" in err, err
