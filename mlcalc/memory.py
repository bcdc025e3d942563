"""Memory a model needs, and how many accelerators that makes."""

from __future__ import annotations

import math
from types import MappingProxyType
from typing import Mapping, NamedTuple

from mlcalc import _check

# Bytes per parameter, by what they hold, in the convention of the seed chapter
# ("The AI Battlefield", section "Impress others with your ML instant math"):
# training in mixed precision keeps fp32 master weights and a bf16 copy (4 + 2),
# fp32 gradients (4) and AdamW's two fp32 states (8): 18 bytes per parameter.
SEED_TRAINING_BYTES: Mapping[str, float] = MappingProxyType(
    {
        "weights (fp32 master + bf16 copy)": 6.0,
        "gradients (fp32)": 4.0,
        "AdamW states (2 x fp32)": 8.0,
    }
)
# Inference in half precision keeps only the bf16 weights: 2 bytes per parameter.
SEED_INFERENCE_BYTES: Mapping[str, float] = MappingProxyType({"weights (bf16)": 2.0})
# The seed's "1.25 is 25% for activations (very very approximate)".
SEED_HEADROOM = 1.25

MODES = ("train", "inference")


class GpuEstimate(NamedTuple):
    """How many accelerators a model needs, and what fills their memory."""

    n_gpus: int  # accelerators needed: total_bytes / memory per accelerator, rounded up
    exact: float  # the same ratio before rounding up
    parts_bytes: Mapping[str, float]  # model-state bytes by what they hold, plus "activations (headroom)"
    total_bytes: float  # sum of parts_bytes
    gpu_memory_bytes: float  # memory of one accelerator, bytes


def default_bytes_per_param(mode: str) -> Mapping[str, float]:
    """The seed's bytes per parameter, by component, for ``mode`` ("train" or "inference")."""
    _check.choice("mode", mode, MODES)
    return SEED_TRAINING_BYTES if mode == "train" else SEED_INFERENCE_BYTES


def gpus_needed(
    n_params: float,
    gpu_memory_bytes: float,
    mode: str = "train",
    bytes_per_param: float | Mapping[str, float] | None = None,
    headroom: float = SEED_HEADROOM,
) -> GpuEstimate:
    """Fewest accelerators whose memory holds a model, by the seed's instant math.

    ``n_gpus = ceil(n_params * bytes_per_param * headroom / gpu_memory_bytes)``

    Parameters
    ----------
    n_params : number of model parameters (e.g. 80e9).
    gpu_memory_bytes : memory of one accelerator in bytes (80 GB = 80e9).
    mode : "train" (mixed precision with AdamW) or "inference" (half precision).
    bytes_per_param : bytes each parameter costs, as one number or by component;
        ``None`` takes the seed's convention for ``mode`` (18 to train, 2 to serve).
    headroom : multiplier for activations and everything else (>= 1; the seed uses 1.25).

    References
    ----------
    S. Bekman, Machine Learning Engineering Open Book, "The AI Battlefield",
    "Tell how many GPUs do you need in 5 secs" (80B parameters on 80 GB GPUs:
    at least 23 to train, 3 to serve).
    """
    n_params = _check.positive("n_params", n_params)
    gpu_memory_bytes = _check.positive("gpu_memory_bytes", gpu_memory_bytes)
    _check.choice("mode", mode, MODES)
    headroom = _check.at_least("headroom", headroom, 1.0)
    if bytes_per_param is None:
        per_param: Mapping[str, float] = default_bytes_per_param(mode)
    elif isinstance(bytes_per_param, Mapping):
        per_param = {k: _check.non_negative(f"bytes_per_param[{k!r}]", v) for k, v in bytes_per_param.items()}
        _check.positive("bytes_per_param (sum)", sum(per_param.values()))
    else:
        per_param = {"model states": _check.positive("bytes_per_param", bytes_per_param)}
    parts = {name: n_params * b for name, b in per_param.items()}
    model_bytes = sum(parts.values())
    parts["activations (headroom)"] = model_bytes * (headroom - 1.0)
    total = model_bytes * headroom
    exact = total / gpu_memory_bytes
    # Round up, but do not let float noise (22.0000000001) add a whole GPU.
    n_gpus = max(1, math.ceil(round(exact, 9)))
    return GpuEstimate(n_gpus, exact, MappingProxyType(parts), total, gpu_memory_bytes)
