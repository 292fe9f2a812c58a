"""The command table: every request any door can make of a supervisor, each in a module
of its own (its request type and wire form, its faults, how the core carries it out,
and its words on the command line and in the console's palette). The control socket's
dispatch, the remote client, the command line's process commands, the console's palette
and the README's table of commands are all made from ``COMMANDS``.

Adding a command is adding a module here (and its test): the table finds it, and
nothing else names it."""

from __future__ import annotations

from typing import Any

from proctui.commands.base import Cli, Command, Named, Request

__all__ = ["COMMANDS", "WIRE", "Cli", "Command", "Named", "Request"]

_NOT_COMMANDS = frozenset({"base", "api"})


def _discover() -> dict[str, type[Request[Any]]]:
    """Every request class defined by a module of this package, by its op."""
    import importlib
    import pkgutil

    table: dict[str, type[Request[Any]]] = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name in _NOT_COMMANDS:
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        for value in vars(module).values():
            if isinstance(value, type) and issubclass(value, Request) and \
                    value.__module__ == module.__name__ and "op" in value.__dict__:
                if value.op in table:
                    raise RuntimeError(f"two commands say {value.op!r}: "
                                       f"{table[value.op].__module__} and {module.__name__}")
                table[value.op] = value
    return table


COMMANDS: dict[str, type[Request[Any]]]
# What a client may send over the control socket (the rest a frontend says only to its
# own core: a notice of its own, its output that cannot be written).
WIRE: dict[str, type[Request[Any]]]


def __getattr__(name: str) -> Any:
    """The table is made when first read, not when a command's module is imported: a
    console imports the few requests its keys send before its first frame, and the
    thirty modules of the table once its palette opens or a client connects."""
    if name in ("COMMANDS", "WIRE"):
        table = _discover()
        globals().update(COMMANDS=table,
                         WIRE={op: cls for op, cls in table.items() if cls.wire_op})
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
