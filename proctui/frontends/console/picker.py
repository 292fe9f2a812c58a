"""Picking a process by name (p, and the command palette): every process's name as a
command, and the console's own keys as system commands. Names are untrusted: they go in
as Content, never as markup (Textual's own SimpleProvider highlights through markup)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import partial
from typing import TYPE_CHECKING

from textual.app import SystemCommand
from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.content import Content

from proctui.frontends.console import keys
from proctui.frontends.console.render import look

if TYPE_CHECKING:
    from proctui.frontends.console.app import ProctuiApp


class ProcessPicker(Provider):
    """Every process by name, for the picker (p) and the command palette. Names are
    untrusted: they go in as Content, never as markup (Textual's own SimpleProvider
    highlights through markup)."""

    def _choices(self) -> list[tuple[str, Callable[[], None], str]]:
        app: ProctuiApp = self.app  # type: ignore[assignment]
        return [(view.name, partial(app.action_select_index, i),
                 f"select it · {look(view).label}" + (f" · pid {view.pid}" if view.pid else ""))
                for i, view in enumerate(app.views)]

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for name, pick, words in self._choices():
            score = matcher.match(name)
            if score > 0:
                yield Hit(score, Content(name), pick, text=name, help=words)

    async def discover(self) -> Hits:
        for name, pick, words in self._choices():
            yield DiscoveryHit(Content(name), pick, text=name, help=words)


def system_commands(app: ProctuiApp,
                    textual_own: Iterable[SystemCommand]) -> Iterable[SystemCommand]:
    """The palette's commands: the console's process and quit keys (Detach only in an
    attached console), zoom and help, then Textual's own but its Quit (which would skip
    the stop sequence)."""
    for key in keys.MAIN:
        if key.action == "detach" and app.attached is None:
            continue  # a console that runs the processes itself has nothing to detach from
        if key.group in ("Process", "Quit") or key.action in ("zoom", "help"):
            method = getattr(app, f"action_{key.action}", None)
            if method is not None and key.keys != "ctrl+c,ctrl+q":
                yield SystemCommand(key.label, key.help, method)
    for command in textual_own:
        if command.title not in ("Quit",):
            yield command
