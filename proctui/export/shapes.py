"""What an export is made of (units, env files, the result), what it reads besides the
config (env files, the installed systemd's version, where a program is) and how its units
reach the disk."""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shutil
import stat
import subprocess
from dataclasses import field
from enum import Enum
from pathlib import Path

from proctui.config import (
    Config,
    ConfigError,
    ProcessSpec,
)
from proctui.export.words import (
    _PLAIN_ENV_LINE,
)
from proctui.records import dataclass


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

    from proctui.config.env_file import load_env_file
    from proctui.config.files import UnreadableFile, read_text
    from proctui.config.values import Where

    # Read a second time, after the config was loaded: a file changed or gone meanwhile is
    # a one-line error like any other, not a traceback.
    try:
        data = tomllib.loads(read_text(config.path))
    except (UnreadableFile, tomllib.TOMLDecodeError) as e:
        raise ConfigError(config.source, f"changed while being read: {e}") from None
    out: dict[str, EnvFile] = {}
    for name, table in (data.get("processes") or {}).items():
        if not isinstance(table, dict) or not isinstance(table.get("env_file"), str):
            continue
        path = Path(os.path.abspath(config.base_dir / os.path.expanduser(table["env_file"])))
        where = Where(config.source, name)
        keys = frozenset(load_env_file(path, where))
        try:
            text = read_text(path, limit=1 << 20)
        except UnreadableFile as e:
            raise where.error("env_file", str(e)) from None
        odd = []
        for number, line in enumerate(text.splitlines(), 1):
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


# -- writing units ------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Written:
    written: tuple[Path, ...]
    unchanged: tuple[Path, ...]


# Not the 0666 a plain open() asks for: a unit anyone may write runs what they like as
# root. (The umask may take more away.)
_UNIT_MODE = 0o644


def write_units(export: Export, directory: Path, *, force: bool = False) -> Written:
    """Write every unit into ``directory``, or none: a different file already there is
    refused (ConfigError) unless ``force``; a symbolic link, or anything else but a
    regular file, is refused even then.

    A unit is written whole under a temporary name beside it, synced, and renamed over the
    old file: systemd never reads half a unit, and a rename replaces the name itself, never
    what a link there points at."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
        # Every name below is opened relative to this one directory: a directory on the
        # way swapped for a link midway cannot send the units anywhere else. (A DIR that is
        # itself a link is followed: that is the directory the caller named.)
        dir_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as e:
        raise ConfigError(str(directory), f"cannot write: {e.strerror or e}") from None
    try:
        pending, unchanged = [], []
        for unit in export.units:
            path, data = directory / unit.file_name, unit.text.encode("utf-8")
            old = _existing(dir_fd, unit.file_name, path, len(data))
            if old == data:
                unchanged.append(path)
            elif old is not None and not force:
                raise ConfigError(str(path), "exists and differs; pass --force to overwrite it")
            else:
                pending.append((unit.file_name, path, data))
        written = []
        try:
            for name, path, data in pending:
                _replace(dir_fd, name, data)
                written.append(path)
            if written:
                os.fsync(dir_fd)  # the renames themselves
        except OSError as e:
            raise ConfigError(str(directory), f"cannot write: {e.strerror or e}") from None
        return Written(tuple(written), tuple(unchanged))
    finally:
        os.close(dir_fd)


def _existing(dir_fd: int, name: str, path: Path, size: int) -> bytes | None:
    """The file already at ``name`` (no more of it than tells whether it holds ``size``
    bytes), or None when there is none."""
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None
    except OSError as e:
        raise ConfigError(str(path), f"cannot read the file there: {e.strerror or e}") from None
    if stat.S_ISLNK(st.st_mode):
        # Refused, --force or not. Written through, the link would carry a root-run unit
        # wherever it points (a link left in the output directory could point at
        # /etc/passwd). Replaced, the link's own meaning would be undone without a word:
        # `systemctl mask` is a link to /dev/null, `systemctl link` one to a unit kept
        # elsewhere, and an admin who made either would not expect an export to unmask or
        # unlink it. Removing the link is the admin's one command, and says what is meant.
        try:
            target = os.readlink(name, dir_fd=dir_fd)
        except OSError:
            target = "?"
        raise ConfigError(str(path), f"is a symbolic link (to {target!r}); the export "
                                     "writes no unit through a link and replaces none, even "
                                     "with --force: remove the link first")
    if not stat.S_ISREG(st.st_mode):
        raise ConfigError(str(path), "is not a regular file; the export replaces only a "
                                     "unit file, even with --force")
    try:
        # O_NOFOLLOW and O_NONBLOCK: the name may have become a link or a pipe since the
        # stat, and neither is to be followed or waited on.
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                     dir_fd=dir_fd)
    except OSError as e:
        raise ConfigError(str(path), f"cannot read the file there: {e.strerror or e}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ConfigError(str(path), "is not a regular file; the export replaces only a "
                                         "unit file, even with --force")
        chunks, got = [], 0
        while got <= size:
            chunk = os.read(fd, size + 1 - got)
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
        return b"".join(chunks)
    except OSError as e:
        raise ConfigError(str(path), f"cannot read the file there: {e.strerror or e}") from None
    finally:
        os.close(fd)


def _replace(dir_fd: int, name: str, data: bytes) -> None:
    """``data`` at ``name`` in one rename. The temporary name is not the unit's: a long
    unit name plus a suffix could pass the longest name a directory takes, and systemd
    loads no file ending in .tmp should one be left behind."""
    temporary = f".proctui-export-{secrets.token_hex(8)}.tmp"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                 _UNIT_MODE, dir_fd=dir_fd)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temporary, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary, dir_fd=dir_fd)
        raise
