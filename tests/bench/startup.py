"""Start-up: how soon the processes start, and the first frame, headless and in the
console, with ten processes; and the commands that must stay light. Beside them, a bare
Textual app's first frame (an App with one Static, the same terminal size, run by this
Python): the console's first frame is held to a ratio of it.

    python tests/bench/startup.py [--runs N] [--proctui PATH] [--instructions]

Each child notes the instant its shell started (``date +%s.%N``): the supervisor's job
is to start the services early, and on a slow board the console must not make them wait
for Textual to load. A second bare app starts the same children beside it: what their
own start-up costs a first frame when they share the cores (not proctui's work). Needs
only Python and a POSIX shell, so it runs unchanged inside an emulated riscv64 root
(tests/bench/edge.sh).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ptylab import OnPty


def children(stamps: Path, count: int = 10) -> list[str]:
    return [f"s{i}=echo $(date +%s.%N) >> {stamps}; exec sleep 1000" for i in range(count)]


def first_start(stamps: Path, launched: float, timeout: float = 120) -> float:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if stamps.exists():
            values = [float(x) for x in stamps.read_text().split() if x.strip()]
            if values:
                return min(values) - launched
        time.sleep(0.01)
    raise TimeoutError("no child started")


# The floor for a first frame: Textual itself, nothing of proctui.
BARE = """
from textual.app import App
from textual.widgets import Static
class Bare(App):
    def compose(self):
        yield Static("bare first frame")
Bare().run()
"""
# The same app while the same children start beside it, launched as proctui launches
# them: through /bin/sh -c, each in a session of its own (on Linux a session is a
# scheduling group of its own too, so a child in the app's session would compete for the
# cores differently). What the children's own start-up costs a first frame when they
# compete for the cores: under emulation, with two cores, most of the difference between
# the wall and CPU ratios, and not proctui's work. Their PIDs go to the file named first,
# for ``frame`` to end them (outside the terminal's group, its end does not).
BARE_WITH_CHILDREN = """
import subprocess, sys
with open(sys.argv[1], "w") as pids:
    for command in sys.argv[2:]:
        child = subprocess.Popen(["/bin/sh", "-c", command], stdin=subprocess.DEVNULL,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                 start_new_session=True)
        pids.write(f"{child.pid}\\n")
""" + BARE
SIZE = {"width": 120, "height": 30}
# For --instructions: the bare app or the console (argv after "console": proctui's),
# ended the moment its first frame has arrived (SIGUSR2 from the benchmark), so that
# callgrind counts the instructions until then and no more.
UNTIL_FRAME = """
import os, signal, sys
signal.signal(signal.SIGUSR2, lambda *_: os._exit(0))
if sys.argv[1] == "bare":
    exec(sys.argv[2])
else:
    sys.argv = ["proctui", *sys.argv[2:]]
    from proctui.cli import main
    main()
