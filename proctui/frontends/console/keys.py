"""Every key of the console, in one table. The bindings, the key bar, the help screen,
the hints, the dialog's labels and the README's key table are all drawn from here.

``python -m proctui.frontends.console.keys`` prints the README's table.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from proctui.core.life.stop import Phase
from proctui.core.view import ProcessView
from proctui.records import dataclass

if TYPE_CHECKING:
    from textual.binding import BindingType


@dataclass(frozen=True, slots=True)
class Key:
    action: str  # a Textual action
    keys: str  # Textual key names, comma-separated
    shown: str  # how a person reads the key(s)
    label: str  # a word for the key bar and buttons
    help: str  # what it does, for the help screen and the README
    group: str = ""
    bar: int = 0  # place in the key bar (1 first; 0: not shown there)
    priority: bool = False


MAIN: tuple[Key, ...] = (
    Key("select(-1)", "up,k", "↑ k", "Up", "select the process above", "Select"),
    Key("select(1)", "down,j", "↓ j", "Down", "select the process below", "Select"),
    Key("select_index", "1,2,3,4,5,6,7,8,9", "1-9", "Number", "select a process by its number",
        "Select"),
    Key("pick", "p", "p", "Pick", "pick a process by name: type part of it, Enter selects "
        "(any number of processes)", "Select", bar=13),
    Key("stop", "s", "s", "Stop", "stop it: its stop signal, then the countdown", "Process",
        bar=2),
    Key("start", "S", "S", "Start", "start it again once it has ended", "Process", bar=3),
    Key("restart", "r", "r", "Restart", "restart it", "Process", bar=4),
    Key("kill", "K", "K", "Kill", "kill it now: SIGKILL to its whole group", "Process", bar=5),
    Key("extend", "e", "e", "Extend", "move its deadline later by extend_step", "Process",
        bar=6),
    Key("abandon", "a", "a", "Abandon", "abandon it: leave it running (asks first)",
        "Process", bar=7),
    Key("adopt", "A", "A", "Adopt", "adopt a held leftover: watch it, stop it on quit",
        "Process", bar=8),
    Key("quit", "q", "q", "Quit", "stop everything with countdowns, then exit (again: kill "
        "all, asks first); in an attached console it asks, and detach is the default",
        "Quit", bar=1),
    Key("quit", "ctrl+c,ctrl+q", "^c ^q", "Quit", "the same as q", "Quit", priority=True),
    Key("abandon_and_exit", "Q", "Q", "Abandon all", "abandon whatever still runs and exit "
        "(asks first)", "Quit"),
    Key("detach", "d", "d", "Detach", "attached console: leave at once, every process keeps "
        "running under the supervisor", "Quit"),
    Key("stop_all_now", "X", "X", "Stop all now", "stop everything now, not waiting for "
        "dependents to stop first", "Quit"),
    Key("zoom", "z", "z", "Layout", "one large pane, or a grid of panes", "View", bar=11),
    Key("follow", "f", "f", "Follow", "follow new output, or hold still", "View", bar=14),
    Key("wrap", "w", "w", "Wrap", "wrap long lines, or cut them", "View", bar=15),
    Key("search", "slash", "/", "Search", "search the pane (n older, N newer match)", "View",
        bar=12),
    Key("next_match(-1)", "n", "n", "Older", "the older search match", "View"),
    Key("next_match(1)", "N", "N", "Newer", "the newer search match", "View"),
    Key("clear", "c", "c", "Clear",
        "clear the pane, in every console (proctui logs still has the lines)", "View"),
    Key("scroll_up_page", "pageup", "PgUp", "Page up", "scroll up a page (holds the pane)",
        "View"),
    Key("scroll_down_page", "pagedown", "PgDn", "Page down", "scroll down a page", "View"),
    Key("home", "home", "Home", "Top", "the oldest line kept", "View"),
    Key("end", "end", "End", "End", "the newest line, and follow again", "View"),
    Key("timeline", "t", "t", "Timeline", "the timeline of this run so far", "View"),
    Key("help", "question_mark,f1", "?", "Help", "the list of every key (F1 too)", "View",
        bar=16),
)

# The decision at a stop deadline. Nothing destructive answers Enter or Escape.
DIALOG: tuple[Key, ...] = (
    Key("choose('kill')", "K", "K", "Kill", "kill it now", "Decision"),
    Key("choose('extend')", "e", "e", "Extend", "extend its deadline by the seconds shown "
        "(type digits to change them)", "Decision"),
    Key("choose('abandon')", "a", "a", "Abandon", "abandon it: leave it running", "Decision"),
    Key("choose('wait')", "w", "w", "Wait", "wait for it with no deadline", "Decision"),
    Key("later", "escape", "Esc", "Later", "decide later: it stays parked, K e a still work "
        "on it", "Decision"),
)


# An agent's request for a decision only an operator takes (proctui mcp): granted only by
# the key of what it asks (K for a kill, a for an abandon, S for stopping everything, as
# elsewhere); Enter and Escape put it off, n denies it.
ASKED: tuple[Key, ...] = (
    Key("grant('kill')", "K", "K", "Kill", "grant an agent's request to kill the process: "
        "SIGKILL to its whole group now", "An agent's request"),
    Key("grant('abandon')", "a", "a", "Abandon", "grant an agent's request to abandon it: "
        "leave it running", "An agent's request"),
    Key("grant('down')", "S", "S", "Stop everything", "grant an agent's request to stop "
        "everything and end the supervisor", "An agent's request"),
    Key("deny", "n", "n", "Deny", "deny it: the agent is told no", "An agent's request"),
    Key("later", "escape", "Esc", "Later", "answer later: it waits until it lapses (5 "
        "minutes after it was asked)", "An agent's request"),
)


# Leaving an attached console. Detach is the default: someone who attached to look must
# not stop a box's services by habit; stopping everything needs its own key.
LEAVE: tuple[Key, ...] = (
    Key("leave('detach')", "d,enter", "d ⏎", "Detach", "detach: the supervisor and every "
        "process go on", "Leaving an attached console"),
    Key("leave('stop')", "S", "S", "Stop everything", "stop everything with countdowns, as "
        "quitting proctui run does", "Leaving an attached console"),
    Key("leave('cancel')", "escape,n", "Esc", "Cancel", "stay attached",
        "Leaving an attached console"),
)


# Reading the help and the timeline: they scroll with the keys people press, not only once
# something inside them has focus (nothing says to press Tab first).
READING: tuple[Key, ...] = (
    Key("scroll('up')", "up,k", "↑ k", "Up", "scroll up a line", "Reading the help or timeline"),
    Key("scroll('down')", "down,j", "↓ j", "Down", "scroll down a line",
        "Reading the help or timeline"),
    Key("scroll('page_up')", "pageup", "PgUp", "Page up", "scroll up a page",
        "Reading the help or timeline"),
    Key("scroll('page_down')", "pagedown", "PgDn", "Page down", "scroll down a page",
        "Reading the help or timeline"),
    Key("scroll('home')", "home", "Home", "Top", "the top", "Reading the help or timeline"),
    Key("scroll('end')", "end", "End", "Bottom", "the bottom", "Reading the help or timeline"),
    Key("close", "escape,q", "Esc q", "Close",
        "close it (? or F1 closes the help, t the timeline)", "Reading the help or timeline"),
)


def reading_line() -> str:
    """How to move in the help and the timeline, in one line of their own keys:
    "↑↓ PgUp PgDn Home End scroll · Esc closes"."""
    def first(action: str) -> str:
        return shown(action, READING).split()[0]

    moves = [first(f"scroll('{way}')") for way in
             ("up", "down", "page_up", "page_down", "home", "end")]
    return f"{moves[0]}{moves[1]} {' '.join(moves[2:])} scroll · {first('close')} closes"


def bindings(keys: tuple[Key, ...]) -> list[BindingType]:
    from textual.binding import Binding

    out: list[BindingType] = []
    for k in keys:
        if k.action == "select_index":
            out += [Binding(d, f"select_index({int(d) - 1})", show=False)
                    for d in k.keys.split(",")]
            continue
        out.append(Binding(k.keys, k.action, k.label, show=False, key_display=k.shown,
                           priority=k.priority))
    return out


def attached_bar() -> tuple[Key, ...]:
    """The key table as an attached console's key bar shows it: d Detach comes first."""
    from dataclasses import replace

    return tuple(replace(k, bar=1) if k.action == "detach" else
                 replace(k, bar=k.bar + 1) if k.bar else k for k in MAIN)


