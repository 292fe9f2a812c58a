"""The Textual console: a frontend over the supervisor core.

It pulls views and output from the core at a steady rate (never one message per line),
sends it commands, and never signals a process itself. Every way out (q, ctrl+c, ctrl+q,
the palette's Quit, SIGHUP, SIGTERM) goes through the stop sequence.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from importlib import resources
from pathlib import Path

from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.containers import Container
from textual.screen import Screen
from textual.widgets import Footer, Input, Static

from proctui.console.screens import AskScreen, ConfirmScreen, Decision, HelpScreen
from proctui.console.widgets import ProcessPane, ProcessTable, Row, ShutdownPanel
from proctui.core.machine import Phase
from proctui.core.outcome import seconds
from proctui.core.supervisor import Supervisor
from proctui.core.view import ProcessView, Usage

REFRESH_HZ = 10  # the design asks 10 to 20 Hz; every extra tick costs idle CPU
USAGE_EVERY = 1.0


def _css_path() -> Path:
    try:
        path = Path(str(resources.files("proctui.styles").joinpath("proctui.tcss")))
        if path.is_file():
            return path
    except (ModuleNotFoundError, FileNotFoundError):
        pass
    return Path(__file__).resolve().parents[2] / "styles" / "proctui.tcss"


class ProctuiApp(App[None]):
    CSS_PATH = _css_path()
    TITLE = "proctui"
    ENABLE_COMMAND_PALETTE = True
    AUTO_FOCUS = None  # keys belong to the app; the search box takes focus only when opened

    BINDINGS = [
        Binding("up,k", "select(-1)", "Up", show=False),
        Binding("down,j", "select(1)", "Down", show=False),
        *[Binding(str(i), f"select_index({i - 1})", show=False) for i in range(1, 10)],
        Binding("s", "stop", "Stop"),
        Binding("S", "start", "Start", show=False),
        Binding("r", "restart", "Restart", show=False),
        Binding("K", "kill", "Kill"),
        Binding("e", "extend", "Extend"),
        Binding("a", "abandon", "Abandon"),
        Binding("q", "quit", "Quit"),
        Binding("ctrl+c", "quit", "Quit", show=False, priority=True),
        Binding("ctrl+q", "quit", "Quit", show=False, priority=True),
        Binding("Q", "abandon_and_exit", "Abandon all", show=False),
        Binding("z", "zoom", "Layout"),
        Binding("f", "follow", "Follow", show=False),
        Binding("w", "wrap", "Wrap", show=False),
        Binding("slash", "search", "Search"),
        Binding("n", "next_match(-1)", "Older match", show=False),
        Binding("N", "next_match(1)", "Newer match", show=False),
        Binding("c", "clear", "Clear", show=False),
        Binding("question_mark", "help", "Help"),
        Binding("end", "end", "Follow", show=False),
        Binding("home", "home", show=False),
        Binding("pageup", "page(-1)", show=False),
        Binding("pagedown", "page(1)", show=False),
    ]

    def __init__(self, supervisor: Supervisor, *, clock: Callable[[], float] = time.monotonic,
                 usage: Callable[[Iterable[int]], dict[int, Usage]] | None = None,
                 hint: str | None = None, refresh_hz: float = REFRESH_HZ,
                 stop_after: float | None = None) -> None:
        super().__init__()
        self.stop_after = stop_after
        self.sup = supervisor
        self.clock = clock
        self.usage = usage  # a test's fixed figures; else the core's, in each view
        self.hint = hint
        self.refresh_hz = refresh_hz
        self.views: list[ProcessView] = supervisor.views()
        self.selected = 0
        self.grid = False
        self.quitting = False
        self.hangup: str | None = None
        self._seen: dict[str, int] = {v.name: v.lines for v in self.views}
        self._active: set[str] = set()
        self._asked: set[tuple[str, float | None]] = set()
        self._usage: dict[int, Usage] = {}
        self._matches: list[int] = []
        self._match_index = -1
        self.panes: dict[str, ProcessPane] = {}

    # -- layout -----------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield ProcessTable(id="table")
        if self.hint:
            yield Static(self.hint, id="hint", markup=False)
        with Container(id="panes"):
            for view in self.views:
                pane = ProcessPane(view.name, self.sup.buffer(view.name), classes="pane")
                self.panes[view.name] = pane
                yield pane
        yield ShutdownPanel(id="shutdown")
        yield Input(placeholder="search the selected pane (Enter to find, Escape to close)",
                    id="search")
        yield Footer()

    def on_mount(self) -> None:
        # Held, not queried each tick: a tick may still fire while the app is closing.
        self._table = self.query_one(ProcessTable)
        self._panel = self.query_one(ShutdownPanel)
        self._search = self.query_one("#search", Input)
        self._close_search()
        self._layout()
        self.tick()
        self.set_interval(1 / self.refresh_hz, self.tick)
        self.sample_usage()
        if self.usage is not None:
            self.set_interval(USAGE_EVERY, self.sample_usage)
        else:
            self.sup.want_usage(True)
        if self.stop_after is not None:
            self.set_timer(self.stop_after, lambda: self.quitting or self._begin_quit(
                f"--stop-after {self.stop_after:g}s"))

    def _layout(self) -> None:
        panes = self.query_one("#panes", Container)
        panes.set_class(self.grid, "grid")
        selected = self.selected_view.name if self.views else None
        for name, pane in self.panes.items():
            pane.display = self.grid or name == selected
            pane.set_class(self.grid and name == selected, "-selected")

    # -- the steady pull from the core ------------------------------------------------

    def tick(self) -> None:
        now = self.clock()
        self.views = views = self.sup.views()
        for view in views:
            total = view.lines
            if total != self._seen.get(view.name):
                self._seen[view.name] = total
                if self.views[self.selected].name != view.name:
                    self._active.add(view.name)
        rows = [Row(v, self._usage.get(v.pgid) if self.usage and v.pgid else v.usage,
                    v.name in self._active)
                for v in views]
        self._table.update_rows(rows, self.selected, now)
        for view in views:
            pane = self.panes.get(view.name)
            if pane is not None and pane.display:
                pane.header.update_view(view, now, pane.output.position)
                pane.output.update_rows()
        panel = self._panel
        panel.display = self.quitting
        if self.quitting:
            panel.update_views(views, now)
        self._ask_decisions(views, now)
        if self.hangup is not None and not self.quitting:
            self._begin_quit(f"received {self.hangup}")
        if self.quitting and self.sup.all_ended():
            self.exit()

    def sample_usage(self) -> None:
        if self.usage is not None:
            pgids = [v.pgid for v in self.views if v.pgid and v.phase is not Phase.ENDED]
            self._usage = self.usage(pgids)

    def _ask_decisions(self, views: list[ProcessView], now: float) -> None:
        if len(self.screen_stack) > 1:
            return  # one modal at a time
        for view in views:
            key = (view.name, view.stop_requested_at)
            if view.phase is not Phase.DECIDING or key in self._asked:
                continue
            self._asked.add(key)
            waited = seconds(now - (view.stop_requested_at or now))
            name = view.name

            def decided(decision: Decision | None, name: str = name) -> None:
                self._apply_decision(name, decision)

            self.push_screen(AskScreen(view.name, view.pid, waited, view.extend_step), decided)
            return

    def _apply_decision(self, name: str, decision: Decision | None) -> None:
        if decision is None:
            return
        if decision.action == "kill":
            self.sup.kill(name)
        elif decision.action == "extend":
            self.sup.extend(name, decision.seconds)
        elif decision.action == "abandon":
            self.sup.abandon(name)
        elif decision.action == "wait":
            self.sup.wait_without_deadline(name)

    # -- selection --------------------------------------------------------------------

    @property
    def selected_view(self) -> ProcessView:
        return self.views[min(self.selected, len(self.views) - 1)]

    @property
    def selected_pane(self) -> ProcessPane:
        return self.panes[self.selected_view.name]

    def action_select(self, delta: int) -> None:
        self.action_select_index((self.selected + delta) % max(1, len(self.views)))

    def action_select_index(self, index: int) -> None:
        if 0 <= index < len(self.views):
            self.selected = index
            self._active.discard(self.views[index].name)
            self._matches, self._match_index = [], -1
            self._layout()
            self.tick()

    # -- commands for the selected process ----------------------------------------------

    def action_stop(self) -> None:
        self.sup.stop(self.selected_view.name)

    def action_start(self) -> None:
        view = self.selected_view
        if view.phase is not Phase.ENDED:
            self.notify(f"{view.name} is {view.phase.value}; S starts a process that has "
                        "ended", markup=False)
            return
        self.sup.start_process(view.name)

    def action_restart(self) -> None:
        self.sup.restart(self.selected_view.name)

    def action_kill(self) -> None:
        view = self.selected_view
        if view.phase in (Phase.ENDED, Phase.BACKOFF):
            self.notify(f"{view.name} is not running", markup=False)
            return
        self.sup.kill(view.name)

    def action_extend(self) -> None:
        view = self.selected_view
        if not view.phase.stopping:
            self.notify(f"Nothing to extend: {view.name} is not stopping", markup=False)
            return
        self.sup.extend(view.name)

    def action_abandon(self) -> None:
        view = self.selected_view
        if view.phase in (Phase.ENDED, Phase.BACKOFF) or view.pid is None:
            self.notify(f"{view.name} is not running", markup=False)
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self.sup.abandon(view.name)

        self.push_screen(ConfirmScreen(
            f"Abandon {view.name} (pid {view.pid})?",
            "proctui stops watching it and never signals it again; it is left running and "
            "keeps its PID file."), answered)

    # -- quitting ---------------------------------------------------------------------

    async def action_quit(self) -> None:
        """q, ctrl+c, ctrl+q and the palette's Quit: stop everything first."""
        if not self.quitting:
            self._begin_quit("quit")
            return
        if len(self.screen_stack) > 1:
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self.sup.kill_all()

        self.push_screen(ConfirmScreen("Kill all now?",
                                       "Send SIGKILL to every process that is still "
                                       "stopping."), answered)

    def _begin_quit(self, why: str) -> None:
        self.quitting = True
        self.sup.stop_all()
        self._panel.display = True
        if why != "quit":
            self.notify(f"{why}: stopping everything", markup=False)
        self.tick()

    def action_abandon_and_exit(self) -> None:
        def answered(yes: bool | None) -> None:
            if yes:
                self.sup.abandon_all().add_done_callback(
                    lambda _f: self.call_from_thread(self.exit))

        left = [f"{v.name} (pid {v.pid})" for v in self.views
                if v.phase is not Phase.ENDED and v.pid]
        self.push_screen(ConfirmScreen(
            "Abandon everything still running and exit now?",
            ("Left running: " + ", ".join(left)) if left else "Nothing is running."),
            answered)

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield SystemCommand("Quit", "Stop every process, then exit", self.action_quit)
        yield SystemCommand("Stop", "Stop the selected process", self.action_stop)
        yield SystemCommand("Start", "Start the selected process again", self.action_start)
        yield SystemCommand("Restart", "Restart the selected process", self.action_restart)
        yield SystemCommand("Kill now", "SIGKILL the selected process", self.action_kill)
        yield SystemCommand("Extend", "Move the selected process's deadline later",
                            self.action_extend)
        yield SystemCommand("Abandon", "Leave the selected process running",
                            self.action_abandon)
        yield SystemCommand("Abandon all and exit", "Leave everything running and exit now",
                            self.action_abandon_and_exit)
        yield SystemCommand("Layout", "One large pane or a grid", self.action_zoom)
        yield SystemCommand("Help", "The keys", self.action_help)
        for command in super().get_system_commands(screen):
            if command.title not in ("Quit",):
                yield command

    # -- panes ------------------------------------------------------------------------

    def action_zoom(self) -> None:
        self.grid = not self.grid
        self._layout()
        self.tick()

    def action_follow(self) -> None:
        output = self.selected_pane.output
        if output.follow:
            output.pause()
        else:
            output.end()

    def action_wrap(self) -> None:
        output = self.selected_pane.output
        output.wrap = not output.wrap
        output.update_rows(force=True)

    def action_end(self) -> None:
        self.selected_pane.output.end()

    def action_home(self) -> None:
        self.selected_pane.output.home()

    def action_page(self, direction: int) -> None:
        self.selected_pane.output.page(direction)

    def action_clear(self) -> None:
        self.sup.clear_output(self.selected_view.name)
        self.selected_pane.output.end()

    def action_help(self) -> None:
        self.push_screen(HelpScreen())

    def action_search(self) -> None:
        box = self._search
        box.disabled = False
        box.display = True
        box.focus()

    def _close_search(self) -> None:
        box = self._search
        box.display = False
        box.disabled = True  # a hidden input must never swallow the app's keys
        self.set_focus(None)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id != "search":
            return
        term = event.value.strip()
        output = self.selected_pane.output
        self._close_search()
        if not term:
            output.search = None
            output.current_match = None
            output.update_rows()
            return
        got = self.sup.buffer(self.selected_view.name).read(0)
        needle = term.lower()
        self._matches = [got.first + i for i, line in enumerate(got.lines)
                         if needle in line.lower()]
        output.search = term
        if not self._matches:
            self.notify(f"No match for {term!r}", markup=False)
            output.current_match = None
            output.update_rows()
            return
        self._match_index = len(self._matches) - 1
        self._show_match()

    def on_key(self, event) -> None:  # type: ignore[no-untyped-def]
        box = self._search
        if event.key == "escape" and box.display:
            self._close_search()
            event.stop()

    def action_next_match(self, direction: int) -> None:
        if not self._matches:
            return
        self._match_index = max(0, min(len(self._matches) - 1, self._match_index + direction))
        self._show_match()

    def _show_match(self) -> None:
        output = self.selected_pane.output
        number = self._matches[self._match_index]
        output.current_match = number
        output.show_line(number)
        self.notify(f"match {self._match_index + 1} of {len(self._matches)}", timeout=1.5,
                    markup=False)
