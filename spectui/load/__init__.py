"""The load generator behind `spectui bench`: prompt sets, a streaming OpenAI client timed like SGLang's
bench_serving, the run loop (concurrency, Poisson arrivals, warm-up, progress) and the summary statistics.

    from spectui.load import BenchConfig, load_prompts, run_bench
    result = asyncio.run(run_bench(BenchConfig("http://127.0.0.1:30000", requests=32), load_prompts("code")))
    result.to_json()  # workload, requests, duration_s, output_tokens(_per_s), ttft/tpot/itl/e2e_ms, ...
"""

from spectui.load.client import ServerProbe, normalize_base_url, probe_server
from spectui.load.errors import (
    BenchConfigError,
    BenchError,
    BenchInterrupted,
    NotOpenAIServerError,
    ServerAuthError,
    ServerNotReadyError,
    ServerUnreachableError,
    WarmupFailedError,
)
from spectui.load.progress import Progress, ProgressCallback
from spectui.load.prompts import (
    BUNDLED,
    MIXED,
    Prompt,
    PromptFileError,
    PromptSet,
    load_prompts,
    parse_prompts,
)
from spectui.load.record import RequestRecord
from spectui.load.runner import BenchConfig, BenchResult, run_bench
from spectui.load.specfields import SpecFields
from spectui.load.stats import distribution, percentile, summarize

__all__ = [
    "BUNDLED", "MIXED", "BenchConfig", "BenchConfigError", "BenchError", "BenchInterrupted", "BenchResult", "NotOpenAIServerError",
    "Progress", "ProgressCallback", "Prompt", "PromptFileError", "PromptSet", "RequestRecord",
    "ServerAuthError", "ServerNotReadyError", "ServerProbe", "ServerUnreachableError", "SpecFields",
    "WarmupFailedError", "distribution", "load_prompts", "normalize_base_url", "parse_prompts",
    "percentile", "probe_server", "run_bench", "summarize",
]
