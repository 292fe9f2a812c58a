"""The built-in demo: eight small programs, each showing one way a process can end.

``proctui demo`` runs them; ``python -m proctui.demo NAME`` is one of them. They need
nothing but Python. Timeouts are short so the whole story plays in under a minute:
quit, and watch clean-web stop at once, slow-8s count down (extend it to let it finish),
ignores-term reach its deadline and ask you, and forks-child's grandchild die with its
group.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from proctui.config import Config, parse_toml

# The demo's hint line, by action: the console shows each with its key from its key table.
HINT = (("quit", "quits, with countdowns"), ("extend", "extends"), ("abandon", "abandons"),
        ("kill", "kills"), ("select(1)", "selects"), ("help", "help"))

TEMPLATE = """\
# The proctui demo. Save it as proctui.toml, edit it, and run it with: proctui run
[defaults]
stop_timeout = 5        # seconds from SIGTERM to the timeout action
kill_timeout = 3        # seconds after SIGKILL before giving up
extend_step = 10        # seconds one "e" adds

[processes.clean-web]   # logs requests; stops cleanly within a second of SIGTERM
cmd = [{python}, "-m", "proctui.demo", "clean-web"]

[processes.slow-8s]     # needs about 8 s to shut down: extend its deadline to let it
cmd = [{python}, "-m", "proctui.demo", "slow-8s"]
on_timeout = "ask"      # not extended, it asks too, beside ignores-term: "1 of 2 waiting"

[processes.ignores-term]  # ignores SIGTERM: at its deadline you decide
cmd = [{python}, "-m", "proctui.demo", "ignores-term"]
on_timeout = "ask"      # headless: ask acts as kill

[processes.crash-loop]  # exits 3 after two seconds; restarted with backoff
cmd = [{python}, "-m", "proctui.demo", "crash-loop"]
restart = "on-failure"

[processes.chatty]      # coloured log lines and a \\r progress bar
cmd = [{python}, "-m", "proctui.demo", "chatty"]

[processes.forks-child]  # its grandchild ignores SIGTERM: the group kill takes it
cmd = [{python}, "-m", "proctui.demo", "forks-child"]

[processes.db]          # speaks sd_notify: READY, STATUS while it flushes, and asks for
cmd = [{python}, "-m", "proctui.demo", "db"]  # more time (EXTEND_TIMEOUT_USEC)
ready = {{ notify = true }}
ready_timeout = 20

