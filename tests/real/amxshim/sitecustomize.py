"""Test-bed shim for the real-SGLang kit on an x86 CPU with AVX-512 (BF16) but no AMX tiles (AMD EPYC: the
machines this suite runs on). Loaded only by the kit's server processes (tests/real/realkit.py puts this
folder on their PYTHONPATH, and only where /proc/cpuinfo has no `amx_tile`).

Without AMX, SGLang's resolution (`_attention_backend_platform_fallbacks`, srt/arg_groups/overrides.py)
swaps the CPU backend `intel_amx` for `torch_native`, whose extend path crashes on every speculative batch
(`AttributeError: 'NoneType' object has no attribute 'shape'` in `_run_sdpa_forward_extend`: target-verify
batches carry no `extend_prefix_lens`), so no speculative server would start. sgl-kernel's CPU attention and
GEMM kernels run on AVX-512 BF16 alone, so the shim only makes torch report AMX tile support and SGLang
keeps `intel_amx`. Nothing else changes; spectui never sees this folder except as the server's own PYTHONPATH.
"""

try:
    import torch.cpu

    torch.cpu._is_amx_tile_supported = lambda: True
except Exception:  # noqa: BLE001 - an interpreter without torch: nothing to shim
    pass
