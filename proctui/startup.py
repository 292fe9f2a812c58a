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
ever come), and every other command before it runs. The core's tree walks wait for it
too, at most 3 s (``core/os/housekeeping.py``): they are not urgent while Textual loads.

Imported by the command before anything else: keep it free of imports beyond ``gc``
(``importlib`` and ``sys`` are loaded already).

It also has asyncio load without ``ssl`` (``_NoTlsForAsyncio``): proctui never speaks TLS,
and asyncio's own ``import ssl`` (OpenSSL's libraries with it) was 5 ms of every
supervisor's start on this machine, console or headless."""

from __future__ import annotations

import gc
import importlib
import sys

_paused = False


class _NoTlsForAsyncio:
    """A finder that refuses ``ssl`` while asyncio itself is loading, and only then.

    asyncio imports ssl in a ``try`` and takes an ImportError as "no TLS here" (its TLS
    calls then refuse: proctui makes none). Any other import of ssl, before asyncio or
    after it, finds the real module.

    Once asyncio is loaded the finder stays on sys.meta_path, answering None (one call
    per module not yet loaded, well under a microsecond): importlib iterates that very
    list while it asks each finder, so a finder that removed itself there would make the
    import that asked skip the finder after it (the builtin modules' one)."""

    @staticmethod
    def find_spec(name: str, path: object = None, target: object = None) -> None:
        if name == "ssl" and getattr(getattr(sys.modules.get("asyncio"), "__spec__", None),
                                     "_initializing", False):
            raise ModuleNotFoundError("proctui loads asyncio without TLS", name=name)
        return None


def load_asyncio_without_tls() -> None:
    """Have asyncio load without ssl, if neither is loaded yet."""
    if "asyncio" not in sys.modules and "ssl" not in sys.modules \
            and _NoTlsForAsyncio not in sys.meta_path:
        sys.meta_path.insert(0, _NoTlsForAsyncio)


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
    load_asyncio_without_tls()
    try:
        # By name: the strictly typed layers that turn the collector back on import this
        # module, and need not be checked through every command. run, up and demo in
        # their plain forms start without click (cli_quick); everything else, and
        # whatever it is not sure of, goes to click.
        if not importlib.import_module("proctui.cli_quick").main(sys.argv[1:]):
            importlib.import_module("proctui.cli").main()
    finally:
        # Normal exit stays as it was (atexit handlers, files flushed), without the
        # interpreter's last walk over every object that start-up made.
        gc.freeze()
