"""Modal screens: the decision at a stop deadline, an agent's request for a decision,
and confirmations (the help and the timeline, screens to read, are in reading.py).

A decision is never made by accident: the focused choice is "later", Enter and Escape
never kill or abandon, kill needs K and abandon needs a (as on the main screen), and
keys pressed in the first half second after the dialog opens are ignored, so keys typed
for the main screen cannot answer a question the operator has not seen yet. An agent's
request is asked the same way (``Question``), and granted only by the key of what it
asks.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from proctui.core.life.asks import Ask
from proctui.core.life.outcome import seconds, setting
from proctui.core.view import ProcessView
from proctui.frontends.console.keys import (
    ASKED,
    CONFIRM,
    DIALOG,
    LEAVE,
    Key,
    asked_keys,
    bindings,
    find,
    on_bar,
    question_bar,
    wrap_items,
)
from proctui.frontends.console.questions import ask_key, question_key
from proctui.frontends.words import started_words
from proctui.records import dataclass

ARMING = 0.5  # seconds during which a new dialog ignores keys


@dataclass(frozen=True, slots=True)
class Decision:
    action: str  # "kill" | "extend" | "abandon" | "wait" | "later"
    seconds: float | None = None


T = TypeVar("T")


class Question(ModalScreen[T]):
    """A question only the operator answers, armed: the focused choice is "later",
    Enter and Escape never act, and keys pressed in its first ARMING seconds are
    ignored, so keys typed for the main screen cannot answer a question not yet seen.
    The decision at a deadline and an agent's request are both asked so."""

    KEYS: tuple[Key, ...] = ()  # its own keys (bindings, key bar)

    def __init__(self, *, refused: Callable[[], bool] = lambda: False,
                 help: Callable[[], None] | None = None,
                 detach: Callable[[], None] | None = None,
                 resumed: Callable[[], None] | None = None) -> None:
        super().__init__()
        # What its keys reach beyond it: may an answer act now (read-only, the link
        # down: it says so), the help over it, leaving an attached console (None: not
        # attached), and the console's tick once the question is back on top.
        self.refuses, self.opens_help, self.detaches = refused, help, detach
        self.resumed = resumed
        self.armed = False
        self._opened = time.monotonic()

    @property
    def key(self) -> tuple[object, ...]:
        raise NotImplementedError

    def bar(self, attached: bool) -> tuple[Key, ...]:
        return question_bar(attached, self.KEYS)

    def on_mount(self) -> None:
        self.query_one("#later", Button).focus()
        self.set_timer(ARMING, self._arm)
        self._draw()

    def on_screen_resume(self) -> None:
        # Back on top after the palette: a question answered meanwhile (`proctui kill` from
        # another terminal) goes now, before a key can answer it again, not at a later tick.
        if self.resumed is not None:
            self.call_later(self.resumed)

    def _arm(self) -> None:
        self.armed = True
        self._draw()

    def _draw(self) -> None:
        raise NotImplementedError

    def _keys_words(self) -> str:
        """Its keys, as said to a key it does not take."""
        raise NotImplementedError

    _said: tuple[str, float] | None = None  # the dialog's answer to a key, and until when

    def said_now(self) -> Text | None:
        """What it says in place of its keys now (its answer to a key), if anything."""
        if self._said is not None and time.monotonic() < self._said[1]:
            return Text(self._said[0], style="bold yellow")
        if not self.armed:
            return Text("arming: keys are ignored for a moment…", style="bold yellow")
        return None

    def notify(self, message: str, **options: Any) -> None:
        # In the dialog, in place of its keys (which the answer names), not in a toast: at
        # 60x15 a toast covered the dialog's text and buttons, and beside it the quit
        # panel's countdowns.
        self._said = (message, time.monotonic() + float(options.get("timeout") or 4))
        if self.is_mounted:
            self._draw()

    def own_key(self, event: events.Key) -> bool:
        """A key of its own beyond its bindings (the seconds typed for an extend)."""
        return False

    def on_key(self, event: events.Key) -> None:
        if not self.armed:
            event.stop()
            event.prevent_default()
            return
        if self.own_key(event):
            event.stop()
        elif event.key in find("detach").keys.split(",") and self.detaches is not None:
            # d leaves an attached console at once, as the README says, at a question
            # too: nothing is answered, the question waits for whoever attaches next.
            event.stop()
            self.detaches()
        elif event.key in _HELP:  # the help over the question (the key bar offers it)
            event.stop()
            if self.opens_help is not None:
                self.opens_help()
        elif event.key not in {k for key in self.KEYS for k in key.keys.split(",")} and \
                event.key not in _MOVES:
            # d, q, s, ctrl+c...: shown in the key bar below, they did nothing, silently.
            event.stop()
            self.notify(f"{event.key}: a question is open first: {self._keys_words()} (then "
                        f"{event.key})", severity="warning", markup=False, timeout=4)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # Its answers wait for it to be armed (a button's press, too: on_button_pressed).
        return self.armed or action not in {k.action.split("(")[0] for k in self.KEYS}

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if self.armed:
            self.pressed(event.button.id or "later")

    def pressed(self, button: str) -> None:
        raise NotImplementedError


