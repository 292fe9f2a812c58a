"""Proof, for the type checker, that the local core and the remote core implement the same
API (``Core``). Nothing here runs: mypy checks each return against the protocol, so a
method renamed, dropped or retyped on either side fails ``.ci/run``. (The test fake is
proven where tests/fake_core.py hands it to the console, also checked by mypy.)"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from proctui.commands.api import Core
    from proctui.core.supervisor import Supervisor
    from proctui.remote.client import RemoteCore


def local(core: Supervisor) -> Core:
    return core


def remote(core: RemoteCore) -> Core:
    return core
