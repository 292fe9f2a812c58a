"""proctui's benchmarks, side by side with honcho (headless) and mprocs (console).

    python tests/bench/bench.py [--runs N] [--only 1,2,...] [--write]

Each scenario runs proctui and its peer alternately, ``--runs`` times, and reports
medians and ratios. Peers are installed into tests/bench/.peers/ when missing (honcho from
PyPI into its own venv; mprocs from its npm package, which carries a Linux x86-64
binary); they are never runtime dependencies. Console scenarios run in tmux.
``--write`` records the table in tests/bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import re
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
PEERS = HERE / ".peers"
PY = sys.executable
PROCTUI = [PY, "-m", "proctui"]
WIDTH, HEIGHT = 120, 30
FLOOD_LINES = 2_000_000
SMALL_FLOOD = 500_000


# -- peers ----------------------------------------------------------------------------------

def honcho() -> list[str]:
    venv = PEERS / "honcho-venv"
    exe = venv / "bin" / "honcho"
    if not exe.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "honcho"], check=True)
    return [str(exe)]


def mprocs() -> list[str]:
    exe = PEERS / "package" / "mprocs-0.9.6-linux-x86_64-musl" / "mprocs"
    if not exe.exists():
        PEERS.mkdir(parents=True, exist_ok=True)
        subprocess.run(["npm", "pack", "mprocs@0.9.6"], cwd=PEERS, check=True,
                       capture_output=True)
        subprocess.run(["tar", "xzf", "mprocs-0.9.6.tgz"], cwd=PEERS, check=True)
    return [str(exe)]


# -- measuring ------------------------------------------------------------------------------

@dataclass
class Run:
    wall: float
    cpu: float
    maxrss_mb: float


def measure(cmd: list[str], cwd: Path | None = None, stdout: int | None = None,
            env: dict[str, str] | None = None) -> Run:
    """Wall time, CPU (the command and everything it waited for) and peak RSS."""
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=stdout if stdout is not None
                            else subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=env or os.environ)
    _, _, usage = os.wait4(proc.pid, 0)
    proc.returncode = 0
    wall = time.perf_counter() - started
    return Run(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024)


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    k = min(len(ordered) - 1, max(0, round(p / 100 * (len(ordered) - 1))))
    return ordered[k]


class Tmux:
    """A command on a WIDTHxHEIGHT terminal, read back with capture-pane."""

    def __init__(self, cmd: str, name: str = "bench") -> None:
        self.name = name
        subprocess.run(["tmux", "kill-session", "-t", name], capture_output=True)
        self.started = time.perf_counter()
        subprocess.run(["tmux", "new-session", "-d", "-s", name, "-x", str(WIDTH), "-y",
                        str(HEIGHT), cmd], check=True)
        out = subprocess.run(["tmux", "list-panes", "-t", name, "-F", "#{pane_pid}"],
                             capture_output=True, text=True).stdout.split()
        self.pid = int(out[0]) if out else 0

    def screen(self) -> str:
        return subprocess.run(["tmux", "capture-pane", "-p", "-t", self.name],
                              capture_output=True, text=True).stdout

    def wait_for(self, pattern: str, timeout: float = 60.0) -> float:
        """Seconds from the session's start until ``pattern`` is on screen."""
        regex = re.compile(pattern, re.MULTILINE)
        deadline = time.perf_counter() + timeout
        while time.perf_counter() < deadline:
            if regex.search(self.screen()):
                return time.perf_counter() - self.started
            time.sleep(0.01)
        raise TimeoutError(f"{pattern!r} never appeared:\n{self.screen()}")

    def keys(self, *keys: str) -> None:
        subprocess.run(["tmux", "send-keys", "-t", self.name, *keys], check=True)

    def kill(self) -> None:
        subprocess.run(["tmux", "kill-session", "-t", self.name], capture_output=True)


def rss_peak_mb(pid: int) -> float:
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return float("nan")
    m = re.search(r"VmHWM:\s+(\d+) kB", text)
    return int(m.group(1)) / 1024 if m else float("nan")


