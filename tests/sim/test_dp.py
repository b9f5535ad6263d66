"""Data parallelism: one scheduler per DP rank, each logging its own tagged lines and metric series."""

from __future__ import annotations

import time

from prometheus_client.parser import text_string_to_metric_families

from spectui.core.log import DecodeSample, LogParser
from tests.sim.conftest import CHAIN3, EAGLE3


def test_dp_attention_ranks_log_and_report_separately(sim_factory) -> None:
    sim = sim_factory([*EAGLE3, *CHAIN3, "--tp-size", "4", "--dp-size", "2", "--enable-dp-attention",
                       "--enable-metrics", "--decode-log-interval", "10", "--sim-traffic", "6",
                       "--sim-time-scale", "50", "--sim-sglang-version", "0.5.6.post2"])
    sim.wait_ready()
    deadline = time.monotonic() + 60
    while not ("DP0 TP0] Decode batch" in sim.text() and "DP1 TP2] Decode batch" in sim.text()):
        assert time.monotonic() < deadline, sim.text()[-2000:]
        time.sleep(0.05)
    with sim.client() as c:
        series = [s for fam in text_string_to_metric_families(c.get("/metrics").text) for s in fam.samples
                  if s.name == "sglang:gen_throughput"]
        info = c.get("/server_info").json()
    assert sim.stop() == 0
    assert sorted((s.labels["dp_rank"], s.labels["tp_rank"]) for s in series) == [("0", "0"), ("1", "2")]
    assert [st["dp_rank"] for st in info["internal_states"]] == [0, 1]
    assert info["tp_size"] == 4 and info["dp_size"] == 2  # ServerArgs field names, not argparse dests
    parser = LogParser()
    decodes = [r for r in parser.feed(sim.lines()) if isinstance(r, DecodeSample)]
    assert {(d.ctx.dp_rank, d.ctx.tp_rank) for d in decodes} == {(0, 0), (1, 2)}
    assert "tp_size=4," in next(line for line in sim.lines() if "server_args=" in line)
    assert sum(sim.text().count(f"DP{d} TP{t}] Load weight end.") for d, t in
               [(0, 0), (0, 1), (1, 2), (1, 3)]) == 8  # target + draft on every rank
