"""Deprecated: moved to :mod:`mlcalc.gpt_program` (pure, takes a :class:`mlcalc.models.ModelConfig`).

Kept only so that ``mlcalc/widgets/measured.py`` keeps working until it imports
``mlcalc.gpt_program`` directly; nothing else in mlcalc imports this module. The functions here accept
the old :class:`mlcalc.bench.gpt.GPTConfig` and convert it.
"""

from __future__ import annotations

from typing import Any

from mlcalc import gpt_program as _gp
from mlcalc.gpt_program import (  # noqa: F401
    ADAMW_BYTES_PER_PARAM, BACKWARD_OVER_FORWARD, GRAD_CAST_BYTES_PER_PARAM, LAYER_ELEMENTWISE_FWD, LAYER_SAVED,
    LAYER_SAVED_RECOMPUTE, LOSS_BYTES_PER_LOGIT, Comparison, Gemm, Prediction, compare,
)


def _m(cfg: Any) -> Any:
    if hasattr(cfg, "n_layer"):  # an old GPTConfig
        return _gp.gpt2(cfg.n_layer, cfg.n_head, cfg.d_model, cfg.vocab_size, cfg.mlp_ratio)
    return cfg


def textbook_memory(cfg: Any, *a: Any, **k: Any) -> Any:
    return _gp.textbook_memory(_m(cfg), *a, **k)


def program_memory(cfg: Any, *a: Any, **k: Any) -> Any:
    return _gp.program_memory(_m(cfg), *a, **k)


def step_gemms(cfg: Any, *a: Any, **k: Any) -> Any:
    return _gp.step_gemms(_m(cfg), *a, **k)


def attention_flop(cfg: Any, *a: Any, **k: Any) -> Any:
    return _gp.attention_flop(_m(cfg), *a, **k)


def elementwise_bytes(cfg: Any, *a: Any, **k: Any) -> Any:
    return _gp.elementwise_bytes(_m(cfg), *a, **k)


def textbook_step_time(cfg: Any, *a: Any, **k: Any) -> Any:
    return _gp.textbook_step_time(_m(cfg), *a, **k)


def program_step_time(cfg: Any, *a: Any, **k: Any) -> Any:
    return _gp.program_step_time(_m(cfg), *a, **k)
