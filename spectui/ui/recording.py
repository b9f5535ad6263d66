"""The cockpit's `x`: record an incident bundle of the followed server in a worker (the log keeps flowing),
saved under the XDG state folder (`$XDG_STATE_HOME/spectui/bundles/`), and say where it went."""

from __future__ import annotations

import asyncio
import re
import time
from pathlib import Path
from typing import Any

RECORD_SECONDS = 5.0  # snapshots of /server_info, /metrics and the GPUs taken by `x`


def bundles_folder() -> Path:
    from spectui.ops.history import default_history_path

    return default_history_path().parent / "bundles"


def bundle_name(label: str, when: float) -> str:
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", label).strip("_") or "server"
    return f"{safe}-{time.strftime('%Y%m%d-%H%M%S', time.localtime(when))}.spectui.tar.gz"


async def record_bundle(session: Any, *, folder: Path | None = None, duration: float = RECORD_SECONDS) -> Path:
    """Record the session's server into a bundle file and return its path. Raises SpectuiError."""
    from spectui.bundle import write_bundle
    from spectui.errors import UsageError
    from spectui.ops.recorder import RecordOptions, collect

    if session.host is None:
        raise UsageError("this cockpit replays a recording: there is no live server to record")
    opts = RecordOptions(duration=duration, interval=1.0, pid=session.pid, server_port=session.server_port)
    rec = await collect(session.host, log_path=session.log_path, target=session.label, opts=opts)
    out = (folder or bundles_folder())
    out.mkdir(parents=True, exist_ok=True)
    path = out / bundle_name(session.label, time.time())
    await asyncio.to_thread(write_bundle, path, rec.parts)
    return path


def start_recording(app: Any) -> None:
    """Start `x`'s worker on the app (one at a time); notifications say when it starts and where it saved."""
    if getattr(app, "_recording", False):
        app.notify("a recording is already running", severity="warning")
        return
    if app.session.host is None:
        app.notify("this cockpit replays a recording: there is no live server to record", severity="warning")
        return

    async def work() -> None:
        from spectui.errors import SpectuiError

        app._recording = True
        app.notify(f"recording an incident bundle ({RECORD_SECONDS:g} s of snapshots) …", timeout=4)
        try:
            path = await record_bundle(app.session)
        except (SpectuiError, OSError) as exc:
            app.notify(f"could not record: {exc}", severity="error", timeout=15, markup=False)
        else:
            app.last_bundle = str(path)
            app.notify(f"bundle saved: {path} (secrets masked)", timeout=15, markup=False)
        finally:
            app._recording = False

    app.run_worker(work(), group="record", exclusive=True)
