"""A pane's header: the process's name, state and pid, and what it is doing now (its age,
outcome, restart countdown, or the live countdown of its stop with a bar)."""

from __future__ import annotations

from rich.cells import cell_len
from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from proctui.core.life.stop import Phase
from proctui.core.view import ProcessView
from proctui.frontends.console.render import countdown_text, fit, name_cells, restart_words
from proctui.frontends.words import countdown, look, running_words


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
        cd = countdown(view, now)
        words = "" if cd is not None else _status_words(view, now)
        # The least the status needs whole ("SIGKILL in 58s", an outcome), and what the
        # pid and the state word may take from beyond it (the countdown's bar). A STATUS
        # a running process says of itself comes after the state and the pid, cut after
        # a word where room is short: db's grid header gave them up for "accepting
        # connections" and said neither that it was ready nor its pid.
        said = f" · {view.status}" if view.status else ""
        need = len(cd.short) if cd else \
            len(words) - (len(said) if said and words.endswith(said) else 0)
        wanted = len(cd.text) + 8 if cd else need
        width = self.size.width
        # What gives way when room is short, so that the status (the countdown, the
        # outcome: why one looks here) stays whole: a long name down to a third of the
        # row (a grid cell read "│ …" alone), the note to its first words ("held"), then
        # the state word and the pid, which the table shows anyway.
        name = view.name
        if cell_len(name) + need + 6 > width and cell_len(name) > (cap := max(8, width // 3)):
            name = name_cells(name, cap).rstrip()  # (cut in the middle, by columns)
        text = Text()
        text.append(f" {lk.mark} ", style=lk.style)
        text.append(name, style="bold")
        room = width - text.cell_len - 2
        note = self.note
        if note and len(note) + 1 + need > room:
            note = " · ".join(part.split(" at ")[0] for part in note.split(" · "))
        if note and len(note) + 1 + need > room:
            note = note.split(" · ")[0]
        room -= len(note) + 1 if note else 0
        label = f"  {lk.label}"
        if min(wanted, need + 9) > room - len(label) or words.startswith(lk.label) or \
                view.phase is Phase.DECIDING:
            # (No room; or the words say it: "stopped  stopped after 8.0s", and a
            # decision's countdown, "decide!  pid 25698  decide: K / e / a".)
            label = ""
        text.append(label, style=lk.style)
        room -= len(label)
        pid = f"  pid {view.pid}" if view.pid else ""
        pid = pid if min(wanted, need + 9) <= room - len(pid) else ""
        text.append(f"{pid}  ", style="dim")
        room = max(0, room - len(pid))
        if cd is not None:
            text.append_text(countdown_text(cd, room, short=len(cd.text) > room))
        else:
            text.append_text(fit(Text(words, style=lk.style if view.phase is Phase.ENDED
                                      else ""), room))
        if note:
            text.append(" " + note, style="bold yellow")
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
    if view.phase is Phase.ENDED and view.not_started:
        return f"not started: {view.not_started}"
    return view.held or ""
