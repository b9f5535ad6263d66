"""Drive the simulator's HTTP API with httpx (streaming included): endpoints, /metrics and the log agree."""

from __future__ import annotations

import json
import statistics

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from spectui.core.log import DecodeSample, LogParser
from tests.sim.conftest import CHAIN3, EAGLE3

ARGS = [*EAGLE3, *CHAIN3, "--enable-metrics", "--decode-log-interval", "10", "--sim-time-scale", "25"]


def _sse(response: httpx.Response) -> list[object]:
    events = []
    for line in response.iter_lines():
        if line.startswith("data: "):
            data = line[len("data: "):]
            events.append(data if data == "[DONE]" else json.loads(data))
    return events


def _decodes(text: str) -> list[DecodeSample]:
    parser = LogParser()
    records = parser.feed(text.splitlines()) + parser.finish()
    return [r for r in records if isinstance(r, DecodeSample)]


def _metrics(client: httpx.Client) -> dict[str, float]:
    out = {}
    for fam in text_string_to_metric_families(client.get("/metrics").text):
        for sample in fam.samples:
            out[sample.name] = sample.value
    return out


def test_endpoints_metrics_and_log_agree(sim_factory) -> None:
    sim = sim_factory(ARGS)
    sim.wait_ready()
    with sim.client() as c:
        assert c.get("/health").status_code == 200
        assert c.get("/v1/models").json()["data"][0]["id"] == "/models/meta-llama/Llama-3.1-8B-Instruct"
        # Streaming chat completion (SSE): every chunk parses, the stream ends with [DONE].
        body = {"model": "x", "messages": [{"role": "user", "content": "hello " * 40}], "max_tokens": 150,
                "stream": True, "stream_options": {"include_usage": True}}
        with c.stream("POST", "/v1/chat/completions", json=body) as r:
            assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
            events = _sse(r)
        assert events[-1] == "[DONE]"
        chunks = [e for e in events[:-1] if isinstance(e, dict) and e["choices"]]
        assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
        assert chunks[-1]["choices"][0]["finish_reason"] == "length"
        streamed = "".join(ch["choices"][0]["delta"].get("content", "") for ch in chunks)
        usage = events[-2]["usage"]  # type: ignore[index]
        assert usage["completion_tokens"] == 150 == len(streamed.split())
        # Streaming text completion and native /generate (stream and not).
        with c.stream("POST", "/v1/completions", json={"prompt": "x", "max_tokens": 120, "stream": True}) as r:
            text = "".join(e["choices"][0]["text"] for e in _sse(r) if isinstance(e, dict))
        assert len(text.split()) == 120
        with c.stream("POST", "/generate", json={"text": "hi", "stream": True,
                                                 "sampling_params": {"max_new_tokens": 100}}) as r:
            gen_events = [e for e in _sse(r) if isinstance(e, dict)]
        assert gen_events[-1]["meta_info"]["completion_tokens"] == 100
        gen = c.post("/generate", json={"text": "hi", "sampling_params": {"max_new_tokens": 300}}).json()
        info = c.get("/server_info").json()
        metrics = _metrics(c)

    decodes = _decodes(sim.text())
    assert len(decodes) == sim.text().count("Decode batch")  # one record per Decode line
    last = decodes[-1]
    # tok/s: the log's last interval, /metrics and /server_info are one number.
    assert metrics["sglang:gen_throughput"] == pytest.approx(last.gen_tokens_per_s, abs=0.006)
    assert info["internal_states"][0]["last_gen_throughput"] == pytest.approx(last.gen_tokens_per_s, abs=0.006)
    # accept len: the interval value, and the lifetime mean (requests ran one at a time: equal weights).
    assert metrics["sglang:spec_accept_length"] == pytest.approx(last.accept_len, abs=0.006)
    lifetime = statistics.mean(d.accept_len for d in decodes)  # type: ignore[misc]
    assert info["internal_states"][0]["avg_spec_accept_length"] == pytest.approx(lifetime, abs=0.006)
    assert 2.5 < lifetime < 3.4  # alpha 0.8, chain of 3: (1 - 0.8^4) / 0.2 = 2.95
    # Per request: completion tokens / verify rounds, bonus included.
    meta = gen["meta_info"]
    assert meta["spec_accept_length"] == pytest.approx(meta["completion_tokens"] / meta["spec_verify_ct"])
    assert abs(meta["spec_accept_length"] - lifetime) < 0.6
    # Counters: every generated token is counted (8 warm-up tokens included).
    assert metrics["sglang:generation_tokens_total"] == 8 + 150 + 120 + 100 + 300
    assert info["speculative_num_draft_tokens"] == 4 and info["max_running_requests"] == 48
    assert info["version"] == "0.5.23" and info["launch_command"].startswith("--model-path ")
    assert sim.stop() == 0
    tail = sim.lines()[-4:]
    assert [line.split("] ", 1)[1] for line in tail] == [
        "INFO:     Shutting down", "INFO:     Waiting for application shutdown.",
        "INFO:     Application shutdown complete.", f"INFO:     Finished server process [{sim.proc.pid}]"]


