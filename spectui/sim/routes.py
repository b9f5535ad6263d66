"""SGLang's HTTP endpoints for the simulator (docs/REFERENCE.md §4): health, server info, metrics, OpenAI, /generate."""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator, Callable

from spectui.sim.engine import SimRequest
from spectui.sim.http import Request, Response, sse_event
from spectui.sim.promtext import render_metrics
from spectui.sim.specmeta import has_spec_tokens_details, meta_info, rank_counters, spec_tokens_details
from spectui.sim.state import SimState


def _prompt_tokens(text: str) -> int:
    return max(1, len(text) // 4)


def _max_tokens(value: object, default: int = 128) -> int:
    return default if value is None else max(1, int(value))  # type: ignore[call-overload]


class Routes:
    def __init__(self, state: SimState) -> None:
        self.s = state
        v = state.fmt.v
        self.table: dict[tuple[str, str], Callable[[Request], object]] = {
            ("GET", "/health"): self.health, ("GET", "/health_generate"): self.health,
            ("GET", "/get_server_info"): self.get_server_info, ("GET", "/get_model_info"): self.model_info,
            ("GET", "/v1/models"): self.models, ("POST", "/generate"): self.generate,
            ("POST", "/v1/completions"): self.completions, ("POST", "/v1/chat/completions"): self.chat,
        }
        if v >= (0, 5, 6):
            self.table[("GET", "/server_info")] = self.server_info
            self.table[("GET", "/model_info")] = self.model_info
        if state.args.get("enable_metrics"):  # SGLang mounts /metrics only with --enable-metrics
            self.table[("GET", "/metrics")] = self.metrics

    async def __call__(self, req: Request) -> Response:
        key = self.s.args.get("api_key")
        # SGLang's add_api_key_middleware: with --api-key every request but OPTIONS, /health* and /metrics*
        # needs `Authorization: Bearer KEY`, else 401 {"error": "Unauthorized"} (before any routing).
        if key and req.method != "OPTIONS" and not req.path.startswith(("/health", "/metrics")) \
                and req.headers.get("authorization") != f"Bearer {key}":
            return Response.json({"error": "Unauthorized"}, 401)
        handler = self.table.get((req.method, req.path))
        if handler is None:
            known = any(path == req.path for _, path in self.table)
            return Response.json({"detail": "Method Not Allowed" if known else "Not Found"}, 405 if known else 404)
        return await handler(req)  # type: ignore[misc]

    # -- monitoring -------------------------------------------------------------------------------
    async def health(self, req: Request) -> Response:
        return Response(200 if self.s.ready else 503)

    def _server_info(self) -> dict[str, object]:
        s = self.s
        states = []
        for e in s.engine.engines:  # one internal state per DP rank
            internal: dict[str, object] = {**s.args, "last_gen_throughput": e.stats.last_gen_throughput,
                                           "memory_usage": {"weight": 15.1, "kvcache": 50.5,
                                                            "token_capacity": s.max_total_tokens, "graph": 1.4}}
            if e.model.spec is not None and e.stats.avg_spec_accept_length is not None:
                internal["avg_spec_accept_length"] = e.stats.avg_spec_accept_length
            if e.model.spec is not None and s.fmt.v >= (0, 5, 16):
                # ServerArgs.max_speculative_num_draft_tokens (a cached property: the draft tokens, or the
                # largest an adaptive config may pick), as the real 0.5.16 snapshot lists it.
                internal["max_speculative_num_draft_tokens"] = e.model.spec.draft_tokens
            if e.model.spec is not None and s.spec_counters:
                internal.update(rank_counters(e.stats, e.dp_rank))
            if e.dp_rank is not None:
                internal["dp_rank"] = e.dp_rank
            states.append(internal)
        info: dict[str, object] = dict(s.args)
        if s.fmt.v >= (0, 5, 20):
            info["launch_command"] = " ".join(s.launch_argv)
        info.update({"status": "ready", "max_total_num_tokens": s.max_total_tokens,
                     "max_req_input_len": s.context_len - 1, "internal_states": states,
                     "version": s.fmt.version})
        return info

    async def server_info(self, req: Request) -> Response:
        return Response.json(self._server_info())

    async def get_server_info(self, req: Request) -> Response:
        if self.s.fmt.v >= (0, 5, 6):
            self.s.write(self.s.fmt.main(self.s.fmt.deprecated_endpoint("/get_server_info", "/server_info")))
        return Response.json(self._server_info())

    async def model_info(self, req: Request) -> Response:
        if req.path == "/get_model_info" and self.s.fmt.v >= (0, 5, 6):
            self.s.write(self.s.fmt.main(self.s.fmt.deprecated_endpoint("/get_model_info", "/model_info")))
        return Response.json({"model_path": self.s.args.get("model_path"), "tokenizer_path": self.s.args.get("model_path"),
                              "is_generation": True, "weight_version": "default"})

    async def models(self, req: Request) -> Response:
        return Response.json({"object": "list", "data": [
            {"id": self.s.model_name, "object": "model", "created": int(self.s.started_at), "owned_by": "sglang",
             "root": self.s.args.get("model_path"), "max_model_len": self.s.context_len}]})

    async def metrics(self, req: Request) -> Response:
        return Response.text(render_metrics(self.s), content_type="text/plain; version=0.0.4; charset=utf-8")

    # -- generation -------------------------------------------------------------------------------
    def _submit(self, prompt_tokens: int, max_tokens: int) -> SimRequest | None:
        if not self.s.ready:
            return None
        return self.s.engine.submit(prompt_tokens, max_tokens)

    def _meta(self, r: SimRequest, finished: bool = True) -> dict[str, object]:
        return meta_info(r, self.s.fmt.v, self.s.engine.spec_draft_tokens, finished=finished)

    def _sglext(self, body: dict, r: SimRequest) -> dict[str, object] | None:
        """`sglext.spec_tokens_details` (0.5.20+), only when the request asks for it."""
        if not (body.get("return_spec_tokens_details") and has_spec_tokens_details(self.s.fmt.v)):
            return None
        details = spec_tokens_details(self._meta(r))
        return None if details is None else {"spec_tokens_details": details}

    @staticmethod
    async def _collect(r: SimRequest) -> str:
        out = []
        while (chunk := await r.chunks.get()) is not None:
            out.extend(chunk)
        return "".join(out)

    def _usage(self, r: SimRequest) -> dict[str, object]:
        return {"prompt_tokens": r.prompt_tokens, "completion_tokens": r.generated,
                "total_tokens": r.prompt_tokens + r.generated, "prompt_tokens_details": None}

    async def generate(self, req: Request) -> Response:
        body = req.json()
        text = body.get("text") or ""
        params = body.get("sampling_params") or {}
        r = self._submit(_prompt_tokens(str(text)), _max_tokens(params.get("max_new_tokens")))
        if r is None:
            return Response.json({"error": {"message": "server is not ready"}}, 503)
        if body.get("stream"):
            return Response.sse(self._generate_stream(r))
        out = await self._collect(r)
        return Response.json({"text": out, "meta_info": self._meta(r)})

    async def _generate_stream(self, r: SimRequest) -> AsyncIterator[bytes]:
        text = ""
        while (chunk := await r.chunks.get()) is not None:
            text += "".join(chunk)
            # The engine counts a round before handing out its tokens: the last chunk is the finished one.
            yield sse_event({"text": text, "meta_info": self._meta(r, finished=r.done)})
        yield sse_event(b"[DONE]")

    async def completions(self, req: Request) -> Response:
        body = req.json()
        prompt = body.get("prompt") or ""
        prompt = " ".join(prompt) if isinstance(prompt, list) else str(prompt)
        return await self._openai(body, _prompt_tokens(prompt), chat=False)

    async def chat(self, req: Request) -> Response:
        body = req.json()
        msgs = body.get("messages") or []
        chars = sum(len(str(m.get("content") or "")) for m in msgs if isinstance(m, dict))
        return await self._openai(body, chars // 4 + 8 * max(1, len(msgs)), chat=True)

    async def _openai(self, body: dict, prompt_tokens: int, *, chat: bool) -> Response:
        r = self._submit(prompt_tokens, _max_tokens(body.get("max_completion_tokens", body.get("max_tokens"))))
        if r is None:
            return Response.json({"object": "error", "message": "server is not ready", "code": 503}, 503)
        rid, created = uuid.uuid4().hex, int(time.time())
        obj = "chat.completion" if chat else "text_completion"
        if body.get("stream"):
            usage = bool((body.get("stream_options") or {}).get("include_usage"))
            return Response.sse(self._openai_stream(r, rid, created, chat, usage, body))
        text = await self._collect(r)
        choice: dict[str, object] = {"index": 0, "logprobs": None, "finish_reason": "length", "matched_stop": None}
        if chat:
            choice["message"] = {"role": "assistant", "content": text, "reasoning_content": None, "tool_calls": None}
        else:
            choice["text"] = text
        out: dict[str, object] = {"id": rid, "object": obj, "created": created, "model": self.s.model_name,
                                  "choices": [choice], "usage": self._usage(r),
                                  "metadata": {"weight_version": "default"}}
        if (ext := self._sglext(body, r)) is not None:
            out["sglext"] = ext
        return Response.json(out)

    async def _openai_stream(self, r: SimRequest, rid: str, created: int, chat: bool,
                             usage: bool, body: dict) -> AsyncIterator[bytes]:
        obj = "chat.completion.chunk" if chat else "text_completion"
        first = True
        # SGLang honours stream_options.continuous_usage_stats: the usage so far on every chunk
        continuous = bool((body.get("stream_options") or {}).get("continuous_usage_stats"))
        sent = 0
        while True:
            chunk = await r.chunks.get()
            sent += len(chunk or [])
            text = "".join(chunk or [])
            finish = "length" if chunk is None else None
            if chat:
                delta: dict[str, object] = {"content": text} if chunk is not None else {}
                if first:
                    delta["role"] = "assistant"
                choice: dict[str, object] = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
            else:
                choice = {"index": 0, "text": text, "logprobs": None, "finish_reason": finish, "matched_stop": None}
            first = False
            so_far = {"prompt_tokens": r.prompt_tokens, "completion_tokens": sent,
                      "total_tokens": r.prompt_tokens + sent} if continuous else None
            yield sse_event({"id": rid, "object": obj, "created": created, "model": self.s.model_name,
                             "choices": [choice], "usage": so_far})
            if chunk is None:
                break
        if (ext := self._sglext(body, r)) is not None:  # its own chunk, choices [] (before usage)
            yield sse_event({"id": rid, "object": obj, "created": created, "model": self.s.model_name,
                             "choices": [], "usage": None, "sglext": ext})
        if usage:
            yield sse_event({"id": rid, "object": obj, "created": created, "model": self.s.model_name,
                             "choices": [], "usage": self._usage(r)})
        yield sse_event(b"[DONE]")