def cpu_seconds(pid: int) -> float:
    raw = Path(f"/proc/{pid}/stat").read_bytes()
    fields = raw[raw.rindex(b")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def kill_tree(pid: int) -> None:
    """End a benchmark's processes: the command and every descendant, by pid."""
    children = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True)
    for child in children.stdout.split():
        kill_tree(int(child))
    with contextlib.suppress(OSError):
        os.kill(pid, signal.SIGKILL)


@dataclass
class Result:
    scenario: str
    rows: list[tuple[str, str]] = field(default_factory=list)  # (measure, value)

    def add(self, what: str, value: str) -> None:
        self.rows.append((what, value))
        print(f"  {what}: {value}", flush=True)


def fmt(value: float, unit: str = "s", digits: int = 2) -> str:
    return f"{value:.{digits}f} {unit}".strip()


def ratio(peer: float, ours: float) -> str:
    return f"{peer / ours:.1f}x" if ours > 0 else "n/a"


# -- scenarios ------------------------------------------------------------------------------

def scenario_headless_flood(runs: int, work: Path) -> Result:
    r = Result("1. Headless flood: seq 1 2000000 to /dev/null")
    (work / "Procfile").write_text(f"seq: seq 1 {FLOOD_LINES}\n")
    honcho_cmd = honcho()
    ours, peer, floor = [], [], []
    for i in range(runs):
        ours.append(measure([*PROCTUI, "run", "--headless", "--run-dir",
                             str(work / f"run{i}"), "-f", "Procfile"], cwd=work))
        peer.append(measure([*honcho_cmd, "start", "-f", "Procfile"], cwd=work))
        floor.append(measure(["sh", "-c", f"seq 1 {FLOOD_LINES} | cat > /dev/null"]))
    w_ours, w_peer = median([x.wall for x in ours]), median([x.wall for x in peer])
    w_floor = median([x.wall for x in floor])
    r.add("proctui wall / CPU", f"{w_ours:.2f} s / {median([x.cpu for x in ours]):.2f} s")
    r.add("honcho wall / CPU", f"{w_peer:.2f} s / {median([x.cpu for x in peer]):.2f} s")
    r.add("cat floor wall", f"{w_floor:.3f} s")
    r.add("proctui faster than honcho", ratio(w_peer, w_ours))
    r.add("proctui vs the cat floor", f"{w_ours / w_floor:.1f}x the floor")
    r.add("peak RSS proctui / honcho", f"{median([x.maxrss_mb for x in ours]):.0f} MB / "
                                       f"{median([x.maxrss_mb for x in peer]):.0f} MB")
    # The figure the issue holds proctui to: 500,000 lines, start-up included.
    small, small_floor, bare, pump, interp = [], [], [], [], []
    # Fifteen pairs at least: each takes a quarter of a second, and on a shared 2-core
    # machine the floor's own time swings by a third between minutes.
    for i in range(max(runs, 15)):
        small.append(measure([*PROCTUI, "run", "--headless", "--run-dir",
                              str(work / f"s{i}"), f"seq 1 {SMALL_FLOOD}"], cwd=work))
        small_floor.append(measure(["sh", "-c", f"seq 1 {SMALL_FLOOD} | cat > /dev/null"]))
        # What the figure is made of: proctui's start and end with no output, and the
        # least any Python program on asyncio takes for the same lines.
        bare.append(measure([*PROCTUI, "run", "--headless", "--run-dir",
                             str(work / f"t{i}"), "true"], cwd=work))
        pump.append(measure([PY, str(HERE / "asyncio_floor.py"), "seq", "1",
                             str(SMALL_FLOOD)]))
        interp.append(measure([PY, "-c", "import asyncio"]))
    w_small, w_small_floor = median([x.wall for x in small]), median([x.wall for x in small_floor])
    r.add(f"{SMALL_FLOOD:,} lines: proctui wall / CPU",
          f"{w_small:.3f} s / {median([x.cpu for x in small]):.3f} s")
    r.add(f"{SMALL_FLOOD:,} lines: cat floor wall", f"{w_small_floor:.3f} s")
    r.add(f"{SMALL_FLOOD:,} lines: proctui vs the cat floor (target 10x)",
          f"{w_small / w_small_floor:.1f}x the floor (medians apart)")
    # Each run against the floor measured right after it, as startup.py pairs the first
    # frames: a neighbour's load moves both, and the medians taken apart moved with it.
    pairs = sorted(a.wall / b.wall for a, b in zip(small, small_floor, strict=True))
    q1, q2, q3 = statistics.quantiles(pairs, n=4, method="inclusive")
    r.add(f"{SMALL_FLOOD:,} lines: proctui vs the cat floor, paired (target 10x)",
          f"{q2:.2f}x (quartiles {q1:.2f}x to {q3:.2f}x)")
    w_bare, w_pump = median([x.wall for x in bare]), median([x.wall for x in pump])
    w_interp = median([x.wall for x in interp])
    r.add("run --headless true (no output: start-up and exit)",
          f"{w_bare:.3f} s: {w_bare / w_small_floor:.1f}x the cat floor")
    r.add(f"{SMALL_FLOOD:,} lines beyond that start-up",
          f"{w_small - w_bare:.3f} s: {(w_small - w_bare) / w_small_floor:.1f}x the cat floor")
    r.add("python -c 'import asyncio'",
          f"{w_interp:.3f} s: {w_interp / w_small_floor:.1f}x the cat floor")
    r.add(f"the asyncio floor (asyncio_floor.py, {SMALL_FLOOD:,} lines)",
          f"{w_pump:.3f} s: {w_pump / w_small_floor:.1f}x the cat floor")
    return r


def scenario_console_flood(runs: int, work: Path) -> Result:
    r = Result("2. Console flood: the last of 2,000,000 lines on screen (120x30, tmux)")
    last = rf"(^|│){FLOOD_LINES} *│? *$"
    ours, peer, rss, stayed = [], [], [], []
    for i in range(runs):
        s = Tmux(f"{' '.join(PROCTUI)} run --run-dir {work / f'c{i}'} 'seq 1 {FLOOD_LINES}'")
        ours.append(s.wait_for(last))
        rss.append(rss_peak_mb(s.pid))  # the pane's command is proctui
        stayed.append(_stays(s, last))
        kill_tree(s.pid)
        s.kill()
        s = Tmux(f"{mprocs()[0]} 'seq 1 {FLOOD_LINES}'")
        peer.append(s.wait_for(last))
        kill_tree(s.pid)
        s.kill()
    r.add("proctui", fmt(median(ours)))
    r.add("mprocs", fmt(median(peer)))
    r.add("proctui faster than mprocs (target 8x)", ratio(median(peer), median(ours)))
    r.add("proctui: the last line still the pane's last row 1 s later",
          f"{sum(stayed)}/{len(stayed)} runs")
    r.add("proctui console peak RSS", fmt(median(rss), "MB", 0))
    return r


def _stays(session: Tmux, pattern: str, seconds: float = 1.0) -> bool:
    """The last line seen is no passing glimpse: still there, and the last of its pane
    (no line of the flood below it), ``seconds`` later."""
    time.sleep(seconds)
    screen = session.screen()
    found = list(re.finditer(pattern, screen, re.MULTILINE))
    if not found:
        return False
    below = screen[found[-1].end():].splitlines()[1:]
    return not any(re.search(r"(^|│)\d{5,} *│? *$", line) for line in below)


GO = "while [ ! -e {go} ]; do sleep 0.01; done; seq 1 {lines}"


def _flood_after_go(session: Tmux, go: Path, pattern: str) -> float:
    """Seconds from the go file (made once the console shows the process running) to
    the flood's last line on screen: the flood through the console, start-up aside."""
    session.wait_for(r"running")
    time.sleep(0.3)
    started = time.perf_counter()
    go.touch()
    session.wait_for(pattern)
    return time.perf_counter() - started


def scenario_attached_flood(runs: int, work: Path) -> Result:
    r = Result(f"11. Attached console: {FLOOD_LINES:,} lines until the last is on screen, "
               "against a local console (120x30, tmux, timed from the flood's start)")
    last = rf"(^|│){FLOOD_LINES} *│? *$"
    local, attached, stayed = [], [], []
    for i in range(runs):
        go = work / f"go-l{i}"
        cmd = GO.format(go=go, lines=FLOOD_LINES)
        s = Tmux(f"{' '.join(PROCTUI)} run --run-dir {work / f'al{i}'} {shlex.quote(cmd)}")
        local.append(_flood_after_go(s, go, last))
        kill_tree(s.pid)
        s.kill()
        go = work / f"go-a{i}"
        cmd = GO.format(go=go, lines=FLOOD_LINES)
        run_dir = work / f"aa{i}"
        subprocess.run([*PROCTUI, "up", "--run-dir", str(run_dir), cmd], cwd=work,
                       check=True, capture_output=True, timeout=60)
        try:
            s = Tmux(f"{' '.join(PROCTUI)} attach --run-dir {run_dir}")
            attached.append(_flood_after_go(s, go, last))
            stayed.append(_stays(s, last))
            kill_tree(s.pid)
            s.kill()
        finally:
            subprocess.run([*PROCTUI, "down", "--run-dir", str(run_dir)], cwd=work,
                           capture_output=True, timeout=60)
    r.add("local console", fmt(median(local)))
    r.add("attached console", fmt(median(attached)))
    r.add("attached / local (target at most 1.3x)",
          f"{median(attached) / median(local):.2f}x")
    r.add("attached: the last line still the pane's last row 1 s later",
          f"{sum(stayed)}/{len(stayed)} runs")
    return r


def scenario_memory(runs: int, work: Path) -> Result:
    r = Result("3. Memory: bounded buffers")
    peaks = {}
    for lines in (1_000_000, 10_000_000):
        values = [measure([*PROCTUI, "run", "--headless", "--run-dir", str(work / f"m{i}"),
                           f"seq 1 {lines}"], cwd=work).maxrss_mb for i in range(runs)]
        peaks[lines] = median(values)
        r.add(f"headless peak RSS, {lines:,} lines", fmt(peaks[lines], "MB", 1))
    r.add("headless growth 1M -> 10M lines", fmt(peaks[10_000_000] - peaks[1_000_000], "MB", 1))
    floods = " ".join(f"'f{i}=seq 1 {FLOOD_LINES * 2}'" for i in range(4))
    console = {}
    for label, cmd in (("1M", "seq 1 1000000"), ("10M", "seq 1 10000000")):
        s = Tmux(f"{' '.join(PROCTUI)} run --run-dir {work / ('cm' + label)} '{cmd}'")
        s.wait_for(r"exited: exit code 0", timeout=120)
        console[label] = rss_peak_mb(s.pid)
        kill_tree(s.pid)
        s.kill()
        r.add(f"console peak RSS, {label} lines", fmt(console[label], "MB", 1))
    r.add("console growth 1M -> 10M lines", fmt(console["10M"] - console["1M"], "MB", 1))
    s = Tmux(f"{' '.join(PROCTUI)} run --run-dir {work / 'c4'} {floods}")
    s.wait_for(r"exited: exit code 0", timeout=120)
    r.add("console peak RSS, 4 panes flooding 4M lines each", fmt(rss_peak_mb(s.pid), "MB", 0))
    kill_tree(s.pid)
    s.kill()
    return r


KEY_TIMEOUT = 10.0


def _key_latency(session: Tmux, presses: int, nxt: str,
                 marker: Callable[[int], str]) -> list[float]:
    """Press ``nxt`` and time until the pane shows the next process's output. A press
    that shows nothing within KEY_TIMEOUT counts as KEY_TIMEOUT and ends the series."""
    delays = []
    current = 0
    for _ in range(presses):
        current = (current + 1) % 4
        started = time.perf_counter()
        session.keys(nxt)
        want = re.compile(marker(current), re.MULTILINE)
        while len(want.findall(session.screen())) < 3:
            if time.perf_counter() - started > KEY_TIMEOUT:
                delays.append(KEY_TIMEOUT)
                return delays
        delays.append(time.perf_counter() - started)
        time.sleep(0.1)
    return delays


def scenario_responsiveness(runs: int, work: Path) -> Result:
    r = Result("4. Key to screen while four processes flood (select the next process)")
    floods = [f"yes FLOOD{i}-{'x' * 40}" for i in range(4)]
    presses = 20 * runs

    def marker(i: int) -> str:
        # A whole line of that process's output (three of them count as "in the pane").
        return rf"FLOOD{i}-x{{40}}"

    quoted = " ".join(f"'p{i}={c}'" for i, c in enumerate(floods))
    s = Tmux(f"{' '.join(PROCTUI)} run --run-dir {work / 'resp'} {quoted}")
    s.wait_for(rf"{marker(0)}(.|\n)*{marker(0)}(.|\n)*{marker(0)}")
    time.sleep(1.0)
    ours = _key_latency(s, presses, "j", marker)
    kill_tree(s.pid)
    s.kill()
    s = Tmux(f"{mprocs()[0]} " + " ".join(f"'{c}'" for c in floods))
    s.wait_for(rf"{marker(0)}(.|\n)*{marker(0)}(.|\n)*{marker(0)}")
    time.sleep(1.0)
    peer = _key_latency(s, presses, "j", marker)
    kill_tree(s.pid)
    s.kill()
    r.add("proctui p50 / p95", f"{percentile(ours, 50) * 1000:.0f} ms / "
                              f"{percentile(ours, 95) * 1000:.0f} ms")
    timed_out = " (a press showed nothing within 10 s)" if KEY_TIMEOUT in peer else ""
    r.add("mprocs p50 / p95", f"{percentile(peer, 50) * 1000:.0f} ms / "
                             f"{percentile(peer, 95) * 1000:.0f} ms{timed_out}")
    r.add("(includes tmux capture-pane polling, about 5 ms a look)", "")
    return r


def _death_lateness(headless: bool, work: Path, tag: str) -> float:
    """Seconds between a stubborn process's stop deadline and its death, under flood."""
    # The stub notes when SIGTERM reaches it (CLOCK_MONOTONIC is one clock for the whole
    # machine): the deadline is that instant plus the 2 s stop timeout.
    noted = work / f"{tag}.term"
    ignorer = (f"{PY} -c 'import signal,time\n"
               f"def note(*a): open(\"{noted}\", \"w\").write(repr(time.monotonic()))\n"
               "signal.signal(signal.SIGTERM, note)\ntime.sleep(600)'")
    # The floods ignore SIGTERM too, so they keep flooding until the deadline.
    floods = [f"f{i}=trap '' TERM; yes FLOOD{i}" for i in range(4)]
    argv = [*PROCTUI, "run", "--stop-timeout", "2", "--kill-timeout", "5", "--run-dir",
            str(work / tag), f"stub={ignorer}", *floods]
    if headless:
        proc = subprocess.Popen([*argv[:4], "--headless", *argv[4:]],
                                stdout=subprocess.DEVNULL, start_new_session=True)
        holder = proc.pid
    else:
        session = Tmux(shlex.join(argv), name="dl")
        holder = session.pid
    stub = _wait_child(work / tag, "stub")
    time.sleep(1.5)  # let the floods run flat out
    t0 = time.perf_counter()
    if headless:
        os.kill(proc.pid, signal.SIGINT)
    else:
        session.keys("q")
    while _alive(stub):
        time.sleep(0.0005)
    died = time.monotonic()
    lateness = died - (float(noted.read_text()) + 2.0)
    del t0
    if headless:
        proc.wait(30)
    else:
        time.sleep(0.5)
        kill_tree(holder)
        session.kill()
    return lateness


def _wait_child(run_dir: Path, name: str, timeout: float = 20.0) -> int:
    deadline = time.monotonic() + timeout
    path = run_dir / f"{name}.pid"
    while time.monotonic() < deadline:
        try:
            import json

            return int(json.loads(path.read_text())["pid"])
        except (OSError, ValueError, KeyError):
            time.sleep(0.02)
    raise TimeoutError(f"{name} never started")


def _alive(pid: int) -> bool:
    try:
        raw = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return False
    return raw[raw.rindex(b")") + 2:raw.rindex(b")") + 3] not in (b"Z", b"X")


def scenario_deadline(runs: int, work: Path) -> Result:
    r = Result("5. SIGKILL lateness against a 2 s deadline, four floods running")
    for headless in (True, False):
        late = [_death_lateness(headless, work, f"d{headless}{i}") for i in range(runs)]
        label = "headless" if headless else "console"
        r.add(f"{label}: median / worst", f"{median(late) * 1000:.0f} ms / "
                                         f"{max(late) * 1000:.0f} ms")
    return r


def scenario_idle(runs: int, work: Path, seconds: float = 30.0) -> Result:
    import quiet

    r = Result(f"6. Idle: ten sleeping processes, {seconds:.0f} s (console on a pty, 120x30)")
    ours = quiet.idle(PROCTUI, work, seconds)
    r.add("console, first minute (ages in seconds, then tens)",
          f"{ours['console_first_minute']:.2f} % of one core")
    r.add("console, after the first minute", f"{ours['console_after']:.2f} % of one core")
    r.add("headless", f"{ours['headless']:.2f} % of one core")
    r.add("detached supervisor (up)", f"{ours['detached']:.2f} % of one core")
    s = Tmux(f"{mprocs()[0]} " + " ".join("'sleep 1000'" for _ in range(10)))
    time.sleep(2)
    before = cpu_seconds(s.pid)
    time.sleep(seconds)
    peer = (cpu_seconds(s.pid) - before) / seconds * 100
    kill_tree(s.pid)
    s.kill()
    r.add("mprocs", f"{peer:.2f} % of one core")
    return r


def scenario_startup(runs: int, work: Path) -> Result:
    import startup

    r = Result("7. Start-up, ten processes (each notes when its shell started)")
    got = startup.measure(PROCTUI, max(3, runs), work)
    r.add("proctui --version / check", f"{got['version'] * 1000:.0f} ms / "
                                      f"{got['check'] * 1000:.0f} ms")
    r.add("headless: launch to the first process started",
          f"{got['headless_first_child'] * 1000:.0f} ms")
    r.add("console: launch to the first process started",
          f"{got['console_first_child'] * 1000:.0f} ms "
          f"({got['console_first_child'] / got['headless_first_child']:.2f}x headless)")
    r.add("console: launch to the first frame", f"{got['console_first_frame'] * 1000:.0f} ms")
    r.add("a bare Textual app (App + Static, 120x30): launch to the first frame",
          f"{got['bare_textual_first_frame'] * 1000:.0f} ms")
    r.add("console first frame / bare Textual's (target at most 1.3x)",
          f"{got['console_first_frame'] / got['bare_textual_first_frame']:.2f}x")
    r.add("CPU of the console's own process until its first frame / bare Textual's",
          f"{got['console_first_frame_cpu'] * 1000:.0f} ms / "
          f"{got['bare_textual_first_frame_cpu'] * 1000:.0f} ms = "
          f"{got['console_first_frame_cpu'] / got['bare_textual_first_frame_cpu']:.2f}x")
    return r


def scenario_traffic(runs: int, work: Path) -> Result:
    import quiet

    r = Result("9. Terminal traffic: one process flooding, console 120x30 on a pty")
    for refresh in (None, 2.0):
        rates = [quiet.traffic(PROCTUI, work / f"{refresh}{i}", refresh) for i in range(runs)]
        label = f"--refresh {refresh:g}" if refresh else "default (10 Hz)"
        r.add(f"bytes written to the terminal, {label}", f"{median(rates) / 1024:.0f} KiB/s")
    return r


def scenario_scale(runs: int, work: Path) -> Result:
    r = Result("8. Scale: 100 processes started, then stopped (headless)")
    totals, right = [], []
    for i in range(runs):
        cmds = [f"p{n}=sleep 1000" for n in range(100)]
        started = time.perf_counter()
        proc = subprocess.Popen([*PROCTUI, "run", "--headless", "--run-dir",
                                 str(work / f"sc{i}"), *cmds], stdout=subprocess.PIPE,
                                text=True, start_new_session=True)
        assert proc.stdout is not None
        seen = 0
        lines = []
        for line in proc.stdout:
            lines.append(line)
            if "started (pid" in line:
                seen += 1
                if seen == 100:
                    os.killpg(proc.pid, signal.SIGINT)
        proc.wait(60)
        totals.append(time.perf_counter() - started)
        summary = "".join(lines).split("summary:")[-1]
        right.append(len(re.findall(r"stopped after \d+\.\ds: terminated by SIGTERM", summary)))
    r.add("start 100 + stop 100, total", fmt(median(totals)))
    r.add("outcomes right", f"{min(right)}/100")
    return r


def scenario_thousands(runs: int, work: Path) -> Result:
    """The 2,000-process stop: how long it takes and how late the words are for processes
    that died at once (tests/test_hangs.py only holds it to bounds a busy CI meets)."""
    r = Result("10. 2,000 processes (exec sleep), SIGINT, stop_timeout 5 (headless)")
    tooks, worsts = [], []
    for i in range(runs):
        run = work / f"k{i}"
        procfile = work / f"Procfile{i}"
        procfile.write_text("".join(f"p{n}: exec sleep 600\n" for n in range(2000)))
        proc = subprocess.Popen([*PROCTUI, "run", "--headless", "--run-dir", str(run), "-f",
                                 str(procfile), "--stop-timeout", "5", "--kill-timeout", "2"],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                start_new_session=True)
        deadline = time.monotonic() + 120
        while len(list(run.glob("*.pid"))) < 2000 and time.monotonic() < deadline:
            time.sleep(0.1)
        started = time.perf_counter()
        os.killpg(proc.pid, signal.SIGINT)
        out, _ = proc.communicate(timeout=120)
        tooks.append(time.perf_counter() - started)
        times = [float(x) for x in re.findall(r"stopped after (\d+\.\d)s: terminated by "
                                              r"SIGTERM", out.split("summary:")[-1])]
        worsts.append(max(times, default=float("nan")))
    r.add("SIGINT to exit, median", fmt(median(tooks)))
    r.add("worst 'stopped after' said of a process that died at once", fmt(max(worsts), digits=1))
    return r


SCENARIOS: dict[int, Callable[[int, Path], Result]] = {
    1: scenario_headless_flood, 2: scenario_console_flood, 3: scenario_memory,
    4: scenario_responsiveness, 5: scenario_deadline, 6: scenario_idle,
    7: scenario_startup, 8: scenario_scale, 9: scenario_traffic, 10: scenario_thousands,
    11: scenario_attached_flood,
}


def table(results: list[Result]) -> str:
    lines = ["| scenario | measure | value |", "|---|---|---|"]
    for result in results:
        for i, (what, value) in enumerate(result.rows):
            lines.append(f"| {result.scenario if i == 0 else ''} | {what} | {value} |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--only", default="")
    parser.add_argument("--write", action="store_true", help="record tests/bench/RESULTS.md")
    args = parser.parse_args()
    chosen = [int(x) for x in args.only.split(",") if x] or list(SCENARIOS)
    if not shutil.which("tmux"):
        print("tmux is needed for the console scenarios", file=sys.stderr)
        return 2
    import startup

    startup.compiled()
    load = os.getloadavg()
    print(f"load average before: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}", flush=True)
    results = []
    with tempfile.TemporaryDirectory(prefix="proctui-bench-") as tmp:
        for number in chosen:
            print(SCENARIOS[number].__name__, flush=True)
            results.append(SCENARIOS[number](args.runs, Path(tmp)))
    after = os.getloadavg()
    loads = (f"load average (1, 5, 15 min) {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} "
             f"before, {after[0]:.2f} {after[1]:.2f} {after[2]:.2f} after")
    text = table(results)
    print()
    print(text)
    print(loads)
    if args.write:
        header = (f"# Benchmark results\n\n{time.strftime('%Y-%m-%d')}, "
                  f"{platform.machine()}, {os.cpu_count()} cores, Python "
                  f"{platform.python_version()}, `python tests/bench/bench.py --runs "
                  f"{args.runs}` (medians of {args.runs} alternating runs), {loads}.\n\n")
        (HERE / "RESULTS.md").write_text(header + text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
