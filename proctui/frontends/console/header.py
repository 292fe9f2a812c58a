"""A pane's header: the process's name, state and pid, and what it is doing now (its age,
outcome, restart countdown, or the live countdown of its stop with a bar)."""

from __future__ import annotations

from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from proctui.core.life.stop import Phase
from proctui.core.view import ProcessView
from proctui.frontends.console.render import (
    countdown,
    countdown_text,
    fit,
    look,
    restart_words,
    running_words,
)


class PaneHeader(Widget):
    """Name, state and, while stopping, the live countdown with its bar."""

    DEFAULT_CSS = "PaneHeader { height: 1; }"

    view: reactive[ProcessView | None] = reactive(None, layout=False)
    now: reactive[float] = reactive(0.0)  # the tick's one reading of the clock
    note: reactive[str] = reactive("")

    def render(self) -> Text:
        view = self.view
        if view is None:
            return Text("")
        now = self.now
        lk = look(view)
        text = Text()
        text.append(f" {lk.mark} ", style=lk.style)
        text.append(view.name, style="bold")
        cd = countdown(view, now)
        words = "" if cd is not None else _status_words(view, now)
        room = self.size.width - text.cell_len - (len(self.note) + 1 if self.note else 0) - 2
        # The table shows the pid, and "exited: exit code 3" or "killed with SIGKILL ..."
        # say the state: the status is why one looks here, so it goes before them (a grid
        # cell read "exited  pid 11157  exit…").
        wanted = len(cd.text) + 8 if cd else len(words)
        label = f"  {lk.label}"
        if wanted > room - len(label) and words.split(":")[0].split(" ")[0] == lk.label:
            label = ""
        text.append(label, style=lk.style)
        room -= len(label)
        pid = f"  pid {view.pid}" if view.pid else ""
        pid = pid if wanted <= room - len(pid) else ""
        text.append(f"{pid}  ", style="dim")
        room = max(0, room - len(pid))
        if cd is not None:
            text.append_text(countdown_text(cd, room, short=len(cd.text) + 8 > room))
        else:
            text.append_text(fit(Text(words, style=lk.style if view.phase is Phase.ENDED
                                      else ""), room))
        if self.note:
            text.append(" " + self.note, style="bold yellow")
        return text


def _status_words(view: ProcessView, now: float) -> str:
    """What a pane's header says of a process that is not stopping."""
    if view.phase is Phase.ENDED and view.outcome is not None:
        return view.outcome.text
    if view.phase is Phase.RUNNING and view.started_at is not None:
        return running_words(view, now)
    if view.phase is Phase.BACKOFF and view.restart_at is not None:
        return restart_words(view, now)
    if view.phase is Phase.WAITING:
        return f"waiting for {', '.join(view.waiting_for)}"
    return view.held or ""
