"""Output: our own line splitting, the ring buffer, and real children that print oddly."""

from __future__ import annotations

import random
import time

import pytest

from proctui.core.output.events import Dropped, EventQueue, Output
from proctui.core.output.lines import Chunk, LineSplitter, OutputBuffer, Stream
from proctui.core.supervisor import Supervisor
from tests.conftest import all_ended, pyspec, spec, wait_until


def split_all(chunks: list[bytes], max_len: int = 8192) -> tuple[list[str], str]:
    s = LineSplitter(max_len)
    out: list[str] = []
    for chunk in chunks:
        out += s.feed(chunk)
    partial = s.partial
    out += s.finish()
    return out, partial


def test_newlines_and_crlf():
    assert split_all([b"a\nb\r\nc\n"])[0] == ["a", "b", "c"]
    assert split_all([b"a\r", b"\nb\n"])[0] == ["a", "b"]  # CRLF split across chunks
    assert split_all([b"\n\n"])[0] == ["", ""]  # empty lines are lines
    assert split_all([b"no newline at the end"])[0] == ["no newline at the end"]


def test_lone_cr_replaces_the_current_line():
    lines, partial = split_all([b"progress 10%\r", b"progress 50%\r", b"progress 100%\n"])
    assert lines == ["progress 100%"]
    lines, partial = split_all([b"a 1%\ra 2%\ra 3%"])
    assert partial == "a 3%"
    assert lines == ["a 3%"]
    # the text before \r stays on display until something replaces it
    s = LineSplitter()
    s.feed(b"working 42%\r")
    assert s.partial == "working 42%"
    assert s.feed(b"done\n") == ["done"]


def test_invalid_utf8_is_replaced_and_split_characters_survive_chunking():
    data = "héllo wörld €\n".encode()
    for cut in range(1, len(data)):
        assert split_all([data[:cut], data[cut:]])[0] == ["héllo wörld €"]
    assert split_all([b"bad \xff\xfe bytes\n"])[0] == ["bad \ufffd\ufffd bytes"]


def test_long_lines_are_cut_without_losing_anything():
    line = "".join(random.choice("abcdefgh") for _ in range(1_000_000))
    chunks = [line[i : i + 65536].encode() for i in range(0, len(line), 65536)]
    lines, _ = split_all(chunks, max_len=8192)
    assert all(len(piece) <= 8192 for piece in lines)
    assert "".join(lines) == line


@pytest.mark.parametrize("seed", range(10))
def test_one_long_line_among_short_ones_is_cut_wherever_it_falls(seed):
    """Long lines are found from a few places of a chunk (every max_len-th character),
    not from every line's length: one line of max_len + 1 anywhere among short ones,
    starting or ending a chunk or not, is still cut."""
    rng = random.Random(seed)
    limit = rng.choice([8, 13, 64])
    lines = ["x" * rng.randint(0, limit) for _ in range(300)]
    lines[rng.randrange(300)] = "L" * (limit + 1)
    data = "".join(line + "\n" for line in lines).encode()
    cuts = sorted(rng.sample(range(1, len(data)), 5))
    chunks = [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)]
    got, _ = split_all(chunks, max_len=limit)
    assert all(len(piece) <= limit for piece in got)
    assert "L" * limit in got and "L" in got


@pytest.mark.parametrize("seed", range(20))
def test_splitting_is_independent_of_chunk_boundaries(seed):
    rng = random.Random(seed)
    alphabet = [b"a", b"b", b"\n", b"\r\n", b"\xc3\xa9", b"x" * 50]
    data = b"".join(rng.choice(alphabet) for _ in range(400))
    whole = split_all([data], max_len=80)[0]
    cuts = sorted(rng.sample(range(1, len(data)), 20))
    pieces = [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)]
    assert split_all(pieces, max_len=80)[0] == whole
    # With no lone \r, nothing is dropped: the text comes back whole, and cutting long
    # lines into pieces loses no character between them.
    text = data.decode().replace("\r\n", "\n")
    uncut = split_all([data], max_len=100_000)[0]
    assert "\n".join(uncut) == (text[:-1] if text.endswith("\n") else text)
    assert "".join(whole) == "".join(uncut)


