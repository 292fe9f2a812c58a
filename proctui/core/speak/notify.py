"""The notify socket: processes speak the sd_notify protocol (sd_notify(3)) to proctui.

One datagram socket per proctui run, in the abstract namespace (``NOTIFY_SOCKET=@...``):
it has no file permissions, so a service that dropped its privileges to its own user
can still send to it, as to systemd's own socket. Trust rests on the sender's
credentials, which the kernel attaches to each datagram (SO_PASSCRED): the sending pid
must belong to a supervised run, or the message is ignored and counted. A malformed or
oversized datagram, or one with a number that is not a bounded run of ASCII digits, is
dropped and counted, never a crash; file descriptors passed along (FDSTORE) are closed
at once. A few datagrams are read per wakeup, so that a flood leaves the loop's timers
their turn.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import socket
import struct
from collections import Counter
from collections.abc import Callable

from proctui.records import dataclass

MAX_DATAGRAM = 4096  # bytes; systemd's own limit is of this order
MAX_FIELDS = 64  # lines of one datagram
PER_WAKEUP = 32  # datagrams read each time the socket is readable
_CREDS = struct.Struct("3i")  # struct ucred: pid, uid, gid
_KEY = re.compile(r"[A-Z][A-Z0-9_]{0,63}")
# ASCII digits only, and few of them: str.isdigit() accepts "²" (int() then raises) and
# int() of 400 digits is a number no float or timer can hold.
_DIGITS = re.compile(r"[0-9]{1,20}")
_ANCILLARY = socket.CMSG_SPACE(_CREDS.size) + socket.CMSG_SPACE(4 * 64)
_USEC = (0, 2**64 - 1)  # systemd's usec_t
# The numbers sd_notify(3) defines, with the values a sender may give. A datagram with
# any of them out of range is dropped whole, like any other malformed one.
NUMBERS: dict[str, tuple[int, int]] = {
    "EXTEND_TIMEOUT_USEC": _USEC,
    "WATCHDOG_USEC": _USEC,
    "MONOTONIC_USEC": _USEC,
    "MAINPID": (1, 2**22),  # the kernel's largest pid_max
    "ERRNO": (0, 4095),  # errno values are below 4096
}

Fields = tuple[tuple[str, str], ...]


def number(text: str, smallest: int = 0, largest: int = 2**64 - 1) -> int | None:
    """A decimal number from outside, or None: never an exception, never a huge int."""
    if not _DIGITS.fullmatch(text):
        return None
    value = int(text)
    return value if smallest <= value <= largest else None


@dataclass(frozen=True, slots=True)
class Message:
    pid: int
    uid: int
    fields: Fields

    def get(self, key: str) -> str | None:
        for k, v in self.fields:
            if k == key:
                return v
        return None

    def number(self, key: str) -> int | None:
        """The value of a numeric field (parse() has checked the ones in NUMBERS)."""
        value = self.get(key)
        if value is None:
            return None
        smallest, largest = NUMBERS.get(key, _USEC)
        return number(value, smallest, largest)


def parse(data: bytes) -> Fields | str:
    """``KEY=VALUE`` lines, or why the datagram is not that (a reason to count)."""
    if b"\0" in data:
        return "malformed"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return "malformed"
    fields: list[tuple[str, str]] = []
    for line in text.split("\n"):
        if not line:
            continue
        key, sep, value = line.partition("=")
        if not sep or not _KEY.fullmatch(key) or len(fields) >= MAX_FIELDS:
            return "malformed"
        bounds = NUMBERS.get(key)
        if bounds is not None and number(value, *bounds) is None:
            return "bad number"
        fields.append((key, value))
    return tuple(fields) if fields else "malformed"


class NotifySocket:
    def __init__(self, loop: asyncio.AbstractEventLoop,
                 on_message: Callable[[Message], str | None],
                 on_error: Callable[[Exception], None] = lambda e: None) -> None:
        """``on_message`` returns None when it took the message, else why not (a sender
        of no supervised run, ...), to count;
        ``on_error`` hears of a message whose handling failed (it is dropped)."""
        self.loop = loop
        self.on_message = on_message
        self.on_error = on_error
        self.name = f"proctui-notify-{os.getpid()}-{os.urandom(6).hex()}"
        self.dropped: Counter[str] = Counter()  # malformed, oversized, strangers, ...
        self.received = 0
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC
                             | socket.SOCK_NONBLOCK)
        try:
            sock.bind("\0" + self.name)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
        except OSError:
            sock.close()
            raise
        self.sock = sock
        loop.add_reader(sock.fileno(), self._readable)

    @property
    def address(self) -> str:
        """NOTIFY_SOCKET's value: @ marks the abstract namespace."""
        return "@" + self.name

    def _readable(self) -> None:
        # A few datagrams per wakeup, then the loop's timers get their turn: a flood
        # must not hold the loop (the rest stay queued in the socket, or are refused
        # to their sender when its queue is full).
        for _ in range(PER_WAKEUP):
            try:
                data, ancdata, flags, _ = self.sock.recvmsg(
                    MAX_DATAGRAM, _ANCILLARY, socket.MSG_CMSG_CLOEXEC)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                self.dropped["unreadable"] += 1
                return
            self._take(data, ancdata, flags)

    def _take(self, data: bytes, ancdata: list[tuple[int, int, bytes]], flags: int) -> None:
        creds = None
        for level, kind, payload in ancdata:
            if level != socket.SOL_SOCKET:
                continue
            if kind == socket.SCM_CREDENTIALS and len(payload) >= _CREDS.size:
                creds = _CREDS.unpack_from(payload)
            elif kind == socket.SCM_RIGHTS:
                # Descriptors handed to us (FDSTORE): proctui keeps none.
                count = len(payload) // 4
                for fd in struct.unpack(f"{count}i", payload[: count * 4]):
                    with contextlib.suppress(OSError):
                        os.close(fd)
        if flags & (socket.MSG_TRUNC | socket.MSG_CTRUNC):
            self.dropped["oversized"] += 1
            return
        if creds is None or creds[0] <= 0:
            self.dropped["no credentials"] += 1
            return
        fields = parse(data)
        if isinstance(fields, str):
            self.dropped[fields] += 1
            return
        self.received += 1
        try:
            refused = self.on_message(Message(creds[0], creds[1], fields))
        except Exception as e:
            # A bug in acting on one message costs that message, never every service
            # (the loop's error handler would stop everything).
            self.dropped["handler error"] += 1
            self.on_error(e)
            return
        if refused is not None:
            self.dropped[refused] += 1

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.loop.remove_reader(self.sock.fileno())
        self.sock.close()


def send(address: str, text: str) -> None:
    """A tiny sd_notify client (for the demo's programs and tests)."""
    target = "\0" + address[1:] if address.startswith("@") else address
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
        sock.sendto(text.encode(), target)