def test_access_log_and_deprecated_endpoint_on_056(sim_factory) -> None:
    sim = sim_factory([*EAGLE3, *CHAIN3, "--sim-sglang-version", "0.5.6.post2", "--sim-time-scale", "50"])
    sim.wait_ready()
    with sim.client() as c:
        assert c.get("/metrics").status_code == 404  # not mounted without --enable-metrics
        assert c.get("/get_server_info").json()["version"] == "0.5.6.post2"
        assert c.get("/server_info").status_code == 200
    sim.wait_for('"GET /get_server_info HTTP/1.1" 200 OK')
    text = sim.text()
    assert ("Endpoint '/get_server_info' is deprecated and will be removed in a future version. "
            "Please use '/server_info' instead.") in text
    assert '"GET /metrics HTTP/1.1" 404 Not Found' in text


def test_server_info_is_absent_before_056(sim_factory) -> None:
    sim = sim_factory([*EAGLE3, *CHAIN3, "--sim-sglang-version", "0.5.4.post3", "--sim-time-scale", "50"])
    sim.wait_ready()
    with sim.client() as c:
        assert c.get("/server_info").status_code == 404
        info = c.get("/get_server_info").json()
    assert "avg_spec_accept_length" not in info["internal_states"][0]  # no Decode interval logged yet
    assert "Endpoint '/get_server_info' is deprecated" not in sim.text()


def test_not_ready_before_the_server_is_fired_up(sim_factory) -> None:
    sim = sim_factory([*EAGLE3, *CHAIN3, "--sim-time-scale", "2"])
    sim.wait_for("server_args=")
    with pytest.raises(httpx.ConnectError):  # uvicorn is not listening during start-up
        httpx.get(sim.url + "/health", timeout=2)
    # SIGTERM during start-up: no handler is installed yet, so the signal's default action ends it.
    assert sim.stop() == -15


def test_access_log_exclusions_and_log_levels(sim_factory) -> None:
    sim = sim_factory([*EAGLE3, *CHAIN3, "--enable-metrics", "--uvicorn-access-log-exclude-prefixes", "/metrics",
                       "/health", "--sim-time-scale", "50"])
    sim.wait_ready()
    with sim.client() as c:
        assert c.get("/metrics").status_code == 200 and c.get("/health").status_code == 200
        c.post("/generate", json={"text": "hi", "sampling_params": {"max_new_tokens": 100}})
    sim.wait_for('"POST /generate HTTP/1.1" 200 OK', timeout=10)
    assert "GET /metrics" not in sim.text() and "GET /health" not in sim.text()
    quiet = sim_factory([*EAGLE3, *CHAIN3, "--log-level", "warning", "--sim-time-scale", "50", "--sim-traffic", "5"],
                        name="quiet.log")
    quiet.wait_ready()
    with quiet.client() as c:  # serve some requests: still no Decode/Prefill lines at WARNING level
        c.post("/generate", json={"text": "hi", "sampling_params": {"max_new_tokens": 200}})
    assert "Decode batch" not in quiet.text() and "Prefill batch" not in quiet.text()
    assert '"POST /generate HTTP/1.1"' not in quiet.text()  # --log-level also quiets uvicorn's access log
