"""Picking a process by name (p, and the command palette): every process's name as a
command; and the palette's commands: the command table's that have words for it, and the
console's own. Names are untrusted: they go in as Content, never as markup (Textual's
own SimpleProvider highlights through markup)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from functools import partial
from typing import Any, Protocol, cast

from textual.app import SystemCommand
from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.content import Content

from proctui import commands
from proctui.commands.base import Named, Request
from proctui.core.view import ProcessView
from proctui.frontends.console import keys
from proctui.frontends.words import look


class Console(Protocol):
    """What the picker and the palette need of the main screen."""

    attached: str | None

    @property
    def views(self) -> Sequence[ProcessView]: ...
    @property
    def selected_view(self) -> ProcessView: ...
    def select_index(self, index: int) -> None: ...
    def command(self, cls: type[Request[Any]],
                make: Callable[[str], Request[Any]]) -> None: ...


class ProcessPicker(Provider):
    """Every process by name, for the picker (p) and the command palette. Names are
    untrusted: they go in as Content, never as markup (Textual's own SimpleProvider
    highlights through markup)."""

    def _choices(self) -> list[tuple[str, Callable[[], None], str]]:
        # The main screen: the first on the stack (the palette may be over a question).
        console = cast(Console, self.app.screen_stack[0])
        return [(view.name, partial(console.select_index, i),
                 f"select it · {look(view).label}" + (f" · pid {view.pid}" if view.pid else ""))
                for i, view in enumerate(console.views)]

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for name, pick, words in self._choices():
            score = matcher.match(name)
            if score > 0:
                yield Hit(score, Content(name), pick, text=name, help=words)

    async def discover(self) -> Hits:
        for name, pick, words in self._choices():
            yield DiscoveryHit(Content(name), pick, text=name, help=words)


def system_commands(console: Console,
                    textual_own: Iterable[SystemCommand]) -> Iterable[SystemCommand]:
    """The palette's commands: the command table's that have words for it (those naming
    a process act on the selected one), so that a new command module shows here by
    itself; the console's ways out (Detach only in an attached console), zoom and help;
    then Textual's own but its Quit (which would skip the stop sequence)."""
    view = console.selected_view if console.views else None
    # The table is read here, when the palette opens: made at import, it would import
    # every command's module before the console's first frame.
    for cls in commands.COMMANDS.values():
        on = f"{view.name} · {look(view).label}" if view is not None and \
            issubclass(cls, Named) else ""
        for words, make in cls.palette_entries():
            yield SystemCommand(words, on, partial(console.command, cls, make))
    for key in keys.MAIN:
        if key.action == "detach" and console.attached is None:
            continue  # a console that runs the processes itself has nothing to detach from
        if (key.group == "Quit" or key.action in ("zoom", "help")) and \
                key.keys != "ctrl+c,ctrl+q":
            method = getattr(console, f"action_{key.action}", None)
            if method is not None:
                yield SystemCommand(key.label, key.help, method)
    for command in textual_own:
        if command.title not in ("Quit",):
            yield command
