"""``proctui export systemd``: process specs in, systemd unit texts and warnings out.

Two shapes. One unit per process carries each process's stop policy into systemd, and says,
process by process, what systemd cannot hold. Or one unit that runs proctui itself, which
keeps every policy and only needs systemd to wait long enough for its staged stop.

Pure but for ``env_files`` and ``systemd_version``, which read the disk and run
``systemctl``, and ``write_units``; no Textual, no core. Whatever a unit takes from outside
(paths, names, words) is escaped as systemd reads it back, or refused (words.py).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import fields

from proctui.config import (
    DEFAULT_MAX_LINE_LENGTH,
    DEFAULT_SCROLLBACK,
    Config,
    ConfigError,
    DependCondition,
    OnTimeout,
    ProcessSpec,
    RestartPolicy,
)
from proctui.export.shapes import (
    EnvFile,
    Export,
    Unit,
    UnitType,
    Written,
    env_files,
    systemd_version,
    which,
    write_units,
)
from proctui.export.supervisor import (
    StopPath,
    export_supervisor,
    longest_stop,
    stop_seconds,
)
from proctui.export.words import (
    _ENV_NAME,
    _MAX_UNIT_NAME,
    _UNSAFE_PATH,
    DEFAULT_PREFIX,
    _seconds_words,
    check_prefix,
    checked,
    environment_word,
    exec_line,
    literal,
    refused_as,
    seconds_value,
    signal_value,
    specifiers,
    unit_name,
)

# RestartSteps= and RestartMaxDelaySec= arrived in systemd 254; older managers ignore them
# with a warning, so they are written only for a manager known to have them.
RESTART_STEPS_SINCE = 254
# proctui's backoff doubles from 1 s up to 30 s: 1, 2, 4, 8, 16, 30 is five steps, and
# systemd's exponential steps from 1 to 30 in five come out as 1, 2, 3.9, 7.7, 15.2, 30.
RESTART_STEPS = 5
BACKOFF_START = 1  # as core/life/stages.py (a test holds them equal; no core import here)
BACKOFF_MAX = 30


# -- one unit per process -----------------------------------------------------------------

def export_units(config: Config, *, files: Mapping[str, EnvFile] | None = None,
                 prefix: str = DEFAULT_PREFIX, version: int | None = None,
                 resolve: Callable[[ProcessSpec], str | None] = which) -> Export:
    """One unit per process; ``version`` is the target systemd's (None: unknown, so only
    what every systemd since 240 knows is written)."""
    check_prefix(prefix)
    # Every unit's comment and Description= name the config file as it was given.
    with refused_as(None, None, "the config file's path "):
        checked(config.source)
    specs = {s.name: s for s in config.processes}
    # Whoever waits for a process to exit makes it a oneshot: After= then waits for the
    # exit, and Requires= fails the dependent when it did not exit 0, as exited-ok does.
    waited_to_exit = {dep for s in config.processes for dep, _ in s.depends_on
                      if s.condition_for(specs[dep]) is DependCondition.EXITED_OK}
    units: list[Unit] = []
    warnings: list[str] = []
    for spec in config.processes:
        _check_expressible(spec, config, prefix)
        text, said = _unit(spec, config, specs, waited_to_exit, files or {}, prefix, version,
                           resolve)
        units.append(Unit(unit_name(spec.name, prefix), text))
        warnings.extend(f"{spec.name}: {line}" for line in said)
    return Export(tuple(units), tuple(warnings))


def _check_expressible(spec: ProcessSpec, config: Config, prefix: str) -> None:
    # The config refuses such a name; a spec made some other way is held to the same.
    with refused_as(spec.name, None, "its name "):
        checked(spec.name)
    if len(unit_name(spec.name, prefix)) > _MAX_UNIT_NAME:
        raise ConfigError(config.source, f"its unit name would be longer than "
                                         f"{_MAX_UNIT_NAME} characters", spec.name)


def _unit(spec: ProcessSpec, config: Config, specs: Mapping[str, ProcessSpec],
          oneshots: set[str], files: Mapping[str, EnvFile], prefix: str,
          version: int | None, resolve: Callable[[ProcessSpec], str | None],
          ) -> tuple[str, list[str]]:
    said: list[str] = []
    unit: list[str] = [f"Description=proctui: {specifiers(spec.name)} "
                       f"(from {specifiers(config.source)})"]
    service: list[str] = []
    # Checked before the program, whose path may lie inside it: the error then names the
    # directory, the cause. A process without a cwd runs in the config file's directory.
    where = "the config file's directory " if spec.cwd == config.base_dir else ""
    with refused_as(spec.name, "cwd", where):
        cwd = literal(str(spec.cwd))

    kind = UnitType.EXEC
    if spec.name in oneshots:
        kind = UnitType.ONESHOT
        if spec.ready is not None:
            said.append(f"ready ({spec.ready.describe()}) is dropped: another process waits "
                        "for it to exit, which makes it Type=oneshot")
    elif spec.ready is not None and spec.ready.notify:
        kind = UnitType.NOTIFY
    elif spec.ready is not None:
        said.append(f"ready ({spec.ready.describe()}) has no systemd equivalent; it becomes "
                    "Type=exec: dependents wait only for it to start")

    for dep, _ in spec.depends_on:
        other = specs[dep]
        condition = spec.condition_for(other)
        name = unit_name(dep, prefix)
        # Requires= for every condition: proctui never starts a process whose dependency
        # did not meet its condition, and only Requires= (with After=) refuses the start
        # when the dependency failed; Wants= would start it anyway.
        unit += [f"After={name}", f"Requires={name}"]
        if dep in oneshots and condition is not DependCondition.EXITED_OK:
            said.append(f"depends_on {dep} = \"{condition.value}\": {dep} is Type=oneshot "
                        "(another process waits for it to exit), so this starts only once "
                        f"{dep} has exited")
        elif condition is DependCondition.STARTED and dep not in oneshots and (
                other.ready is not None and other.ready.notify):
            # After= on a Type=notify unit waits for READY=1, not for the exec.
            said.append(f"depends_on {dep} = \"started\": {dep} is Type=notify, so this "
                        f"starts only once {dep} is ready")
        elif condition is DependCondition.READY and not (
                other.ready is not None and other.ready.notify):
            said.append(f"depends_on {dep} = \"ready\": {dep}'s ready check has no systemd "
                        f"equivalent; this starts once {dep} has started")
    for partner in spec.restart_with:
        unit.append(f"PartOf={unit_name(partner, prefix)}")
        said.append(f"restart_with {partner} becomes PartOf=: systemd also stops this when "
                    f"{partner} is stopped")
    if spec.restart is not RestartPolicy.NO:
        # proctui restarts for as long as it runs; systemd's default start limit (5 starts
        # in 10 s) would give up on a crash loop.
        unit.append("StartLimitIntervalSec=0")

    service.append(f"Type={kind.value}")
    if kind is UnitType.ONESHOT:
        # Stays "active (exited)", so a dependent started again later does not run it again.
        service.append("RemainAfterExit=yes")
    # Every proctui child gets NOTIFY_SOCKET and may speak from any of its processes
    # (STATUS=, EXTEND_TIMEOUT_USEC=, READY=1 from a shell's child): systemd passes the
    # socket and listens to the whole cgroup only with NotifyAccess=all.
    service.append("NotifyAccess=all")
    program = resolve(spec)
    if program is None:
        program = spec.argv[0]
        said.append(f"{program!r} is not on PATH here; ExecStart= needs its absolute path")
    with refused_as(spec.name, "cmd"):
        checked(program)
    if _UNSAFE_PATH.search(program):
        raise ConfigError(config.source, "systemd runs no program whose path holds a quote, "
                                         f"a backslash or a control character: {program!r}",
                          spec.name, "cmd")
    with refused_as(spec.name, "cmd"):
        service.append(f"ExecStart={exec_line((program, *spec.argv[1:]))}")
    service.append(f"WorkingDirectory={cwd}")
    service += _environment(spec, files.get(spec.name), said)

    if kind is UnitType.NOTIFY:
        # proctui waits for READY=1 for as long as ready_timeout says, or for ever.
        service.append("TimeoutStartSec=" + (seconds_value(spec.ready_timeout)
                                             if spec.ready_timeout else "infinity"))
        if spec.ready_timeout and spec.restart is not RestartPolicy.NO:
            said.append(f"ready_timeout = {_seconds_words(spec.ready_timeout)}: systemd "
                        "restarts a process that was not ready in time; proctui does not")
    elif kind is UnitType.ONESHOT:
        service.append("TimeoutStartSec=infinity")  # a migration may take its time

    service += _stop(spec, said)
    service += _restart(spec, kind, version, said)
    if spec.watchdog_sec is not None:
        service.append(f"WatchdogSec={seconds_value(spec.watchdog_sec)}")
        # proctui answers a missed watchdog with the ordinary stop (stop signal, then kill
        # at the stop timeout); systemd's default would be SIGABRT and a core dump.
        service.append(f"WatchdogSignal={signal_value(spec.stop_signal)}")
    codes = [c for c in spec.success_exit_codes if c != 0]
    if codes:
        service.append(f"SuccessExitStatus={' '.join(map(str, codes))}")
    said += _unrepresentable(spec)

    text = "\n".join([
        f"# Generated by proctui export systemd from {config.source}, process {spec.name!r}.",
        "[Unit]", *unit, "", "[Service]", *service, "", "[Install]",
        # default.target exists under both the system and the per-user manager.
        "WantedBy=default.target", "",
    ])
    return text, said


def _environment(spec: ProcessSpec, env_file: EnvFile | None, said: list[str]) -> list[str]:
    lines = []
    keys = {k for k, _ in spec.env}
    if env_file is not None:
        with refused_as(spec.name, "env_file"):
            lines.append(f"EnvironmentFile={literal(str(env_file.path))}")
        for where in env_file.odd_lines:
            said.append(f"env_file {env_file.path} {where}: systemd reads quotes, backslashes, "
                        "'export' and ' #' differently; write plain KEY=VALUE lines")
        for key in sorted(env_file.keys & env_file.table_keys):
            said.append(f"env.{key} is also set in env_file; under systemd the file wins "
                        "(EnvironmentFile= overrides Environment=)")
    own = env_file.table_keys if env_file is not None else keys
    if "PYTHONUNBUFFERED" not in keys:
        # As under proctui: a Python child otherwise holds its output back from the journal.
        lines.append(f"Environment={environment_word('PYTHONUNBUFFERED', '1')}")
    for key, value in spec.env:
        if key not in own:
            continue
        if not _ENV_NAME.fullmatch(key):
            # systemd ignores such an assignment ("Invalid environment assignment"). The
            # name is said on stderr, where a control character should not act either.
            shown = key if key.isprintable() else repr(key)
            said.append(f"env.{shown} is left out: systemd takes only names of letters, "
                        "digits and _, not starting with a digit")
            continue
        with refused_as(spec.name, f"env.{key}"):
            lines.append(f"Environment={environment_word(key, value)}")
    return lines


def _stop(spec: ProcessSpec, said: list[str]) -> list[str]:
    lines = [
        f"KillSignal={signal_value(spec.stop_signal)}",
        # proctui signals the process group, not the one process, both for the stop signal
        # and for SIGKILL: that is control-group. (mixed would send the stop signal to the
        # main process alone, and SIGKILL to the rest as soon as it exits.)
        "KillMode=control-group",
        f"TimeoutStopSec={seconds_value(spec.stop_timeout)}",
    ]
    timeout = _seconds_words(spec.stop_timeout)
    if spec.on_timeout is OnTimeout.ABANDON:
        # At the deadline systemd gives up on the stop and leaves the processes running.
        lines.append("SendSIGKILL=no")
        return lines
    if spec.on_timeout is OnTimeout.ASK:
        said.append(f"on_timeout = \"ask\" has no systemd equivalent; it becomes kill after "
                    f"{timeout}")
    if spec.kill_timeout != spec.stop_timeout:
        said.append(f"kill_timeout = {_seconds_words(spec.kill_timeout)} cannot be kept: "
                    f"after SIGKILL systemd waits TimeoutStopSec ({timeout}) again")
    return lines


def _restart(spec: ProcessSpec, kind: UnitType, version: int | None,
             said: list[str]) -> list[str]:
    policy = spec.restart
    if policy is RestartPolicy.ALWAYS and kind is UnitType.ONESHOT:
        said.append("restart = \"always\" becomes on-failure: systemd refuses Restart=always "
                    "for Type=oneshot")
        policy = RestartPolicy.ON_FAILURE
    lines = [f"Restart={policy.value}"]
    if policy is RestartPolicy.NO:
        return lines
    lines.append(f"RestartSec={BACKOFF_START}")
    if policy is RestartPolicy.ON_FAILURE and kind is UnitType.ONESHOT:
        said.append("restart = \"on-failure\" does not follow a death by SIGHUP, SIGINT, "
                    "SIGTERM or SIGPIPE: systemd refuses RestartForceExitStatus= for "
                    "Type=oneshot")
    elif policy is RestartPolicy.ON_FAILURE:
        # proctui restarts a process that died of any signal it did not send; systemd
        # counts these four as a clean end unless told otherwise. (Its own stop never
        # restarts, whatever the status.)
        lines.append("RestartForceExitStatus=SIGHUP SIGINT SIGTERM SIGPIPE")
    # proctui never restarts a process that failed to start (200: no working directory,
    # 203: no program); with no start limit systemd would try every second for ever.
    lines.append("RestartPreventExitStatus=200 203")
    if version is not None and version >= RESTART_STEPS_SINCE:
        lines += [f"RestartSteps={RESTART_STEPS}", f"RestartMaxDelaySec={BACKOFF_MAX}"]
    else:
        known = "an unknown systemd" if version is None else f"systemd {version}"
        said.append(f"restart backoff 1, 2, 4 .. {BACKOFF_MAX}s becomes a fixed "
                    f"{BACKOFF_START}s for {known} (RestartSteps= needs systemd "
                    f"{RESTART_STEPS_SINCE})")
    return lines


def _unrepresentable(spec: ProcessSpec) -> list[str]:
    said = []
    if spec.max_stop_time is not None:
        said.append(f"max_stop_time = {_seconds_words(spec.max_stop_time)} has no systemd "
                    "equivalent: systemd honours EXTEND_TIMEOUT_USEC without a cap")
    if spec.scrollback != DEFAULT_SCROLLBACK:
        said.append(f"scrollback = {spec.scrollback} has no systemd equivalent: output goes "
                    "to the journal")
    if spec.max_line_length != DEFAULT_MAX_LINE_LENGTH:
        said.append(f"max_line_length = {spec.max_line_length} has no systemd equivalent: "
                    "the journal splits lines at its own LineMax=")
    if 0 not in spec.success_exit_codes:
        said.append("success_exit_codes without 0: under systemd exit code 0 stays a success")
    if spec.stop_command:
        said.append("stop_command is left out: give the unit an ExecStop= by hand (systemd "
                    "then sends KillSignal= to what is left, as stop_command_then_signal)")
    if spec.silence_warning is not None:
        said.append(f"silence_warning = {_seconds_words(spec.silence_warning)} has no "
                    "systemd equivalent")
    defaults = {f.name: f.default for f in fields(ProcessSpec)}
    if (spec.log_max_size, spec.log_keep) != (defaults["log_max_size"], defaults["log_keep"]):
        said.append("log_max_size and log_keep have no systemd equivalent: the journal keeps "
                    "the output, within journald's own limits")
    return said


# -- output --------------------------------------------------------------------------------

def as_stream(export: Export) -> str:
    """All units on one stream, each under a ``# NAME.service`` header comment."""
    return "\n".join(f"# {u.file_name}\n{u.text}" for u in export.units)


__all__ = ["DEFAULT_PREFIX", "EnvFile", "Export", "StopPath", "Unit", "UnitType", "Written",
           "as_stream", "check_prefix", "env_files", "export_supervisor", "export_units",
           "longest_stop", "stop_seconds", "systemd_version", "which", "write_units"]
