"""What an export is made of (units, env files, the result) and what it reads besides the
config: env files, the installed systemd's version, where a program is."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path

from proctui.config import (
    Config,
    ProcessSpec,
)
from proctui.export.words import (
    _PLAIN_ENV_LINE,
)


class UnitType(Enum):
    EXEC = "exec"
    NOTIFY = "notify"
    ONESHOT = "oneshot"


@dataclass(frozen=True, slots=True)
class EnvFile:
    """A process's env_file as the config named it, apart from its spec's merged env."""

    path: Path  # absolute
    keys: frozenset[str]  # the variables the file sets
    table_keys: frozenset[str]  # the variables the process's own env table sets
    odd_lines: tuple[str, ...] = ()  # "line 3" for lines systemd reads differently


@dataclass(frozen=True, slots=True)
class Unit:
    file_name: str  # proctui-web.service
    text: str


@dataclass(frozen=True, slots=True)
class Export:
    units: tuple[Unit, ...]
    warnings: tuple[str, ...] = field(default=())  # "NAME: what systemd cannot keep"


# -- what the config does not carry -------------------------------------------------------

def env_files(config: Config) -> dict[str, EnvFile]:
    """Each process's env_file, read again from the TOML file: the specs carry only the
    merged environment, and a unit should name the file rather than copy its secrets."""
    if config.path is None or config.path.suffix != ".toml":
        return {}
    import tomllib

    from proctui.config.files import read_text
    from proctui.config.toml import load_env_file
    from proctui.config.values import Where

    data = tomllib.loads(read_text(config.path))
    out: dict[str, EnvFile] = {}
    for name, table in (data.get("processes") or {}).items():
        if not isinstance(table, dict) or not isinstance(table.get("env_file"), str):
            continue
        path = Path(os.path.abspath(config.base_dir / os.path.expanduser(table["env_file"])))
        keys = frozenset(load_env_file(path, Where(config.source, name)))
        odd = []
        for number, line in enumerate(read_text(path, limit=1 << 20).splitlines(), 1):
            stripped = line.strip()
            if stripped and not stripped.startswith("#") and (
                    not _PLAIN_ENV_LINE.fullmatch(stripped) or re.search(r"\s#", stripped)):
                odd.append(f"line {number}")
        table_env = table.get("env")
        out[name] = EnvFile(path, keys, frozenset(table_env) if isinstance(table_env, dict)
                            else frozenset(), tuple(odd))
    return out


def systemd_version() -> int | None:
    """The version of the systemd here, or None when there is none to ask."""
    systemctl = shutil.which("systemctl")
    if systemctl is None:
        return None
    try:
        out = subprocess.run([systemctl, "--version"], capture_output=True, text=True,
                             timeout=5, check=False).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.match(r"systemd (\d+)", out)
    return int(m.group(1)) if m else None


def which(spec: ProcessSpec) -> str | None:
    """The program's absolute path as proctui would run it: ExecStart= wants one, and
    systemd's own search path is not the one proctui inherited."""
    program = spec.argv[0]
    if "/" in program:
        return os.path.normpath(os.path.join(spec.cwd, program))
    path = dict(spec.env).get("PATH", os.environ.get("PATH", os.defpath))
    found = shutil.which(program, path=path)
    return os.path.abspath(found) if found else None


