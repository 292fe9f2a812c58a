"""What a PID file records: enough to prove, after proctui itself died, that a live
process is still the one it started, and to find every member of its group.

Identity rests on what a process cannot change: the boot id, its start time in clock
ticks, its group and session. The command line is kept as a hint (a program may exec
or retitle itself).
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, field

from proctui.records import dataclass

MAX_PID_FILE = 1 << 16


@dataclass(frozen=True, slots=True)
class Member:
    """A process of the run besides its leader: a group member that outlived the leader,
    or a descendant that left the group."""

    pid: int
    start_ticks: int
    pgid: int


@dataclass(frozen=True, slots=True)
class PidRecord:
    name: str
    pid: int
    pgid: int
    boot_id: str
    start_ticks: int
    cmdline: list[str]
    started_at: float  # wall clock, for people
    proctui_pid: int
    sid: int = 0  # 0 in files from before sessions were recorded: taken as the pgid
    token: str = ""  # the PROCTUI_RUN value every descendant inherited
    members: tuple[Member, ...] = field(default_factory=tuple)

    def to_json(self) -> str:
        data = asdict(self)
        data["members"] = [[m.pid, m.start_ticks, m.pgid] for m in self.members]
        return json.dumps(data, indent=1) + "\n"

    @classmethod
    def from_json(cls, text: str) -> PidRecord:
        data = json.loads(text)
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        required: dict[str, type | tuple[type, ...]] = {
            "name": str, "pid": int, "pgid": int, "boot_id": str, "start_ticks": int,
            "cmdline": list, "started_at": (int, float), "proctui_pid": int,
        }
        for key, kind in required.items():
            value = data.get(key)
            if not isinstance(value, kind) or isinstance(value, bool):
                raise ValueError(f"field {key!r} missing or of the wrong type")
        for key in ("pid", "pgid"):
            if not 1 < data[key] < 1 << 22:
                raise ValueError(f"field {key!r} out of range")
        if data["start_ticks"] < 0:
            raise ValueError("field 'start_ticks' out of range")
        if not math.isfinite(data["started_at"]):
            data["started_at"] = 0.0  # shown to people only; identity does not rest on it
        if not all(isinstance(a, str) for a in data["cmdline"]):
            raise ValueError("field 'cmdline' is not a list of strings")
        sid = data.get("sid", 0)
        token = data.get("token", "")
        if not isinstance(sid, int) or isinstance(sid, bool) or not isinstance(token, str):
            raise ValueError("field 'sid' or 'token' of the wrong type")
        members = []
        for item in data.get("members", []):
            if (not isinstance(item, list) or len(item) != 3
                    or not all(isinstance(x, int) and not isinstance(x, bool) for x in item)
                    or not 1 < item[0] < 1 << 22):
                raise ValueError("field 'members' is not a list of [pid, start, pgid]")
            members.append(Member(*item))
        return cls(**{k: data[k] for k in required}, sid=sid or data["pgid"], token=token,
                   members=tuple(members))
