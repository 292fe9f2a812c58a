"""Regenerate the README's screenshots from the real console running the real demo, and
the timeline of its quit from the journal.

    python screenshots/generate.py [OUTPUT_DIR]

Takes about a quarter of a minute: it plays the demo three times at once (to quit, to
stop each process by hand, attached) and saves SVG screenshots at the moments worth seeing.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

from proctui import demo
from proctui.commands.interactive import SetInteractive
from proctui.commands.journal_read import ReadJournal
from proctui.commands.kill_all import KillAll
from proctui.commands.stop_all import StopAll
from proctui.core.supervisor import Supervisor
from proctui.frontends.console.app import ProctuiApp
from proctui.frontends.console.dialogs import AskScreen
from proctui.frontends.console.keys import hint

SIZE = (120, 34)


async def until(pilot, predicate: Callable[[], object], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError("the demo did not get there in time")
        await pilot.pause(0.1)


def save(app: ProctuiApp, out: Path, name: str) -> Path:
    path = out / f"{name}.svg"
    path.write_text(app.export_screenshot(title=f"proctui demo: {name}"))
    print(f"wrote {path}")
    return path


def ended(sup: Supervisor) -> bool:
    return sup.snapshot().all_ended


def journal(sup: Supervisor) -> list[dict[str, object]]:
    """The whole journal, a page at a time, as any client reads it."""
    entries: list[dict[str, object]] = []
    while True:
        page = sup.send(ReadJournal(len(entries))).result(timeout=10)
        entries += page.entries
        if not page.more:
            return entries


@contextlib.asynccontextmanager
async def demo_console() -> AsyncIterator[tuple[ProctuiApp, object, Supervisor]]:
    """The real console on the real demo; whatever is left is killed at the end."""
    sup = Supervisor(demo.config().processes, interactive=True)
    sup.start()
    app = ProctuiApp(sup, hint=hint("demo", demo.HINT))
    try:
        async with app.run_test(size=SIZE) as pilot:
            yield app, pilot, sup
    finally:
        if not ended(sup):
            sup.send(KillAll()).result(timeout=5)
            while not ended(sup):
                time.sleep(0.05)
        sup.close()


async def quitting_flow(out: Path) -> None:
    """Running (grid), then q: the shutdown view with countdowns, then the ask modal."""
    async with demo_console() as (app, pilot, sup):
        await pilot.pause(4.5)
        await pilot.press("z")
        await pilot.pause(0.3)
        save(app, out, "console")
        await pilot.press("z", "2", "q")
        await pilot.pause(2.0)
        save(app, out, "quitting")
        await pilot.press("e")  # give slow-8s the time it needs
        await until(pilot, lambda: isinstance(app.screen, AskScreen) and app.screen.armed)
        await pilot.pause(0.2)
        save(app, out, "ask")
        await pilot.press("K")
        await until(pilot, lambda: not app.is_running or ended(sup))
        await until(pilot, lambda: ended(sup))
        timeline(sup, out)


def timeline(sup: Supervisor, out: Path) -> None:
    """The quit just played, as `proctui timeline -o` draws it from the journal."""
    from proctui.frontends import timeline as pictures
    from proctui.frontends import timeline_svg

    path = out / "timeline.svg"
    picture = pictures.build(journal(sup))
    path.write_text(timeline_svg.svg(picture, title="proctui demo: q, 2 e, then K at the "
                                                "question (proctui timeline)"))
    print(f"wrote {path}")


async def final_flow(out: Path) -> None:
    """Each process stopped by hand: the console stays open on every outcome."""
    async with demo_console() as (app, pilot, sup):
        await pilot.pause(3.0)
        for key in "12345678":
            await pilot.press(key, "s")
        await pilot.press("2", "e")  # slow-8s gets the time it needs
        await until(pilot, lambda: isinstance(app.screen, AskScreen) and app.screen.armed)
        await pilot.press("K")
        await until(pilot, lambda: ended(sup))
        await pilot.press("2")
        await pilot.pause(0.5)
        save(app, out, "final")


async def attached_flow(out: Path) -> None:
    """The demo under a supervisor of its own, a console attached over the socket, q."""
    import tempfile

    from proctui.core.store.rundir import RunDir
    from proctui.remote.client import Connection, RemoteCore
    from proctui.remote.server import Server

    with tempfile.TemporaryDirectory() as place:
        run_dir = RunDir(Path(place) / "run")
        run_dir.open()
        sup = Supervisor(demo.config().processes, interactive=True, run_dir=run_dir)
        sup.start()
        server = Server(sup, run_dir)
        server.start()
        core = RemoteCore(Connection.open(run_dir.path))
        pid = core.conn.hello.pid
        app = ProctuiApp(core, attached=f"supervisor pid {pid}", hint=(
            f"attached to supervisor pid {pid}",
            "d detaches (everything keeps running)", "q asks before stopping anything"))
        try:
            async with app.run_test(size=SIZE) as pilot:
                await pilot.pause(4.0)
                await pilot.press("q")
                await pilot.pause(0.5)
                save(app, out, "attached")
                await pilot.press("d")
        finally:
            core.close()
            sup.send(KillAll())
            sup.send(StopAll(ordered=False))
            sup.send(SetInteractive(False))
            while not ended(sup):
                time.sleep(0.05)
            server.close()
            sup.close()
            run_dir.close()


FLOWS = {"quitting": quitting_flow, "final": final_flow, "attached": attached_flow}


def main(argv: list[str]) -> int:
    """Each flow plays in a process of its own, all at once: the demo's pace sets the
    time, so three flows take as long as the longest, not the sum."""
    import subprocess

    if argv[:1] == ["--flow"]:
        asyncio.run(FLOWS[argv[1]](Path(argv[2])))
        return 0
    out = Path(argv[0]) if argv else Path(__file__).resolve().parent
    out.mkdir(parents=True, exist_ok=True)
    plays = [subprocess.Popen([sys.executable, __file__, "--flow", name, str(out)])
             for name in FLOWS]
    try:
        codes = [play.wait(timeout=170) for play in plays]
    finally:
        for play in plays:
            if play.poll() is None:
                play.kill()
                play.wait()
    return max(codes)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
