"""``proctui check`` prints every resolved setting, quotes arguments so an empty one shows,
never shows an env file's values or the inherited environment, says whether a Procfile's
.env was read, and warns (exit 0) about a program that cannot start: the real CLI."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.conftest import PY
from tests.test_detach import toml_str


def check(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "INHERITED_SECRET": "inherited-value-123",
           "XDG_RUNTIME_DIR": str(tmp_path)}
    got = subprocess.run([PY, "-m", "proctui", "check", *args], capture_output=True,
                         text=True, cwd=tmp_path, env=env, timeout=60,
                         stdin=subprocess.DEVNULL)
    assert "Traceback" not in got.stderr, got.stderr
    return got


def block(out: str, name: str) -> str:
    return out.split(f"[{name}]\n", 1)[1].split("\n[", 1)[0]


def test_check_prints_every_setting_and_warns_about_a_missing_program(tmp_path):
    (tmp_path / "secrets.env").write_text("TOKEN=file-value-456\nPORT=5000\n")
    config = tmp_path / "app.toml"
    config.write_text(f"""
[defaults]
on_hangup = "detach"
log_max_size = 65536
log_keep = 2

[processes.db]
cmd = [{toml_str(PY)}, "-c", "print(1)", ""]
ready = {{ log = "ready" }}
ready_timeout = 30
env = {{ MODE = "dev mode" }}
env_file = "secrets.env"
stop_signal = "INT"
on_timeout = "ask"

[processes.web]
cmd = "ngnix -g daemon"
depends_on = ["db"]
restart = "on-failure"
""")
    got = check(tmp_path, "-f", str(config))
    assert got.returncode == 0, got.stderr
    out = got.stdout
    db, web = block(out, "db"), block(out, "web")
    assert f"{PY} -c 'print(1)' ''" in db  # the empty argument is visible
    assert "a line matching 'ready', within 30s" in db
    assert "MODE='dev mode'" in db  # set in the config: its value shown
    assert f"{tmp_path / 'secrets.env'}: read: TOKEN, PORT (values not shown)" in db
    assert "file-value-456" not in out and "inherited-value-123" not in out
    assert "SIGINT, then ask after 10s" in db
    assert "logs/db.log, rotated at 65536 bytes, 2 kept" in db
    assert "depends_on     db (ready)" in web
    assert "restart        on-failure" in web
    assert "ready          no check: running is ready" in web
    assert "on_hangup = detach" in out
    assert got.stderr.strip() == ("proctui check: warning: web: 'ngnix' is not on PATH and "
                                  "not a file: run and up will fail to start it")


def test_check_says_whether_a_procfile_read_its_env(tmp_path):
    procfile = tmp_path / "Procfile"
    procfile.write_text("web: ./missing-server --port $PORT\nworker: sh -c 'echo hi'\n")
    got = check(tmp_path, "-f", str(procfile))
    assert got.returncode == 0
    assert f"{tmp_path / '.env'}: not there, not read" in block(got.stdout, "web")
    assert "web: './missing-server' is not an existing file" in got.stderr
    assert "worker" not in got.stderr  # sh is on PATH
    (tmp_path / ".env").write_text("PORT=5000\n")
    got = check(tmp_path, "-f", str(procfile))
    assert f"{tmp_path / '.env'}: read: PORT (values not shown)" in block(got.stdout, "web")
    assert "5000" not in got.stdout


def test_check_shows_control_characters_as_visible_escapes(tmp_path):
    """An env value with OSC 2 read X='' and a printf with OSC 52 lost it: removed, not
    shown, so check said something other than what run would do."""
    (tmp_path / "proctui.toml").write_text(
        '[processes.a]\ncmd = "printf \'\\u001b]52;c;aGk=\\u0007 hi\\\\n\'"\n'
        'env = { X = "\\u001b]2;T\\u0007" }\n')
    got = check(tmp_path)
    assert got.returncode == 0, got.stderr
    assert "\x1b" not in got.stdout and "\x07" not in got.stdout
    assert "X=$'\\x1b]2;T\\x07'" in got.stdout, got.stdout
    assert "\\x1b]52;c;aGk=\\x07 hi" in got.stdout, got.stdout


def test_check_quotes_a_word_with_a_newline_as_a_shell_reads_it_back(tmp_path):
    """`'import time\\nfor i ...'` is a backslash and an n to a shell; `$'...'` is the
    newline the process gets."""
    program = "import time\nprint(\"it's\")"
    (tmp_path / "proctui.toml").write_text(
        f'[processes.a]\ncmd = ["python3", "-c", {toml_str(program)}]\n')
    got = check(tmp_path)
    assert got.returncode == 0, got.stderr
    line = next(x for x in got.stdout.splitlines() if x.startswith("  cmd "))
    words = line.split(None, 1)[1]
    assert words == "python3 -c $'import time\\nprint(\"it\\'s\")'", words
    back = subprocess.run(["bash", "-c", f"printf '%s\\0' {words}"], capture_output=True,
                          text=True, timeout=30)
    assert back.stdout.split("\0")[:3] == ["python3", "-c", program], back
