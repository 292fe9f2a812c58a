"""The installed command's entry point: the cyclic garbage collector waits while proctui
starts, and skips its last pass at exit.

Start-up allocates hundreds of thousands of objects (click, Textual, our records) and
frees almost none of them, so each automatic collection in that time walks a growing heap
for nothing: about 8% of the console's first frame on this machine. At exit the
interpreter walks the whole heap once more to free what the process is about to give
back anyway (25 to 45 ms per command).

Every path that lives on turns the collector back on (``resume``): the console at its
first frame, a headless or detached supervisor once its processes are launched, the
control socket when it is served (at the latest 2 s after it is bound, should no frame
ever come), and every other command before it runs. Imported by the command before
anything else: keep it free of imports beyond ``gc`` (``importlib`` is loaded already)."""

from __future__ import annotations

import gc
import importlib

_paused = False


def pause() -> None:
    """Stop automatic collection until ``resume`` (a no-op if it is already off)."""
    global _paused
    if gc.isenabled():
        gc.disable()
        _paused = True


def resume() -> None:
    """Collect automatically again, if ``pause`` stopped it; safe from any thread, and
    any number of times. What start-up made is moved out of the collector's sight
    (``gc.freeze``): it lives as long as the process, and each later pass would walk it
    again for nothing."""
    global _paused
    if _paused:
        _paused = False
        gc.freeze()
        gc.enable()


def paused() -> bool:
    return _paused


def main() -> None:
    """``proctui``: the command, with the collector paused until the command has started."""
    pause()
    try:
        # By name: the strictly typed layers that turn the collector back on import this
        # module, and need not be checked through every command.
        importlib.import_module("proctui.cli").main()
    finally:
        # Normal exit stays as it was (atexit handlers, files flushed), without the
        # interpreter's last walk over every object that start-up made.
        gc.freeze()
