"""`spectui fleet` against a real Prometheus scraping real simulators (fixture in conftest.py)."""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import time

import pytest

from spectui.commands import fleet as fleet_cmd

pytestmark = pytest.mark.timeout(90)


def run_fleet(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    parser = argparse.ArgumentParser(prog="spectui fleet")
    fleet_cmd.add_arguments(parser)
    code = fleet_cmd.run(parser.parse_args(list(argv)))
    out, err = capsys.readouterr()
    return code, out, err


def one_line_error(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    assert lines[0].startswith("spectui fleet: ")
    return lines[0]


def test_json_ranks_worst_first_and_matches_each_log(fleet, capsys) -> None:
    code, out, err = run_fleet(capsys, "--prometheus", fleet.url, "--json", "--window", "3s")
    doc = json.loads(out)
    assert doc["prometheus"] == fleet.url
    insts = doc["instances"]
    by = {i["instance"]: i for i in insts}
    healthy, low, nospec = (fleet.sims[n] for n in ("healthy", "low", "nospec"))
    dead = f"127.0.0.1:{fleet.dead_port}"
    # only job "sglang" (Prometheus's own target is no SGLang server); down first, then low, healthy, no spec
    assert [i["instance"] for i in insts] == [dead, low.instance, healthy.instance, nospec.instance], insts
    assert {i["job"] for i in insts} == {"sglang"}
    for inst in insts:
        assert set(inst) >= {"instance", "job", "accept_len", "accept_rate", "gen_tokens_per_s", "running",
                             "queued", "speculative", "diagnoses"}
    assert code == 1  # the down target is an error-severity diagnosis

    # the down target: nothing measured, FLEET001 with Prometheus's scrape error
    d = by[dead]
    assert d["up"] is False and d["accept_len"] is None and d["speculative"] is False
    assert d["diagnoses"][0]["rule"] == "FLEET001" and d["diagnoses"][0]["severity"] == "error"
    assert "refused" in d["diagnoses"][0]["message"]

    # speculative flags and accept lengths against the simulators' own logs
    for sim in (healthy, low):
        got = by[sim.instance]
        logged = sim.accept_lens()[-30:]
        assert len(logged) >= 10, sim.text()[-2000:]
        assert got["speculative"] is True
        assert min(logged) - 0.05 <= got["accept_len"] <= max(logged) + 0.05, (got, logged)
        assert abs(got["accept_len"] - statistics.mean(logged)) < 0.3
        assert 0 < got["accept_rate"] <= 1
        assert got["gen_tokens_per_s"] > 0 and got["running"] > 0
    assert by[healthy.instance]["accept_len"] > 2.5 and by[healthy.instance]["ceiling"] == 4  # 0.5.23: steps known
    assert by[low.instance]["accept_len"] < 1.4 and by[low.instance]["ceiling"] is None  # 0.5.6: no spec_num_steps
    assert by[healthy.instance]["diagnoses"] == []
    low_cats = {x["category"] for x in by[low.instance]["diagnoses"]}
    assert "low-accept-length" in low_cats
    assert "capacity" in low_cats  # 48 running (spec's default cap), queue never emptied over 3s

    n = by[nospec.instance]
    assert nospec.accept_lens() == [] and nospec.decode_lines() > 5  # decodes, no accept len in its log
    assert n["speculative"] is False and n["accept_len"] is None and n["accept_rate"] is None
    assert n["gen_tokens_per_s"] > 0
    assert [x["rule"] for x in n["diagnoses"]] == ["FLEET003"]
    assert n["diagnoses"][0]["severity"] == "info" and n["diagnoses"][0]["category"] == "other"


def test_selector_and_no_spec_instance(fleet, capsys) -> None:
    nospec = fleet.sims["nospec"]
    code, out, err = run_fleet(capsys, "--prometheus", fleet.url, "--selector", f'{{instance="{nospec.instance}"}}')
    assert code == 0, err
    assert nospec.instance in out
    assert "no speculative" in out.lower() and "speculative decoding is off" in out
    code, out, _ = run_fleet(capsys, "--prometheus", fleet.url, "--json", "--selector", f'instance="{nospec.instance}"')
    doc = json.loads(out)
    assert [(i["instance"], i["speculative"], i["accept_len"]) for i in doc["instances"]] == [
        (nospec.instance, False, None)]
    assert code == 0


def test_human_table_and_baseline(fleet, capsys) -> None:
    healthy = fleet.sims["healthy"]
    code, out, err = run_fleet(capsys, "--prometheus", fleet.url, "--selector", 'job="sglang"',
                               "--baseline", f"{healthy.instance}=100000000")
    assert code == 1
    lines = out.splitlines()
    rows = [ln for ln in lines if ln.startswith("127.0.0.1:")]
    assert len(rows) == 4 and "DOWN" in rows[0]
    assert "Speculation is slower than no speculation" in out  # healthy, against an impossible baseline
    assert "Traceback" not in err
    header = next(ln for ln in lines if ln.startswith("instance"))
    assert "x base" in header
    (row,) = [ln for ln in rows if ln.startswith(healthy.instance)]
    # a decode speed of ~10,000 (the simulator at --sim-time-scale 20, one clock: #23) against 100,000,000
    assert "0.00x" in row.split()
    code, out, _ = run_fleet(capsys, "--prometheus", fleet.url, "--selector", 'job="sglang"')
    assert "x base" not in out  # no baseline, no column


def test_watch_is_bounded(fleet, capsys) -> None:
    start = time.monotonic()
    code, out, err = run_fleet(capsys, "--prometheus", fleet.url, "--json", "--watch", "--interval", "0.5",
                               "--duration", "1.6", "--selector", f'instance="{fleet.sims["healthy"].instance}"')
    elapsed = time.monotonic() - start
    docs = [json.loads(line) for line in out.splitlines()]
    assert len(docs) >= 3 and elapsed < 5, (elapsed, err)
    assert all(d["instances"][0]["speculative"] for d in docs)
    assert code == 0


def test_selector_matching_nothing(fleet, capsys) -> None:
    code, out, err = run_fleet(capsys, "--prometheus", fleet.url, "--selector", 'job="no-such-job"')
    assert code == 2 and out == ""
    line = one_line_error(err)
    assert "matches no scrape target" in line and "prometheus, sglang" in line


def test_malformed_selector(fleet, capsys) -> None:
    code, _, err = run_fleet(capsys, "--prometheus", fleet.url, "--selector", "job=")
    assert code == 2
    assert "rejects the query" in one_line_error(err)


def test_url_that_is_not_prometheus(fleet, capsys) -> None:
    code, _, err = run_fleet(capsys, "--prometheus", fleet.sims["healthy"].instance)  # an SGLang server
    assert code == 2
    assert "does not look like a Prometheus server" in one_line_error(err)


def test_credentials_in_the_url_reach_prometheus_and_are_never_printed(fleet, capsys) -> None:
    """`http://user:pw@prom:9090` (Prometheus behind basic auth): the query goes out with the credentials,
    the JSON and every message show `user:***@`."""
    authed = fleet.url.replace("http://", "http://ops:s3cret-pw@")
    code, out, err = run_fleet(capsys, "--prometheus", authed, "--json")
    assert code in (0, 1), err
    assert json.loads(out)["prometheus"] == fleet.url.replace("http://", "http://ops:***@")
    assert "s3cret-pw" not in out + err
    down = "http://ops:s3cret-pw@127.0.0.1:9"
    code, out, err = run_fleet(capsys, "--prometheus", down)
    assert code == 1 and "s3cret-pw" not in out + err and "ops:***@127.0.0.1:9" in one_line_error(err)


def test_prometheus_down(capsys) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed once the socket is
    for extra in ((), ("--json",), ("--watch", "--duration", "1")):
        code, out, err = run_fleet(capsys, "--prometheus", f"http://127.0.0.1:{port}", *extra)
        assert code == 1 and out == ""
        assert "cannot reach Prometheus" in one_line_error(err) and "connection refused" in err
