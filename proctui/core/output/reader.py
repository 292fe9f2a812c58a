"""The processes' output as a frontend reads it, by name, and news of anything new: the
same reader over a local core's buffers and over a remote core's mirrors."""

from __future__ import annotations

from collections.abc import Callable

from proctui.core.doorbell import Doorbell
from proctui.core.output.lines import OutputBuffer


class OutputReader:
    """The processes' output, and news: a number that moves whenever a snapshot is
    published or output arrives, and a bell for an idle frontend (no timer needed)."""

    def __init__(self, buffers: dict[str, OutputBuffer], seq: Callable[[], int]) -> None:
        self._buffers = buffers
        self._seq = seq
        self.bell = Doorbell()

    def buffer(self, name: str) -> OutputBuffer:
        return self._buffers[name]

    def changes(self) -> int:
        """Asking also re-arms the bell (see listen)."""
        self.bell.rearm()
        return self._seq()

    def listen(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` (on the core's thread; it must only schedule work) when
        something changes, at most once until the next call to changes()."""
        self.bell.listen(callback)

    def unlisten(self, callback: Callable[[], None]) -> None:
        """No more calls of ``callback``: its frontend is gone (a fleet's box console
        made again after a detach must not leave the old one listening)."""
        self.bell.unlisten(callback)
