"""check's worker process (checkpar) counts every other chunk; the result equals one process and line-by-line."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_logparse_bulk import make_log  # same directory (pytest puts it on sys.path)

from spectui.commands.check import par as checkpar
from spectui.commands.check.scan import check_stream
from spectui.core.log import Pipeline


@pytest.fixture
def small_threshold(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(checkpar, "PARALLEL_MIN_BYTES", 1 << 20)  # the real threshold is 64 MB


@pytest.mark.parametrize(("seed", "at_newline"), [(11, False), (12, True)])
def test_parallel_equals_one_process_and_line_by_line(tmp_path: Path, small_threshold: None, seed: int,
                                                      at_newline: bool) -> None:
    data = make_log(seed, 20_000)
    chunk = 256 << 10
    if at_newline:  # a chunk boundary right after a newline: the next chunk has no partial line to skip
        chunk = data.index(b"\n", 200_000) + 1
    path = tmp_path / "server.log"
    path.write_bytes(data)
    with open(path, "rb") as f:
        par = check_stream(f, chunk_size=chunk, steal=False)
    with open(path, "rb") as f:
        shared = check_stream(f, chunk_size=chunk)  # split where the two processes meet
    with open(path, "rb") as f:
        one = check_stream(f, chunk_size=chunk, parallel=False)
    assert par.parallel_chunks == (len(data) - 1) // chunk  # the worker counted every chunk but the first
    assert one.parallel_chunks == 0
    assert par.to_json() == one.to_json() == shared.to_json()
    slow = Pipeline()  # line by line, check's window
    slow.feed_bytes(data)
    slow.finish()
    assert {k.value: v for k, v in slow.parser.counts.items()} == par.to_json()["records"]
    assert slow.parser.lines_seen == par.lines
    assert [(s.launch_first_line, s.samples, s.accept_len, s.gen_tokens_per_s) for s in slow.metrics.snapshot_all()] \
        == [(s.launch_first_line, s.samples, s.accept_len, s.gen_tokens_per_s) for s in par.launches]
    assert checkpar.WORKERS and not any(_alive(pid) for pid in checkpar.WORKERS)  # the workers are gone


def test_no_worker_for_stdin_small_files_or_a_read_position(tmp_path: Path) -> None:
    path = tmp_path / "server.log"
    path.write_bytes(make_log(3, 200))
    with open(path, "rb") as f:
        assert checkpar.parallel_for(f, 1 << 16) is None  # under 64 MB
    assert checkpar.parallel_for(io.BytesIO(b"x" * 100), 1 << 16) is None  # no file descriptor


def test_worker_result_for_another_region_is_not_used(tmp_path: Path, small_threshold: None) -> None:
    data = make_log(4, 20_000)
    path = tmp_path / "server.log"
    path.write_bytes(data)
    chunk = 256 << 10
    with open(path, "rb") as f:
        seg = checkpar.parallel_for(f, chunk, steal=False)  # always wait for the worker's result
        assert seg is not None
        try:
            first = data[chunk : 2 * chunk]
            seg.start_chunk(1, first)
            begin = first.index(b"\n") + 1
            end = first.rindex(b"\n") + 1
            assert seg(first, begin, end - 1) is None  # other bounds: counted here instead
            seg.start_chunk(3, data[3 * chunk : 4 * chunk])
            assert seg(data[:10], 0, 10) is None  # not the chunk being fed
            third = data[3 * chunk : 4 * chunk]
            seg.start_chunk(3, third)
            got = seg(third, third.index(b"\n") + 1, third.rindex(b"\n") + 1)
            from spectui.core.log import segments

            assert got == segments(third, third.index(b"\n") + 1, third.rindex(b"\n") + 1)
            assert seg.used == 1
        finally:
            seg.close()


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"  # a zombie has exited (this sandbox's init may reap it late)


def test_worker_does_not_outlive_a_killed_check(tmp_path: Path) -> None:
    path = tmp_path / "server.log"
    path.write_bytes(make_log(5, 2000))
    script = (
        "import os, sys, time\n"
        "from spectui.commands.check import par\n"
        "par.chunk_segments = lambda *a: time.sleep(60)  # keep the worker busy on its first chunk\n"
        "f = open(sys.argv[1], 'rb')\n"
        "seg = par.ParallelSegments(f.fileno(), os.fstat(f.fileno()).st_size, 4096)\n"
        "print(seg.pid, flush=True)\n"
        "time.sleep(60)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", script, str(path)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    (worker,) = map(int, proc.stdout.readline().split())
    assert _alive(worker)
    proc.kill()  # SIGKILL: no finally, no atexit in check; the kernel tells the worker (PR_SET_PDEATHSIG)
    proc.wait()
    for _ in range(100):
        if not _alive(worker):
            break
        time.sleep(0.05)
    gone = not _alive(worker)
    if not gone:
        os.kill(worker, signal.SIGKILL)  # never leave it behind, even when the test fails
    assert gone
