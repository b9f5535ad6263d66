"""The fleet test bed (perf/fleetbed: a synthetic exporter of SGLang's families, a real Prometheus) at a
small N: a target that exports no SGLang family is not an instance, whatever job it sits in (#29)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest
from bed import start_bed  # noqa: E402

from spectui.commands import fleet as fleet_cmd

pytestmark = pytest.mark.timeout(90)
N = 24
DOWN_EVERY = 10  # instances 9 and 19 answer 503


def fleet_json(url: str, *extra: str) -> tuple[int, dict, str]:
    """`spectui fleet --json` in this process (its CLI entry: argparse and run), stdout and stderr captured."""
    import contextlib
    import io

    parser = argparse.ArgumentParser(prog="spectui fleet")
    fleet_cmd.add_arguments(parser)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = fleet_cmd.run(parser.parse_args(["--prometheus", url, "--json", *extra]))
    return code, (json.loads(out.getvalue()) if out.getvalue() else {}), err.getvalue()


def test_targets_without_sglang_families_are_not_instances(tmp_path: Path) -> None:
    """Job "sglang": every server its own target, plus the exporter's own target (up, no SGLang family).
    Job "sglang-federated": the same servers through one `honor_labels` target (the exporter's, the only
    `up`). Job "prometheus": Prometheus itself. fleet lists the servers, never those three targets."""
    with start_bed(N, tmp_path, mode="both", scrape_interval=1, down_every=DOWN_EVERY) as bed:
        bed.wait_scraped(60, scrapes=1)
        servers = [f"10.0.0.{1 + i // 8}:{30000 + i % 8}" for i in range(N)]  # the exporter's address scheme
        down = {servers[9], servers[19]}
        # what Prometheus itself holds: the exporter's own target is up, in the same job as the servers
        up = {r["metric"]["instance"]: r["value"][1] for r in bed.query('up{job="sglang"}')}
        assert len(up) == N + 1 and up.get(bed.exporter_instance) == "1", up
        assert {a for a, v in up.items() if v == "0"} == down
        fed_up = {r["metric"]["instance"]: r["value"][1] for r in bed.query('up{job="sglang-federated"}')}
        assert fed_up == {bed.exporter_instance: "1"}  # honor_labels: the servers have no `up` of their own
        assert bed.query('up{job="prometheus"}'), "Prometheus's self-scrape is a target too"

        per_job = {"sglang": set(servers),  # a down server is still listed (as down)
                   "sglang-federated": set(servers) - down}  # nothing says a missing server exists there
        code, doc, err = fleet_json(bed.url)
        assert code == 1, err  # the two down servers are errors
        listed = {(i["job"], i["instance"]) for i in doc["instances"]}
        expected = {(job, a) for job, addrs in per_job.items() for a in addrs}
        assert len(doc["instances"]) == len(expected) and listed == expected, sorted(listed ^ expected)
        assert [i["up"] for i in doc["instances"][:2]] == [False, False]  # down first
        for job, addrs in per_job.items():
            code, doc, err = fleet_json(bed.url, "--selector", f'job="{job}"')
            listed_job = [i["instance"] for i in doc["instances"]]
            assert len(listed_job) == len(addrs) and set(listed_job) == addrs, (job, sorted(set(listed_job) ^ addrs))
        # a selector that picks only the exporter's own targets: no SGLang server there, one line, exit 2
        code, doc, err = fleet_json(bed.url, "--selector", f'instance="{bed.exporter_instance}"')
        assert code == 2 and doc == {}
        lines = err.strip().splitlines()
        assert len(lines) == 1 and "matches 2 scrape target(s)" in lines[0], err
        assert "none of them an SGLang server" in lines[0]
