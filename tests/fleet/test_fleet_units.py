"""fleet without processes: per-instance folding of SGLang's series, diagnoses, order, Prometheus error shapes."""

from __future__ import annotations

import json

import httpx
import pytest

from spectui.fleet import (
    Baselines,
    FleetInputError,
    InstanceMetrics,
    PrometheusClient,
    PrometheusError,
    Sample,
    collect,
    diagnose,
    normalize_selector,
    normalize_url,
)
from spectui.fleet.metrics import fold


def s(name: str, value: float, **labels: str) -> Sample:
    return Sample({"__name__": f"sglang:{name}", "job": "sglang", "instance": "h:1", **labels}, value)


def test_dp_ranks_sum_and_weighted_accept_len() -> None:
    samples = [
        s("gen_throughput", 300.0, dp_rank="0", tp_rank="0"), s("gen_throughput", 100.0, dp_rank="1", tp_rank="4"),
        s("spec_accept_length", 3.0, dp_rank="0", tp_rank="0"), s("spec_accept_length", 1.0, dp_rank="1", tp_rank="4"),
        s("num_running_reqs", 10, dp_rank="0", tp_rank="0"), s("num_running_reqs", 6, dp_rank="1", tp_rank="4"),
        s("num_queue_reqs", 1, dp_rank="0", tp_rank="0"), s("num_queue_reqs", 2, dp_rank="1", tp_rank="4"),
        s("spec_num_steps", 3, dp_rank="0", tp_rank="0"),
    ]
    m = fold(InstanceMetrics("sglang", "h:1", up=True), samples)
    assert m.gen_tokens_per_s == 400.0 and m.running == 16 and m.queued == 3 and m.ranks == 2
    assert m.accept_len == pytest.approx(2.5)  # (3*300 + 1*100) / 400
    assert m.ceiling == 4 and m.speculative


def test_same_batch_schedulers_are_averaged_not_summed() -> None:
    # --enable-metrics-for-all-schedulers: TP0 and TP1 of one DP group report the same batch
    samples = [s("gen_throughput", 200.0, tp_rank="0"), s("gen_throughput", 200.0, tp_rank="1"),
               s("num_running_reqs", 8, tp_rank="0"), s("num_running_reqs", 8, tp_rank="1")]
    m = fold(InstanceMetrics("sglang", "h:1", up=True), samples)
    assert m.gen_tokens_per_s == 200.0 and m.running == 8 and m.ranks == 1


def test_zero_accept_len_means_no_speculation() -> None:
    m = fold(InstanceMetrics("sglang", "h:1", up=True),
             [s("gen_throughput", 90.0), s("spec_accept_length", 0.0), s("spec_accept_rate", 0.0)])
    assert not m.speculative and m.accept_len is None and m.accept_rate is None
    assert [d.rule for d in diagnose(m)] == ["FLEET003"]
    idle = fold(InstanceMetrics("sglang", "h:1", up=True), [s("spec_accept_length", 0.0), s("spec_num_steps", 5)])
    assert idle.speculative and idle.accept_len is None and [d.rule for d in diagnose(idle)] == ["FLEET004"]


def test_low_accept_against_ceiling_and_baseline() -> None:
    deep = InstanceMetrics("sglang", "h:1", up=True, accept_len=1.6, steps=7, running=4, gen_tokens_per_s=80.0,
                           metric_names=frozenset({"sglang:gen_throughput"}), baseline_tps=90.0)
    cats = [(d.category, d.severity) for d in diagnose(deep)]
    assert cats == [("spec-slower-than-baseline", "error"), ("low-accept-length", "warning")]
    useless = InstanceMetrics("sglang", "h:1", up=True, accept_len=1.05,
                              metric_names=frozenset({"sglang:gen_throughput"}))
    assert [(d.rule, d.severity) for d in diagnose(useless)] == [("FLEET005", "error")]
    assert deep.rule_values()["saturation"] == pytest.approx(0.6 / 7)
    assert "raise --speculative-num-steps" not in diagnose(deep)[0].message  # deep and poor: the draft


def test_slower_than_baseline_at_a_shallow_depth_names_the_depth() -> None:
    """The seed incident over Prometheus: steps 1 (ceiling 2), accept len 1.6, 56.8 tok/s against 90."""
    seed = InstanceMetrics("sglang", "h:1", up=True, accept_len=1.6, steps=1, running=1, gen_tokens_per_s=56.8,
                           metric_names=frozenset({"sglang:gen_throughput"}), baseline_tps=90.0)
    found = diagnose(seed)
    assert [d.rule for d in found] == ["FLEET008"]  # 0.6 of the way to a ceiling of 2: not a low accept length
    assert "near its ceiling of 2 (steps 1)" in found[0].message
    assert "raise --speculative-num-steps" in found[0].message and "0.63x" in found[0].message


def test_selector_and_url_normalisation() -> None:
    assert normalize_selector('{job="sglang"}') == 'job="sglang"'
    assert normalize_selector(' job="a", ') == 'job="a"'
    assert normalize_selector(None) == ""
    for bad in ('up{job="a"}', '{job="a"'):
        with pytest.raises(FleetInputError):
            normalize_selector(bad)
    assert normalize_url("prom:9090/") == "http://prom:9090"
    for bad in ("ftp://x", "not a url", "http://prom :9090"):
        with pytest.raises(FleetInputError, match="not an http"):
            normalize_url(bad)


