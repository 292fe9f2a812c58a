"""Small child programs for the tests, as python -c source."""

# Exits 0 on SIGTERM, after printing "ready" once its handler is in place.
POLITE = (
    "import signal,sys,time\n"
    "signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))\n"
    "print('ready', flush=True)\n"
    "while True: time.sleep(0.05)\n"
)

# Ignores SIGTERM; only SIGKILL ends it.
STUBBORN = (
    "import signal,time\n"
    "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    "print('ready', flush=True)\n"
    "while True: time.sleep(0.05)\n"
)

# Takes SECONDS to shut down after SIGTERM, then exits 0.
SLOW = (
    "import signal,sys,time\n"
    "def bye(*a):\n"
    "    time.sleep({seconds}); sys.exit(0)\n"
    "signal.signal(signal.SIGTERM, bye)\n"
    "print('ready', flush=True)\n"
    "while True: time.sleep(0.05)\n"
)
