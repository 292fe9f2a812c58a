"""``proctui signal NAME SIGNAL``: send a signal to the process's whole group, as the
operator asks (SIGHUP to re-read its config, SIGUSR1 to reopen its logs); nothing else
changes: the process decides what the signal means, and if it ends, its outcome says
so as any other ending does.

SIGNAL is a name (HUP, SIGHUP, USR1, RTMIN+3) or a number, which means the number on the
supervisor's machine. The name travels as said and is read where the process runs, so
``--host`` sends the signal the other machine calls by that name.

Wire: {"op": "signal", "name": NAME, "signal": SIGNAL}. Faults: UNKNOWN_NAME;
NOT_RUNNING when it has no live group; BAD_VALUE when SIGNAL is no signal there."""

from __future__ import annotations

import signal as signals
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

from proctui.commands.base import Cli, Named, Request
from proctui.config.spec import ConfigError
from proctui.config.values import parse_signal, show
from proctui.core.life import inputs as i
from proctui.core.life.outcome import signal_name
from proctui.core.reply import Done, Fault, failed
from proctui.records import dataclass

if TYPE_CHECKING:
    from proctui.core.engine import Engine

# Offered in the console's palette: what operators send a running service most.
_OFFERED = (("SIGHUP", "re-read its configuration"), ("SIGUSR1", "reopen its logs"),
            ("SIGUSR2", "its own meaning"), ("SIGINT", "as ctrl+c would"))


def signal_number(word: str) -> int | None:
    """The signal ``word`` names on this machine, or None."""
    name = word.strip().upper()
    if name in ("STOP", "SIGSTOP"):  # a stop_signal may not pause, an operator may
        return int(signals.SIGSTOP)
    try:
        return parse_signal(word, "SIGNAL")
    except ConfigError:
        return None


def _unknown(word: str) -> str:
    return (f"{show(word)} is not a signal on this system (a name such as HUP, USR1, "
            "TERM, or its number)")


@dataclass(frozen=True)
class Signal(Named):
    """Send SIGNAL to NAME's whole process group (HUP, USR1, TERM, 10, RTMIN+3).

    SIGHUP to re-read its config, SIGUSR1 to reopen its logs: nothing else changes, and
    the journal says who sent it. A number is the supervisor's machine's number; a name
    is read there too."""

    op = "signal"
    signal: str = ""
    cli: ClassVar[Cli | None] = Cli("NAME SIGNAL", "signal")

    def check(self) -> Done | None:
        if signal_number(self.signal) is None:
            return failed(Fault.BAD_VALUE, f"signal: {_unknown(self.signal)}")
        return None

    def event(self, engine: Engine) -> object:
        number = signal_number(self.signal)
        if number is None:  # check() refuses it first, at every door
            raise ValueError(_unknown(self.signal))
        return i.SignalCmd(number)

    def journal_fields(self) -> dict[str, object]:
        # The signal's own name, never the client's word for it.
        number = signal_number(self.signal)
        return {"signal": signal_name(number) if number is not None else "?"}

    @classmethod
    def from_words(cls, words: tuple[str, ...]) -> list[Request[Any]] | str:
        if len(words) != 2:
            return "give the name of the process and a signal (HUP, USR1, TERM, 10)"
        name, word = words
        if signal_number(word) is None:
            return _unknown(word)
        return [cls(name, word)]

    @classmethod
    def palette_entries(cls) -> list[tuple[str, Callable[[str], Request[Any]]]]:
        def sending(sig: str) -> Callable[[str], Request[Any]]:
            return lambda name: cls(name, sig)

        return [(f"Send {sig} to the selected process ({why})", sending(sig))
                for sig, why in _OFFERED]
