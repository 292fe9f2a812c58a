"""success_exit_codes: an exit with one of them is a clean end, in words, in status --json,
for the restart policy and for proctui's own exit status."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from proctui.commands.stop import Stop
from proctui.config import ConfigError, RestartPolicy, load_toml
from proctui.core.life.outcome import OutcomeKind, exit_status_for
from proctui.frontends.status import outcome_json
from proctui.protocol.wire import outcome_from_dict, outcome_to_dict
from tests.conftest import spec, wait_until


def test_the_key_in_defaults_and_per_process(tmp_path):
    path = tmp_path / "proctui.toml"
    path.write_text('[defaults]\nsuccess_exit_codes = [0, 143]\n'
                    '[processes.a]\ncmd = "x"\n'
                    '[processes.b]\ncmd = "x"\nsuccess_exit_codes = [3, 3, 0]\n')
    a, b = load_toml(path).processes
    assert a.success_exit_codes == (0, 143)
    assert b.success_exit_codes == (3, 0)
    result = subprocess.run([sys.executable, "-m", "proctui", "check", "-f", str(path)],
                            capture_output=True, text=True, timeout=60)
    assert "  success codes  0, 143\n" in result.stdout, result


@pytest.mark.parametrize(("value", "said"), [
    ("143", "expected a list of exit codes such as [0, 143], got 143"),
    ("[256]", "expected exit codes from 0 to 255, got 256"),
    ("[-1]", "expected exit codes from 0 to 255, got -1"),
    ('["0"]', "expected exit codes from 0 to 255, got '0'"),
    ("[true]", "expected exit codes from 0 to 255, got true"),
    ("[1.0]", "expected exit codes from 0 to 255, got 1.0"),
])
def test_bad_values_are_one_line_naming_file_process_and_key(tmp_path, value, said):
    path = tmp_path / "proctui.toml"
    path.write_text(f'[processes.web]\ncmd = "x"\nsuccess_exit_codes = {value}\n')
    with pytest.raises(ConfigError) as info:
        load_toml(path)
    assert str(info.value) == f"{path}: process 'web': key 'success_exit_codes': {said}"
    result = subprocess.run([sys.executable, "-m", "proctui", "check", "-f", str(path)],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [f"proctui: error: {info.value}"]


def test_an_exit_with_a_success_code_is_clean_and_not_restarted(harness):
    h = harness([spec("job", "exit 143", success_exit_codes=(0, 143),
                      restart=RestartPolicy.ON_FAILURE)])
    outcome = h.outcome("job")
    assert outcome.kind is OutcomeKind.EXITED
    assert outcome.text == "exited: exit code 143 (a success code)"
    assert outcome.clean and outcome.success_code is True
    assert exit_status_for([outcome]) == 0
    assert outcome_json(outcome)["clean"] is True  # type: ignore[index]
    # It crosses the socket as it is.
    assert outcome_from_dict(outcome_to_dict(outcome)).clean
    h.wait_all_ended()
    assert h.view("job").restarts == 0


def test_without_the_setting_the_same_exit_fails_and_restarts(harness):
    h = harness([spec("job", "exit 143", restart=RestartPolicy.ON_FAILURE)])
    outcome = h.outcome("job")
    assert outcome.text == "exited: exit code 143"
    assert not outcome.clean
    assert exit_status_for([outcome]) == 1
    assert outcome_json(outcome)["clean"] is False  # type: ignore[index]
    wait_until(lambda: h.view("job").restarts >= 1, 15, "a restart")


def test_zero_left_out_of_the_list_is_a_failure(harness):
    h = harness([spec("job", "exit 0", success_exit_codes=(143,))])
    outcome = h.outcome("job")
    assert outcome.text == "exited: exit code 0 (not a success code)"
    assert not outcome.clean


def test_a_stop_that_ends_with_a_success_code_says_so(harness):
    h = harness([spec("svc", "trap 'exit 143' TERM; echo ready; while :; do sleep 0.05; done",
                      success_exit_codes=(0, 143))])
    h.wait_output("svc", "ready")
    h.sup.send(Stop("svc"))
    outcome = h.outcome("svc")
    assert outcome.kind is OutcomeKind.STOPPED
    assert outcome.text.endswith(": exit code 143 (a success code)"), outcome.text
    assert outcome.clean


def test_run_exits_0_after_a_success_code(tmp_path: Path):
    (tmp_path / "proctui.toml").write_text(
        '[processes.job]\ncmd = "sh -c \'exit 143\'"\nsuccess_exit_codes = [0, 143]\n')
    result = subprocess.run([sys.executable, "-m", "proctui", "run", "--headless"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result
    assert "exit code 143 (a success code)" in result.stdout + result.stderr
