"""Supervision that outlives a terminal: the control socket every supervisor serves, and
the clients that use it (an attached console, the control commands, ``down``).

server.py serves the socket (pushes of views, state and output); dispatch.py carries out
requests of the command table (proctui.protocol); slots.py bounds who holds a connection
and for how long; pages.py bounds every reply; heal.py remakes a removed run directory.
connection.py is one client connection with bounded waits; client.py the Core API over
it (RemoteCore). dial.py reaches a supervisor on another machine through ssh, and
stdio.py is the box's end of that link (``proctui stdio``)."""
