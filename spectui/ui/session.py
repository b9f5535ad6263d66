"""What the cockpit is attached to: host, server, log, launch command, and how to follow a log there.

Built by `spectui connect` / `spectui demo` (or by tests from a recorded log). The app's workers are
the only callers of the I/O here; widgets never see a Session.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from spectui.sources.base import ConnState, TailEvent, TailLines, TailState

TailFactory = Callable[[str], AsyncIterator[TailEvent]]


@dataclass
class Session:
    label: str  # shown in the header: "root@gpu1", "local", "demo: silent-override"
    log_path: str | None
    host: Any = None  # sources Host; None for a recorded log replayed from memory
    server: Any = None  # sources.base.ServerProcess when discovered
    launch: Any = None  # core.launch.LaunchCommand of the running server, when known
    sglang_version: str | None = None
    flag_catalogue: Any = None  # (FlagCatalogue, CataloguePick): the host's own flags for a release not shipped
    read_only: bool = False
    server_port: int | None = None
    tail_factory: TailFactory | None = None  # path -> tail events; default: sources LogTail on `host`
    relaunch: Callable[..., Awaitable[Any]] | None = None  # override of ops.relaunch.run (tests)
    probe_gpus: bool = True
    replay: bool = False  # a recorded log: the tail ends, and "last line age" means nothing
    current_pid: int | None = None  # set after a relaunch (the discovered `server` is the old process)
    from_start: bool = False  # read the whole log (a file target: its server_args line and every launch)
    liveness: Any = None  # sources.liveness.LivenessConfig; None = defaults (+ SPECTUI_* env); False = no probes
    group: Any = None  # ui.grouptarget.GroupTarget: this tab is a multi-node / PD server, relaunched whole

    @property
    def pid(self) -> int | None:
        return self.current_pid if self.current_pid is not None else getattr(self.server, "pid", None)

    def open_tail(self, path: str, *, from_start: bool | None = None) -> AsyncIterator[TailEvent]:
        """A tail of `path`: from its start when `from_start` (a relaunch's or a successor's new log: every
        line of the new launch), else as the session reads (a server's log: its end, after a backfill)."""
        if self.tail_factory is not None:
            return self.tail_factory(path)
        from spectui.sources.tail import LogTail

        whole = self.from_start if from_start is None else from_start
        return LogTail(self.host, path, from_start=whole, launch_header=True).__aiter__()


def replay_lines(lines: list[str], *, chunk: int = 0) -> TailFactory:
    """A tail over lines already in memory (a recorded log): yields them, then ends."""

    async def events(_path: str) -> AsyncIterator[TailEvent]:
        yield TailState(ConnState.CONNECTED, "replay")
        step = chunk or max(1, len(lines))
        for i in range(0, len(lines), step):
            yield TailLines(tuple(lines[i : i + step]), i + 1, 0)

    return events


def read_recorded_log(path: str, *, skip_comment_header: bool = True) -> list[str]:
    """Lines of a log file on disk (decoded like a tail does: invalid UTF-8 replaced).

    Corpus files in tests/data start with `# key: value` header lines and a `# ---` separator; those
    are not log lines and are skipped.
    """
    with open(path, "rb") as fh:
        text = fh.read().decode("utf-8", errors="replace")
    lines = text.splitlines()
    if skip_comment_header and "# ---" in lines[:20]:
        lines = lines[lines.index("# ---") + 1 :]
    return lines
