"""One sanitiser on every terminal and JSON output path: core.text's cleaner, property-tested against
hostile text, and `spectui fleet` (table and --json) fed hostile Prometheus labels by a real HTTP server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from http.server import BaseHTTPRequestHandler
from urllib.parse import parse_qs, urlsplit

from hypothesis import given, settings
from hypothesis import strategies as st
from trust_kit import FORBIDDEN, HOSTILE_LINES, forbidden_in, http_server, send

from spectui.core.text import json_text, terminal_safe, terminal_safe_short

# Text mixing printable characters with every introducer and control the cleaner must handle.
# Lone low surrogates only (what surrogateescape leaves of undecodable bytes): a high one followed by a
# low one is a pair, which JSON itself reads back as one character.
_ALPHABET = st.sampled_from(sorted({c for c in FORBIDDEN if not "\ud800" <= c < "\udc00"} | set("ab[]/=;:\\ \t0123456789PX^_]") | {"é", "日"}))
hostile_text = st.one_of(st.text(_ALPHABET, max_size=60), st.sampled_from(HOSTILE_LINES),
                         st.lists(st.sampled_from(HOSTILE_LINES), max_size=4).map("".join))


@settings(max_examples=400, deadline=None, database=None)  # nothing written to the tree
@given(hostile_text)
def test_terminal_safe_never_lets_a_control_through(text: str) -> None:
    for out in (terminal_safe(text), terminal_safe(text, None), terminal_safe_short(text, 30)):
        assert not forbidden_in(out), (text, out)
    assert len(terminal_safe_short(text, 30)) <= 30


@settings(max_examples=400, deadline=None, database=None)  # nothing written to the tree
@given(st.dictionaries(hostile_text, st.one_of(hostile_text, st.lists(hostile_text, max_size=3)), max_size=4))
def test_json_text_is_lossless_and_carries_no_raw_control(obj: dict) -> None:
    out = json_text(obj)
    assert not forbidden_in(out), out
    assert json.loads(out) == obj
    out.encode("utf-8")  # lone surrogates are escaped, so the text can be written


def _fake_prometheus(h: BaseHTTPRequestHandler) -> None:
    """Every query answers a vector whose job/instance labels are the hostile lines, all down."""
    url = urlsplit(h.path)
    if url.path == "/api/v1/targets":
        targets = [{"labels": {"job": line, "instance": line}, "health": "down", "lastError": line,
                    "scrapeUrl": "http://x/metrics"} for line in HOSTILE_LINES]
        body = {"status": "success", "data": {"activeTargets": targets}}
    else:
        query = parse_qs(url.query).get("query", [""])[0]
        name = "up" if query.startswith("up") else "sglang:num_running_reqs"
        result = [{"metric": {"__name__": name, "job": line, "instance": f"{line}:{i}"}, "value": [1, "0"]}
                  for i, line in enumerate(HOSTILE_LINES)]
        body = {"status": "success", "data": {"resultType": "vector", "result": result}}
    send(h, json.dumps(body).encode())


def _fleet(url: str, *extra: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "300", "NO_COLOR": "1"}
    return subprocess.run([sys.executable, "-m", "spectui", "fleet", "--prometheus", url, *extra],
                          capture_output=True, text=True, timeout=60, env=env, errors="surrogateescape")


def test_fleet_table_and_json_show_hostile_labels_as_plain_text() -> None:
    with http_server(_fake_prometheus) as url:
        table = _fleet(url)
        as_json = _fleet(url, "--json")
    assert table.returncode == 1, table.stderr  # every instance down: an error-severity diagnosis
    assert "Traceback" not in table.stderr and "MarkupError" not in table.stderr
    assert not forbidden_in(table.stdout.replace("\n", "")), forbidden_in(table.stdout)
    assert "[/x]" in table.stdout  # markup shown as typed, never interpreted
    assert "[bold red]markup[/bold red]" in table.stdout
    assert "pwned title" not in table.stdout  # an OSC string is removed whole
    assert as_json.returncode == 1, as_json.stderr
    assert not forbidden_in(as_json.stdout.strip()), forbidden_in(as_json.stdout)
    jobs = {i["job"] for i in json.loads(as_json.stdout)["instances"]}
    assert jobs == set(HOSTILE_LINES)  # JSON keeps the data exactly, escaped


def test_fleet_error_from_a_hostile_prometheus_is_one_clean_line() -> None:
    def refuse(h: BaseHTTPRequestHandler) -> None:
        send(h, json.dumps({"status": "error", "errorType": "bad_data",
                            "error": "\x1b]52;c;cHduZWQ=\x07[/x] \x9b2J bad"}).encode(), 400)

    with http_server(refuse) as url:
        out = _fleet(url)
    assert out.returncode == 2 and out.stdout == ""
    assert len(out.stderr.strip().splitlines()) == 1 and not forbidden_in(out.stderr.strip())
    assert "[/x]" in out.stderr and "Traceback" not in out.stderr


def test_report_md_and_json_of_a_hostile_log_carry_no_raw_control(tmp_path) -> None:
    from spectui.bundle import BundleParts, write_bundle

    lines = ["[2025-06-01 10:00:00] server_args=ServerArgs(model_path='/m')", *HOSTILE_LINES[:-1],
             "Traceback (most recent call last):", '  File "/x.py", line 1, in f', "RuntimeError: \x1b]0;t\x07boom"]
    log = ("\n".join(lines) + "\n").encode("utf-8", "surrogateescape")
    path = tmp_path / "h.spectui.tar.gz"
    write_bundle(path, BundleParts(target="local", log=log, created=1748772100.0))
    md = subprocess.run([sys.executable, "-m", "spectui", "report", str(path)], capture_output=True, text=True,
                        timeout=60, errors="surrogateescape")
    js = subprocess.run([sys.executable, "-m", "spectui", "report", str(path), "--format", "json"],
                        capture_output=True, text=True, timeout=60, errors="surrogateescape")
    assert md.returncode == 0 and js.returncode == 0, md.stderr + js.stderr
    assert not forbidden_in(md.stdout.replace("\n", "")), forbidden_in(md.stdout)
    assert "[/x]" in md.stdout and "pwned title" not in md.stdout
    assert not forbidden_in(js.stdout.replace("\n", "")), forbidden_in(js.stdout)
    excerpt = json.loads(js.stdout)["excerpt"]["text"]
    assert "\x1b]52;c;" in excerpt  # JSON keeps the data, escaped


def test_check_json_of_a_hostile_log_carries_no_raw_control(tmp_path) -> None:
    log = tmp_path / "server.log"
    # The parser strips escape sequences; C1 controls and bidi marks in values and messages remain data.
    lines = ["[2025-06-01 10:00:00] server_args=ServerArgs(model_path='/m\u202egnp\x85x', speculative_algorithm='EAGLE3')",
             *(f"[2025-06-01 10:00:01] WARNING {line}" for line in HOSTILE_LINES),
             "Traceback (most recent call last):", '  File "/x\u202e.py", line 1, in f',
             "RuntimeError: \x9b2J\x1b]0;t\x07boom\x85 \u2066x\u2069"]
    log.write_bytes(("\n".join(lines) + "\n").encode("utf-8", "surrogateescape"))
    out = subprocess.run([sys.executable, "-m", "spectui", "check", str(log), "--json"], capture_output=True,
                         text=True, timeout=60, errors="surrogateescape")
    assert out.returncode in (0, 1), out.stderr
    assert not forbidden_in(out.stdout.strip()), forbidden_in(out.stdout)
    assert forbidden_in(json.dumps(json.loads(out.stdout), ensure_ascii=False))  # they are there, escaped
