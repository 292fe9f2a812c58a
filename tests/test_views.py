"""Snapshots: a frontend reads only ProcessViews, each built whole on the core thread and
published by replacing one reference. Polled from another thread through a thousand
short runs, none may be inconsistent."""

from __future__ import annotations

import threading
import time

import pytest

from proctui.commands.kill import Kill
from proctui.commands.start import Start
from proctui.commands.stop import Stop
from proctui.commands.stop_all import StopAll
from proctui.core.life.stop import DeadlineAction, Phase
from proctui.core.supervisor import Supervisor
from proctui.core.view import ProcessView
from tests.conftest import outcomes, spec


def problems(v: ProcessView) -> list[str]:
    found = []
    if v.phase.live:
        if v.outcome is not None:
            found.append("live with an outcome")
        if v.pid is None or v.started_at is None:
            found.append("live without a pid or a start")
        if v.ended_at is not None:
            found.append("live with an end")
    if v.outcome is not None and v.phase not in (Phase.ENDED, Phase.BACKOFF):
        found.append(f"an outcome in phase {v.phase.value}")
    if v.phase is Phase.ENDED and v.outcome is None and v.pid is not None:
        found.append("ended with a pid but no outcome")
    if v.phase is Phase.STOPPING and v.stop_requested_at is None:
        found.append("stopping without a stop request")
    if v.phase is Phase.KILLING and v.kill_sent_at is None and v.stop_signal != "SIGKILL":
        found.append("killing without a kill")
    if v.phase is Phase.DECIDING and v.deadline is not None:
        found.append("deciding with a deadline")
    if v.deadline is not None and (v.phase not in (Phase.STOPPING, Phase.KILLING)
                                   or v.deadline_action is DeadlineAction.NONE):
        found.append(f"a deadline in phase {v.phase.value} ({v.deadline_action})")
    if v.phase is Phase.BACKOFF and v.outcome is None:
        found.append("restarting without the outcome of the last run")
    return found


@pytest.mark.slow
def test_snapshots_stay_consistent_through_a_thousand_short_runs(child_reaper):
    names = [f"p{i}" for i in range(20)]
    specs = [spec(n, "exec sleep 0.02" if i % 2 else "echo hi; exec sleep 5", stop_timeout=0.05,
                  kill_timeout=1) for i, n in enumerate(names)]
    sup = Supervisor(specs, interactive=False)
    sup.start()
    bad: list[tuple[str, ProcessView]] = []
    polls = 0
    done = threading.Event()

    def poll() -> None:
        nonlocal polls
        last: dict[str, int] = {}
        while not done.is_set():
            for v in sup.snapshot().views:
                polls += 1
                for problem in problems(v):
                    bad.append((problem, v))
                if v.seq < last.get(v.name, 0):
                    bad.append(("published out of order", v))
                last[v.name] = v.seq
            time.sleep(0.0002)  # a frontend polls, it does not spin
    poller = threading.Thread(target=poll, daemon=True)
    poller.start()
    try:
        deadline = time.monotonic() + 120
        while len(outcomes(sup)) < 1000 and time.monotonic() < deadline:
            for i, v in enumerate(sup.snapshot().views):
                if v.phase is Phase.ENDED:
                    sup.send(Start(v.name))
                elif v.phase is Phase.RUNNING and i % 2 == 0 and v.started_at and \
                        time.monotonic() - v.started_at > 0.01:
                    sup.send(Stop(v.name)) if i % 4 else sup.send(Kill(v.name))
            time.sleep(0.002)
        assert len(outcomes(sup)) >= 1000
    finally:
        done.set()
        poller.join(5)
        sup.send(StopAll())
        deadline = time.monotonic() + 20
        while not sup.snapshot().all_ended and time.monotonic() < deadline:
            time.sleep(0.02)
        sup.close()
    assert polls > 10_000
    assert not bad, f"{len(bad)} inconsistent views, e.g. {bad[:3]}"
