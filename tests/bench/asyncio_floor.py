"""The least a Python supervisor built on asyncio can do with a flood: start one command,
read its pipe on an event loop, and write each chunk out with a ``name | `` before every
line. No config, no journal, no buffer, no control socket. Its time is the floor under
``proctui run --headless`` on the same machine (bench.py scenario 1 prints both).

    python tests/bench/asyncio_floor.py COMMAND... > /dev/null
"""

import asyncio
import os
import subprocess
import sys


async def main(argv: list[str]) -> None:
    r, w = os.pipe()
    child = subprocess.Popen(argv, stdout=w, stderr=w)
    os.close(w)
    loop = asyncio.get_running_loop()
    done = loop.create_future()
    out = sys.stdout.buffer
    prefix = b"seq | "
    between = b"\n" + prefix

    def readable() -> None:
        chunk = os.read(r, 1 << 18)
        if not chunk:
            loop.remove_reader(r)
            done.set_result(None)
            return
        out.write(prefix + chunk[:-1].replace(b"\n", between) + chunk[-1:])

    loop.add_reader(r, readable)
    await done
    child.wait()
    out.flush()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
