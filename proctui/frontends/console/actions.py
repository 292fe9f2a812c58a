"""What the console's keys do: commanding one process (and the answers to a decision),
its panes (layout, following, wrapping, scrolling, clearing, searching, the help and
timeline screens) and the ways out (quitting, detaching, abandoning everything). Mixins of
the app, kept apart so that each module holds one idea. Every key that acts asks
``refused()`` first (link.py): read-only, or the link is down, it says so instead."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

from textual import events

from proctui.core.life.stages import Why
from proctui.core.life.stop import Phase
from proctui.core.view import ProcessView, Reply
from proctui.frontends.console import keys

if TYPE_CHECKING:

    from proctui.frontends.console.app import ProctuiApp
    from proctui.frontends.console.dialogs import Decision

    _Base = ProctuiApp
else:
    _Base = object


UNBOUND_QUIET = 2.0  # seconds: a held key (its repeats) is answered once
FUNCTION_KEY = re.compile(r"f\d+|ctrl\+[a-z]")  # answered when bound to nothing, as F5
AHEAD = 3.0  # seconds a search or pick box may take to open, keys typed meanwhile kept


class ProcessActions(_Base):
    def _on_selected(self, command: Callable[[str], Future[Reply]]) -> None:
        if not self.refused():
            self._send(command(self.selected_view.name))

    def action_stop(self) -> None:
        self._on_selected(self.core.stop)

    def action_start(self) -> None:
        self._on_selected(self.core.start_process)

    def action_restart(self) -> None:
        self._on_selected(self.core.restart)

    def action_kill(self) -> None:
        self._on_selected(self.core.kill)

    def action_extend(self) -> None:
        self._on_selected(self.core.extend)

    def action_adopt(self) -> None:
        self._on_selected(self.core.adopt)

    def action_abandon(self) -> None:
        if self.refused():
            return
        # The shown view can be a frame old; whether to ask depends on the core's latest.
        name = self.selected_view.name
        view = next((v for v in self.core.views() if v.name == name), self.selected_view)
        if not view.alive and view.phase is not Phase.HELD:
            self._send(self.core.abandon(view.name))  # the core says why not
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self._send(self.core.abandon(view.name))

        from proctui.frontends.console.dialogs import ConfirmScreen

        self.push_screen(ConfirmScreen(
            f"Abandon {view.name} (pid {view.pid})?",
            "proctui stops watching it and never signals it again; it is left running and "
            "keeps its PID file."), answered)

    def _decide(self, name: str, decision: Decision) -> None:
        if decision.action == "kill":
            self._send(self.core.kill(name))
        elif decision.action == "extend":
            self._send(self.core.extend(name, decision.seconds))
        elif decision.action == "abandon":
            self._send(self.core.abandon(name))
        elif decision.action == "wait":
            self._send(self.core.wait_without_deadline(name))

    def _send(self, future: Future[Reply], said: bool = False) -> None:
        """Show the core's answer when it says why nothing happened (or, ``said``, when
        the key shows nothing else: X while everything stops)."""
        def done(f: Future[Reply]) -> None:
            try:
                reply = f.result()
            except Exception as e:
                reply = Reply(False, str(e))
            if (said or not reply.ok) and reply.text:
                level = "information" if reply.ok else "warning"
                try:
                    self.call_from_thread(self.notify, reply.text, severity=level,
                                          markup=False)
                except RuntimeError:
                    self.notify(reply.text, severity=level, markup=False)

        future.add_done_callback(done)


class PaneActions(_Base):
    _unbound: tuple[str, float] = ("", 0.0)  # the last unbound key answered, and when
    _typed_ahead: list[str] | None = None  # keys typed before a box opening had the focus
    _ahead_since = 0.0
    def with_panes(self, views: list[ProcessView]) -> list[ProcessView]:
        """``views``; a reload adds and removes processes: the panes of those removed go
        (those added get theirs when first shown)."""
        if not views or [v.name for v in views] == [v.name for v in self.views]:
            return views
        names = {v.name for v in views}
        for name in [n for n in self.panes if n not in names]:
            self.panes.pop(name).remove()
        self.views = views
        self._layout()
        return views

    def action_zoom(self) -> None:
        self.grid = not self.grid
        self._layout()
        self.tick()

    def action_follow(self) -> None:
        output = self.selected_pane.output
        output.follow = not output.follow

    def action_wrap(self) -> None:
        output = self.selected_pane.output
        output.wrap = not output.wrap
        self.notify("wrap on: long lines wrap" if output.wrap else
                    "wrap off: long lines are cut with …", timeout=2, markup=False)

    def action_end(self) -> None:
        self.selected_pane.output.end()

    def action_home(self) -> None:
        self.selected_pane.output.home()

    def action_scroll_up_page(self) -> None:
        self.selected_pane.output.page(-1)

    def action_scroll_down_page(self) -> None:
        self.selected_pane.output.page(1)

    def action_clear(self) -> None:
        if self.refused():  # (it clears the supervisor's scrollback, for every console)
            return
        self._send(self.core.clear_output(self.selected_view.name), said=True)
        self.selected_pane.output.end()

    def action_help(self) -> None:
        from proctui.frontends.console.reading import HelpScreen

        self.push_screen(HelpScreen(self.read_only))

    def action_timeline(self) -> None:
        import time

        from proctui.frontends import timeline

        entries = self.core.journal()
        if not entries:
            self.notify("Nothing in the journal yet", markup=False)
            return
        # A run still going is drawn up to now (a console on a finished run: to its end).
        picture = timeline.build(entries, None if self.core.all_ended() else time.time())
        from proctui.frontends.console.reading import TimelineScreen

        self.push_screen(TimelineScreen(lambda width: timeline.text(picture, width)))

    def action_pick(self) -> None:
        """The process picker: Textual's command palette over the processes' names."""
        from textual.command import CommandPalette

        from proctui.frontends.console.picker import ProcessPicker

        self._typed_ahead, self._ahead_since = [], time.monotonic()
        self.push_screen(CommandPalette(providers=[ProcessPicker],
                                        placeholder="pick a process by name…"))

    def _catch_typed_ahead(self, event: events.Key) -> bool:
        """A key typed after / or p before its box has the focus (in the same read, or
        while the box loads): kept for the box. It went to the main screen, where '/stop'
        typed fast stopped the selected process and opened the timeline. (Once the box
        has the focus, it takes every printable key itself: none comes here.)"""
        if time.monotonic() - self._ahead_since > AHEAD:
            self._typed_ahead = None  # (no box took the focus: keys act as usual again)
            return False
        typed = self._typed_ahead
        assert typed is not None
        if event.is_printable and event.character:
            typed.append(event.character)
        elif event.key == "enter":  # "/term⏎" pasted, or typed fast: the search runs
            typed.append("\r")
        elif event.key == "backspace":
            del typed[-1:]
        else:
            return False
        event.prevent_default()  # (before the app's own handler runs the key's binding)
        event.stop()
        return True

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        from textual.widgets import Input

        typed, self._typed_ahead = self._typed_ahead, None
        if typed and isinstance(event.widget, Input):
            text, enter, _after = "".join(typed).partition("\r")
            event.widget.insert_text_at_cursor(text)
            if enter and event.widget.id == "search":  # (the picker's list is not yet in)
                self.call_later(event.widget.action_submit)

    _note: tuple[str, dict[str, Any]] | None = None  # the newest answer, not yet shown

    def notify(self, message: str, **options: Any) -> None:
        # One answer on screen at a time, the newest: four keys in a row stacked four
        # toasts over the pane's header at 60x15 ("wrap off" read "…ff") for seconds.
        # Shown once the messages waiting now are handled, the newest of those that came
        # meanwhile: a toast replaced in the same turn of the loop as it was made was not
        # yet mounted, and stayed. (An answer from the core comes when it comes: after
        # the answer to a key pressed after it, it replaces that one.)
        first = self._note is None
        self._note = (message, options)
        if first:
            self.call_later(self._show_note)  # type: ignore[attr-defined]

    def _show_note(self) -> None:
        note, self._note = self._note, None
        if note is not None:
            # In the app's queue, as notify's own message is: after one still on its way.
            self.call_later(self.clear_notifications)  # type: ignore[attr-defined]
            super().notify(note[0], **note[1])  # type: ignore[misc]

    async def on_event(self, event: events.Event) -> None:
        from textual.widgets import Input

        # Only on the main screen with no box focused: in a box the key is typed (a "£"
        # is a "£" there), and a dialog that Esc closes would get the key meant for the
        # screen under it (it refused it, or a digit went into its number).
        if isinstance(event, events.Key) and not event.is_forwarded and \
                self._typed_ahead is None and len(self.screen_stack) == 1 and \
                not isinstance(self.focused, Input):
            pressed = keys.split_escape(event.key, event.character)
            if pressed:
                for key, character in pressed:  # in their order, before any key after
                    await super().on_event(events.Key(key, character))  # type: ignore[misc]
                return
        await super().on_event(event)  # type: ignore[misc]

    def on_key(self, event: events.Key) -> None:
        if self._typed_ahead is not None and self._catch_typed_ahead(event):
            return
        if event.key == "escape" and self._search is not None and self._search.display:
            self._close_search()
            event.stop()
            return
        # A key bound to nothing (0, x, space...) did nothing and said nothing: the operator
        # could not tell a dead key from a slow console. Said once per burst of repeats.
        # Tab is Textual's (focus the next widget), and the main screen has nothing to
        # focus: it did nothing and said nothing too.
        tab = event.key in ("tab", "shift+tab") and not self.screen.focus_chain
        if ((event.is_printable or FUNCTION_KEY.fullmatch(event.key) or tab)
                and len(self.screen_stack) == 1
                and (tab or event.key not in self.active_bindings)
                and (self._search is None or self.focused is not self._search)):
            shown = event.key if event.key == "space" or not event.is_printable else \
                event.character or event.key
            now = time.monotonic()
            last_key, last_at = self._unbound
            if shown != last_key or now - last_at >= UNBOUND_QUIET:
                self.notify(f"{shown}: no key does that here · {keys.shown('help')} lists "
                            "every key", timeout=3, markup=False)
            self._unbound = (shown, now)


class QuitActions(_Base):
    async def action_quit(self) -> None:
        """q, ctrl+c, ctrl+q and the palette's Quit: stop everything first (attached:
        ask, with detach the default; read-only: detach)."""
        if self.attached is not None and self.read_only:
            self.detach("detached")
            return
        if self.attached is not None and not self.quitting:
            if len(self.screen_stack) == 1:
                from proctui.frontends.console.dialogs import LeaveScreen

                self.push_screen(LeaveScreen(self.attached, self.again), self._leave)
            return
        if not self.quitting:
            self._begin_quit(Why.QUIT)
            return
        if len(self.screen_stack) > 1:
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self._send(self.core.kill_all())

        from proctui.frontends.console.dialogs import ConfirmScreen

        self.push_screen(ConfirmScreen("Kill all now?", "Send SIGKILL to every process that "
                                                        "is still stopping."), answered)

    def _leave(self, answer: str | None) -> None:
        if answer == "detach":
            self.detach("detached")
        elif answer == "stop" and not self.refused():
            self._begin_quit(Why.QUIT)

    def action_detach(self) -> None:
        if self.attached is None:
            self.notify("This console runs the processes itself: quitting stops them. To "
                        "leave them running, start them with proctui up and attach.",
                        markup=False)
            return
        self.detach("detached")

    def detach(self, why: str) -> None:
        """Leave at once; the supervisor and every process go on."""
        self.detached = why
        self.exit()

    def _begin_quit(self, why: Why, words: str = "") -> None:
        """Stop everything; the journal, the summary and events say ``why``, and
        ``words`` (when the operator did not ask) say it on screen."""
        self._quit_shown(words)
        self._send(self.core.stop_all(why=why))
        self.tick()

    def _shutdown_elsewhere(self) -> None:
        """`proctui down` from another terminal, or (attached) any shutdown of the
        supervisor: the panel and its countdowns show, as after q (an attached console
        showed nothing of it), and the console leaves once everything has ended."""
        why = self.core.shutdown_why
        if self.quitting or not (why == Why.DOWN.value or (self.attached is not None and
                                 self.core.shutting_down)):
            return
        from proctui.frontends.console.panels import Hint

        self._panel.elsewhere = True
        if self.attached is not None:  # it said "everything keeps running"
            self.query_one(Hint).items = (f"the supervisor is stopping everything ({why})",
                                          f"{keys.shown('detach')} detaches")
        self._quit_shown(f"{why} (from another terminal)" if why == Why.DOWN.value else
                         f"the supervisor is shutting down ({why or 'stop everything'})")

    def _quit_shown(self, words: str = "") -> None:
        """The console is quitting: the shutdown panel shows, and it leaves once
        everything has ended (the stop itself asked for by the caller, or elsewhere)."""
        self.quitting = True
        self._panel.display = True
        if words:
            self.notify(f"{words}: stopping everything", markup=False)

    def action_abandon_and_exit(self) -> None:
        if self.refused():
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self.core.abandon_all().add_done_callback(
                    lambda _f: self.call_from_thread(self.exit))

        left = tuple(f"{v.name} (pid {v.pid})" for v in self.views if v.alive and v.pid)
        from proctui.frontends.console.dialogs import ConfirmScreen

        self.push_screen(ConfirmScreen(
            "Abandon everything still running and exit now?",
            "" if left else "Nothing is running.", items=left, prefix="Left running:"),
            answered)

    def action_stop_all_now(self) -> None:
        """Stop everything now, regardless of dependency order."""
        if self.refused():
            return
        self._send(self.core.stop_all(ordered=False), said=self.quitting)
        self.quitting = True
        self.tick()