# A yes/no question's keys (its own bindings), for the key bar under it.
CONFIRM: tuple[Key, ...] = (
    Key("answer(True)", "y", "y", "Yes", "yes", "Confirm", bar=1),
    Key("answer(False)", "n,escape", "n Esc", "No", "no", "Confirm", bar=2),
)


def on_bar(keys: tuple[Key, ...]) -> tuple[Key, ...]:
    """``keys`` in the key bar, in their order."""
    from dataclasses import replace

    return tuple(replace(k, bar=i + 1) for i, k in enumerate(keys))


def question_bar(attached: bool, keys: tuple[Key, ...] = DIALOG) -> tuple[Key, ...]:
    """The key bar under a question: its own keys (it refuses the main ones, q among
    them, which the bar went on offering as "q Kill all"), ? for the help over it, and d
    where it detaches."""
    from dataclasses import replace

    own = (*on_bar(keys), find("help"))
    # d last: where room is short, the keys that answer stay ("Esc Later" went at 60x15).
    return (*own, replace(find("detach"), bar=len(keys) + 1)) if attached else own


def asked_keys(choice: str) -> tuple[Key, ...]:
    """An agent's request's own keys: the one that grants what it asks, deny, later."""
    return tuple(k for k in ASKED if not k.action.startswith("grant(") or
                 k.action == f"grant('{choice}')")


