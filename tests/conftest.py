"""Shared helpers. Every test gets a token in its environment that every child inherits;
teardown SIGKILLs any process still carrying it, so no test leaves a process behind,
even when it fails."""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import signal
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from proctui.commands.abandon_all import AbandonAll
from proctui.config import ProcessSpec
from proctui.core.life.outcome import Outcome, OutcomeKind
from proctui.core.life.stop import Phase
from proctui.core.os.oslayer import OSLayer
from proctui.core.output.events import EventQueue, Notice
from proctui.core.output.lines import Stream
from proctui.core.store.rundir import RunDir
from proctui.core.supervisor import Supervisor
from proctui.core.view import ProcessView

# Each test process (each of pytest-xdist's workers) has a runtime directory of its own:
# the default run directories of tests running at once never meet, nor the developer's.
os.environ["XDG_RUNTIME_DIR"] = tempfile.mkdtemp(prefix="proctui-tests-")
atexit.register(shutil.rmtree, os.environ["XDG_RUNTIME_DIR"], ignore_errors=True)

TOKEN_VAR = "PROCTUI_TEST_TOKEN"
PY = sys.executable


def processes_with_token(token: str) -> list[int]:
    found = []
    needle = f"{TOKEN_VAR}={token}".encode()
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as f:
                if needle in f.read().split(b"\0"):
                    found.append(int(name))
        except OSError:
            continue
    return found


ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with the wheel built from this tree installed (not editable): what
    users get. ``installed / "venv/bin/proctui"`` is the program."""
    import subprocess

    where = tmp_path_factory.mktemp("install")
    wheels = where / "wheels"
    # Built from a copy of what the wheel is made of: setuptools writes build/ and
    # egg-info into the tree it builds, and two test processes building one tree at once
    # break each other's build.
    source = where / "source"
    for part in ("pyproject.toml", "README.md", "styles", "proctui"):
        if (ROOT / part).is_dir():
            shutil.copytree(ROOT / part, source / part, symlinks=True,
                            ignore=shutil.ignore_patterns("__pycache__"))
        else:
            source.mkdir(exist_ok=True)
            shutil.copy2(ROOT / part, source / part)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w",
                    str(wheels), str(source)], check=True, timeout=300, cwd=where)
    (wheel,) = wheels.glob("proctui-*.whl")
    subprocess.run([sys.executable, "-m", "venv", str(where / "venv")], check=True,
                   timeout=120)
    subprocess.run([str(where / "venv/bin/python"), "-m", "pip", "install", "--quiet",
                    str(wheel)], check=True, timeout=600, cwd=where)
    return where


@pytest.fixture(scope="session")
def installed_oldest(installed: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same wheel in a fresh venv with the oldest Textual pyproject.toml allows (the
    ``installed`` venv resolves the newest): both ends of the range are what users get."""
    import re
    import subprocess
    import tomllib

    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    (oldest,) = [m.group(1) for d in deps if (m := re.fullmatch(r"textual>=([0-9.]+)", d))]
    where = tmp_path_factory.mktemp("install-oldest")
    subprocess.run([sys.executable, "-m", "venv", str(where / "venv")], check=True,
                   timeout=120)
    (wheel,) = (installed / "wheels").glob("proctui-*.whl")
    subprocess.run([str(where / "venv/bin/python"), "-m", "pip", "install", "--quiet",
                    str(wheel), f"textual=={oldest}"], check=True, timeout=600, cwd=where)
    return where


