"""A fleet file: the boxes that ``status`` and ``down`` reach at once, each over the
operator's own ssh, in the order the file gives them::

    [boxes.edge-1]
    ssh = "pi@edge-1.lan"           # anything ssh accepts
    run_dir = "/run/user/1000/app"  # the box's run directory (optional)
    file = "/srv/app/proctui.toml"  # or the config it was started with (optional)

    [boxes.here]                    # no ssh: a supervisor on this machine, found by
    run_dir = "/tmp/demo/a"         # its run_dir or file (one of them is required)

A repeated ``--host DEST`` is a box too, named by its destination, with the command
line's ``-f``/``--run-dir``. Bad input is one line naming the file, the box and the key."""

from __future__ import annotations

import re
import tomllib
from collections.abc import Sequence
from pathlib import Path

from proctui.config.spec import ConfigError
from proctui.records import dataclass

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}")
_KEYS = ("ssh", "run_dir", "file")
MAX_BOXES = 256


@dataclass(frozen=True)
class Box:
    name: str  # what every line about it starts with
    ssh: str | None  # the destination ssh is given (None: this machine)
    run_dir: Path | None = None
    file: Path | None = None


def load_fleet(path: Path) -> list[Box]:
    """The boxes ``path`` names, in its order; ConfigError (one line) when it is bad."""
    source = str(path)
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except OSError as e:
        raise ConfigError(source, f"cannot read it: {e.strerror or e}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise ConfigError(source, f"not valid TOML: {e}") from None
    extra = sorted(set(data) - {"boxes"})
    if extra:
        raise ConfigError(source, f"unknown table {extra[0]!r} (only [boxes.NAME])")
    boxes = data.get("boxes")
    if not isinstance(boxes, dict) or not boxes:
        raise ConfigError(source, "no boxes: add at least one [boxes.NAME] with ssh = DEST")
    if len(boxes) > MAX_BOXES:
        raise ConfigError(source, f"{len(boxes)} boxes: at most {MAX_BOXES}")
    out = []
    for name, table in boxes.items():
        if not _NAME.fullmatch(name):
            raise ConfigError(source, f"box name {name!r}: letters, digits and _.@- only, "
                                      "64 at most")
        where = f"{source}: box {name!r}"
        if not isinstance(table, dict):
            raise ConfigError(where, "must be a table with ssh = DEST")
        unknown = sorted(set(table) - set(_KEYS))
        if unknown:
            raise ConfigError(where, f"unknown key (known: {', '.join(_KEYS)})",
                              key=unknown[0])
        values = {}
        for key in _KEYS:
            value = table.get(key)
            if value is None:
                continue
            if not isinstance(value, str) or not value or "\n" in value or "\0" in value:
                raise ConfigError(where, "must be a non-empty string on one line", key=key)
            values[key] = value
        ssh = values.get("ssh")
        if ssh is None and "run_dir" not in values and "file" not in values:
            raise ConfigError(where, "missing (the box's ssh destination; or, for a "
                                     "supervisor on this machine, run_dir or file)",
                              key="ssh")
        if ssh is not None and ssh.startswith("-"):
            raise ConfigError(where, "must not start with '-' (ssh would read an option)",
                              key="ssh")
        out.append(Box(name, ssh,
                       Path(values["run_dir"]) if "run_dir" in values else None,
                       Path(values["file"]) if "file" in values else None))
    return out


def boxes(hosts: Sequence[str], fleet: Path | None, file: Path | None,
          run_dir: Path | None) -> list[Box]:
    """The boxes a command was given: the fleet file's, then each ``--host`` (with the
    command line's -f and --run-dir)."""
    found = load_fleet(fleet) if fleet is not None else []
    found += [Box(host, host, run_dir, file) for host in hosts]
    seen: set[str] = set()
    for box in found:
        if box.name in seen:
            raise ConfigError(str(fleet) if fleet is not None else "--host",
                              f"box {box.name!r} given twice")
        seen.add(box.name)
    return found