# Esc and the next key read together (typed fast, or pasted) reach Textual as one key:
# alt+<key>, or for a digit the character macOS's Option gives it (Textual reads
# WezTerm's sequences so). "Esc 1 s" lost the 1, and s stopped the process selected
# before. (A "£" typed as itself, Shift+3 on a British keyboard, reads as Esc 3 too: it
# selects process 3, where it did nothing.) The app splits them on its main screen only.
_OPTION_DIGITS = {"º": "0", "¡": "1", "™": "2", "£": "3", "¢": "4", "∞": "5", "§": "6",
                  "¶": "7", "•": "8", "ª": "9"}
ESCAPE = ("escape", "\x1b")


def split_escape(key: str, character: str | None) -> tuple[tuple[str, str | None], ...]:
    """The keys an Esc read together with the next one stands for: (Esc, that key), or
    nothing when ``key`` is a key of its own."""
    if key.startswith("alt+") and key != "alt+":
        rest = key[4:]
        # alt+shift+k: the key was "K", as Textual names it when typed alone.
        base = character if rest.startswith("shift+") and character and \
            len(character) == 1 else rest
        return (ESCAPE, (base, character))
    digit = _OPTION_DIGITS.get(character or "")
    return (ESCAPE, (digit, digit)) if digit is not None else ()


# The keys that act on the supervisor: refused in a read-only console, and while the link
# to the supervisor is down (q only detaches there).
ACTS = frozenset({"stop", "start", "restart", "kill", "extend", "abandon", "adopt", "quit",
                  "abandon_and_exit", "stop_all_now", "clear"})


def read_only_bar() -> tuple[Key, ...]:
    """The key bar of a read-only console: d Detach first, and no key that acts."""
    from dataclasses import replace

    return tuple(replace(k, bar=0) if k.action in ACTS else k
                 for k in attached_bar())


