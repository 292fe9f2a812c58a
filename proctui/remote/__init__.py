"""Supervision that outlives a terminal: the control socket every supervisor serves, and
the clients that use it (an attached console, the control commands, ``down``)."""
