"""The link's own requests, which ask nothing of the supervisor: is it answering, who is
asking and on what terms, and how far a client has read the pushes (see
``proctui.remote.push``). Part of the command table (``proctui.protocol.commands``)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from proctui.protocol.replies import Done, Fault, failed
from proctui.protocol.request import Simple


@dataclass(frozen=True)
class Ping(Simple):
    """Is the supervisor answering? (``down``, ``logs -f`` and consoles ask while idle.)"""

    op = "ping"


# SSH_CONNECTION's first two fields: the client's address (IPv4, IPv6 with a zone) and port.
# Compiled (and cached by re) at the first via with an address, not at every start.
_SSH_CLIENT = r"[0-9A-Za-z.:%_-]{1,64} [0-9]{1,5}"


@dataclass(frozen=True)
class Via(Simple):
    """Who is asking, and on what terms: ``proctui stdio`` sends it first with the SSH
    client's address ("ADDR PORT", from SSH_CONNECTION), for the journal; a client that
    may only look (``attach --read-only``) sends ``read_only``. Both hold for the rest of
    the connection: a later ``via`` can neither change the address nor take read-only
    back."""

    op = "via"
    ssh: str | None = None
    read_only: bool = False

    def check(self) -> Done | None:
        if self.ssh is not None and not re.fullmatch(_SSH_CLIENT, self.ssh):
            return failed(Fault.BAD_VALUE, "via: ssh is not an address and a port")
        return None


@dataclass(frozen=True)
class Ack(Simple):
    """A client that watches with ``acks`` has read every push up to the one that ended
    with ``{"t": "push", "k": K}``.

    Wire: {"op": "ack", "k": K}; a well-formed one is never answered (one comes with
    every push: over a slow link a reply to each would take its share of the bytes), a
    malformed one gets its fault."""

    op = "ack"
    k: int

    def check(self) -> Done | None:
        if self.k < 1:
            return failed(Fault.BAD_VALUE, f"ack: k {self.k} is not a push's number")
        return None
