"""Reaching a supervisor on another machine through the operator's own SSH: ``ssh -T DEST
proctui stdio`` with its stdin and stdout on one end of a socket pair, and a
``Connection`` over the other end. Keys, agents, jump hosts and known hosts are the
user's; nothing listens on the network.

``PROCTUI_SSH`` replaces ``ssh`` (split as a shell would, like GIT_SSH_COMMAND: ``ssh -F
my_config``); ``PROCTUI_REMOTE`` is the box's proctui command (default ``proctui``, run
by the box's shell). ssh's stderr is kept (its last lines): when the link fails, its
last line is the one-line reason. The ssh child is always reaped: closing the
connection ends it, and so does this process's end (its stdin reaches EOF)."""

from __future__ import annotations

import atexit
import collections
import os
import re
import shlex
import socket
import subprocess
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

from proctui.remote.connection import Connection, NoSupervisor, NotAnswering, answer_timeout
from proctui.remote.redial import SupervisorEnded

Dial = Callable[[], Connection]
SSH_ENV = "PROCTUI_SSH"
REMOTE_ENV = "PROCTUI_REMOTE"
# Seconds ssh may take to bring the first snapshot: it may ask for a passphrase.
SSH_FIRST = 30.0
LINGER = 3.0  # seconds ssh has to end by itself once its stdin has ended
NONE_THERE = 2  # `proctui stdio`'s exit status when no supervisor runs on the box
STDERR_LINES = 20  # of ssh's stderr, the last lines kept
STDERR_LINE = 300  # characters of each
_PREFIX = re.compile(r"^proctui(?: [a-z-]+)?: error: ")
_links: set[_Link] = set()


def where_args(file: Path | None, run_dir: Path | None) -> list[str]:
    """The box's own options naming its supervisor (its paths, as given)."""
    args: list[str] = []
    if run_dir is not None:
        args += ["--run-dir", str(run_dir)]
    if file is not None:
        args += ["--file", str(file)]
    return args


def check_host(host: str) -> str:
    """``host`` as a destination for ssh, or NoSupervisor: an option (``-oProxyCommand=``)
    or a control character is no host."""
    if not host or host.startswith("-") or not host.isprintable() or " " in host:
        raise NoSupervisor(f"--host {host!r}: not a destination for ssh ([user@]host or an "
                           "alias in ~/.ssh/config)")
    return host


def ssh_argv(host: str, args: Sequence[str] = ()) -> list[str]:
    """The ssh command line; NoSupervisor when PROCTUI_SSH cannot be split."""
    try:
        ssh = shlex.split(os.environ.get(SSH_ENV) or "ssh")
    except ValueError as e:
        raise NoSupervisor(f"{SSH_ENV}: {e}") from None
    if not ssh:
        ssh = ["ssh"]
    remote = os.environ.get(REMOTE_ENV) or "proctui"
    command = " ".join([remote, "stdio", *(shlex.quote(a) for a in args)])
    return [*ssh, "-T", "--", check_host(host), command]


def over_ssh(host: str, args: Sequence[str] = (), read_only: bool = False,
             timeout: float | None = None) -> Dial:
    """A dial: each call opens a new link to ``host`` and returns its connection (its
    first snapshot read), or raises NoSupervisor with one line that names the host."""
    check_host(host)

    def dial() -> Connection:
        return open_ssh(host, args, read_only, timeout)

    return dial


def open_ssh(host: str, args: Sequence[str] = (), read_only: bool = False,
             timeout: float | None = None) -> Connection:
    argv = ssh_argv(host, args)
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        child = subprocess.Popen(argv, stdin=theirs.fileno(), stdout=theirs.fileno(),
                                 stderr=subprocess.PIPE)
    except OSError as e:
        ours.close()
        raise NoSupervisor(f"{host}: {argv[0]}: {e.strerror or e}") from None
    finally:
        theirs.close()
    link = _Link(host, child)
    wait = answer_timeout() if timeout is None else timeout
    conn = Connection(ours, None, None, max(wait, SSH_FIRST), where=host, local=False)
    conn.on_close = link.close
    try:
        Connection.over(conn, read_only)
    except NoSupervisor as e:
        why = link.why(e)
        if link.exit_status() == NONE_THERE:
            # The box's proctui said no supervisor runs there: a console redialling this
            # link ends rather than trying for ever.
            raise SupervisorEnded(why) from None
        raise NoSupervisor(why) from None
    conn.timeout = wait
    return conn


class _Link:
    """One ssh child: its stderr's last lines, and its end."""

    def __init__(self, host: str, child: subprocess.Popen[bytes]) -> None:
        self.host = host
        self.child = child
        self.lines: collections.deque[str] = collections.deque(maxlen=STDERR_LINES)
        self._reader = threading.Thread(target=self._read, name="proctui-ssh-stderr",
                                        daemon=True)
        self._reader.start()
        _links.add(self)

    def _read(self) -> None:
        stream = self.child.stderr
        assert stream is not None
        try:
            while True:
                line = stream.readline(4096)  # bounded: a line without an end is cut
                if not line:
                    return
                text = line.decode("utf-8", "replace").strip()
                text = "".join(ch if ch.isprintable() else "?" for ch in text)
                if text:
                    self.lines.append(text[:STDERR_LINE])
        except (OSError, ValueError):
            return

    def close(self) -> None:
        """Reap ssh: it ends by itself once its stdin has (the connection closed it);
        else it is terminated, then killed."""
        _links.discard(self)
        child = self.child
        for step in (None, child.terminate, child.kill):
            if step is not None:
                step()
            try:
                child.wait(LINGER)
                break
            except subprocess.TimeoutExpired:
                continue
        self._reader.join(1.0)
        if child.stderr is not None:
            child.stderr.close()

    def exit_status(self) -> int | None:
        """ssh's exit status (the remote command's, when it ran), or None while it runs."""
        try:
            return self.child.wait(LINGER)
        except subprocess.TimeoutExpired:
            return None

    def why(self, failed: NoSupervisor) -> str:
        """The one line that says why the link failed: ssh's last word (or the box's
        proctui's, which ssh passes on) when it said any."""
        self._reader.join(1.0)
        said = self.lines[-1] if self.lines else ""
        said = _PREFIX.sub("", said)
        if self.child.returncode == 127 and said:
            said += f" (set {REMOTE_ENV} to proctui's path on {self.host})"
        if said:
            return f"{self.host}: {said}"
        if isinstance(failed, NotAnswering):
            return (f"{self.host}: no answer over ssh within {SSH_FIRST:g}s (ssh is still "
                    "connecting, or the supervisor is stopped)")
        text = str(failed)
        return text if text.startswith(f"{self.host}:") else f"{self.host}: {text}"


@atexit.register
def _reap() -> None:
    for link in list(_links):
        link.close()
