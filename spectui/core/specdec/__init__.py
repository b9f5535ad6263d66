"""The theory of speculative decoding: accept-length ceilings and rates (theory), the acceptance and cost
model fitted to what was measured and the advice it gives (fit, advisor).

Callers outside this package import these names from here.
"""

from spectui.core.specdec.advisor import (
    Advice,
    CostModel,
    DepthVerdict,
    ModelInfo,
    Observed,
    Prediction,
    Recommendation,
    advise,
    advise_one,
    ceiling,
    depth_advice,
    prior_step_cost,
)
from spectui.core.specdec.fit import (
    Observation,  # noqa: E402
    expected_accept_len,
    fit,
)
from spectui.core.specdec.theory import chain_depth  # noqa: E402

__all__ = [
    "chain_depth",
    "Advice",
    "CostModel",
    "DepthVerdict",
    "ModelInfo",
    "Observation",
    "Observed",
    "Prediction",
    "Recommendation",
    "advise",
    "advise_one",
    "ceiling",
    "depth_advice",
    "expected_accept_len",
    "fit",
    "prior_step_cost",
]
