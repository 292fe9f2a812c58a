"""The last resort: the core's loop is gone (a bug killed it), and what still runs must
be stopped without it. The same stop machine decides (stop signal, deadline, SIGKILL,
kill timeout, nobody asked), driven here by a blocking loop instead of timers; only the
waiting differs. Bounded: it returns once every group is gone or given up on."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace

from proctui.config import ProcessSpec
from proctui.core.life import stop as m
from proctui.core.life.stop import Phase, Policy
from proctui.core.os.oslayer import OSLayer
from proctui.core.store.rundir import RunDir

LOOK_EVERY = 0.05  # seconds between looks at the groups


@dataclass
class _Stop:
    pgid: int
    state: m.StopState


def emergency_stop(groups: Sequence[tuple[int, ProcessSpec]], os_layer: OSLayer,
                   clock: object = time.monotonic, sleep: object = time.sleep) -> list[str]:
    """Stop each (pgid, spec) per its policy, as headless would (``ask`` acts as kill).
    Returns what happened, one line each, for the crash log."""
    now = clock()  # type: ignore[operator]
    stops = []
    said: list[str] = []
    for pgid, spec in groups:
        policy = Policy(stop_signal=spec.stop_signal, stop_timeout=spec.stop_timeout,
                        kill_timeout=spec.kill_timeout, on_timeout=spec.on_timeout,
                        interactive=False, max_stop_time=spec.max_stop_time, pgid=pgid)
        stop = _Stop(pgid, replace(m.initial(policy), phase=Phase.RUNNING))
        stops.append(stop)
        _feed(stop, m.StopRequested(now), os_layer, said)
    while True:
        live = [s for s in stops if s.state.phase.live]
        if not live:
            return said
        now = clock()  # type: ignore[operator]
        for stop in live:
            if not os_layer.group_alive(stop.pgid):
                _feed(stop, m.GroupGone(now), os_layer, said)
            elif stop.state.deadline is not None and now >= stop.state.deadline:
                _feed(stop, m.DeadlineReached(now), os_layer, said)
            elif stop.state.deadline is None:
                # Waiting with no deadline needs an operator; there is none now.
                _feed(stop, m.KillRequested(now), os_layer, said)
        sleep(LOOK_EVERY)  # type: ignore[operator]


def _feed(stop: _Stop, event: m.Event, os_layer: OSLayer, said: list[str]) -> None:
    stop.state, effects = m.step(stop.state, event)
    for effect in effects:
        if isinstance(effect, m.Send):
            try:
                os_layer.signal_group(stop.pgid, effect.sig)
            except OSError as e:
                with contextlib.suppress(Exception):
                    stop.state, _ = m.step(stop.state, m.SignalFailed(0.0, effect.sig, str(e)))
        elif isinstance(effect, m.Say):
            said.append(f"group {stop.pgid}: {effect.text}")
        elif isinstance(effect, m.Finish):
            said.append(f"group {stop.pgid}: {effect.end.value}")


def crash_log(run_dir: RunDir | None, text: str) -> None:
    """Append ``text`` to RUN_DIR/crash.log, if there is one: nothing here may raise."""
    if run_dir is not None:
        run_dir.append_text("crash.log", text)
