"""``proctui reload``: read the config file again, off the core's loop, and carry the
difference out: start what was added, stop what was removed (its countdown as in a
shutdown, after its removed dependents), restart what changed, leave the rest running
(same pids). A process is matched by name, and changed only when what it runs or how
changed (its resolved settings), never because the file was named another way. A
config that no longer parses changes nothing.

Wire: {"op": "reload"}; the reply's text has one line per change, once every removed
process has ended (or after a few seconds). Faults: BAD_VALUE (the one-line error) when
the file does not parse; REFUSED when the supervisor was started from commands, or
everything is stopping."""

from __future__ import annotations

import asyncio
import concurrent.futures
from typing import TYPE_CHECKING, ClassVar

from proctui.commands.base import Cli, Command, Said
from proctui.core.reply import Done, Fault, failed
from proctui.records import dataclass

if TYPE_CHECKING:
    from proctui.core.engine import Engine

# Seconds the config file may take to be read and checked (a 2 MB word took 60 s before
# shell splitting was made linear); half the control clients' answer timeout.
READ_LIMIT = 5.0


@dataclass(frozen=True)
class Reload(Command):
    """Read the config file again: start what was added, stop what was removed, restart
    what changed, leave the rest running.

    The one it was started from, with the same command-line options; one line per
    change once the removed have ended (see "proctui reload" below)."""

    op = "reload"
    tool = "reload"
    cli: ClassVar[Cli | None] = Cli("", "reload")
    palette = "Reload the config file: start what was added, stop what was removed"

    def said(self, reply: Done) -> Said:
        """One line per change; a config that no longer parses is its one-line error
        and exit status 2, and nothing changed."""
        if reply.fault is Fault.BAD_VALUE:
            return Said(err=(f"proctui: error: {reply.text}",), status=2)
        if not reply.ok:
            return Said(err=(f"proctui: {reply.text}",), status=1)
        return Said(out=tuple(reply.text.splitlines()))

    def execute(self, engine: Engine) -> Done | concurrent.futures.Future[Done]:
        from proctui.config import ConfigError
        from proctui.core import reload

        load = engine.reload_from
        if load is None:
            return failed(Fault.REFUSED, "reload: this supervisor was started from commands, "
                                         "not from a file: nothing to read again")
        answer: concurrent.futures.Future[Done] = concurrent.futures.Future()

        async def read_then_carry_out() -> None:
            try:
                # Bounded, well within a client's wait for the answer: a read that took
                # longer was applied after the client had said "not answering", and a
                # reload reported as failed must never happen. Its late result is dropped.
                specs = await asyncio.wait_for(asyncio.to_thread(load), READ_LIMIT)
            except ConfigError as e:
                engine.answer_later(answer, failed(Fault.BAD_VALUE, str(e)))
                return
            except TimeoutError:
                engine.answer_later(answer, failed(
                    Fault.REFUSED, f"reload: reading the config took more than "
                                   f"{READ_LIMIT:g}s: nothing changed"))
                return
            reload.carry_out(engine, specs, answer)

        engine.loop.create_task(read_then_carry_out())
        return answer
