"""A real OpenSSH server on 127.0.0.1 for the tests of ``--host``: a generated host key
and user key, an sshd_config of its own on a free port, started once a session with
``sshd -D -e``, and a client config with the aliases ``box`` (that server) and ``dead``
(a port nobody listens on). Tests skip, saying why, when sshd or ssh is missing.

Use it with ``from tests.sshd import sshd_server`` in a test module: the fixture ``sshd``."""

from __future__ import annotations

import contextlib
import getpass
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import TOKEN_VAR

SSHD = shutil.which("sshd") or shutil.which("sshd", path="/usr/sbin:/usr/local/sbin")
SSH = shutil.which("ssh")
KEYGEN = shutil.which("ssh-keygen")


@dataclass
class Sshd:
    config: Path  # the client's ssh config (aliases box and dead)
    port: int
    pid: int
    log: Path

    def env(self, token: str, **extra: str) -> dict[str, str]:
        """The client's environment: PROCTUI_SSH uses our config; PROCTUI_REMOTE runs
        this tree's proctui on the box (whose PATH has no venv), carrying the test's
        token so that whatever it starts is reaped with the test's children."""
        remote = " ".join(shlex.quote(a) for a in [
            "env", f"{TOKEN_VAR}={token}", *(f"{k}={v}" for k, v in extra.items()),
            sys.executable, "-m", "proctui"])
        return {**os.environ, "PROCTUI_SSH": f"{SSH} -F {shlex.quote(str(self.config))}",
                "PROCTUI_REMOTE": remote}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _keygen(path: Path) -> None:
    assert KEYGEN is not None
    subprocess.run([KEYGEN, "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True,
                   timeout=30, stdin=subprocess.DEVNULL)


class Unavailable(Exception):
    """No sshd can be started here; ``str()`` says why."""


@contextlib.contextmanager
def serving(where: Path) -> Iterator[Sshd]:
    """An sshd on 127.0.0.1 with its keys and configs in ``where`` (a directory of its
    own), until the block ends; Unavailable when it cannot start (tests skip, the bench
    says so)."""
    if SSHD is None or SSH is None or KEYGEN is None:
        raise Unavailable("needs OpenSSH's sshd, ssh and ssh-keygen (Debian: openssh-server, "
                          "openssh-client; .ci/run installs them)")
    _keygen(where / "host_key")
    _keygen(where / "user_key")
    (where / "authorized_keys").write_text((where / "user_key.pub").read_text())
    port = _free_port()
    cfg = where / "sshd_config"
    cfg.write_text(f"""ListenAddress 127.0.0.1
Port {port}
HostKey {where / "host_key"}
AuthorizedKeysFile {where / "authorized_keys"}
StrictModes no
UsePAM no
PidFile none
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
X11Forwarding no
PrintMotd no
MaxStartups 100
""")
    if os.getuid() == 0:
        os.makedirs("/run/sshd", 0o755, exist_ok=True)  # its privilege separation dir
    client = where / "ssh_config"
    common = f"""  User {getpass.getuser()}
  IdentityFile {where / "user_key"}
  IdentitiesOnly yes
  UserKnownHostsFile {where / "known_hosts"}
  GlobalKnownHostsFile /dev/null
  StrictHostKeyChecking accept-new
  BatchMode yes
  LogLevel ERROR
  ConnectTimeout 20
"""
    client.write_text(f"Host box\n  HostName 127.0.0.1\n  Port {port}\n{common}"
                      f"Host dead\n  HostName 127.0.0.1\n  Port {_free_port()}\n{common}")
    log = where / "sshd.log"
    # Not the first test's token: that test's teardown would end a server every test uses.
    env = {k: v for k, v in os.environ.items() if k != TOKEN_VAR}
    with open(log, "wb") as out:
        server = subprocess.Popen([SSHD, "-D", "-e", "-f", str(cfg)], stdout=out,
                                  stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                  env=env)
    try:
        deadline = time.monotonic() + 20
        while True:
            if server.poll() is not None:
                raise Unavailable(f"sshd did not start: {log.read_text()[-500:]}")
            with contextlib.suppress(OSError), socket.create_connection(
                    ("127.0.0.1", port), timeout=1):
                break
            assert time.monotonic() < deadline, f"sshd never listened: {log.read_text()}"
            time.sleep(0.05)
        yield Sshd(client, port, server.pid, log)
    finally:
        with contextlib.suppress(OSError):
            os.kill(server.pid, signal.SIGTERM)
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(10)


# Module scope, not session: the in-process tests make pytest a child subreaper, and a
# supervisor built in pytest counts every other child of pytest as a stray (sshd too).
@pytest.fixture(scope="module", name="sshd")
def sshd_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sshd]:
    try:
        with serving(tmp_path_factory.mktemp("sshd")) as server:
            yield server
    except Unavailable as e:
        pytest.skip(str(e))


class SecondSshd:
    """Another sshd beside the module's, with its keys and its own port, reached as
    ``alias`` through the same client config: a box that can be lost on its own. kill()
    ends it and every session it holds (as a box going away would); start() brings it
    back on the same port."""

    def __init__(self, first: Sshd, alias: str) -> None:
        self.first, self.alias = first, alias
        where = first.config.parent
        self.port = _free_port()
        self.cfg = where / f"sshd_config.{alias}"
        text = (where / "sshd_config").read_text()
        self.cfg.write_text(text.replace(f"Port {first.port}\n", f"Port {self.port}\n"))
        common = first.config.read_text().split("Host dead", 1)[0].split("\n", 3)[3]
        with open(first.config, "a") as f:
            f.write(f"Host {alias}\n  HostName 127.0.0.1\n  Port {self.port}\n{common}")
        self.server: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        assert SSHD is not None
        env = {k: v for k, v in os.environ.items() if k != TOKEN_VAR}
        log = self.cfg.with_suffix(".log")
        with open(log, "ab") as out:
            self.server = subprocess.Popen([SSHD, "-D", "-e", "-f", str(self.cfg)],
                                           stdout=out, stderr=subprocess.STDOUT,
                                           stdin=subprocess.DEVNULL, env=env)
        deadline = time.monotonic() + 20
        while True:
            with contextlib.suppress(OSError), socket.create_connection(
                    ("127.0.0.1", self.port), timeout=1):
                return
            assert self.server.poll() is None, log.read_text()[-500:]
            assert time.monotonic() < deadline, f"sshd never listened: {log.read_text()}"
            time.sleep(0.05)

    def kill(self) -> None:
        if self.server is None:
            return
        for pid in [self.server.pid, *_descendants(self.server.pid)]:
            with contextlib.suppress(OSError):
                if Path(f"/proc/{pid}/comm").read_text().startswith("sshd"):
                    os.kill(pid, signal.SIGKILL)
        self.server.wait(10)
        self.server = None


def _descendants(root: int) -> list[int]:
    """Every process under ``root``, from /proc (its sessions, and theirs)."""
    parent: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError, ValueError, IndexError):
                raw = Path(f"/proc/{entry}/stat").read_text()
                parent[int(entry)] = int(raw[raw.rindex(")") + 2:].split()[1])
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        kids = [c for c, p in parent.items() if p == pid]
        found += kids
        todo += kids
    return found