def _client(handler) -> PrometheusClient:
    return PrometheusClient("http://prom.test:9090", transport=httpx.MockTransport(handler))


def _vector(*items: tuple[dict, float]) -> dict:
    return {"status": "success", "data": {"resultType": "vector",
                                          "result": [{"metric": m, "value": [1.0, str(v)]} for m, v in items]}}


def test_prometheus_error_envelopes() -> None:
    def bad_data(request: httpx.Request) -> httpx.Response:
        return httpx.Response(400, json={"status": "error", "errorType": "bad_data",
                                         "error": '1:4: parse error: unexpected "}"'})

    with pytest.raises(FleetInputError, match="--selector .*rejects the query: 1:4: parse error"):
        collect(_client(bad_data), "job=")

    def timeout(request: httpx.Request) -> httpx.Response:
        return httpx.Response(503, json={"status": "error", "errorType": "timeout", "error": "query timed out"})

    with pytest.raises(PrometheusError, match="timeout: query timed out"):
        collect(_client(timeout), 'job="a"')

    def html(request: httpx.Request) -> httpx.Response:
        return httpx.Response(404, text="<html>not found</html>")

    with pytest.raises(FleetInputError, match="does not look like a Prometheus server"):
        collect(_client(html), "")


def test_url_credentials_go_out_as_basic_auth_and_are_masked() -> None:
    import base64

    seen: list[str] = []

    def refuse(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers.get("authorization", ""))
        return httpx.Response(401, text="Unauthorized")

    client = PrometheusClient("https://ops:s3cret@prom.test:9090", transport=httpx.MockTransport(refuse))
    assert client.url == "https://ops:***@prom.test:9090"
    with pytest.raises(PrometheusError) as caught:
        collect(client, 'job="a"')
    assert seen and seen[0] == "Basic " + base64.b64encode(b"ops:s3cret").decode()
    assert "s3cret" not in str(caught.value) and "ops:***@prom.test" in str(caught.value)


def test_old_release_without_gen_throughput_uses_counter_rate() -> None:
    labels = {"job": "sglang", "instance": "h:1"}

    def handler(request: httpx.Request) -> httpx.Response:
        q = request.url.params["query"]
        if q.startswith("up"):
            return httpx.Response(200, json=_vector(({"__name__": "up", **labels}, 1)))
        if q.startswith("{__name__"):
            return httpx.Response(200, json=_vector(({"__name__": "sglang:num_running_reqs", **labels}, 3),
                                                    ({"__name__": "sglang:spec_accept_length", **labels}, 2.2)))
        if q.startswith("sum by (job, instance) (rate(") and "generation_tokens_total" in q:
            return httpx.Response(200, json=_vector((labels, 250.0)))
        return httpx.Response(200, json=_vector())

    snap = collect(_client(handler), 'job="sglang"', baselines=Baselines(per_instance={"h:1": 100.0}))
    (entry,) = snap.entries
    assert entry.metrics.gen_tokens_per_s == 250.0 and entry.metrics.gen_tokens_source == "rate"
    assert entry.metrics.accept_rate is None and entry.metrics.ceiling is None  # names of later releases
    doc = json.loads(json.dumps(snap.to_json()))
    assert doc["instances"][0]["accept_len"] == 2.2 and doc["instances"][0]["diagnoses"] == []
    assert snap.exit_code == 0


def test_openmetrics_names_and_ngram_ceiling() -> None:
    """A newer prometheus_client scraped in OpenMetrics stores `sglang_NAME` (the real 0.5.16 server does);
    NGRAM exports 0 steps and its draft tokens: the ceiling is the draft-token count."""
    from spectui.fleet.metrics import InstanceMetrics, fold
    from spectui.fleet.prom import Sample

    base = {"job": "sglang", "instance": "127.0.0.1:30000", "tp_rank": "0"}
    samples = [Sample({**base, "__name__": "sglang_spec_accept_length"}, 3.8),
               Sample({**base, "__name__": "sglang_spec_num_steps"}, 0.0),
               Sample({**base, "__name__": "sglang_spec_num_draft_tokens"}, 4.0),
               Sample({**base, "__name__": "sglang_num_running_reqs"}, 1.0)]
    rec = fold(InstanceMetrics(job="sglang", instance="127.0.0.1:30000"), samples)
    assert rec.accept_len == 3.8 and rec.running == 1 and rec.steps == 0 and rec.draft_tokens == 4
    assert rec.ceiling == 4 and rec.speculative


def test_json_depth_limit_is_exact_and_a_wide_answer_passes() -> None:
    """core.limits.load_json (every Prometheus answer goes through it): nested deeper than MAX_JSON_DEPTH is
    refused, exactly at the limit is read; a wide, shallow answer (a fleet's series) is read whole."""
    from spectui.core import limits

    depth = limits.MAX_JSON_DEPTH
    assert limits.load_json("[" * depth + "]" * depth) is not None
    with pytest.raises(limits.JsonTooDeepError):
        limits.load_json("[" * (depth + 1) + "]" * (depth + 1))
    nested = "1"
    for i in range(depth + 1):
        nested = f'{{"k{i}": [{nested}]}}' if i % 2 else f'{{"k{i}": {nested}}}'
    with pytest.raises(limits.JsonTooDeepError):
        limits.load_json(nested)
    wide = {"status": "success", "data": {"result": [{"metric": {"instance": f"h:{i}"}, "value": [1, "2"]}
                                                     for i in range(5000)]}}
    assert limits.load_json(json.dumps(wide)) == wide
