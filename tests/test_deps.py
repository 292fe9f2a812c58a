"""Readiness (a log line, a TCP port, a probe command), dependencies (started, ready,
exited-ok), a staged shutdown in reverse order with the operator still in charge, and
the journal and timeline that record it all."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys

import pytest

from proctui.commands.abandon import Abandon
from proctui.commands.extend import Extend
from proctui.commands.kill import Kill
from proctui.commands.stop_all import StopAll
from proctui.config import ConfigError, DependCondition, OnTimeout, ReadyCheck, parse_toml
from proctui.core.life.outcome import OutcomeKind
from proctui.core.life.stop import Phase
from tests.children import POLITE, SLOW, STUBBORN
from tests.conftest import pyspec, spec, wait_until


def order(h, *texts: str) -> list[int]:
    """Where each notice text first appears in the event log, once each has come: a
    snapshot can say all have ended before the last notices are taken off the queue."""
    for text in texts:
        name, _, said = text.partition(": ")
        h.wait_notice(name, said)
    notices = [f"{e.name}: {e.text}" for e in h.log if hasattr(e, "text")]
    return [next(i for i, n in enumerate(notices) if t in n) for t in texts]


def test_ready_by_a_log_line_then_the_dependent_starts(harness):
    db = pyspec("db", "import time\ntime.sleep(0.5)\nprint('db: ready to accept connections')"
                      "\ntime.sleep(60)\n", ready=ReadyCheck(log="ready to accept"))
    web = pyspec("web", POLITE, depends_on=(("db", None),))
    h = harness([db, web])
    wait_until(lambda: h.view("web").phase is Phase.WAITING, what="web to wait")
    assert h.view("web").waiting_for == ("db",) and h.view("web").pid is None
    h.wait_output("web", "ready")
    h.wait_notice("db", "ready after")
    first, second = order(h, "db: ready after", "web: started (pid")
    assert first < second


def test_ready_by_tcp_and_by_a_probe_command(harness, tmp_path):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = pyspec("srv", f"import socket,time\ntime.sleep(0.4)\ns=socket.socket()\n"
                           f"s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
                           f"s.bind(('127.0.0.1', {port}))\ns.listen()\ntime.sleep(60)\n",
                    ready=ReadyCheck(tcp=("127.0.0.1", port), interval=0.1))
    flag = tmp_path / "flag"
    probed = spec("probed", f"sleep 0.4; touch {flag}; exec sleep 60",
                  ready=ReadyCheck(exec=("test", "-e", str(flag)), interval=0.1))
    h = harness([server, probed])
    wait_until(lambda: h.view("srv").ready_at is not None, what="the port")
    wait_until(lambda: h.view("probed").ready_at is not None, what="the probe")
    assert 0.3 < h.view("srv").ready_at - h.view("srv").started_at < 3


def test_a_dependency_that_never_gets_ready_stops_its_dependents_starting(harness):
    db = spec("db", "exec sleep 60", ready=ReadyCheck(log="never"), ready_timeout=0.5)
    web = pyspec("web", POLITE, depends_on=(("db", None),))
    h = harness([db, web])
    outcome = h.outcome("db")
    assert outcome.kind is OutcomeKind.FAILED_TO_START
    assert outcome.text.startswith("not ready within 0.5s: stopped after")
    h.wait_notice("web", "not started: db not ready within 0.5s: stopped after")
    h.wait_all_ended()
    assert h.view("web").pid is None


def test_exited_ok_waits_for_a_clean_exit(harness):
    migrate = spec("migrate", "sleep 0.3; echo migrated")
    web = pyspec("web", POLITE, depends_on=(("migrate", DependCondition.EXITED_OK),))
    h = harness([migrate, web])
    h.wait_output("web", "ready")
    assert h.outcome("migrate").text == "exited: exit code 0"
    bad = spec("bad", "exit 4")
    after = pyspec("after", POLITE, depends_on=(("bad", DependCondition.EXITED_OK),))
    h2 = harness([bad, after])
    h2.wait_notice("after", "not started: bad ended before it was exited-ok: exited: exit "
                            "code 4")


def test_cycles_and_unknown_names_are_config_errors(tmp_path):
    text = ('[processes.a]\ncmd = "true"\ndepends_on = ["b"]\n'
            '[processes.b]\ncmd = "true"\ndepends_on = ["c"]\n'
            '[processes.c]\ncmd = "true"\ndepends_on = ["a"]\n')
    with pytest.raises(ConfigError, match=r"dependency cycle: (a -> b -> c -> a|"
                                          r"b -> c -> a -> b|c -> a -> b -> c)"):
        parse_toml(text, "x.toml", tmp_path)
    with pytest.raises(ConfigError, match=r"process 'a': key 'depends_on': unknown process 'z'"):
        parse_toml('[processes.a]\ncmd = "true"\ndepends_on = ["z"]\n', "x.toml", tmp_path)
    with pytest.raises(ConfigError, match="has no ready check"):
        parse_toml('[processes.a]\ncmd = "true"\n[processes.b]\ncmd = "true"\n'
                   'depends_on = { a = "ready" }\n', "x.toml", tmp_path)
    (tmp_path / "c.toml").write_text(text)
    result = subprocess.run([sys.executable, "-m", "proctui", "check", "-f",
                             str(tmp_path / "c.toml")], capture_output=True, text=True)
    assert result.returncode == 2 and "dependency cycle" in result.stderr
    assert result.stderr.count("\n") == 1


def chain() -> list:
    """web depends on api, api on db: three stages, each taking a moment to stop."""
    slow = SLOW.format(seconds=0.3)
    return [pyspec("db", slow),
            pyspec("api", slow, depends_on=(("db", None),)),
            pyspec("web", slow, depends_on=(("api", None),))]


def test_everything_stops_in_reverse_order_in_stages(harness):
    h = harness(chain())
    for name in ("db", "api", "web"):
        h.wait_output(name, "ready")
    h.sup.send(StopAll())
    wait_until(lambda: h.view("db").stops_after == ("api",), what="db to wait for api")
    assert h.view("db").stage == 3 and h.view("db").stages == 3
    h.wait_all_ended()
    assert all(o.kind is OutcomeKind.STOPPED for _, o in h.sup.snapshot().final())
    web, api, db = order(h, "web: stopped after", "api: stopped after", "db: stopped after")
    assert web < api < db
    assert order(h, "api: SIGTERM sent")[0] > web, "api was signalled before web had ended"
    h.wait_notice("db", "stops after api (stage 3 of 3)")


def test_a_stage_where_the_operator_kills_extends_and_abandons(harness):
    """web ignores SIGTERM (ask at its deadline); api and db wait. The operator extends
    web, then abandons it: an abandoned dependent releases what it depends on."""
    specs = [pyspec("db", POLITE),
             pyspec("api", STUBBORN, depends_on=(("db", None),), stop_timeout=30),
             pyspec("web", STUBBORN, depends_on=(("api", None),), stop_timeout=0.5,
                    on_timeout=OnTimeout.ASK)]
    h = harness(specs)
    for name in ("db", "api", "web"):
        h.wait_output(name, "ready")
    h.sup.send(StopAll())
    wait_until(lambda: h.view("web").phase is Phase.DECIDING, what="web's question")
    assert h.view("api").phase is Phase.RUNNING and h.view("api").stops_after == ("web",)
    assert not h.sup.send(Extend("api")).result(5).ok, "api is not stopping yet"
    assert h.sup.send(Extend("web", 0.5)).result(5).ok
    wait_until(lambda: h.view("web").phase is Phase.DECIDING and h.view("web").decisions == 2)
    h.sup.send(Abandon("web")).result(5)
    # Released: api gets its stop signal now, and is killed by the operator.
    wait_until(lambda: h.view("api").phase is Phase.STOPPING, what="api's stop")
    h.sup.send(Kill("api"))
    assert h.outcome("api").kind is OutcomeKind.KILLED
    assert h.outcome("db").kind is OutcomeKind.STOPPED
    h.wait_all_ended()
    import os
    import signal as sig

    os.kill(h.view("web").pid, sig.SIGKILL)


def test_one_command_stops_everything_now_regardless_of_order(harness):
    h = harness([pyspec("db", POLITE),
                 pyspec("web", STUBBORN, depends_on=(("db", None),), stop_timeout=30)])
    h.wait_output("db", "ready")
    h.wait_output("web", "ready")
    h.sup.send(StopAll())
    wait_until(lambda: h.view("db").stops_after == ("web",))
    h.sup.send(StopAll(ordered=False))
    assert h.outcome("db").kind is OutcomeKind.STOPPED, "db stopped while web still ran"
    assert h.view("web").phase is Phase.STOPPING
    h.sup.send(Kill("web"))
    h.wait_all_ended()


@pytest.mark.slow
def test_the_journal_records_the_run_and_the_timeline_draws_it(tmp_path):
    run_dir = tmp_path / "run"
    toml = tmp_path / "p.toml"
    toml.write_text(
        f'[processes.db]\ncmd = ["{sys.executable}", "-c", "import time; '
        f"print('up', flush=True); time.sleep(60)\"]\nready = {{ log = \"up\" }}\n"
        f'[processes.web]\ncmd = "sleep 60"\ndepends_on = ["db"]\n')
    subprocess.run([sys.executable, "-m", "proctui", "run", "--headless", "-f", str(toml),
                    "--run-dir", str(run_dir), "--stop-after", "1"], capture_output=True,
                   timeout=60, check=True)
    entries = [json.loads(line) for line in (run_dir / "journal.jsonl").read_text().splitlines()]
    kinds = [(e["kind"], e.get("name")) for e in entries]
    for expected in [("begin", None), ("waiting", "web"), ("start", "db"), ("ready", "db"),
                     ("start", "web"), ("stage", "db"), ("stop", "web"), ("signal", "web"),
                     ("outcome", "web"), ("stop", "db"), ("outcome", "db"), ("end", None)]:
        assert expected in kinds, (expected, kinds)
    assert kinds.index(("outcome", "web")) < kinds.index(("stop", "db"))
    assert all(isinstance(e["t"], float) and isinstance(e["wall"], float) for e in entries)
    svg = tmp_path / "t.svg"
    result = subprocess.run([sys.executable, "-m", "proctui", "timeline", "--run-dir",
                             str(run_dir), "-o", str(svg)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert svg.read_text().startswith("<svg") and "stopped after" in svg.read_text()
    text = subprocess.run([sys.executable, "-m", "proctui", "timeline", "--run-dir",
                           str(run_dir), "--width", "90"], capture_output=True, text=True)
    assert re.search(r"^db +│", text.stdout, re.MULTILINE), text.stdout
    assert "stopped after" in text.stdout
    missing = subprocess.run([sys.executable, "-m", "proctui", "timeline", "--run-dir",
                              str(tmp_path / "nothing")], capture_output=True, text=True)
    assert missing.returncode == 2 and missing.stderr.count("\n") == 1