"""


def measure(proctui: list[str], runs: int, work: Path,
            count: int = 10) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {"version": [], "check": [], "headless_first_child": [],
                                   "console_first_child": [], "console_first_frame": [],
                                   "bare_textual_first_frame": [],
                                   "console_first_frame_cpu": [],
                                   "bare_textual_first_frame_cpu": [],
                                   "bare_with_children_first_frame": [],
                                   "bare_with_children_first_frame_cpu": []}
    for i in range(runs):
        wall, cpu = frame([sys.executable, "-c", BARE], b"bare first frame")
        out["bare_textual_first_frame"].append(wall)
        out["bare_textual_first_frame_cpu"].append(cpu)
        commands = [c.split("=", 1)[1] for c in children(work / f"startup-b{i}.txt", count)]
        pids = work / f"startup-b{i}.pids"
        wall, cpu = frame([sys.executable, "-c", BARE_WITH_CHILDREN, str(pids), *commands],
                          b"bare first frame", pids)
        out["bare_with_children_first_frame"].append(wall)
        out["bare_with_children_first_frame_cpu"].append(cpu)

        started = time.monotonic()
        subprocess.run([*proctui, "--version"], capture_output=True, check=True)
        out["version"].append(time.monotonic() - started)
        started = time.monotonic()
        subprocess.run([*proctui, "check", "a=true"], capture_output=True, check=True)
        out["check"].append(time.monotonic() - started)

        stamps = work / f"startup-h{i}.txt"
        launched = time.time()
        proc = subprocess.Popen([*proctui, "run", "--headless", "--run-dir",
                                 str(work / f"startup-hr{i}"), *children(stamps, count)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)
        try:
            out["headless_first_child"].append(first_start(stamps, launched))
        finally:
            proc.terminate()
            proc.wait(60)

        stamps = work / f"startup-c{i}.txt"
        launched = time.time()
        term = OnPty([*proctui, "run", "--run-dir", str(work / f"startup-cr{i}"),
                      *children(stamps, count)], **SIZE, watch=(b"running",))
        try:
            out["console_first_child"].append(first_start(stamps, launched))
            # proctui's own work (its threads, not its children's) until that frame: on a
            # loaded or emulated machine the children's start-up competes for the cores.
            # Both are read the moment the frame's bytes arrive (ptylab's reader): read
            # after a poller's sleep they took in up to 5 ms of the work after the frame.
            wall, cpu = term.arrival(b"running")
        finally:
            term.stop()  # a failed measurement must not leave it and its children
        out["console_first_frame"].append(wall)
        out["console_first_frame_cpu"].append(cpu)
    return out


def frame(argv: list[str], text: bytes, pids: Path | None = None) -> tuple[float, float]:
    """The wall and CPU time until ``text`` is on a terminal running ``argv``; the
    terminal is ended (with its process group) whatever happens, and so are the children
    whose PIDs the command wrote to ``pids``."""
    term = OnPty(argv, **SIZE, watch=(text,))
    try:
        return term.arrival(text)
    finally:
        term.stop()
        if pids is not None:
            end_children(pids)


def end_children(pids: Path) -> None:
    """Kill the children a bare app started, by the PIDs it wrote: each a shell that
    execs a sleep, still its PID (and still our child's child: nobody else's)."""
    if not pids.exists():
        return
    for word in pids.read_text().split():
        with contextlib.suppress(ProcessLookupError, ValueError):
            os.kill(int(word), signal.SIGKILL)


def instructions(python: str, work: Path, count: int) -> tuple[float, float]:
    """Millions of instructions until the first frame, (console, bare app), both run by
    ``python`` on the same terminal size. The console's children write their PIDs, to
    be ended here: a console ended at once leaves them running."""
    counts = []
    for kind, needle in (("console", b"running"), ("bare", b"bare first frame")):
        out = work / f"callgrind-{kind}.out"
        pids = work / f"callgrind-{kind}.pids"
        argv = [BARE] if kind == "bare" else \
            ["run", "--run-dir", str(work / "callgrind-run"),
             *(f"s{i}=echo $$ >> {pids}; exec sleep 1000" for i in range(count))]
        term = OnPty(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
                      python, "-c", UNTIL_FRAME, kind, *argv], **SIZE, watch=(needle,))
        try:
            term.arrival(needle, timeout=600)
            os.kill(term.proc.pid, signal.SIGUSR2)
            term.proc.wait(120)
        finally:
            term.stop()
            end_children(pids)
        totals = [line for line in out.read_text().splitlines()
                  if line.startswith(("summary:", "totals:"))]
        counts.append(int(totals[0].split()[1]) / 1e6)
    return counts[0], counts[1]


def quartiles(values: list[float]) -> tuple[float, float, float]:
    if len(values) < 2:
        return values[0], values[0], values[0]
    q1, q2, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return q1, q2, q3


def paired(result: dict[str, list[float]], top: str, bottom: str) -> str:
    """The ratio of each run's pair (both measured in the same round, one after the
    other), as median and quartiles: on this 2-core machine the medians of the two sides
    taken apart moved the ratio from 1.19x to 1.45x between two quiet rounds."""
    q1, q2, q3 = quartiles([a / b for a, b in zip(result[top], result[bottom], strict=True)])
    return f"{q2:.2f}x (quartiles {q1:.2f}x to {q3:.2f}x)"


def compiled() -> None:
    """Run from source as an installed wheel runs: from bytecode. Without it (and with
    PYTHONDONTWRITEBYTECODE set) every start compiles every module again."""
    import compileall

    compileall.compile_dir(str(Path(__file__).resolve().parents[2] / "proctui"), quiet=1)
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--proctui", default=None, help="the proctui command to measure")
    parser.add_argument("--children", type=int, default=10,
                        help="processes started (under emulation each fork is costly)")
    parser.add_argument("--instructions", action="store_true",
                        help="count the first frames' instructions under callgrind instead")
    args = parser.parse_args()
    proctui = [args.proctui] if args.proctui else [sys.executable, "-m", "proctui"]
    if not args.proctui:
        compiled()
    if args.instructions:
        # The installed script's own Python (its venv), or this one for the source tree.
        script = shutil.which(args.proctui) if args.proctui else None
        if args.proctui and script is None:
            parser.error(f"--proctui {args.proctui}: no such command")
        python = str(Path(script).parent / "python") if script else sys.executable
        for _ in range(args.runs):
            with tempfile.TemporaryDirectory(prefix="proctui-startup-") as tmp:
                console, bare = instructions(python, Path(tmp), args.children)
            print(f"console_first_frame {console:.0f} MIr, bare_textual_first_frame "
                  f"{bare:.0f} MIr, console_vs_bare_first_frame_instructions "
                  f"{console / bare:.2f}x")
        return 0
    with tempfile.TemporaryDirectory(prefix="proctui-startup-") as tmp:
        runs = measure(proctui, args.runs, Path(tmp), args.children)
    result = {k: statistics.median(v) for k, v in runs.items()}
    for key, value in result.items():
        print(f"{key} {value * 1000:.0f} ms")
    ratio = result["console_first_child"] / result["headless_first_child"]
    print(f"console_vs_headless_first_child {ratio:.2f}x")
    ratio = result["console_first_frame"] / result["bare_textual_first_frame"]
    print(f"console_vs_bare_first_frame {ratio:.2f}x")
    ratio = result["console_first_frame_cpu"] / result["bare_textual_first_frame_cpu"]
    print(f"console_vs_bare_first_frame_cpu {ratio:.2f}x")
    for top, bottom in (("console", "bare_textual"), ("console", "bare_with_children"),
                        ("bare_with_children", "bare_textual")):
        for cpu in ("", "_cpu"):
            name = "bare" if bottom == "bare_textual" else bottom
            print(f"{top}_vs_{name}_first_frame{cpu}_paired",
                  paired(runs, f"{top}_first_frame{cpu}", f"{bottom}_first_frame{cpu}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