class AskScreen(Question[Decision]):
    """A process reached its stop deadline with on_timeout = "ask"."""

    KEYS = DIALOG
    BINDINGS = bindings(DIALOG)

    def __init__(self, view: ProcessView, position: int, waiting: int, now: float, *,
                 refused: Callable[[], bool] = lambda: False,
                 help: Callable[[], None] | None = None,
                 detach: Callable[[], None] | None = None,
                 resumed: Callable[[], None] | None = None) -> None:
        super().__init__(refused=refused, help=help, detach=detach, resumed=resumed)
        self.view = view
        self.position, self.waiting = position, waiting
        self.amount = f"{view.extend_step:g}"
        self._now = now

    @property
    def key(self) -> tuple[object, ...]:
        return question_key(self.view)

    @property
    def seconds(self) -> str:
        """The seconds typed; none (all erased, or 0): its extend_step ("by 0s" before)."""
        return self.amount or f"{self.view.extend_step:g}"

    def compose(self) -> ComposeResult:
        with Vertical(id="ask"):
            yield Static(id="ask-title")
            yield Static(id="ask-when")
            yield Static(id="ask-help")
            with Horizontal(id="ask-buttons"):
                for key in DIALOG:
                    name = key.action.removeprefix("choose('").removesuffix("')")
                    yield Button(self._label(key.action), id=name, compact=True,
                                 variant="error" if name == "kill" else "default")

    def _label(self, action: str) -> str:
        key = find(action, DIALOG)
        if action == "choose('extend')":
            # Five digits or more: the row of buttons no longer fits 80 columns, and the
            # button went blank; the hint above says the seconds.
            seconds = f" {self.seconds}s" if len(self.seconds) < 5 else ""
            return f"{key.label}{seconds} {key.shown}"
        return f"{key.label} {key.shown}"

    def show(self, view: ProcessView, position: int, waiting: int, now: float) -> None:
        """Keep the dialog current (the app calls this each tick)."""
        self.view, self.position, self.waiting, self._now = view, position, waiting, now
        if self.is_mounted:
            # A tick can come between the push and the mount, before the dialog has its
            # rows (the console crashed there once in a CI run); on_mount draws it then.
            self._draw()

    def _draw(self) -> None:
        v = self.view
        title = Text(v.name, style="bold magenta")
        title.append(f" · pid {v.pid}" if v.pid else "", style="bold")
        title.append(f" · {self.position} of {self.waiting} waiting", style="dim")
        self.query_one("#ask-title", Static).update(title)
        since = seconds(self._now - (v.stop_requested_at or self._now))
        status = f" · {v.status}" if v.status else ""
        self.query_one("#ask-when", Static).update(Text(
            f"stop timeout reached, {started_words(v)} {since} ago{status}"))
        help_ = self.query_one("#ask-help", Static)
        words = self.said_now() or Text(wrap_items([
            f"{_k('kill')} kill now", f"{_k('extend')} extend by "
            f"{setting(float(self.seconds))} (type digits to change)",
            f"{_k('abandon')} abandon", f"{_k('wait')} wait, no deadline",
            f"{find('later', DIALOG).shown} later"], help_.content_size.width), style="dim")
        help_.update(words)
        extend = self.query_one("#extend", Button)
        if extend.label != (label := self._label("choose('extend')")):
            extend.label = label
            extend.refresh(layout=True)  # its width follows the label's ("Extend 799s ")

    def _keys_words(self) -> str:
        return (f"{_k('kill')} kill · {_k('extend')} extend · {_k('abandon')} abandon · "
                f"{_k('wait')} wait · {find('later', DIALOG).shown} later")

    def own_key(self, event: events.Key) -> bool:
        digit = event.character if event.character and event.character.isdigit() else None
        if digit is None and event.key != "backspace":
            return False
        kept = self.amount if self._typed else ""
        self.amount = (kept + digit).lstrip("0")[:6] if digit else self.amount[:-1]
        self._typed = True
        self._draw()
        return True

    _typed = False  # the first digit replaces the step; later ones add to it

    def pressed(self, button: str) -> None:
        self.action_choose(button)

    def action_choose(self, action: str) -> None:
        if action == "later":
            self.dismiss(Decision("later"))
            return
        if self.refuses():  # read-only, or the link is down
            return  # (the question stays: it can still be answered once we may)
        if action == "extend":
            amount = float(self.seconds)
            if amount <= 0:
                self.notify("Type a number of seconds above 0", severity="warning",
                            markup=False)
                return
            self.dismiss(Decision("extend", amount))
            return
        self.dismiss(Decision(action))

    def action_later(self) -> None:
        self.dismiss(Decision("later"))