# The process keys the bar offers for the selected process, by its phase: only those that
# would act on it now. The bar offered s K e a for a process that had ended (each answered
# "nothing to stop") and never S, which would have started it.
_RUNNING = ("stop", "restart", "kill", "abandon")
_STOPPING = ("kill", "extend", "abandon")
OFFERED: dict[Phase, tuple[str, ...]] = {
    Phase.WAITING: ("stop",), Phase.STARTING: _RUNNING, Phase.RUNNING: _RUNNING,
    Phase.STOPPING: _STOPPING, Phase.DECIDING: _STOPPING, Phase.KILLING: _STOPPING,
    Phase.BACKOFF: ("stop", "restart"), Phase.HELD: ("stop", "abandon", "adopt"),
    Phase.ENDED: ("start", "restart")}
_PROCESS = frozenset(a for offered in OFFERED.values() for a in offered)


def bar_now(keys: tuple[Key, ...], view: ProcessView | None, quitting: bool,
            link_down: bool = False) -> tuple[Key, ...]:
    """``keys`` as the bar shows them now: the process keys that act on the selected
    process (none without one), and q named for what it does while quitting (it asks to
    kill everything still stopping). While the link is down no key that acts is offered
    (each answers "not connected")."""
    from dataclasses import replace

    if link_down:
        return tuple(replace(k, bar=0) if k.action in ACTS else k for k in keys)

    offered = OFFERED.get(view.phase, ()) if view is not None else ()
    if view is not None and view.pid is None and view.phase is Phase.STARTING:
        offered = ("stop",)  # waiting for its leftover to go: nothing to kill yet
    left = view is not None and view.outcome is not None and view.outcome.left_running
    if quitting or (view is not None and view.leftover) or left:
        # (Left running: a start is refused while a pid of its last run runs on, and
        # the bar offered S for an abandoned process still running.)
        offered = tuple(a for a in offered if a not in ("start", "restart"))
    return tuple(replace(k, bar=0) if k.bar and k.action in _PROCESS and
                 k.action not in offered else
                 replace(k, label="Kill all") if quitting and k.action == "quit" and k.bar
                 else k for k in keys)


def find(action: str, keys: tuple[Key, ...] = MAIN) -> Key:
    return next(k for k in keys if k.action == action)


def shown(action: str, keys: tuple[Key, ...] = MAIN) -> str:
    return find(action, keys).shown


def bar_items(keys: tuple[Key, ...] = MAIN) -> list[tuple[str, str]]:
    return [(k.shown, k.label) for k in sorted((k for k in keys if k.bar), key=lambda k: k.bar)]


def fit(items: list[str], width: int, sep: str = "  ") -> str:
    """As many whole items as fit in ``width``, in order: never a word cut in half."""
    out = ""
    for item in items:
        candidate = f"{out}{sep}{item}" if out else item
        if len(candidate) > width:
            break
        out = candidate
    return out


def wrap_items(items: list[str], width: int, sep: str = " · ") -> str:
    """``items`` joined by ``sep``, in lines of ``width`` broken only between items: a
    wrapped hint read "... · a" at the end of a line and "abandon" on the next."""
    lines = [""]
    for item in items:
        candidate = f"{lines[-1]}{sep}{item}" if lines[-1] else item
        if len(candidate) > width > 0 and lines[-1]:
            lines.append(item)
        else:
            lines[-1] = candidate
    return "\n".join(lines)


def help_rows(keys: tuple[Key, ...] = MAIN) -> list[tuple[str, str, str]]:
    return [(k.group, k.shown, k.help) for k in keys]


def hint(prefix: str, items: tuple[tuple[str, str], ...]) -> tuple[str, ...]:
    """A hint line's items, each action shown with its key: ("demo", "q quits", ...)."""
    return (prefix, *(f"{shown(action)} {words}" for action, words in items))


def every_row() -> list[tuple[str, str, str]]:
    """Every key of every screen, as the help and the README list them."""
    return help_rows(MAIN) + help_rows(DIALOG) + help_rows(ASKED) + help_rows(LEAVE) + \
        help_rows(READING)


def readme_table() -> str:
    rows = ["| | key | what it does |", "|---|---|---|"]
    last = ""
    for group, key, text in every_row():
        rows.append(f"| {group if group != last else ''} | {key} | {text} |")
        last = group
    return "\n".join(rows)


if __name__ == "__main__":
    print(readme_table())
