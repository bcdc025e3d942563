"""Published large training runs (mlcalc/data/published_training.json) against the step-time engine.

Each run is data: model, chip, GPU count, layout, sequence, batch and the throughput its source states.
:func:`check` predicts the run with :func:`mlcalc.steptime.predict_step` (one engine, the same rules for
every run, nothing fitted to a case) and compares it in the source's own terms: TFLOP/s per GPU under the
source's FLOP convention, MFU, iteration time or tokens per second per GPU.
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from types import MappingProxyType
from typing import Any, Mapping, NamedTuple

from mlcalc import _check, compute, models, steptime

METRICS = ("tflops_per_gpu", "mfu", "step_s", "tokens_per_s_per_gpu")
CONVENTIONS = ("megatron-eq3", "palm", "korthikanti", "gpt-neox-2021")
TOLERANCE = 0.15  # the target: throughput or MFU within 15% of the published figure


@lru_cache(maxsize=1)
def _raw() -> Mapping[str, Any]:
    return json.loads(resources.files("mlcalc.data").joinpath("published_training.json").read_text())


def runs() -> Mapping[str, Mapping[str, Any]]:
    """The published runs, by name."""
    return MappingProxyType(dict(_raw()["runs"]))


def model_of(entry: Mapping[str, Any]) -> models.ModelConfig:
    """The run's model: a preset by name, or the shape the entry spells out."""
    m = entry["model"]
    return models.preset(m) if isinstance(m, str) else models.from_dict(m)


def layout_of(entry: Mapping[str, Any]) -> steptime.Layout:
    """The run's layout as a :class:`mlcalc.steptime.Layout`."""
    return steptime.Layout(**entry["layout"])


class Check(NamedTuple):
    """One published run against the engine."""

    name: str
    metric: str  # what is compared (METRICS)
    published: float  # the source's figure
    predicted: float  # the engine's, in the same terms
    error: float  # in throughput terms: predicted / published - 1 (for an iteration time, published / predicted - 1)
    cause: str  # the case's stated miss ("known_miss": the source's own reason, or that it gives none); "" if none
    prediction: steptime.StepPrediction


def _flops_per_step(model: models.ModelConfig, entry: Mapping[str, Any], recompute: str) -> float:
    conv = _check.choice("convention", entry["convention"], CONVENTIONS)
    b, s = int(entry["global_batch"]), int(entry["seq_len"])
    if conv == "megatron-eq3":
        return compute.megatron_flops_per_iteration(b, s, model.n_layers, model.hidden, model.vocab,
                                                    recompute=recompute == "full")
    if conv == "korthikanti":
        return compute.korthikanti_flops_per_iteration(b, s, model.n_layers, model.hidden, model.vocab, "none")
    if conv == "gpt-neox-2021":
        return gpt_neox_flops_per_token(model, s) * b * s
    return compute.palm_flops_per_token(model, s) * b * s


# GPT-NeoX's logged FLOP count, one of the named conventions of mlcalc.compute (their one home).
gpt_neox_flops_per_token = compute.gpt_neox_flops_per_token


def check(name: str) -> Check:
    """Predict one published run and compare it with what its source states."""
    _check.choice("run", name, runs())
    e = runs()[name]
    model, lay = model_of(e), layout_of(e)
    if lay.n_gpus != int(e["gpus"]) or lay.global_batch != int(e["global_batch"]):
        raise ValueError(f"run={name!r}: its layout uses {lay.n_gpus} GPUs and {lay.global_batch} sequences, "
                         f"not {e['gpus']} and {e['global_batch']}")
    p = steptime.predict_step(model, lay, seq_len=int(e["seq_len"]), machine=e["chip"], engine=e["engine"],
                              dtype=e.get("dtype", "bf16"))
    metric = _check.choice("metric", e["metric"], METRICS)
    g = lay.n_gpus
    if metric == "tflops_per_gpu":
        pred = _flops_per_step(model, e, lay.recompute) / (p.step_s * g) / 1e12
    elif metric == "mfu":
        from mlcalc.accelerators import spec
        pred = _flops_per_step(model, e, lay.recompute) / (p.step_s * g * spec(e["chip"]).peak_flops("bf16"))
    elif metric == "step_s":
        pred = p.step_s
    else:
        pred = p.tokens_per_s / g
    pub = float(e["published"])
    err = pub / pred - 1.0 if metric == "step_s" else pred / pub - 1.0  # a faster prediction is positive
    return Check(name, metric, pub, pred, err, str(e.get("known_miss", "")), p)


def checks() -> tuple[Check, ...]:
    """Every published run, checked."""
    return tuple(check(n) for n in runs())


def throughput_error(c: Check) -> float:
    """The error as throughput (:attr:`Check.error`): a slower prediction is negative, whatever the metric."""
    return c.error
