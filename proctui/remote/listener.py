"""The control socket, bound as soon as the run directory is locked and served a little
later.

The console binds it before Textual loads and serves it once its first frame is on the
screen: the server's modules and thread then cost the operator nothing before that frame,
and a client that connects in between (``status``, ``attach``, ``down``) waits in the
socket's backlog to be answered instead of finding nobody there. This module stays light
(no server, no protocol) for that reason.
"""

from __future__ import annotations

import contextlib
import os
import select
import threading
import time
from typing import TYPE_CHECKING

from proctui.protocol.wire import SOCKET
from proctui.remote.socket_file import Bound, bind, unlink_ours

if TYPE_CHECKING:
    from proctui.core.store.rundir import RunDir
    from proctui.core.supervisor import Supervisor
    from proctui.remote.server import Server

SERVE_AT_THE_LATEST = 2.0  # seconds after binding, should no first frame ever come


class Listener:
    """The socket bound now; ``serve()`` starts the server on it (once: later calls do
    nothing), at the latest ``SERVE_AT_THE_LATEST`` seconds after binding."""

    def __init__(self, core: Supervisor, run_dir: RunDir | None, source: str = "",
                 own_console: bool = False) -> None:
        self.core = core
        self.own_console = own_console
        self.run_dir = run_dir
        self.source = source
        self.server: Server | None = None
        self._bound: Bound | None = None
        self._lock = threading.Lock()
        self._done = False  # served, or closed: nothing more to do
        self._timer: threading.Timer | None = None
        self._wake: tuple[int, int] | None = None  # wakes the knock's wait at close
        # The supervisor is up since now, not since it was served (up to
        # SERVE_AT_THE_LATEST later): what `proctui status` says as its uptime.
        self.started_wall = time.time()

    def bind(self, *, on_knock: bool = False) -> str | None:
        """Bind the socket: why not, if it cannot be (said to the core too). With
        ``on_knock`` it is served as soon as a client connects (a headless run: most
        end before anyone asks, and never load the server), else only by ``serve()``;
        either way at the latest ``SERVE_AT_THE_LATEST`` seconds from now."""
        run_dir = self.run_dir
        if run_dir is None or run_dir.fd is None:
            self._done = True
            return None
        try:
            self._bound = bind(run_dir)
        except OSError as e:
            self._done = True
            return self._failed(e)
        if on_knock:
            self._wake = os.pipe2(os.O_CLOEXEC)
            threading.Thread(target=self._serve_on_knock, args=(self._bound[0].fileno(),
                                                                self._wake[0]),
                             name="proctui-knock", daemon=True).start()
        else:
            self._timer = threading.Timer(SERVE_AT_THE_LATEST, self.serve)
            self._timer.daemon = True
            self._timer.start()
        return None

    def _serve_on_knock(self, listening: int, wake: int) -> None:
        # Waits outside the core's loop, so that a client's knock costs the core nothing;
        # poll, not select, takes any fd number; close() wakes it through the pipe.
        poller = select.poll()
        poller.register(listening, select.POLLIN)
        poller.register(wake, select.POLLIN)
        with contextlib.suppress(OSError):
            poller.poll(SERVE_AT_THE_LATEST * 1000)
        os.close(wake)
        self.serve()  # nothing to do once closed

    def serve_soon(self) -> None:
        """``serve()`` from a thread of its own: the caller (the console's first frame)
        does not wait for the server's modules to load."""
        threading.Thread(target=self.serve, name="proctui-serve", daemon=True).start()

    def console_gone(self) -> None:
        """The supervisor's own console went away (its terminal hung up, and it goes on
        detached): status says 0 consoles, not 'its own console and 0 attached'."""
        self.own_console = False
        server = self.server
        if server is not None:
            server.own_console = False

    def serve(self) -> None:
        with self._lock:
            if self._done or self._bound is None:
                return
            self._done = True
            from proctui.remote.server import Server

            server = Server(self.core, self._bound_dir(), source=self.source,
                            started_wall=self.started_wall, own_console=self.own_console)
            try:
                server.start(self._bound)
            except OSError as e:
                self._bound[0].close()
                self._failed(e)
                return
            self.server = server

    def close(self) -> None:
        """Tell the clients what is final and remove the socket (served or not)."""
        if self._timer is not None:
            self._timer.cancel()
        with self._lock:
            self._done = True
            server, bound = self.server, self._bound
            wake, self._wake = self._wake, None
        if wake is not None:
            os.close(wake[1])  # its other end reads EOF: the knock's wait is over
        if server is not None:
            server.close()
        elif bound is not None:
            bound[0].close()
            unlink_ours(self._bound_dir(), bound[1])

    def _bound_dir(self) -> RunDir:
        assert self.run_dir is not None
        return self.run_dir

    def _failed(self, e: OSError) -> str:
        path = self._bound_dir().path / SOCKET
        error = f"control socket {path}: {e.strerror or e}"
        from proctui.commands.notice import Notice

        self.core.send(Notice(f"{error}; proctui attach, status and down cannot reach this "
                              "run"))
        return error