@pytest.fixture(autouse=True)
def child_reaper(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    token = uuid.uuid4().hex
    monkeypatch.setenv(TOKEN_VAR, token)
    yield token
    for pid in processes_with_token(token):
        try:
            os.kill(pid, signal.SIGCONT)
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def alive(pid: int) -> bool:
    """Running, not a zombie."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read()
    except OSError:
        return False
    return raw[raw.rindex(b")") + 2 : raw.rindex(b")") + 3] not in (b"Z", b"X")


def wait_until(predicate: Callable[[], object], timeout: float = 10.0,
               what: str = "condition") -> object:
    """Poll a condition that has no event to await (a process's state in /proc)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.01)


# -- what a core says, read through its three doors (snapshot, send, output) ----------


@dataclass(frozen=True)
class Ended:
    """A run's outcome as its journal entry gives it."""

    kind: OutcomeKind
    text: str


def journal(core: object, timeout: float = 10.0) -> list[dict[str, object]]:
    """The whole journal so far, page by page, as any client reads it."""
    from proctui.commands.journal_read import ReadJournal

    entries: list[dict[str, object]] = []
    while True:
        page = core.send(ReadJournal(len(entries))).result(timeout=timeout)  # type: ignore[attr-defined]
        assert page.ok, page
        entries += page.entries
        if not page.more:
            return entries


def outcomes(core: object) -> list[tuple[str, Ended]]:
    """Every run's outcome so far, in order, named: the journal's outcome entries."""
    return [(str(e["name"]), Ended(OutcomeKind(e["outcome"]), str(e["text"])))
            for e in journal(core) if e.get("kind") == "outcome"]


def all_ended(core: object) -> bool:
    return bool(core.snapshot().all_ended)  # type: ignore[attr-defined]


def spec(name: str, script: str, **kw: object) -> ProcessSpec:
    """A process running ``script`` through /bin/sh -c."""
    base = ProcessSpec(name=name, argv=("/bin/sh", "-c", script), cmd=script,
                       cwd=Path.cwd(), shell=True)
    return replace(base, **kw)  # type: ignore[arg-type]


def pyspec(name: str, code: str, **kw: object) -> ProcessSpec:
    base = ProcessSpec(name=name, argv=(PY, "-c", code), cmd=f"python -c {code[:30]!r}",
                       cwd=Path.cwd())
    return replace(base, **kw)  # type: ignore[arg-type]


class Harness:
    """A running Supervisor with its event queue, and ways to wait on it."""

    def __init__(self, specs: list[ProcessSpec], **kw: object) -> None:
        self.events = EventQueue()
        self.sup = Supervisor(specs, events=self.events, **kw)  # type: ignore[arg-type]
        self.log: list[object] = []

    def start(self) -> Harness:
        self.sup.start()
        return self

    def view(self, name: str) -> ProcessView:
        return next(v for v in self.sup.snapshot().views if v.name == name)

    def pump(self, timeout: float = 0.05) -> list[object]:
        new = self.events.get(timeout)
        self.log.extend(new)
        return new

    def wait_notice(self, name: str | None, text: str, timeout: float = 10.0) -> Notice:
        """Wait for a notice about ``name`` containing ``text`` (event-driven)."""
        deadline = time.monotonic() + timeout
        for event in self.log:
            if isinstance(event, Notice) and event.name == name and text in event.text:
                return event
        while time.monotonic() < deadline:
            for event in self.pump(0.05):
                if isinstance(event, Notice) and event.name == name and text in event.text:
                    return event
        raise AssertionError(f"no notice {text!r} for {name!r} within {timeout}s; got "
                             f"{[e for e in self.log if isinstance(e, Notice)]}")

    def outcome(self, name: str, timeout: float = 15.0) -> Outcome:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            v = self.view(name)
            if v.outcome is not None:
                return v.outcome
            self.pump(0.02)
        raise AssertionError(f"{name} has no outcome after {timeout}s: {self.view(name)}")

    def wait_all_ended(self, timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        while not self.sup.snapshot().all_ended:
            if time.monotonic() > deadline:
                raise AssertionError(f"not all ended: {self.sup.snapshot().views}")
            self.pump(0.02)

    def wait_output(self, name: str, text: str, timeout: float = 10.0) -> None:
        """Wait until ``name`` has printed a line containing ``text`` (e.g. "ready", once
        its signal handlers are installed)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(text in line for line in self.output(name)):
                return
            self.pump(0.02)
        raise AssertionError(f"{name} never printed {text!r}: {self.output(name)}")

    def output(self, name: str) -> list[str]:
        """What the process printed (not proctui's notices about it)."""
        got = self.sup.output.buffer(name).read(0)
        return [line for line, stream in zip(got.lines, got.streams, strict=True)
                if stream != Stream.PROCTUI]


@pytest.fixture
def harness() -> Iterator[Callable[..., Harness]]:
    made: list[Harness] = []

    def make(specs: list[ProcessSpec], **kw: object) -> Harness:
        h = Harness(specs, **kw)
        made.append(h)
        return h.start()

    yield make
    for h in made:
        # Abandon first so the core stops watching; the reaper fixture kills the rest.
        with contextlib.suppress(Exception):
            h.sup.send(AbandonAll()).result(timeout=5)
        h.sup.close()


@pytest.fixture
def run_dir(tmp_path: Path) -> RunDir:
    d = RunDir(tmp_path / "run")
    d.open()
    yield d
    d.close()


class UnkillableOS(OSLayer):
    """The OS cannot be made to keep a process alive through SIGKILL on demand: this
    fake swallows SIGKILL (the real child just ignores SIGTERM and stays)."""

    def signal_group(self, pgid: int, sig: int) -> None:
        if sig == signal.SIGKILL:
            return
        super().signal_group(pgid, sig)

    def describe(self, pgid: int, ours: bool = True) -> str:
        return "disk-sleep"


class DeniedOS(OSLayer):
    """As root, EPERM cannot be had for our own children: this fake refuses signals."""

    def __init__(self, deny: frozenset[int]) -> None:
        super().__init__()
        self.deny = deny

    def signal_group(self, pgid: int, sig: int) -> None:
        if sig in self.deny:
            raise PermissionError(1, "Operation not permitted")
        super().signal_group(pgid, sig)


@pytest.fixture
def supervised(tmp_path: Path) -> Iterator[tuple[Supervisor, RunDir]]:
    """A supervisor running one sleeping process, its run directory open."""
    run_dir = RunDir(tmp_path / "run")
    run_dir.open()
    sup = Supervisor([spec("svc", "exec sleep 60")], run_dir=run_dir)
    sup.start()
    wait_until(lambda: sup.snapshot().views[0].phase is Phase.RUNNING, what="svc running")
    try:
        yield sup, run_dir
    finally:
        sup.send(AbandonAll()).result(timeout=5)
        sup.close()
        run_dir.close()