@pytest.mark.parametrize("returns", [False, True])
@pytest.mark.parametrize("seed", range(30))
def test_a_chunk_holds_the_same_lines_as_the_list(seed, returns):
    """The pipes read with feed_chunk, which keeps plain lines as one text: after every
    chunk it gives the lines, and leaves the partial line, that feed does; with lone
    carriage returns, CRLF cut in two, long lines, characters cut between chunks."""
    rng = random.Random(seed)
    alphabet = [b"a", b"bc", b"\n", b"\n", b"\xc3\xa9", b"\xff", b"x" * rng.choice([3, 20, 70])]
    if returns:
        alphabet += [b"\r\n", b"\r", b"\r"]
    data = b"".join(rng.choice(alphabet) for _ in range(600))
    limit = rng.choice([8, 40, 80, 100_000])
    cuts = sorted(rng.sample(range(1, len(data)), rng.randint(1, 12)))
    pieces = [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)]
    by_list, by_chunk = LineSplitter(limit), LineSplitter(limit)
    fast = 0
    for piece in pieces:
        chunk = by_chunk.feed_chunk(piece)
        fast += chunk._lines is None
        assert chunk.lines == by_list.feed(piece)
        assert len(chunk) == len(chunk.lines) and bool(chunk) == bool(chunk.lines)
        assert by_chunk.partial == by_list.partial
    assert by_chunk.finish() == by_list.finish()
    if limit > 80 and not returns:
        assert fast > 0  # the quick way was taken, and gave the same lines


def test_a_chunk_after_a_carriage_return_ending_the_last():
    s = LineSplitter()
    s.feed_chunk(b"working 42%\r")
    assert s.feed_chunk(b"done\nnext\n").lines == ["done", "next"]  # "done" replaced it
    s.feed_chunk(b"last\r")
    assert s.feed_chunk(b"\nafter\n").lines == ["last", "after"]  # a CRLF cut in two


def test_a_chunk_is_split_only_where_asked():
    chunk = Chunk(text="a\nb\n\nd", count=4)
    assert chunk.tail(2) == ["", "d"] and chunk._lines is None  # the rest stays one text
    assert chunk.tail(9) == ["a", "b", "", "d"] == chunk.lines
    assert Chunk(text="", count=1).lines == [""]  # one empty line is a line
    assert Chunk(text="", count=0).lines == [] and not Chunk(text="", count=0)
    assert Chunk(["x", "y"]).text == "x\ny" and Chunk(["x", "y"]).tail(1) == ["y"]
    looked = Chunk(text="a\nb", count=2)
    assert looked.split() == ["a", "b"] and looked._lines is None  # one copy in a queue
    assert looked.tail(5) == ["a", "b"] and looked._lines is None  # the ring's, not ours


def test_a_buffer_keeps_the_last_lines_of_a_chunk_bigger_than_itself():
    lines = [f"line {i}" for i in range(250)]
    by_list, by_chunk = OutputBuffer(capacity=100), OutputBuffer(capacity=100)
    for start in (0, 30, 230):
        piece = lines[start:start + 150]
        by_list.append(Stream.STDOUT, piece, "p")
        by_chunk.append(Stream.STDOUT, Chunk(text="\n".join(piece), count=len(piece)), "p")
        assert by_chunk.total == by_list.total
        assert by_chunk.output_total == by_list.output_total
        assert by_chunk.read(0) == by_list.read(0)
        if len(piece) >= 100:
            assert by_chunk.read(0).lines[0] == piece[-100]
    assert by_chunk.total == 150 + 150 + 20
    assert by_chunk.read(0).lines[-1] == "line 249"


@pytest.mark.parametrize("seed", range(20))
def test_chunks_left_unsplit_read_as_lists_would(seed):
    """Chunks wait unsplit until someone reads: whatever mix of chunks and lists, small
    or bigger than the ring, cleared or not, with reads anywhere between, every read and
    every count is what a buffer fed the same lines as lists gives."""
    rng = random.Random(seed)
    capacity = rng.choice([1, 5, 50, 64, 200])
    lazy, eager = OutputBuffer(capacity), OutputBuffer(capacity)
    n = 0
    for _ in range(rng.randint(1, 80)):
        roll = rng.random()
        if roll < 0.05:
            lazy.clear()
            eager.clear()
            continue
        stream = rng.choice([Stream.STDOUT, Stream.STDERR, Stream.PROCTUI])
        lines = [f"{n + k}" for k in range(rng.choice([0, 1, 3, capacity - 1, capacity,
                                                        capacity + 1, 3 * capacity]))]
        n += len(lines)
        piece = Chunk(text="\n".join(lines), count=len(lines)) if roll < 0.8 else lines
        lazy.append(stream, piece, f"p{n}")
        eager.append(stream, list(lines), f"p{n}")
        assert (lazy.total, lazy.output_total, lazy.first, len(lazy)) == \
            (eager.total, eager.output_total, eager.first, len(eager))
        assert lazy.mark() == eager.mark()
        waiting = lazy._pending_count - (lazy._pending[0][1].count if lazy._pending else 0)
        assert waiting < capacity, "what waits unsplit is about one ring's worth"
        if rng.random() < 0.3:
            start = rng.randint(0, n + 1)
            count = rng.choice([None, 1, 7, capacity])
            assert lazy.read(start, count) == eager.read(start, count)
    assert lazy.read(0) == eager.read(0)


