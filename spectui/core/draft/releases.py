"""What each SGLang release's EAGLE-3 loader accepts (docs/REFERENCE.md §5, checked against llama_eagle3.py).

Facts, with their sources:
- ≤0.5.11: `LlamaForCausalLMEagle3.__init__` raises `ValueError("EAGLE3 currently only supports 1 layer")`
  when num_hidden_layers != 1; the module tree is model.{embed_tokens, fc, midlayer, norm}; `fc` is
  `Linear(hidden_size_in * 3, hidden_size)` (3 hard-coded); load_weights skips any name that matches
  no parameter, silently (sgl-project/sglang python/sglang/srt/models/llama_eagle3.py @d737979).
- ≥0.5.12: the layers are model.layers.{i} for i < num_hidden_layers and legacy names are rewritten on
  load (midlayer -> layers.0, aux_norm_low|mid|high -> fc_norm.0|1|2), so both layouts load.
- aux layer ids: ignored ≤0.4.6; 0.4.9–0.5.10 applied only on eager paths, CUDA-graph replays use the
  default layers; from 0.5.11 applied before graph capture (PR #22836).
- EAGLE3 exists from 0.4.5.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_VERSION = re.compile(r"^\s*v?(\d+)\.(\d+)(?:\.(\d+))?")


def parse_version(text: str | None) -> tuple[int, int, int] | None:
    if not text:
        return None
    m = _VERSION.match(text)
    if not m:
        return None
    return int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)


@dataclass(frozen=True)
class Eagle3Loader:
    version: str | None
    parsed: tuple[int, int, int] | None
    has_eagle3: bool | None  # None: unknown release
    max_layers: int | None  # 1 on ≤0.5.11; None: any number (0.5.12+) or unknown release
    loads_layers_keys: bool | None  # layers.N.* loaded (True 0.5.12+, False ≤0.5.11, None unknown)
    aux_ids: str | None  # "ignored", "eager-only", "honoured", or None (unknown / unsampled)
    fc_three: bool | None  # fc input is hard-coded to 3 hidden states

    @property
    def known(self) -> bool:
        return self.parsed is not None


def eagle3_loader(version: str | None) -> Eagle3Loader:
    v = parse_version(version)
    if v is None:
        return Eagle3Loader(version, None, None, None, None, None, None)
    new = v >= (0, 5, 12)
    if v <= (0, 4, 6):
        aux = "ignored"
    elif (0, 4, 9) <= v <= (0, 5, 10):
        aux = "eager-only"
    elif v >= (0, 5, 11):
        aux = "honoured"
    else:
        aux = None  # 0.4.7–0.4.8 were not sampled
    return Eagle3Loader(version, v, v >= (0, 4, 5), None if new else 1, new, aux, not new)


def default_aux_ids(num_layers: int) -> list[int]:
    """The eagle_aux_hidden_state_layer_ids equivalent of SGLang's default capture [2, N//2, N-3].

    llama.py set_eagle3_layers_to_capture: no ids -> layers_to_capture = [2, N//2, N-3]; ids given ->
    [id + 1 for id in ids] (layer i captures its input, the output of layer i-1).
    """
    return [1, num_layers // 2 - 1, num_layers - 4]


def default_capture(num_layers: int) -> list[int]:
    return [2, num_layers // 2, num_layers - 3]
