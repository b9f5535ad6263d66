"""`spectui bench`'s own options (not shared with `sweep`): workloads and outputs in the names bench_serving
users know, and the confirmation of `--baseline`. Each bad value is one line and exit 2 (UsageError)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

GOODPUT_NAMES = {"ttft": "ttft", "tpot": "tpot", "e2el": "e2el", "e2e": "e2el"}


def add_bench_only_arguments(parser: argparse.ArgumentParser) -> None:
    ds = parser.add_argument_group("workload (bench_serving's names)")
    ds.add_argument("--dataset-name", choices=("random", "sharegpt", "generated-shared-prefix"),
                    help="random: fixed-length random prompts; sharegpt: a local ShareGPT file (--dataset-path); "
                         "generated-shared-prefix: groups of prompts sharing a system prompt. Default: --prompts")
    ds.add_argument("--dataset-path", metavar="FILE",
                    help="the ShareGPT JSON/JSONL file (sharegpt), or text to draw random words from (random)")
    ds.add_argument("--random-input-len", type=int, default=1024, metavar="N",
                    help="random: input tokens per request (default 1024; one word ~ one token)")
    ds.add_argument("--random-output-len", type=int, default=1024, metavar="N",
                    help="random: output tokens per request, its max_tokens (default 1024)")
    ds.add_argument("--random-range-ratio", type=float, default=0.0, metavar="R",
                    help="random: lengths drawn from [N*R, N] (default 0.0, as bench_serving)")
    ds.add_argument("--sharegpt-output-len", type=int, metavar="N",
                    help="sharegpt: every request's output length (default: the recorded answer's)")
    for flag, default, what in (("--gsp-num-groups", 64, "groups"), ("--gsp-prompts-per-group", 16, "prompts a group"),
                                ("--gsp-system-prompt-len", 2048, "shared system prompt tokens"),
                                ("--gsp-question-len", 128, "question tokens"), ("--gsp-output-len", 256,
                                                                                "output tokens")):
        ds.add_argument(flag, type=int, default=default, metavar="N",
                        help=f"generated-shared-prefix: {what} (default {default})")
    ds.add_argument("--gsp-range-ratio", type=float, default=1.0, metavar="R",
                    help="generated-shared-prefix: lengths drawn from [N*R, N] (default 1.0, as bench_serving)")
    ds.add_argument("--gsp-num-turns", type=int, default=1, metavar="T",
                    help="generated-shared-prefix: T > 1 makes each prompt a multi-turn conversation: its turns are "
                         "sent in order (chat), each with the history so far, earlier answers included, plus a new "
                         "question; --requests counts conversations (default 1)")
    ds.add_argument("--ignore-eos", action="store_true",
                    help="generate max_tokens even past the end-of-sequence token (lengths as asked)")
    ds.add_argument("--seed", type=int, default=0, help="seed of the prompt order, the draw and the arrivals (default 0)")
    ds.add_argument("--extra-request-body", metavar="JSON",
                    help='a JSON object merged into every request body, e.g. \'{"top_p": 0.9}\'')
    ds.add_argument("--header", nargs="+", action="extend", default=[], metavar="K=V",
                    help="an extra HTTP header for every request (repeatable; values are never recorded)")
    ds.add_argument("--flush-cache", action="store_true",
                    help="POST /flush_cache (SGLang's prefix cache) after the warm-up, before the window")
    ds.add_argument("--request-timeout", type=float, default=600.0, metavar="S",
                    help="each request's total deadline, from sending it to its last byte (default 600 s): "
                         "one that has not finished fails as RequestTimeout, even if bytes still trickle in")
    out = parser.add_argument_group("results")
    out.add_argument("--goodput", nargs="+", action="extend", default=[], metavar="KEY:MS",
                     help="SLOs for goodput: ttft:MS tpot:MS e2e:MS (e2el as bench_serving spells it)")
    out.add_argument("--output-file", metavar="FILE",
                     help="append one JSON line with bench_serving's key names (and the whole result)")
    out.add_argument("--output-details", action="store_true",
                     help="with --output-file (or --json): per-request lengths, TTFTs and ITLs")
    parser.add_argument("-y", "--yes", action="store_true",
                        help="--baseline: restart the server without asking (for scripts)")


def parse_headers(items: list[str]) -> dict[str, str]:
    from spectui.errors import UsageError

    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or any(c in key for c in " \t:\r\n") or any(c in value for c in "\r\n"):
            raise UsageError(f"--header {item!r}: expected KEY=VALUE (a header name without spaces or colons)")
        out[key.strip()] = value
    return out


def parse_extra_body(text: str | None) -> dict[str, Any]:
    from spectui.errors import UsageError

    if text is None:
        return {}
    try:
        obj = json.loads(text)
    except ValueError as exc:
        raise UsageError(f"--extra-request-body: not JSON ({exc})") from None
    if not isinstance(obj, dict):
        raise UsageError(f"--extra-request-body: expected a JSON object, got {type(obj).__name__}")
    return obj


def parse_goodput(items: list[str]) -> dict[str, float]:
    import math

    from spectui.errors import UsageError

    out: dict[str, float] = {}
    for item in items:
        name, _, value = item.partition(":")
        key = GOODPUT_NAMES.get(name)
        try:
            ms = float(value)
        except ValueError:
            ms = math.nan
        if key is None or not math.isfinite(ms) or ms <= 0:
            raise UsageError(f"--goodput {item!r}: expected KEY:MS with KEY ttft, tpot or e2e (e2el) and MS > 0")
        out[key] = ms
    return out


def workload(args: argparse.Namespace) -> tuple[dict[str, Any], Any, dict[str, Any]]:
    """(BenchConfig keyword arguments, the PromptSet, the dataset fields of --output-file)."""
    from spectui.load import load_prompts
    from spectui.load.datasets import Dataset, load_dataset
    from spectui.load.runner import DEFAULT_REQUESTS

    kw = {"ignore_eos": args.ignore_eos, "seed": args.seed, "extra_body": parse_extra_body(args.extra_request_body),
          "extra_headers": parse_headers(args.header), "flush_cache": args.flush_cache,
          "goodput": parse_goodput(args.goodput), "request_timeout_s": args.request_timeout}
    info: dict[str, Any] = {"dataset_name": args.dataset_name or "prompts"}
    if args.gsp_num_turns != 1 and args.dataset_name != "generated-shared-prefix":
        from spectui.errors import UsageError

        raise UsageError("--gsp-num-turns goes with --dataset-name generated-shared-prefix (bench_serving's "
                         "multi-turn workload)")
    if args.dataset_name is None:
        return kw, load_prompts(args.prompts), {**info, "dataset_name": args.prompts}
    gsp = {k: getattr(args, k) for k in ("gsp_num_groups", "gsp_prompts_per_group", "gsp_system_prompt_len",
                                         "gsp_question_len", "gsp_output_len", "gsp_range_ratio", "gsp_num_turns")}
    ds = Dataset(args.dataset_name, args.requests or DEFAULT_REQUESTS, path=args.dataset_path,
                 random_input_len=args.random_input_len, random_output_len=args.random_output_len,
                 random_range_ratio=args.random_range_ratio, sharegpt_output_len=args.sharegpt_output_len,
                 seed=args.seed, **gsp)
    if ds.name == "generated-shared-prefix":
        info.update(gsp)
        if args.requests is None and args.duration is None:  # bench_serving sends every prompt of the set
            args.requests = ds.gsp_num_groups * ds.gsp_prompts_per_group
    elif ds.name == "random":
        info.update(random_input_len=ds.random_input_len, random_output_len=ds.random_output_len,
                    random_range_ratio=ds.random_range_ratio)
    else:
        info.update(sharegpt_output_len=ds.sharegpt_output_len)
    return kw, load_dataset(ds), info


def write_output(path: str, out: dict[str, Any], info: dict[str, Any]) -> None:
    from spectui.errors import SpectuiError
    from spectui.load.output import append_line, bench_serving_line

    try:
        append_line(path, bench_serving_line(out, dataset=info))
    except OSError as exc:
        raise SpectuiError(f"--output-file {path}: cannot append: {exc.strerror or exc}") from None


def confirm_baseline(args: argparse.Namespace) -> None:
    """--baseline restarts the server: no terminal to ask on and no --yes is refused before anything runs."""
    from spectui.errors import UsageError

    if args.baseline and not args.yes and not sys.stdin.isatty():
        raise UsageError("--baseline restarts the server twice and stdin is not a terminal to confirm it on: "
                         "pass --yes to go ahead without asking")


def ask(text: str) -> bool:
    print(text, file=sys.stderr)
    try:
        return input("go ahead? [y/N] ").strip().lower() in ("y", "yes")
    except EOFError:
        return False
