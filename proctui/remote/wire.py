"""Moved to :mod:`proctui.protocol.wire`; kept so old imports still work."""

from proctui.protocol.wire import *  # noqa: F403
from proctui.protocol.wire import __all__  # noqa: F401