[processes.web]         # starts once db is ready; stops before db does
cmd = [{python}, "-m", "proctui.demo", "web"]
depends_on = ["db"]
"""


def config_text(python: str | None = None) -> str:
    python = python or sys.executable
    return TEMPLATE.format(python=_toml_string(python))


def config() -> Config:
    return parse_toml(config_text(), "proctui demo", Path.cwd())


def _toml_string(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


# -- the programs -------------------------------------------------------------------------

def _say(text: str, err: bool = False) -> None:
    stream = sys.stderr if err else sys.stdout
    stream.write(text + "\n")
    stream.flush()


def clean_web() -> None:
    def bye(*_: object) -> None:
        _say("clean-web: SIGTERM received, finishing 2 open requests")
        time.sleep(0.4)
        _say("clean-web: all requests done, bye")
        sys.exit(0)

    signal.signal(signal.SIGTERM, bye)
    _say("clean-web: listening on 127.0.0.1:8000 (pretend)")
    paths = ["/", "/api/items", "/api/items/7", "/static/app.js", "/health", "/missing"]
    while True:
        path = random.choice(paths)
        code = 404 if path == "/missing" else 200
        colour = "33" if code == 404 else "32"
        _say(f'127.0.0.1 - "GET {path} HTTP/1.1" \x1b[{colour}m{code}\x1b[0m '
             f"{random.randint(80, 9000)}")
        time.sleep(random.uniform(0.3, 1.2))


def slow_8s() -> None:
    stopping = False

    def begin(*_: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, begin)
    batch = 0
    while not stopping:
        batch += 1
        _say(f"slow-8s: processing batch {batch}")
        for _ in range(20):
            if stopping:
                break
            time.sleep(0.1)
    _say("slow-8s: SIGTERM received; flushing 8 buffers to disk, about 8 s")
    for step in range(1, 9):
        time.sleep(1)
        _say(f"slow-8s: flushed buffer {step}/8")
    _say("slow-8s: clean shutdown")
    sys.exit(0)


def ignores_term() -> None:
    def shrug(*_: object) -> None:
        _say("ignores-term: got SIGTERM; ignoring it, as some programs do")

    signal.signal(signal.SIGTERM, shrug)
    beat = 0
    while True:
        beat += 1
        _say(f"ignores-term: heartbeat {beat}")
        time.sleep(1.5)


def crash_loop() -> None:
    _say("crash-loop: starting up")
    time.sleep(2)
    _say("crash-loop: fatal: cannot open /etc/crash-loop.conf", err=True)
    sys.exit(3)


def chatty() -> None:
    def stopping(*_: object) -> None:
        _say("\nchatty: stopping")
        sys.exit(0)

    signal.signal(signal.SIGTERM, stopping)
    levels = [("INFO", "32"), ("INFO", "32"), ("DEBUG", "36"), ("WARN", "33"), ("ERROR", "31")]
    n = 0
    while True:
        n += 1
        level, colour = random.choice(levels)
        _say(f"\x1b[{colour}m{level:5}\x1b[0m chatty: event {n} handled in "
             f"{random.randint(1, 250)} ms", err=level == "ERROR")
        if n % 5 == 0:
            for percent in range(0, 101, 10):
                sys.stdout.write(f"\rchatty: downloading update [{'#' * (percent // 10):<10}] "
                                 f"{percent:3d}%")
                sys.stdout.flush()
                time.sleep(0.15)
            _say("")
        time.sleep(0.4)


def forks_child() -> None:
    child = subprocess.Popen([sys.executable, "-m", "proctui.demo", "grandchild"])
    _say(f"forks-child: started a grandchild, pid {child.pid}, in my process group")

    def leave(*_: object) -> None:
        _say("forks-child: SIGTERM received; I exit, but my grandchild ignores it")
        os._exit(0)

    signal.signal(signal.SIGTERM, leave)
    while True:
        time.sleep(3)
        _say("forks-child: parent still here")


def _notify(text: str) -> None:
    """sd_notify, by hand: one datagram to NOTIFY_SOCKET (@ means the abstract namespace)."""
    import socket

    address = os.environ.get("NOTIFY_SOCKET", "")
    if not address:
        return
    target = "\0" + address[1:] if address.startswith("@") else address
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.sendto(text.encode(), target)


def db() -> None:
    stopping = False

    def begin(*_: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, begin)
    _say("db: starting, replaying the write-ahead log")
    _notify("STATUS=replaying the write-ahead log")
    time.sleep(1.5)
    _notify("READY=1\nSTATUS=accepting connections")
    _say("db: ready to accept connections")
    checkpoint = 0
    while not stopping:
        time.sleep(0.2)
        checkpoint += 1
        if checkpoint % 15 == 0:
            _say(f"db: checkpoint {checkpoint // 15}")
    _notify("STOPPING=1\nSTATUS=flushing WAL 0/7")
    _say("db: SIGTERM received; flushing the write-ahead log, 7 segments")
    for step in range(1, 8):
        time.sleep(1)
        _notify(f"STATUS=flushing WAL {step}/7")
        _say(f"db: flushed segment {step}/7")
        if step == 3:
            # 4 s to go and the stop timeout is 5 s: ask for 6 s from now, as systemd's
            # services do (the deadline moves, visibly, "extended by the process").
            _notify("EXTEND_TIMEOUT_USEC=6000000")
    _say("db: clean shutdown")
    sys.exit(0)


def web() -> None:
    def bye(*_: object) -> None:
        _say("web: SIGTERM received, closing connections to db")
        time.sleep(0.3)
        sys.exit(0)

    signal.signal(signal.SIGTERM, bye)
    _say("web: serving on 127.0.0.1:8080 (pretend), db is ready")
    n = 0
    while True:
        n += 1
        _say(f'web: "GET /orders/{n}" 200')
        time.sleep(random.uniform(0.5, 1.5))


def grandchild() -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    while True:
        _say(f"grandchild (pid {os.getpid()}): still here")
        time.sleep(2)


PROGRAMS = {
    "clean-web": clean_web,
    "slow-8s": slow_8s,
    "ignores-term": ignores_term,
    "crash-loop": crash_loop,
    "chatty": chatty,
    "forks-child": forks_child,
    "grandchild": grandchild,
    "db": db,
    "web": web,
}


def main(argv: list[str]) -> None:
    if len(argv) != 1 or argv[0] not in PROGRAMS:
        sys.stderr.write(f"usage: python -m proctui.demo {{{','.join(PROGRAMS)}}}\n")
        sys.exit(2)
    PROGRAMS[argv[0]]()


if __name__ == "__main__":
    main(sys.argv[1:])