def test_a_flood_nobody_reads_is_not_split():
    buf = OutputBuffer(capacity=100)
    chunks = [Chunk(text="\n".join(f"{i}-{j}" for j in range(500)), count=500)
              for i in range(20)]
    for chunk in chunks:
        buf.append(Stream.STDOUT, chunk)
    assert not buf._lines  # nobody split them: a read does, the last 100 lines only
    assert buf.total == 10_000 and len(buf) == 100
    assert buf.read(9_998).lines == ["19-498", "19-499"]


def test_ring_buffer_is_bounded_and_counts_everything():
    buf = OutputBuffer(capacity=100)
    for i in range(10):
        buf.append(Stream.STDOUT, [f"{i}-{j}" for j in range(30)])
    assert buf.total == 300
    assert len(buf) == 100
    got = buf.read(0)
    assert got.first == 200 and got.dropped == 200
    assert got.lines[0] == "6-20" and got.lines[-1] == "9-29"
    tail = buf.read(295)
    assert tail.lines == [f"9-{j}" for j in range(25, 30)]
    assert buf.read(300).lines == []
    window = buf.read(250, 3)
    assert window.lines == ["8-10", "8-11", "8-12"]
    buf.clear()
    assert buf.read(0).lines == [] and buf.total == 300


@pytest.mark.parametrize("seed", range(5))
def test_every_window_of_the_ring_reads_the_same_from_either_end(seed):
    """A window near the newest line is read walking from that end (a following reader
    must not walk a million lines each frame): every window, near either end, across
    the middle, cut by the oldest line kept or by a clear, reads what a list would."""
    rng = random.Random(seed)
    buf = OutputBuffer(capacity=rng.choice([7, 50, 64, 65, 200]))
    every: list[tuple[str, int]] = []
    for _ in range(rng.randint(5, 40)):
        stream = rng.choice([Stream.STDOUT, Stream.STDERR, Stream.PROCTUI])
        lines = [f"{len(every) + k}" for k in range(rng.randint(0, 12))]
        buf.append(stream, lines)
        every += [(line, stream) for line in lines]
    cleared = 0
    if rng.random() < 0.3:
        buf.clear()
        cleared = len(every)
        every += [(f"{len(every) + k}", Stream.STDOUT) for k in range(30)]
        buf.append(Stream.STDOUT, [line for line, _ in every[cleared:]])
    oldest = max(len(every) - buf.capacity, cleared)
    for start in range(0, len(every) + 2):
        for count in (None, 0, 1, 3, 40, 1000):
            got = buf.read(start, count)
            first = max(start, oldest)
            end = len(every) if count is None else min(len(every), max(start + count, first))
            want = every[first:end] if first < end else []
            assert got.lines == [line for line, _ in want], (start, count)
            assert got.streams == [stream for _, stream in want], (start, count)
            assert got.first == (first if want else max(first, start))


def test_event_queue_drops_beyond_its_budget_and_says_so():
    q = EventQueue(budget=4000, stall=0)  # a reader that is not taking anything
    for _ in range(50):
        assert q.put_output("flood", 1, Chunk(["x" * 99]))
    events = q.get(0)
    kept = sum(len(e.lines) for e in events if isinstance(e, Output))
    dropped = sum(e.count for e in events if isinstance(e, Dropped))
    assert kept + dropped == 50 and dropped > 0


def test_event_queue_paces_output_while_its_reader_takes_and_drops_once_it_stalls():
    now = [0.0]
    q = EventQueue(budget=4000, stall=2.0, clock=lambda: now[0])
    called: list[str] = []
    results = [q.put_output("flood", 1, Chunk(["x" * 99])) for _ in range(50)]
    assert results[0] and not all(results)  # over the budget: "read no more of it"
    q.when_room(lambda: called.append("room"))
    assert not called and not q.stalled()
    now[0] = 1.0
    events = q.get(0)
    assert called == ["room"]  # the reader took it: read on
    assert sum(len(e.lines) for e in events if isinstance(e, Output)) == 50
    q.when_room(lambda: called.append("at once"))
    assert called == ["room", "at once"]  # nothing queued: room already
    for _ in range(50):
        q.put_output("flood", 1, Chunk(["x" * 99]))
    now[0] = 3.0  # two seconds since the reader last took anything
    assert q.stalled()
    assert q.put_output("flood", 1, Chunk(["x" * 99]))  # dropped, counted, not paced
    events = q.get(0)
    assert [e.count for e in events if isinstance(e, Dropped)] == [1]


def test_real_child_invalid_utf8_and_stderr(harness):
    code = (
        "import sys\n"
        "sys.stdout.buffer.write(b'ok \\xff\\xfe end\\n'); sys.stdout.flush()\n"
        "sys.stderr.write('to stderr\\n')\n"
    )
    h = harness([pyspec("odd", code)])
    h.outcome("odd")
    got = h.sup.output.buffer("odd").read(0)
    pairs = [(line, stream) for line, stream in zip(got.lines, got.streams, strict=True)
             if stream != Stream.PROCTUI]
    assert ("ok \ufffd\ufffd end", Stream.STDOUT) in pairs
    assert ("to stderr", Stream.STDERR) in pairs


