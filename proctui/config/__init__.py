"""TOML files, Procfiles and command-line commands, turned into immutable process specs.

All validation happens here. Every error names the file, the process and the key, in one
line, so the CLI can print it and exit 2. File formats are imported only when a file of
that format is read: ``tomllib`` costs a third of a second on a small board.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from proctui.config.shell import from_commands, parse_procfile, shell_argv
from proctui.config.spec import (
    COMMAND_LINE,
    DEFAULT_MAX_LINE_LENGTH,
    DEFAULT_SCROLLBACK,
    Config,
    ConfigError,
    DependCondition,
    OnHangup,
    OnTimeout,
    Overrides,
    ProcessSpec,
    ReadyCheck,
    RestartPolicy,
)
from proctui.config.values import parse_signal

__all__ = [
    "COMMAND_LINE", "DEFAULT_MAX_LINE_LENGTH", "DEFAULT_SCROLLBACK", "Config", "ConfigError",
    "DependCondition", "OnHangup", "OnTimeout", "Overrides", "ProcessSpec", "ReadyCheck",
    "RestartPolicy", "from_commands", "load", "load_procfile", "load_toml", "parse_signal",
    "parse_toml", "shell_argv",
]


def load_toml(path: Path, display: str | None = None) -> Config:
    from proctui.config.toml import load_toml as load

    return load(path, display)


def parse_toml(text: str, source: str, base: Path, path: Path | None = None) -> Config:
    from proctui.config.toml import parse_toml as parse

    return parse(text, source, base, path)


def load_procfile(path: Path, display: str | None = None) -> Config:
    from proctui.config.files import UnreadableFile, read_text

    source = display or str(path)
    try:
        # A byte that is not UTF-8 is refused by the line it is on, naming its process.
        text = read_text(path, keep_bad_bytes=True)
    except UnreadableFile as e:
        raise ConfigError(source, str(e)) from None
    return parse_procfile(text, source, path.resolve().parent, path.resolve())


def load(path: Path | None = None, commands: Sequence[str] = (),
         overrides: Overrides | None = None, cwd: Path | None = None) -> Config:
    """The config from ``commands``, ``path``, or ./proctui.toml, or ./Procfile."""
    here = cwd or Path.cwd()
    if commands and path is not None:
        raise ConfigError(COMMAND_LINE, "give either -f FILE or commands, not both")
    if commands:
        config = from_commands(commands, here)
    elif path is not None:
        if path.is_dir():
            raise ConfigError(str(path), "is a directory, expected a proctui.toml or Procfile")
        if not path.exists():
            raise ConfigError(str(path), "file not found")
        config = load_toml(path) if path.suffix == ".toml" else load_procfile(path)
    elif (here / "proctui.toml").is_file():
        config = load_toml(here / "proctui.toml", "proctui.toml")
    elif (here / "Procfile").is_file():
        config = load_procfile(here / "Procfile", "Procfile")
    else:
        raise ConfigError(str(here), "no proctui.toml or Procfile here; pass -f FILE or "
                                     "commands (proctui run 'web=python -m http.server')")
    if overrides is not None:
        config = replace(config, processes=tuple(overrides.apply(s) for s in config.processes))
    return config
