"""Environment files (``env_file``, a Procfile's ``.env``): KEY=VALUE lines, read as
data: nothing is expanded or evaluated."""

from __future__ import annotations

import re
from pathlib import Path

from proctui.config.files import UnreadableFile, read_text
from proctui.config.values import Where, no_nul

_ENV_LINE = re.compile(r"^(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*)$")
_DQ_ESCAPES = {"n": "\n", "t": "\t", "\\": "\\", '"': '"', "$": "$"}


def load_env_file(path: Path, where: Where) -> dict[str, str]:
    """KEY=VALUE lines. Values are data: nothing is expanded or evaluated."""
    try:
        text = read_text(path, limit=1 << 20)
    except UnreadableFile as e:
        raise where.error("env_file", f"{e}: {str(path)!r}") from None
    env: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        m = _ENV_LINE.match(stripped)
        if not m:
            raise where.error("env_file", f"{str(path)!r}, line {number}: expected KEY=VALUE")
        key, value = m.group(1), m.group(2).strip()
        if len(value) >= 2 and value[0] == value[-1] == "'":
            value = value[1:-1]
        elif len(value) >= 2 and value[0] == value[-1] == '"':
            value = re.sub(r"\\(.)", lambda g: _DQ_ESCAPES.get(g.group(1), "\\" + g.group(1)),
                           value[1:-1])
        else:
            value = re.split(r"\s+#", value, maxsplit=1)[0].rstrip()
        env[key] = no_nul(value, f"env_file {key}", where)
    return env