def test_real_child_megabyte_line_without_newline(harness):
    code = "import sys; sys.stdout.write('y' * 1_000_000); sys.stdout.flush()"
    h = harness([pyspec("big", code, max_line_length=10_000)])
    h.outcome("big")
    h.wait_all_ended()
    lines = h.output("big")
    assert len(lines) == 100
    assert "".join(lines) == "y" * 1_000_000


def test_real_child_progress_bar(harness):
    code = (
        "import sys\n"
        "for i in range(0, 101, 10):\n"
        "    sys.stdout.write(f'\\rprogress {i}%'); sys.stdout.flush()\n"
        "print()\nprint('done')\n"
    )
    h = harness([pyspec("bar", code)])
    h.outcome("bar")
    h.wait_all_ended()
    assert h.output("bar") == ["progress 100%", "done"]


def test_a_flood_waits_for_a_reader_that_keeps_reading():
    """A reader slower than the flood but steady misses nothing: the flooding process is
    not read while the queue is over its budget (it waits on its full pipe), and is read
    again once the reader has taken what was queued: what waits stays about the budget
    (a chunk over it per process), not the whole flood."""
    events = EventQueue(budget=200_000)
    sup = Supervisor([spec("flood", "seq 1 1000000")], events=events)
    got: list[object] = []
    sup.start()
    try:
        while True:
            ended = sup.snapshot().all_ended
            taken = events.get(0.05)
            assert sum(isinstance(e, Output) for e in taken) <= 8  # (read_now: a pipeful)
            got += taken
            if ended:
                break
            time.sleep(0.02)  # a reader that takes its time
        assert not [e for e in got if isinstance(e, Dropped)]
        lines = [line for e in got if isinstance(e, Output) for line in e.lines.lines]
        assert lines == [str(i) for i in range(1, 1_000_001)]
    finally:
        sup.close()


@pytest.mark.slow
def test_a_flood_is_not_blocked_by_a_reader_that_never_reads():
    # 2,000,000 lines (more than a pipe holds), an event queue nobody drains: paced at
    # first, the child is read on once the reader is found stalled (2 s), so it still
    # finishes, and what did not fit is counted, not silently lost.
    events = EventQueue(budget=500_000)
    sup = Supervisor([spec("flood", "seq 1 2000000")], events=events)
    sup.start()
    try:
        wait_until(lambda: all_ended(sup), timeout=30, what="the flood to end")
        ((_, outcome),) = sup.snapshot().final()
        assert outcome.text == "exited: exit code 0"
        buf = sup.output.buffer("flood")
        # The outcome's line follows the snapshot that shows the end (words after the
        # state they speak of), so it may land a moment after all_ended is seen.
        wait_until(lambda: buf.total >= 2000000 + 2, timeout=10, what="the outcome's line")
        assert buf.total == 2000000 + 2  # the lines and proctui's "started" and outcome
        got = events.get(0)
        kept = sum(len(e.lines) for e in got if isinstance(e, Output))
        dropped = sum(e.count for e in got if isinstance(e, Dropped))
        assert kept + dropped == 2000000 and dropped > 0
    finally:
        sup.close()


def test_the_last_n_lines_of_logs_are_the_processes_own_not_proctuis_markers():
    """``logs crasher -n 3`` printed 1 line of the 7 it had: proctui's marker lines
    (started, ended) counted toward the 3 and were not printed."""
    import asyncio

    from proctui.protocol.link import Tail
    from proctui.remote.pages import tail_page

    buf = OutputBuffer(capacity=100)
    for run in range(3):
        buf.append(Stream.PROCTUI, [f"── started (pid {run})"])
        buf.append(Stream.STDOUT, [f"run {run} line a", f"run {run} line b"])
        buf.append(Stream.PROCTUI, [f"── exited: exit code 3 (run {run})"])
    page = asyncio.run(tail_page(buf, Tail("crasher", lines=3)))
    own = [line for line, stream in zip(page.lines, _streams(page), strict=True)
           if stream != Stream.PROCTUI]
    assert own == ["run 1 line b", "run 2 line a", "run 2 line b"], page.lines
    # More asked for than the scrollback holds: all of it, from the oldest line kept.
    page = asyncio.run(tail_page(buf, Tail("crasher", lines=50)))
    assert page.first == 0 and len(page.lines) == 12


def _streams(page) -> list[int]:  # type: ignore[no-untyped-def]
    out: list[int] = []
    for stream, count in page.runs:
        out += [stream] * count
    return out
