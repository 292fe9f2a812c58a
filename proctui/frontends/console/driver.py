"""Textual's Linux driver, with the one thing the console needs from it: a way to stop
its input thread when the terminal is lost.

A terminal can go away with no SIGHUP (a pty closed while proctui was not in its
session): only EOF or EIO arrive, and the input thread would spin on them until the app
exits, a whole core for as long as the stop sequence runs. The app has no public handle
on its driver (``App._driver`` is private), so this subclass records its instance, and
the app sets the driver's ``exit_event``, which ends that thread's loop.

Only public Textual names are used: ``LinuxDriver``, its constructor and ``exit_event``.
An earlier version replaced the ``selectors`` module inside Textual's driver to let the
input thread sleep while idle; that changed Textual's internals for the whole process,
so it went: the stock thread wakes ten times a second (see tests/bench/RESULTS.md, idle).
"""

from __future__ import annotations

from typing import Any


def console_driver() -> type[Any] | None:
    """The driver class to give the app, or None to let Textual choose its own."""
    try:
        from textual.drivers.linux_driver import LinuxDriver
    except ImportError:  # not on Linux: Textual picks its driver, and keeps its thread
        return None

    class ConsoleDriver(LinuxDriver):
        instance: ConsoleDriver | None = None

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            type(self).instance = self

    return ConsoleDriver


def stop_input(driver_class: type[Any] | None) -> None:
    """Stop the input thread of the driver ``console_driver()`` made, if it runs."""
    driver = getattr(driver_class, "instance", None)
    exit_event = getattr(driver, "exit_event", None)
    if exit_event is not None:
        exit_event.set()
