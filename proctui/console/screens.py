"""Modal screens: the decision at a stop deadline, confirmations, and the key help."""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static


@dataclass(frozen=True, slots=True)
class Decision:
    action: str  # "kill" | "extend" | "abandon" | "wait"
    seconds: float | None = None


class AskScreen(ModalScreen[Decision | None]):
    """A process reached its stop deadline with on_timeout = "ask"."""

    BINDINGS = [
        Binding("k,K", "choose('kill')", "Kill now"),
        Binding("e", "choose('extend')", "Extend"),
        Binding("a", "choose('abandon')", "Abandon"),
        Binding("w", "choose('wait')", "Wait, no deadline"),
        Binding("escape", "dismiss_none", "Later"),
    ]

    def __init__(self, name: str, pid: int | None, waited: str, step: float) -> None:
        super().__init__()
        self.proc_name = name
        self.pid = pid
        self.waited = waited
        self.step = step

    def compose(self) -> ComposeResult:
        with Vertical(id="ask"):
            title = Text("Stop timeout reached: ", style="bold")
            title.append(self.proc_name, style="bold magenta")
            yield Static(title, id="ask-title")
            body = Text(f"pid {self.pid} is still running {self.waited} after the stop "
                        "request.\nKill it now, extend its deadline, abandon it (leave it "
                        "running),\nor wait for it with no deadline.")
            yield Static(body, id="ask-body")
            with Horizontal(id="ask-extend"):
                yield Label("Extend by (seconds): ")
                yield Input(value=f"{self.step:g}", id="ask-seconds", restrict=r"[0-9.]*",
                            max_length=8)
            with Horizontal(id="ask-buttons"):
                yield Button("Kill (k)", id="kill", variant="error")
                yield Button("Extend (e)", id="extend", variant="primary")
                yield Button("Abandon (a)", id="abandon", variant="warning")
                yield Button("Wait (w)", id="wait")
            yield Static(Text("Escape: decide later (the process stays parked; K, e and a "
                              "still work on it)", style="dim"), id="ask-hint")

    def on_mount(self) -> None:
        self.query_one("#kill", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.action_choose(event.button.id or "")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.action_choose("extend")

    def action_choose(self, action: str) -> None:
        if action == "extend":
            raw = self.query_one("#ask-seconds", Input).value
            try:
                value = float(raw)
            except ValueError:
                value = 0.0
            if value <= 0:
                self.notify("Give a number of seconds above 0", severity="warning",
                            markup=False)
                return
            self.dismiss(Decision("extend", value))
            return
        self.dismiss(Decision(action))

    def action_dismiss_none(self) -> None:
        self.dismiss(None)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # While typing seconds, letters are text, not shortcuts.
        typing = isinstance(self.focused, Input)
        return not (action == "choose" and typing and parameters != ("extend",))


class ConfirmScreen(ModalScreen[bool]):
    BINDINGS = [
        Binding("y", "answer(True)", "Yes"),
        Binding("n,escape", "answer(False)", "No"),
    ]

    def __init__(self, question: str, detail: str = "") -> None:
        super().__init__()
        self.question = question
        self.detail = detail

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm"):
            yield Static(Text(self.question, style="bold"), id="confirm-question")
            if self.detail:
                yield Static(Text(self.detail), id="confirm-detail")
            with Horizontal(id="confirm-buttons"):
                yield Button("Yes (y)", id="yes", variant="error")
                yield Button("No (n)", id="no", variant="primary")

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_answer(self, answer: bool) -> None:
        self.dismiss(answer)


HELP = """\
Select      up/down, j/k, 1-9        Layout    z  one large pane / grid
Stop        s  stop selected          Follow    f  toggle, End resumes
Start       S  start selected again   Wrap      w  wrap or cut long lines
Restart     r                         Search    /  then n older, N newer
Kill now    K                         Clear     c  clear the pane
Extend      e  add extend_step        Scroll    PgUp/PgDn, Home, mouse wheel
Abandon     a  leave it running       Palette   ctrl+p
Quit        q, ctrl+c, ctrl+q: stop everything, then exit
            q again while quitting: kill all now
            Q: abandon whatever is still running and exit at once

A stop: {stop} to the process group, a countdown to the deadline, then
SIGKILL (or abandon, or your decision), then a countdown to giving up."""


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,question_mark,q", "dismiss_help", "Close")]

    def compose(self) -> ComposeResult:
        with Vertical(id="help"):
            yield Static(Text("proctui keys", style="bold"))
            yield Static(Text(HELP.format(stop="the stop signal")))
            yield Static(Text("Escape or ? closes this.", style="dim"))

    def action_dismiss_help(self) -> None:
        self.dismiss(None)