def _k(choice: str) -> str:
    return find(f"choose('{choice}')", DIALOG).shown


_HELP = set(find("help").keys.split(","))
_MOVES = {"tab", "shift+tab", "enter", "space", "left", "right", "up", "down", "ctrl+p"}  # buttons


class AgentAskScreen(Question[str]):
    """An agent asks for a decision only an operator takes (request_decision): to kill a
    process, abandon it, or stop everything. Granted only by the key of what it asks (K,
    a or S), denied with n; Enter and Escape put it off. Answers "grant", "deny" or
    "later"."""

    KEYS = ASKED
    BINDINGS = bindings(ASKED)

    def __init__(self, ask: Ask, position: int, waiting: int, now: float, *,
                 refused: Callable[[], bool] = lambda: False,
                 help: Callable[[], None] | None = None,
                 detach: Callable[[], None] | None = None,
                 resumed: Callable[[], None] | None = None) -> None:
        super().__init__(refused=refused, help=help, detach=detach, resumed=resumed)
        self.ask = ask
        self.position, self.waiting = position, waiting
        self._now = now

    @property
    def key(self) -> tuple[object, ...]:
        return ask_key(self.ask)

    def bar(self, attached: bool) -> tuple[Key, ...]:
        return question_bar(attached, asked_keys(self.ask.choice))

    @property
    def grant_key(self) -> Key:
        return find(f"grant('{self.ask.choice}')", ASKED)

    def compose(self) -> ComposeResult:
        grant = self.grant_key
        with Vertical(id="ask"):
            yield Static(id="ask-title")
            yield Static(id="ask-why")
            yield Static(id="ask-when")
            yield Static(id="ask-help")
            with Horizontal(id="ask-buttons"):
                yield Button(f"{grant.label} {grant.shown}", id="grant", compact=True,
                             variant="error")
                for key in (find("deny", ASKED), find("later", ASKED)):
                    yield Button(f"{key.label} {key.shown}", id=key.action, compact=True)

    def show(self, ask: Ask, position: int, waiting: int, now: float) -> None:
        self.ask, self.position, self.waiting, self._now = ask, position, waiting, now
        if self.is_mounted:
            self._draw()

    def _draw(self) -> None:
        a = self.ask
        title = Text("An agent asks to ", style="bold magenta")
        title.append(a.what, style="bold")
        title.append(f" · pid {a.pid}" if a.pid else "", style="bold")
        title.append(f" · {self.position} of {self.waiting} waiting", style="dim")
        self.query_one("#ask-title", Static).update(title)
        # The agent's words, as text (never markup), already one plain line.
        why = Text("its reason: ", style="dim")
        why.append(a.why)
        self.query_one("#ask-why", Static).update(why)
        self.query_one("#ask-when", Static).update(Text(
            f"asked {seconds(self._now - a.asked_at)} ago by {a.asker}; it lapses in "
            f"{seconds(a.expires_at - self._now)}", style="dim"))
        help_ = self.query_one("#ask-help", Static)
        help_.update(self.said_now() or Text(self._keys_words(), style="dim"))

    def _keys_words(self) -> str:
        grant = self.grant_key
        return wrap_items([f"{grant.shown} {grant.label.lower()}: grant it",
                           f"{find('deny', ASKED).shown} deny",
                           f"{find('later', ASKED).shown} later"],
                          self.query_one("#ask-help", Static).content_size.width
                          if self.is_mounted else 76)

    def pressed(self, button: str) -> None:
        if button == "grant":
            self.action_grant(self.ask.choice)
        elif button == "deny":
            self.action_deny()
        else:
            self.action_later()

    def action_grant(self, choice: str) -> None:
        if choice != self.ask.choice:
            grant = self.grant_key
            self.notify(f"this request asks to {self.ask.what}: {grant.shown} grants it, "
                        f"{find('deny', ASKED).shown} denies it", severity="warning",
                        markup=False, timeout=4)
            return
        if self.refuses():  # read-only, or the link is down
            return
        self.dismiss("grant")

    def action_deny(self) -> None:
        if self.refuses():
            return
        self.dismiss("deny")

    def action_later(self) -> None:
        self.dismiss("later")


BOX_WIDTH = 76  # the widest a dialog grows: a line longer than that is hard to read


