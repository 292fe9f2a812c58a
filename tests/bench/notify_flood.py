"""SIGKILL lateness while the notify socket is attacked (issue 17).

    python tests/bench/notify_flood.py [--runs N] [--crowd 300]

A victim that ignores SIGTERM (stop_timeout 2 s) is stopped while, in turn: nothing
happens; an outsider floods the victim's notify socket from one pid; an outsider floods
it from many short-lived pids (each a new sender: a lineage lookup each, unless
rationed); a supervised neighbour sends 3,000 ERRNO= after 1,000 characters of STATUS;
a supervised neighbour sends a 3.9 KB STATUS in a tight loop. ``--crowd`` sleeping
processes under proctui make each walk of its process tree cost what it costs on a busy
box. Prints how late each SIGKILL came (median and worst of the runs) and what the
notify socket dropped; asserts nothing. To compare with another tree of proctui, run it
with PYTHONPATH pointing there.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent
if not os.environ.get("PYTHONPATH"):
    sys.path.insert(0, str(HERE.parents[1]))

TOKEN_VAR = "PROCTUI_BENCH_TOKEN"
PY = sys.executable

VICTIM = ("import signal, time\n"
          "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
          "print('ready', flush=True)\n"
          "while True: time.sleep(1)\n")
CROWD = ("import subprocess, sys, time\n"
         "kids = [subprocess.Popen(['sleep', '1000']) for _ in range(int(sys.argv[1]))]\n"
         "print('up', flush=True)\n"
         "time.sleep(1000)\n")
SENDER = ("import os, socket, time\n"
          "a = os.environ['NOTIFY_SOCKET']; a = '\\0' + a[1:]\n"
          "s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)\n"
          "def send(data):\n"
          "    try:\n"
          "        s.sendto(data, a)\n"
          "    except OSError:\n"
          "        time.sleep(0.001)\n")
ERRNO_STREAM = SENDER + ("send(b'STATUS=' + b'x' * 1000)\n"
                         "while True:\n"
                         "    for i in range(3000):\n"
                         "        send(f'ERRNO={i % 4096}'.encode())\n"
                         "    time.sleep(0.05)\n")
STATUS_LOOP = SENDER + ("i = 0\n"
                        "while True:\n"
                        "    i += 1\n"
                        "    send(f'STATUS={i:08d}'.encode() + b'x' * 3900)\n")
# Outsiders: started before the supervisor (so no run can claim them), told the address
# on stdin, flooding for at most ``argv[1]`` seconds.
ONE_SENDER = ("import socket, sys, time\n"
              "print('waiting', flush=True)\n"
              "target = '\\0' + sys.stdin.readline().strip()[1:]\n"
              "s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)\n"
              "s.settimeout(0.5)\n"
              "end = time.monotonic() + float(sys.argv[1])\n"
              "while time.monotonic() < end:\n"
              "    try:\n"
              "        s.sendto(b'READY=1\\nSTATUS=flood', target)\n"
              "    except OSError:\n"
              "        time.sleep(0.001)\n")
MANY_SENDERS = ("import os, socket, sys, time\n"
                "print('waiting', flush=True)\n"
                "target = '\\0' + sys.stdin.readline().strip()[1:]\n"
                "end = time.monotonic() + float(sys.argv[1])\n"
                "while time.monotonic() < end:\n"
                "    pid = os.fork()\n"
                "    if pid == 0:\n"
                "        s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)\n"
                "        s.settimeout(0.2)\n"
                "        for _ in range(20):\n"
                "            try:\n"
                "                s.sendto(b'READY=1', target)\n"
                "            except OSError:\n"
                "                pass\n"
                "        os._exit(0)\n"
                "    os.waitpid(pid, 0)\n")

SCENARIOS = ["quiet", "outsider, one pid", "outsider, a new pid every 20 datagrams",
             "neighbour: 3,000 ERRNO= bursts", "neighbour: 3.9 KB STATUS loop"]


def kill_tokened(token: str) -> None:
    needle = f"{TOKEN_VAR}={token}".encode()
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as f:
                if needle in f.read().split(b"\0"):
                    os.kill(int(name), signal.SIGKILL)
        except OSError:
            continue


def wait_for(predicate, timeout: float, what: str) -> None:
    end = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > end:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.01)


def one(scenario: str, crowd: int) -> tuple[float, float, dict[str, int]]:
    from proctui.config import ProcessSpec
    from proctui.core.output.lines import Stream
    from proctui.core.supervisor import Supervisor

    def spec(name: str, code: str, *args: str, **kw: object) -> ProcessSpec:
        return ProcessSpec(name=name, argv=(PY, "-c", code, *args), cmd=name,
                           cwd=Path.cwd(), **kw)  # type: ignore[arg-type]

    outsider = None
    if scenario.startswith("outsider"):
        code = ONE_SENDER if "one pid" in scenario else MANY_SENDERS
        outsider = subprocess.Popen([PY, "-c", code, "10"], stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, text=True)
        assert outsider.stdout is not None and outsider.stdout.readline() == "waiting\n"
    specs = [spec("victim", VICTIM, stop_timeout=2.0, kill_timeout=3.0),
             spec("crowd", CROWD, str(crowd))]
    if scenario.startswith("neighbour"):
        specs.append(spec("chatty", ERRNO_STREAM if "ERRNO" in scenario else STATUS_LOOP))
    sup = Supervisor(specs)
    sup.start()

    def printed(name: str, text: str) -> bool:
        got = sup.buffer(name).read(0)
        return any(text in line for line, stream in zip(got.lines, got.streams, strict=True)
                   if stream != Stream.PROCTUI)

    def view(name: str):
        return next(v for v in sup.views() if v.name == name)

    try:
        wait_for(lambda: printed("crowd", "up") and printed("victim", "ready"), 60, "start")
        sock = sup._engine.speech.sockets["victim"]
        if outsider is not None:
            assert outsider.stdin is not None
            outsider.stdin.write(sock.address + "\n")
            outsider.stdin.flush()
            wait_for(lambda: sum(sock.dropped.values()) > 20, 10, "the flood")
        else:
            time.sleep(1.0)  # the neighbour's chatter is under way
        asked = time.monotonic()
        sup.stop("victim")
        wait_for(lambda: view("victim").outcome is not None, 30, "the outcome")
        v = view("victim")
        late = v.kill_sent_at - (v.stop_requested_at + 2.0)
        slow = v.stop_requested_at - asked  # the stop command waits for the loop too
        dropped = dict(sock.dropped)
        chatty = sup._engine.speech.sockets.get("chatty")
        if chatty is not None:
            dropped = {f"chatty {k}": n for k, n in chatty.dropped.items()}
            dropped["chatty received"] = chatty.received
        return late, slow, dropped
    finally:
        if outsider is not None:
            outsider.kill()
            outsider.wait()
        sup.abandon_all().result(timeout=5)
        sup.close()


def ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1000:.0f} ms / {max(values) * 1000:.0f} ms"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--crowd", type=int, default=300)
    args = parser.parse_args()
    token = uuid.uuid4().hex
    os.environ[TOKEN_VAR] = token
    import proctui

    print(f"proctui from {Path(proctui.__file__).parent}; {args.crowd} processes in the "
          f"tree; {args.runs} runs; {os.cpu_count()} cores")
    print("| load | SIGKILL late: median / worst | stop command taken after: median / "
          "worst | dropped (last run) |")
    print("|---|---|---|---|")
    try:
        for scenario in SCENARIOS:
            lates, slows, dropped = [], [], {}
            for _ in range(args.runs):
                late, slow, dropped = one(scenario, args.crowd)
                lates.append(late)
                slows.append(slow)
                kill_tokened(token)
            print(f"| {scenario} | {ms(lates)} | {ms(slows)} | {dropped} |", flush=True)
    finally:
        kill_tokened(token)


if __name__ == "__main__":
    main()
