"""`spectui watch` on a server killed with SIGKILL (#24): after its `health` event says gone, a CRASH008
diagnosis says it was killed (no shutdown line, no traceback: often the OOM killer) and which dmesg /
journalctl command to run. Real simulator, real CLI process, real kill -9."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

from ops_simlab import SEED_FLAGS, SimLab, wait_health


def test_watch_says_a_killed_server_was_killed_and_where_to_look(lab: SimLab) -> None:
    pid = lab.start(SEED_FLAGS, env={"SPECTUI_SIM_TIME_SCALE": "40"})
    wait_health(lab.port)
    env = {**os.environ, "SPECTUI_HEALTH_INTERVAL": "0.3"}
    watch = subprocess.Popen([sys.executable, "-m", "spectui.cli", "watch", "local", "--pid", str(pid), "--jsonl",
                              "--duration", "25"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    assert watch.stdout is not None
    events: list[dict] = []
    killed = False
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        line = watch.stdout.readline()
        if not line:
            break
        ev = json.loads(line)
        events.append(ev)
        if not killed and ev["type"] == "health" and ev["state"] == "healthy":
            os.killpg(pid, signal.SIGKILL)  # kill -9: no shutdown line, no traceback
            killed = True
        if ev["type"] == "diagnosis" and ev.get("rule") == "CRASH008":
            break
    watch.kill()
    watch.wait()
    assert killed, events[-5:]
    gone = next(i for i, e in enumerate(events) if e["type"] == "health" and e["state"] == "gone")
    crash = [e for e in events[gone:] if e["type"] == "diagnosis" and e.get("rule") == "CRASH008"]
    assert crash, events[-5:]
    assert "dmesg -T | grep -i -E 'killed process|out of memory'" in json.dumps(crash[0])
    assert not [e for e in events[:gone] if e.get("rule") == "CRASH008"]  # not before the probe saw it gone
