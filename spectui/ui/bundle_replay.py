"""`spectui connect FILE` on an incident bundle: a read-only Session that replays the bundle's log in the
cockpit at its own pace (`speed` times real time, from the lines' timestamps), with the recorded launch
command and SGLang version, so the config panel, diagnoses and plots come back as they were.

No host, no GPU probe, no relaunch: everything comes from the verified bundle in memory.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from spectui.sources.base import ConnState, TailEvent, TailLines, TailState
from spectui.ui.session import Session, TailFactory

MAX_BATCH = 2000  # lines handed over at once when a replay is behind (the dashboard flushes at 2000)
MIN_GAP = 0.05  # seconds between batches, like a tail reading ~20 times a second: a fast replay is not a flood


def timed_tail(events: list[tuple[float, str]], *, clock: Callable[[], float] = time.monotonic,
               sleep: Callable[[float], Any] = asyncio.sleep) -> TailFactory:
    """A tail over (t_offset, line) pairs: each line is yielded once its offset (replay seconds) is due;
    lines already due go together, so a fast replay costs one event per batch, not per line."""

    async def tail(_path: str) -> AsyncIterator[TailEvent]:
        yield TailState(ConnState.CONNECTED, "replay")
        start = clock()
        i, n = 0, len(events)
        while i < n:
            wait = max(events[i][0] - (clock() - start), MIN_GAP if i else 0.0)
            if wait > 0:
                await sleep(wait)
            now = clock() - start
            j = i + 1
            while j < n and j - i < MAX_BATCH and events[j][0] <= now:
                j += 1
            yield TailLines(tuple(line for _, line in events[i:j]), i + 1, 0)
            i = j

    return tail


def launch_of(bundle: Any) -> Any:
    """The recorded launch command as core.launch reads it (None when absent or unreadable)."""
    from spectui.core.launch import parse_command
    from spectui.errors import CommandParseError

    command = bundle.launch_command
    if not command:
        return None
    try:
        return parse_command(command)
    except CommandParseError:
        return None


def replay_session(bundle: Any, *, speed: float = 1.0, clock: Callable[[], float] = time.monotonic) -> Session:
    """A read-only Session replaying `bundle` (a verified spectui.bundle.Bundle) at `speed`."""
    from spectui.core.launch import pick_version

    version = bundle.sglang_version
    if version:
        try:
            pick_version(version)
        except ValueError:
            version = None  # a release spectui has no catalogue for: guessed from the log, as for a file
    events = list(bundle.log_replay(speed if speed > 0 else 0.0))
    label = f"bundle {bundle.path.name}" + (f" ({bundle.target})" if bundle.target else "")
    return Session(label=label, log_path=str(bundle.path), host=None, launch=launch_of(bundle),
                   sglang_version=version, read_only=True, tail_factory=timed_tail(events, clock=clock),
                   probe_gpus=False, replay=True, from_start=True)


def looks_like_archive(path: str) -> bool:
    """A gzip or tar file: read as a bundle (so a damaged or foreign archive gets the bundle's error)."""
    try:
        with open(path, "rb") as f:
            head = f.read(512)
    except OSError:
        return False
    return head[:2] == b"\x1f\x8b" or head[257:262] == b"ustar"


BUNDLE_SUFFIXES = (".tar.gz", ".tgz", ".tar")  # a file so named claims to be a bundle, whatever its bytes


def bundle_file(text: str | None) -> str | None:
    """`text` when it names a local file that is (or claims to be: gzip/tar bytes, or a .tar.gz name) a
    bundle, else None. read_bundle then checks it (manifest, members) and says what is wrong, before
    anything runs: random bytes named x.tar.gz are "not a spectui bundle", never a log to record."""
    from pathlib import Path

    from spectui.bundle import is_bundle

    if not text or text == "-":
        return None
    p = Path(text).expanduser()
    if not p.is_file():
        return None
    claims = p.name.lower().endswith(BUNDLE_SUFFIXES)
    return str(p) if claims or is_bundle(p) or looks_like_archive(str(p)) else None


def replay_if_bundle(args: Any) -> Session | None:
    """For `spectui connect FILE`: the replay Session when args.target is a bundle, else None."""
    path = bundle_file(getattr(args, "target", None))
    return open_replay(path, speed=getattr(args, "speed", None) or 1.0) if path else None


def open_replay(path: str, *, speed: float = 1.0) -> Session:
    """read_bundle + replay_session; BundleError (one line, exit 2) for a file that is not a good bundle."""
    from spectui.bundle import read_bundle

    return replay_session(read_bundle(path), speed=speed)