def listed(items: tuple[str, ...], width: int, rows: int, prefix: str = "") -> list[str]:
    """``items`` packed into at most ``rows`` lines of at most ``width`` cells, comma
    separated, never one cut across lines; what does not fit is counted in a last
    "+N more". Lines are made here so that nothing re-wraps them."""
    from proctui.frontends.printer import cells, cut_middle

    width, rows = max(12, width), max(1, rows)
    # Room for its comma too, by columns, cut in the middle: a name and "(pid N)," one
    # column too wide were wrapped again by Textual, "(pid" above "20135),".
    items = tuple(item if cells(item) < width else cut_middle(item, width - 1).rstrip()
                  for item in items)

    def pack(pieces: list[str]) -> list[str]:
        out: list[str] = []
        line = prefix
        for i, piece in enumerate(pieces):
            piece += "," if i < len(pieces) - 1 else ""
            if line and cells(line) + 1 + cells(piece) > width:
                out.append(line)
                line = piece
            else:
                line = f"{line} {piece}" if line else piece
        return [*out, line] if line else out

    whole = pack(list(items))
    if len(whole) <= rows:
        return whole
    low, high = 0, len(items)  # the most items that fit beside "+N more" (binary search)
    while low < high:
        mid = (low + high + 1) // 2
        if len(pack([*items[:mid], f"+{len(items) - mid} more"])) <= rows:
            low = mid
        else:
            high = mid - 1
    return pack([*items[:low], f"+{len(items) - low} more"])


class ConfirmScreen(ModalScreen[bool]):
    """Yes or no; No is focused, and Enter or Escape answers no. A list of names
    (``items``) is shown in the rows the screen has left, ending in "+N more": the
    question and its buttons always stay in view."""

    BINDINGS = [Binding("y", "answer(True)", "Yes"),
                Binding("n,escape", "answer(False)", "No")]

    def bar(self, attached: bool) -> tuple[Key, ...]:
        """The key bar under it: its own keys (the main ones did nothing here)."""
        return CONFIRM

    def __init__(self, question: str, detail: str = "", items: tuple[str, ...] = (),
                 prefix: str = "") -> None:
        super().__init__()
        self.question = question
        self.detail = detail
        self.items = items
        self.prefix = prefix

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm"):
            yield Static(Text(self.question, style="bold"), id="confirm-question")
            if self.detail:
                yield Static(Text(self.detail), id="confirm-detail")
            if self.items:
                yield Static(id="confirm-items")
            with Horizontal(id="confirm-buttons"):
                yield Button("Yes y", id="yes", variant="error", compact=True)
                yield Button("No n", id="no", variant="primary", compact=True)

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()
        self._fit()

    def on_resize(self) -> None:
        self._fit()

    def _fit(self) -> None:
        if not self.items:
            return
        width, height = self.app.size
        inner = min(BOX_WIDTH, width) - 4  # a border and a space each side
        used = 2 + 1 + rows_of(self.question, inner) + \
            (rows_of(self.detail, inner) if self.detail else 0)
        lines = listed(self.items, inner, height - used, self.prefix)
        self.query_one("#confirm-items", Static).update(Text("\n".join(lines)))

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(event.button.id == "yes")

    def action_answer(self, answer: bool) -> None:
        self.dismiss(answer)


def rows_of(text: str, width: int) -> int:
    """How many rows ``text`` takes wrapped at word boundaries in ``width`` cells."""
    import textwrap

    return max(1, len(textwrap.wrap(text, max(1, width), break_on_hyphens=False)))


class LeaveScreen(ModalScreen[str]):
    """q in an attached console: detach (focused, and Enter), stop everything (S only), or
    stay. Answers "detach", "stop" or "cancel"."""

    BINDINGS = bindings(LEAVE)

    def bar(self, attached: bool) -> tuple[Key, ...]:
        return on_bar(LEAVE)

    def __init__(self, supervisor: str, again: str = "proctui attach") -> None:
        super().__init__()
        self.supervisor = supervisor
        self.again = again

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm"):
            yield Static(Text("Leave this console?", style="bold"), id="confirm-question")
            yield Static(Text(f"Detaching leaves every process running under "
                              f"{self.supervisor}; {self.again} comes back to it. "
                              f"Stopping everything stops them all, with countdowns."),
                         id="confirm-detail")
            with Horizontal(id="confirm-buttons"):
                for key in LEAVE:
                    answer = key.action.removeprefix("leave('").removesuffix("')")
                    yield Button(f"{key.label} {key.shown.split()[0]}", id=f"leave-{answer}",
                                 variant="primary" if answer == "detach" else
                                 "error" if answer == "stop" else "default", compact=True)

    def on_mount(self) -> None:
        self.query_one("#leave-detach", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(str(event.button.id).removeprefix("leave-"))

    def action_leave(self, answer: str) -> None:
        self.dismiss(answer)
