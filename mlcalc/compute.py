"""Compute: FLOPs of a training run, its time and cost, MFU/HFU, achievable FLOPS, roofline, matmul shapes.

Base units throughout: FLOP, FLOP/s, bytes, bytes/s, seconds. "Peak" FLOP/s come from the
accelerator catalogue (``mlcalc.accelerators``); "achievable" ones from
``data/achievable_matmul.json`` (published MAMF measurements). Further tables, e.g. "measured" in
this book's own benchmark runs, come either from another data file named ``*_matmul.json`` with
the same layout (``{"tables": {"measured": {"description": ..., "entries": {key: {dtype:
{"tflops": ..., "source": ...}}}}}}``), or at run time from :func:`register_flops_table`. Every
calculator that takes a ``source`` then offers them next to "advertised" and "achievable".
"""

from __future__ import annotations

import json
import math
from functools import lru_cache
from importlib import resources
from types import MappingProxyType
from typing import Any, Iterable, Mapping, NamedTuple, Sequence, TypedDict

from mlcalc import _check, units
from mlcalc.accelerators import DTYPES, catalogue, spec
from mlcalc.models import ModelConfig
from mlcalc.units import SECONDS_PER_DAY, SECONDS_PER_HOUR

# Bytes per element of the dtypes the accelerator tables list (their sizes: mlcalc.units, the one home).
DTYPE_BYTES: Mapping[str, float] = units.dtype_table(DTYPES)

# ---------------------------------------------------------------------------------------------
# FLOPs of a training run
# ---------------------------------------------------------------------------------------------

# FLOP per parameter per token: forward 2, backward 4; a recomputed forward adds 2. This module is the one
# home of every FLOP convention, each named: the 6N rule (Kaplan et al. 2020) and 8N with recomputation
# (:func:`training_flops`), Megatron-LM's eq. 3 (:func:`megatron_flops_per_iteration`), Korthikanti et al.'s
# (:func:`korthikanti_flops_per_iteration`), PaLM's, the book's MFU convention (:func:`palm_flops_per_token`),
# the least a step executes (:func:`executed_flops_per_token`) and GPT-NeoX's logged count
# (:func:`gpt_neox_flops_per_token`).
FLOPS_PER_PARAM_TOKEN = 6.0
FLOPS_PER_PARAM_TOKEN_RECOMPUTE = 8.0


def training_flops(n_params: float, n_tokens: float, recompute: bool = False) -> float:
    """Total FLOP to train a dense transformer: ``6 * N * D`` (``8 * N * D`` with full recomputation).

    Parameters
    ----------
    n_params : number of parameters N (e.g. 7e9).
    n_tokens : number of training tokens D (e.g. 300e9).
    recompute : whether activations are recomputed in the backward pass (one more forward: 8ND).

    References
    ----------
    Kaplan et al. 2020 (C = 6ND); Narayanan et al. 2021, Sec. 5.1 (8TP with recomputation).

    GPT-3 175B on 300B tokens (Brown et al. 2020, "Language Models are Few-Shot Learners", Table D.1,
    gives 3.14e+23 FLOP):

    >>> f"{training_flops(175e9, 300e9):.3g}"
    '3.15e+23'
    """
    n_params = _check.positive("n_params", n_params)
    n_tokens = _check.positive("n_tokens", n_tokens)
    factor = FLOPS_PER_PARAM_TOKEN_RECOMPUTE if recompute else FLOPS_PER_PARAM_TOKEN
    return _check.result("training FLOPs", factor * n_params * n_tokens)


# Compute-optimal training tokens per parameter: Hoffmann et al. 2022 (Chinchilla, 70B parameters on
# 1.4T tokens; their Table 3 gives about 20 tokens per parameter from 400M to 10T parameters).
CHINCHILLA_TOKENS_PER_PARAM = 20.0


def tokens_from_budget(n_params: float, tokens_per_param: float = CHINCHILLA_TOKENS_PER_PARAM) -> float:
    """Training tokens for a token budget stated per parameter: ``n_params * tokens_per_param``.

    With the default ratio (about 20 tokens per parameter) this is the compute-optimal ("Chinchilla")
    number of tokens for a model of ``n_params`` parameters.

    References
    ----------
    Hoffmann et al. 2022, "Training Compute-Optimal Large Language Models", Table 3.
    """
    n_params = _check.positive("n_params", n_params)
    ratio = _check.positive("tokens_per_param", tokens_per_param)
    return n_params * ratio


def megatron_params(n_layers: int, hidden: int, vocab: int, seq_len: int) -> float:
    """Parameters of a GPT model, Narayanan et al. 2021 eq. (2).

    ``P = 12 l h^2 (1 + 13/(12h) + (V + s)/(12 l h))``
    """
    l = _check.positive_int("n_layers", n_layers)
    h = _check.positive_int("hidden", hidden)
    v = _check.positive_int("vocab", vocab)
    s = _check.positive_int("seq_len", seq_len)
    return 12.0 * l * h * h * (1.0 + 13.0 / (12.0 * h) + (v + s) / (12.0 * l * h))


def megatron_flops_per_iteration(
    batch: int, seq_len: int, n_layers: int, hidden: int, vocab: int, recompute: bool = True
) -> float:
    """FLOP of one training iteration of a GPT model, counting attention and the logit layer.

    With full activation recomputation (Narayanan et al. 2021, eq. 3):
    ``F = 96 B s l h^2 (1 + s/(6h) + V/(16 l h))``.
    Without it, the layers run 3 passes instead of 4 (Korthikanti et al. 2022, App. A):
    ``F = 72 B s l h^2 (1 + s/(6h) + V/(12 l h))``.

    Parameters
    ----------
    batch : global batch size B, in sequences.
    seq_len : sequence length s, in tokens.
    n_layers, hidden, vocab : transformer layers l, hidden size h, vocabulary size V.
    recompute : full activation recomputation (the paper's setting) or none.
    """
    b = _check.positive_int("batch", batch)
    s = _check.positive_int("seq_len", seq_len)
    l = _check.positive_int("n_layers", n_layers)
    h = _check.positive_int("hidden", hidden)
    v = _check.positive_int("vocab", vocab)
    if recompute:
        return 96.0 * b * s * l * h * h * (1.0 + s / (6.0 * h) + v / (16.0 * l * h))
    return 72.0 * b * s * l * h * h * (1.0 + s / (6.0 * h) + v / (12.0 * l * h))


# Narayanan et al. 2021, Table 1: global batch size (sequences of 2048 tokens) of each weak-scaling
# model; their shapes are the "Megatron GPT ..." presets of mlcalc/data/models.json.
# Section 5.1 also trains GPT-3 175B (the mlcalc.models preset) with a batch of 1536 on 1024 GPUs.
MEGATRON_BATCH: Mapping[str, int] = MappingProxyType({
    "GPT-3 175B": 1536, "Megatron GPT 1.7B": 512, "Megatron GPT 3.6B": 512, "Megatron GPT 7.5B": 512, "Megatron GPT 18.4B": 1024,
    "Megatron GPT 39.1B": 1536, "Megatron GPT 76.1B": 1792, "Megatron GPT 145.6B": 2304,
    "Megatron GPT 310.1B": 2160, "Megatron GPT 529.6B": 2520, "Megatron GPT 1008B": 3072,
})
MEGATRON_SEQ_LEN = 2048


class IterationFlops(NamedTuple):
    """FLOPs of one iteration of a GPT model, and how they compare with 6N and 8N per token."""

    n_params: float  # parameters by eq. 2
    flops: float  # FLOP per iteration (eq. 3 with recomputation, Korthikanti App. A without)
    flops_per_token: float  # flops / (B s)
    ratio_to_n: float  # flops_per_token / n_params: about 8 with recomputation, 6 without
    attention_share: float  # fraction of the layer FLOPs due to the s/(6h) attention term


def gpt_iteration_flops(model: ModelConfig, batch: int, seq_len: int = MEGATRON_SEQ_LEN,
                        recompute: bool = True) -> IterationFlops:
    """Parameters (eq. 2) and FLOP per iteration (eq. 3) of a GPT-shaped ``model``, with the attention share.

    Narayanan et al.'s formulas see a GPT layer: only ``n_layers``, ``hidden`` and ``vocab`` enter.
    """
    p = megatron_params(model.n_layers, model.hidden, model.vocab, seq_len)
    f = megatron_flops_per_iteration(batch, seq_len, model.n_layers, model.hidden, model.vocab, recompute)
    per_token = f / (batch * seq_len)
    attn = (seq_len / (6.0 * model.hidden)) / (1.0 + seq_len / (6.0 * model.hidden))
    return IterationFlops(p, f, per_token, per_token / p, attn)


# ---------------------------------------------------------------------------------------------
# FLOP conventions of published MFU / HFU figures
# ---------------------------------------------------------------------------------------------

RECOMPUTE_KINDS = ("none", "selective", "full")


def palm_flops_per_token(model: ModelConfig, seq_len: int, attention: bool = True,
                         n_params: float | None = None) -> float:
    """Model FLOP per token as PaLM counts it: ``6 N + 12 L H Q T`` (Chowdhery et al. 2022, Appendix B).

    ``N`` parameters (active ones for a mixture of experts; ``n_params`` overrides), ``L`` layers,
    ``H`` query heads, ``Q`` head width, ``T`` sequence length; ``attention=False`` gives the bare 6N.
    """
    t = _check.positive_int("seq_len", seq_len)
    n = _check.positive("n_params", n_params) if n_params is not None else float(model.n_active_params())
    att = 12.0 * model.n_layers * model.n_heads * model.qk_head_dim * t if attention else 0.0
    return 6.0 * n + att


def executed_flops_per_token(model: ModelConfig, seq_len: int) -> float:
    """FLOP per token a step executes at least: ``6 N_active + 6 L s h`` (causal attention does half of
    PaLM's ``12 L s h``; the planner's step-time floor, :mod:`mlcalc.plan`)."""
    s = _check.positive_int("seq_len", seq_len)
    return 6.0 * model.n_active_params() + 6.0 * model.n_layers * s * model.n_heads * model.head_dim


def gpt_neox_flops_per_token(model: ModelConfig, seq_len: int) -> float:
    """FLOP per token as GPT-NeoX logged "approx flops per GPU" from May 2021 to September 2023:
    ``6 N + 60 s h l`` (N all parameters, s sequence, h hidden, l layers; no recomputation counted).

    EleutherAI/gpt-neox, megatron/logging.py ``get_flops`` (commit da0a017b, 2021-05-06; replaced by
    Narayanan et al.'s eq. 3 in commit 5f364017, 2023-09-27): the count behind GPT-NeoX-20B's 117 TFLOP/s.
    """
    s = _check.positive_int("seq_len", seq_len)
    return 6.0 * model.n_params() + 60.0 * s * model.hidden * model.n_layers


#: The book's one convention for MFU and HFU (every page that shows an MFU says it uses this one).
MFU_CONVENTION = ("PaLM (Chowdhery et al. 2022, Appendix B): 6 N + 12 L H Q T FLOP per token, N the active "
                  "parameters; HFU adds the recomputation actually done")


def palm_hardware_flops_per_token(model: ModelConfig, seq_len: int, recompute: str = "none") -> float:
    """FLOP per token executed under PaLM's convention: :func:`palm_flops_per_token` plus the recomputed
    forward: ``4 L H Q T`` (attention) with selective recomputation, ``2 N + 4 L H Q T`` with full."""
    _check.choice("recompute", recompute, RECOMPUTE_KINDS)
    att_fwd = 4.0 * model.n_layers * model.n_heads * model.qk_head_dim * _check.positive_int("seq_len", seq_len)
    extra = {"none": 0.0, "selective": att_fwd, "full": 2.0 * model.n_active_params() + att_fwd}[recompute]
    return palm_flops_per_token(model, seq_len) + extra


def korthikanti_flops_per_iteration(batch: int, seq_len: int, n_layers: int, hidden: int, vocab: int,
                                    recompute: str = "none") -> float:
    """FLOP per iteration of a GPT model under Korthikanti et al. 2022's convention (Appendix A).

    - "none" (their model FLOPs, eq. 7): ``72 B L s h^2 (1 + s/(6h) + v/(12 h L))``;
    - "selective" (their hardware FLOPs, eq. 8): ``72 B L s h^2 (1 + s/(3h) + v/(12 h L))``;
    - "full": Narayanan et al. 2021 eq. 3, ``96 B L s h^2 (1 + s/(6h) + v/(16 L h))``.
    """
    _check.choice("recompute", recompute, RECOMPUTE_KINDS)
    if recompute == "full":
        return megatron_flops_per_iteration(batch, seq_len, n_layers, hidden, vocab, recompute=True)
    b = _check.positive_int("batch", batch)
    s = _check.positive_int("seq_len", seq_len)
    l = _check.positive_int("n_layers", n_layers)
    h = _check.positive_int("hidden", hidden)
    v = _check.positive_int("vocab", vocab)
    att = s / (3.0 * h) if recompute == "selective" else s / (6.0 * h)
    return 72.0 * b * l * s * h * h * (1.0 + att + v / (12.0 * h * l))


class Utilization(NamedTuple):
    """MFU and HFU of one measured iteration, under a named FLOP convention."""

    mfu: float  # model FLOP/s over peak
    hfu: float  # hardware FLOP/s (recomputation included) over peak
    model_flops: float  # FLOP per iteration the model needs
    hardware_flops: float  # FLOP per iteration executed
    convention: str  # whose formulas


def utilization(model: ModelConfig, batch: int, seq_len: int, iteration_time_s: float, peak_flops_per_gpu: float,
                n_gpus: int = 1, recompute: str = "none", convention: str = "korthikanti") -> Utilization:
    """MFU and HFU of an iteration of ``batch`` sequences, the way a paper counted them.

    ``convention``: "korthikanti" (GPT layer formulas, :func:`korthikanti_flops_per_iteration`) or
    "palm" (:func:`palm_flops_per_token`; its hardware FLOPs add one forward pass, 2N + 4 L H Q T per
    token, with full recomputation, and the attention forward, 4 L H Q T, with selective).
    """
    _check.choice("convention", convention, ("korthikanti", "palm"))
    _check.choice("recompute", recompute, RECOMPUTE_KINDS)
    b = _check.positive_int("batch", batch)
    s = _check.positive_int("seq_len", seq_len)
    if convention == "korthikanti":
        mf = korthikanti_flops_per_iteration(b, s, model.n_layers, model.hidden, model.vocab, "none")
        hf = korthikanti_flops_per_iteration(b, s, model.n_layers, model.hidden, model.vocab, recompute)
    else:
        mf = palm_flops_per_token(model, s) * b * s
        hf = palm_hardware_flops_per_token(model, s, recompute) * b * s
    return Utilization(mfu(mf, iteration_time_s, peak_flops_per_gpu, n_gpus),
                       hfu(hf, iteration_time_s, peak_flops_per_gpu, n_gpus), mf, hf, convention)


# ---------------------------------------------------------------------------------------------
# Time and cost
# ---------------------------------------------------------------------------------------------


def training_time_s(total_flops: float, n_gpus: int, peak_flops_per_gpu: float, mfu: float = 1.0) -> float:
    """Wall time of a run: ``total_flops / (n_gpus * peak_flops_per_gpu * mfu)``.

    Pass the achieved FLOP/s per GPU as ``peak_flops_per_gpu`` with ``mfu=1`` to use a measured
    throughput (Narayanan et al. 2021 eq. 4 is this with ``total_flops = 8 T P``).
    """
    total_flops = _check.positive("total_flops", total_flops)
    n_gpus = _check.positive_int("n_gpus", n_gpus)
    peak = _check.positive("peak_flops_per_gpu", peak_flops_per_gpu)
    mfu = _check.fraction("mfu", mfu)
    return _check.result("training_time_s", total_flops / (n_gpus * peak * mfu))


class RunCost(NamedTuple):
    """Time, GPU-hours and money of one training run."""

    time_s: float  # wall-clock time, seconds
    gpu_hours: float  # n_gpus * time in hours
    cost: float  # gpu_hours * price per GPU-hour (currency of the price)
    achieved_flops_per_gpu: float  # peak * MFU, FLOP/s per GPU

    @property
    def days(self) -> float:
        """Wall-clock time in days."""
        return self.time_s / SECONDS_PER_DAY


def run_cost(
    total_flops: float, n_gpus: int, peak_flops_per_gpu: float, mfu: float, price_per_gpu_hour: float
) -> RunCost:
    """Time, GPU-hours and cost of a run of ``total_flops`` on ``n_gpus`` at a given MFU and price.

    Parameters
    ----------
    total_flops : FLOP the run needs (e.g. ``training_flops(N, D)``).
    n_gpus : accelerators used together.
    peak_flops_per_gpu : peak FLOP/s of one (advertised or achievable, see :func:`achievable_flops`).
    mfu : model FLOPS utilization, the fraction of that peak the run achieves, in (0, 1].
    price_per_gpu_hour : price of one accelerator for one hour (>= 0).
    """
    time_s = training_time_s(total_flops, n_gpus, peak_flops_per_gpu, mfu)
    price = _check.non_negative("price_per_gpu_hour", price_per_gpu_hour)
    gpu_hours = n_gpus * time_s / SECONDS_PER_HOUR
    return RunCost(time_s, gpu_hours, gpu_hours * price, peak_flops_per_gpu * mfu)


def wall_time_s_from_gpu_hours(gpu_hours: float, n_gpus: int) -> float:
    """Wall-clock seconds of a run that used ``gpu_hours`` spread over ``n_gpus``."""
    gpu_hours = _check.positive("gpu_hours", gpu_hours)
    n_gpus = _check.positive_int("n_gpus", n_gpus)
    return gpu_hours / n_gpus * SECONDS_PER_HOUR


class ClusterOffer(NamedTuple):
    """A cluster offered for a run: which accelerator, how many, at what price per GPU-hour, at what MFU
    (:class:`mlcalc.plan.Offer` is the planner's: a way to get a chip, rent, HPC or buy)."""

    name: str  # label shown in tables, e.g. "8 x H100 on cloud A"
    accelerator: str  # catalogue key, e.g. "H100-SXM"
    n_gpus: int  # accelerators in the offer
    price_per_gpu_hour: float  # price of one accelerator for one hour
    mfu: float = 0.5  # fraction of the chosen peak the run is expected to reach
    dtype: str = "bf16"  # dtype of the peak
    flops_source: str = "advertised"  # "advertised", "achievable" or a registered table


class OfferResult(NamedTuple):
    """An offer and what the run would cost on it."""

    offer: ClusterOffer  # the offer itself
    peak_flops_per_gpu: float  # FLOP/s per GPU from the offer's flops_source
    time_s: float  # wall-clock time, seconds
    gpu_hours: float  # GPU-hours
    cost: float  # total price


def compare_offers(total_flops: float, offers: Iterable[ClusterOffer]) -> list[OfferResult]:
    """Time and cost of the same run on each offer, in the order given."""
    results = []
    for i, offer in enumerate(offers):
        if not offer.name:
            raise ValueError(f"offers[{i}].name={offer.name!r} is not allowed: give each offer a name")
        peak = achievable_flops(offer.accelerator, offer.dtype, offer.flops_source)
        rc = run_cost(total_flops, offer.n_gpus, peak, offer.mfu, offer.price_per_gpu_hour)
        results.append(OfferResult(offer, peak, rc.time_s, rc.gpu_hours, rc.cost))
    if not results:
        raise ValueError("offers=[] is not allowed: give at least one offer")
    return results


class PublishedRun(NamedTuple):
    """A training run whose size and GPU-hours were published: a worked example, not a hardware spec."""

    name: str  # model name as published
    n_params: float  # parameters (rounded as the name states)
    n_tokens: float  # training tokens
    gpu_hours: float  # GPU-hours reported
    n_gpus: int  # accelerators the run used together
    accelerator: str  # catalogue key
    source: str  # where the figures are published


_CLIMATEGPT = "https://arxiv.org/abs/2401.09646"
# Thulke et al. 2024 (ClimateGPT), Table 1, as quoted in A. Cockcroft's talk: three
# fine-tunes of Llama 2 on 4.2B tokens and two 7B models from scratch, on 20 nodes of 8 H100s.
CLIMATEGPT_RUNS: tuple[PublishedRun, ...] = (
    PublishedRun("ClimateGPT-70B", 70e9, 4.2e9, 2182, 160, "H100-SXM", _CLIMATEGPT),
    PublishedRun("ClimateGPT-13B", 13e9, 4.2e9, 301, 160, "H100-SXM", _CLIMATEGPT),
    PublishedRun("ClimateGPT-7B", 7e9, 4.2e9, 157, 160, "H100-SXM", _CLIMATEGPT),
    PublishedRun("ClimateGPT-FSC-7B", 7e9, 319.5e9, 14131, 160, "H100-SXM", _CLIMATEGPT),
    PublishedRun("ClimateGPT-FSG-7B", 7e9, 323.7e9, 14288, 160, "H100-SXM", _CLIMATEGPT),
)

# A. Cockcroft's talk ("Communicating megabytes in microseconds?"): an AWS p5.48xlarge,
# 8 x H100, at "~$100/hr". A list price from the talk, for worked examples only.
COCKCROFT_P5_PRICE_PER_HOUR = 100.0
COCKCROFT_P5_GPUS = 8
# When that price was listed (the talk, 2024). AWS cut on-demand P5 prices by up to 45% in June 2025
# ("Announcing up to 45% price reduction for Amazon EC2 NVIDIA GPU-accelerated instances", AWS What's New).
COCKCROFT_P5_PRICE_DATE = "2024"


# ---------------------------------------------------------------------------------------------
# MFU and HFU
# ---------------------------------------------------------------------------------------------


def achieved_flops_per_gpu(flops_per_iteration: float, iteration_time_s: float, n_gpus: int = 1) -> float:
    """FLOP/s each GPU delivers: ``flops_per_iteration / (iteration_time_s * n_gpus)``."""
    flops = _check.positive("flops_per_iteration", flops_per_iteration)
    t = _check.positive("iteration_time_s", iteration_time_s)
    n = _check.positive_int("n_gpus", n_gpus)
    return _check.result("achieved FLOP/s per GPU", flops / (t * n))


def mfu(flops_per_iteration: float, iteration_time_s: float, peak_flops_per_gpu: float, n_gpus: int = 1) -> float:
    """Model FLOPS utilization: achieved model FLOP/s over peak FLOP/s.

    ``flops_per_iteration`` counts the model's FLOP only (e.g. 6 N tokens, no recomputation).
    The result may exceed 1 only if the inputs are inconsistent; it is returned as is.

    References
    ----------
    Chowdhery et al. 2022 (PaLM), Sec. 4.1; Bekman's example: 624 TFLOP in 4 s on an A100
    (312 TFLOPS bf16) is 50% MFU.
    """
    peak = _check.positive("peak_flops_per_gpu", peak_flops_per_gpu)
    return _check.result("mfu", achieved_flops_per_gpu(flops_per_iteration, iteration_time_s, n_gpus) / peak)


def hfu(
    hardware_flops_per_iteration: float, iteration_time_s: float, peak_flops_per_gpu: float, n_gpus: int = 1
) -> float:
    """Hardware FLOPS utilization: like :func:`mfu` but counting every FLOP executed, recomputation included."""
    return mfu(hardware_flops_per_iteration, iteration_time_s, peak_flops_per_gpu, n_gpus)


def mfu_from_tokens(tokens_per_s: float, flops_per_token: float, peak_flops_per_gpu: float, n_gpus: int = 1) -> float:
    """MFU from throughput: ``tokens_per_s * flops_per_token / (n_gpus * peak)``.

    ``tokens_per_s`` is for the whole job; ``flops_per_token`` is e.g. ``6 * n_params``.
    """
    tps = _check.positive("tokens_per_s", tokens_per_s)
    fpt = _check.positive("flops_per_token", flops_per_token)
    peak = _check.positive("peak_flops_per_gpu", peak_flops_per_gpu)
    n = _check.positive_int("n_gpus", n_gpus)
    return _check.result("mfu", tps * fpt / (n * peak))


# ---------------------------------------------------------------------------------------------
# Advertised versus achievable FLOPS
# ---------------------------------------------------------------------------------------------

ADVERTISED = "advertised"



class FlopsTable(TypedDict):
    """One table of achievable FLOPS, as a ``*_matmul.json`` file holds it."""

    description: str  # what was measured, by whom
    entries: dict[str, dict[str, dict[str, Any]]]  # accelerator key -> dtype -> {"tflops", "source", ...}


_EXTRA_TABLES: dict[str, FlopsTable] = {}


def _matmul_files() -> list[tuple[str, str]]:
    """(name, text) of every ``*_matmul.json`` in mlcalc/data, achievable_matmul.json first."""
    files = [f for f in resources.files("mlcalc.data").iterdir() if f.name.endswith("_matmul.json")]
    files.sort(key=lambda f: (f.name != "achievable_matmul.json", f.name))
    return [(f.name, f.read_text()) for f in files]


@lru_cache(maxsize=None)
def _file_tables() -> Mapping[str, FlopsTable]:
    """Tables from every ``*_matmul.json`` data file; a later file may not redefine a table."""
    tables: dict[str, FlopsTable] = {}
    for name, text in _matmul_files():
        for table, body in json.loads(text)["tables"].items():
            if table in tables or table == ADVERTISED:
                raise ValueError(f"table {table!r} in {name} is defined twice: give it another name")
            tables[table] = body
    return MappingProxyType(tables)


def _tables() -> dict[str, FlopsTable]:
    return {**_file_tables(), **_EXTRA_TABLES}


def flops_sources() -> tuple[str, ...]:
    """Names a calculator may pass as ``source``: "advertised" first, then each table."""
    return (ADVERTISED, *_tables())


def register_flops_table(name: str, entries: Mapping[str, Mapping[str, Mapping[str, object]]], description: str) -> None:
    """Add a table of FLOPS figures, e.g. ``"measured"`` from this book's own benchmark runs.

    ``entries`` maps accelerator key -> dtype -> ``{"tflops": float, "source": str, ...}``, the
    same shape as ``data/achievable_matmul.json``. A table of the same name is replaced.
    """
    if not isinstance(name, str) or not name or name == ADVERTISED:
        raise ValueError(f"name={name!r} is not allowed: give a new, non-empty table name other than 'advertised'")
    for key, by_dtype in entries.items():
        spec(key)
        for dtype, entry in by_dtype.items():
            _check.choice(f"dtype of {key}", dtype, DTYPE_BYTES)
            _check.positive(f"entries[{key!r}][{dtype!r}]['tflops']", entry.get("tflops"))
            if not str(entry.get("source", "")).strip():
                raise ValueError(f"entries[{key!r}][{dtype!r}] has no 'source': every figure needs one")
    _EXTRA_TABLES[name] = {"description": description, "entries": {k: {d: dict(e) for d, e in v.items()} for k, v in entries.items()}}


def unregister_flops_table(name: str) -> None:
    """Remove a table added with :func:`register_flops_table` (the file's tables stay)."""
    _check.choice("name", name, _EXTRA_TABLES)
    del _EXTRA_TABLES[name]


def flops_keys(source: str) -> frozenset[tuple[str, str]]:
    """The (accelerator, dtype) pairs table ``source`` has a figure for (every chip's dtypes for "advertised")."""
    _check.choice("source", source, flops_sources())
    if source == ADVERTISED:
        return frozenset((k, d) for k, a in catalogue().items() for d in a.dense_tflops)
    entries = _tables()[source]["entries"]
    return frozenset((k, d) for k, dd in entries.items() for d in dd)


def flops_entry(key: str, dtype: str = "bf16", source: str = "achievable") -> Mapping[str, Any]:
    """The stored record behind an achievable figure: tflops, source URL, shape, software, notes."""
    spec(key)
    _check.choice("source", source, [s for s in flops_sources() if s != ADVERTISED])
    entries = _tables()[source]["entries"]
    by_dtype = entries.get(key, {})
    if dtype not in by_dtype:
        have = [f"{k}/{d}" for k, dd in entries.items() for d in dd]
        raise ValueError(
            f"dtype={dtype!r} is not allowed for accelerator={key!r} with source={source!r}: "
            f"that table has {', '.join(have)}"
        )
    return MappingProxyType(dict(by_dtype[dtype]))


def achievable_flops(key: str, dtype: str = "bf16", source: str = ADVERTISED) -> float:
    """FLOP/s of accelerator ``key`` for ``dtype``: the datasheet peak ("advertised") or a table's figure.

    Parameters
    ----------
    key : catalogue key, e.g. "H100-SXM".
    dtype : "bf16", "fp8", ...
    source : "advertised" (dense datasheet peak), "achievable" (published maximum achievable
        matmul FLOPS, MAMF) or the name of a table added with :func:`register_flops_table`.
    """
    _check.choice("source", source, flops_sources())
    if source == ADVERTISED:
        return spec(key).peak_flops(dtype)
    return float(flops_entry(key, dtype, source)["tflops"]) * 1e12


def has_flops(key: str, dtype: str, source: str) -> bool:
    """Whether :func:`achievable_flops` has a figure for this accelerator, dtype and source."""
    try:
        achievable_flops(key, dtype, source)
    except ValueError:
        return False
    return True


class CatalogueRow(NamedTuple):
    """One accelerator in the catalogue table for a dtype and FLOPS source."""

    key: str  # catalogue key
    vendor: str  # vendor name
    tflops: float  # TFLOPS (dense) for the dtype, from the chosen source
    memory_gb: float  # device memory, GB (1e9 bytes)
    bandwidth_tbps: float  # device-memory bandwidth, TB/s
    scale_up_gbps: float | None  # scale-up link, GB/s per direction (None if unknown)
    ridge_flops_per_byte: float  # tflops / bandwidth: the roofline ridge point


SORT_KEYS: Mapping[str, str] = MappingProxyType(
    {
        "tflops": "TFLOPS",
        "memory_gb": "memory (GB)",
        "bandwidth_tbps": "bandwidth (TB/s)",
        "scale_up_gbps": "scale-up (GB/s per direction)",
        "ridge_flops_per_byte": "ops:byte",
    }
)


def catalogue_rows(dtype: str = "bf16", source: str = ADVERTISED, sort_by: str = "tflops") -> list[CatalogueRow]:
    """Accelerators that have a ``dtype`` figure in ``source``, sorted by ``sort_by``, largest first."""
    _check.choice("dtype", dtype, DTYPE_BYTES)
    _check.choice("source", source, flops_sources())
    _check.choice("sort_by", sort_by, SORT_KEYS)
    from mlcalc.accelerators import catalogue

    rows = []
    for acc in catalogue().values():
        if not has_flops(acc.key, dtype, source):
            continue
        tflops = achievable_flops(acc.key, dtype, source) / 1e12
        link = acc.scale_up_bytes_per_s
        rows.append(
            CatalogueRow(
                acc.key, acc.vendor, tflops, acc.memory_gb, acc.memory_bandwidth_tbps,
                None if link is None else link / 1e9, tflops / acc.memory_bandwidth_tbps,
            )
        )
    rows.sort(key=lambda r: (-(getattr(r, sort_by) or 0.0), r.key))
    if not rows:
        raise ValueError(f"dtype={dtype!r} with source={source!r} is not allowed: no accelerator has such a figure")
    return rows


# ---------------------------------------------------------------------------------------------
# Roofline
# ---------------------------------------------------------------------------------------------


def _dtype_bytes(dtype: str) -> float:
    _check.choice("dtype", dtype, DTYPE_BYTES)
    return DTYPE_BYTES[dtype]


def matmul_flops(m: int, n: int, k: int) -> float:
    """FLOP of ``(M x K) @ (K x N)``: ``2 M N K`` (one multiply and one add per term)."""
    m = _check.positive_int("m", m)
    n = _check.positive_int("n", n)
    k = _check.positive_int("k", k)
    return 2.0 * m * n * k


def matmul_bytes(m: int, n: int, k: int, dtype: str = "bf16") -> float:
    """Bytes a matmul must move at least once: read A (MxK) and B (KxN), write C (MxN)."""
    m = _check.positive_int("m", m)
    n = _check.positive_int("n", n)
    k = _check.positive_int("k", k)
    return (m * k + k * n + m * n) * _dtype_bytes(dtype)


def matmul_intensity(m: int, n: int, k: int, dtype: str = "bf16") -> float:
    """Arithmetic intensity of a matmul in FLOP per byte: ``2MNK / (bytes * (MK + KN + MN))``.

    References
    ----------
    NVIDIA, Matrix Multiplication Background User's Guide (fp16: 8192x128x8192 gives 124.1
    FLOPS/B, 8192x8192x8192 gives 2730).
    """
    return matmul_flops(m, n, k) / matmul_bytes(m, n, k, dtype)


def ridge_intensity(peak_flops: float, bandwidth_bytes_per_s: float) -> float:
    """The roofline's ridge point (the accelerator's ops:byte ratio), FLOP per byte."""
    peak = _check.positive("peak_flops", peak_flops)
    bw = _check.positive("bandwidth_bytes_per_s", bandwidth_bytes_per_s)
    return _check.positive_result("ridge_intensity", peak / bw)


class RooflinePoint(NamedTuple):
    """Where an operation sits on an accelerator's roofline."""

    intensity: float  # the operation's FLOP per byte
    attainable_flops: float  # min(peak, intensity * bandwidth), FLOP/s
    ridge_intensity: float  # peak / bandwidth, FLOP per byte
    bound: str  # "memory" left of the ridge, "compute" at or right of it
    fraction_of_peak: float  # attainable / peak


def roofline(intensity: float, peak_flops: float, bandwidth_bytes_per_s: float) -> RooflinePoint:
    """Attainable FLOP/s of an operation of arithmetic ``intensity``: ``min(peak, intensity * bandwidth)``.

    References
    ----------
    Williams, Waterman and Patterson 2009, "Roofline: an insightful visual performance model".
    """
    i = _check.positive("intensity", intensity)
    ridge = ridge_intensity(peak_flops, bandwidth_bytes_per_s)
    attainable = _check.positive_result("attainable_flops", min(peak_flops, i * bandwidth_bytes_per_s))
    return RooflinePoint(i, attainable, ridge, "compute" if i >= ridge else "memory", attainable / peak_flops)


def decode_intensity(batch: int, bytes_per_param: float = 2.0) -> float:
    """FLOP per byte of weights read in one decoding step of a dense LLM: ``2 * batch / bytes_per_param``.

    Each step reads every weight once and uses it for ``batch`` tokens (2 FLOP each); the KV
    cache is left out, so this is an upper bound on the intensity.
    """
    b = _check.positive_int("batch", batch)
    bpp = _check.positive("bytes_per_param", bytes_per_param)
    return 2.0 * b / bpp


class DecodeBound(NamedTuple):
    """Upper bound on decoding speed of a dense LLM on one accelerator (or a group acting as one)."""

    tokens_per_s: float  # tokens per second summed over the batch
    tokens_per_s_per_sequence: float  # tokens per second each sequence sees
    memory_time_s: float  # time to stream weights (+ KV cache) once, seconds
    compute_time_s: float  # time for 2 * N * batch FLOP at peak, seconds
    bound: str  # "memory" or "compute": whichever takes longer


def decode_bound(
    n_params: float,
    bandwidth_bytes_per_s: float,
    peak_flops: float,
    batch: int = 1,
    bytes_per_param: float = 2.0,
    kv_cache_bytes: float = 0.0,
) -> DecodeBound:
    """Fastest possible decoding: each step streams all weights (and the KV cache) and does 2 N FLOP per token.

    ``step_time = max((N * bytes_per_param + kv_cache_bytes) / bandwidth, 2 * N * batch / peak)``
    """
    n = _check.positive("n_params", n_params)
    bw = _check.positive("bandwidth_bytes_per_s", bandwidth_bytes_per_s)
    peak = _check.positive("peak_flops", peak_flops)
    b = _check.positive_int("batch", batch)
    bpp = _check.positive("bytes_per_param", bytes_per_param)
    kv = _check.non_negative("kv_cache_bytes", kv_cache_bytes)
    t_mem = _check.result("memory_time_s", (n * bpp + kv) / bw)
    t_compute = _check.result("compute_time_s", 2.0 * n * b / peak)
    step = _check.positive_result("step time", max(t_mem, t_compute))
    return _check.fields("decode_bound", DecodeBound(b / step, 1.0 / step, t_mem, t_compute,
                                                     "memory" if t_mem >= t_compute else "compute"))


# ---------------------------------------------------------------------------------------------
# Matmul shape efficiency: tile and wave quantization
# ---------------------------------------------------------------------------------------------


class ShapeEfficiency(NamedTuple):
    """How much of a GPU's work on an M x N output is useful, given tiles and waves."""

    tiles: int  # output tiles: ceil(M / tile_m) * ceil(N / tile_n)
    wave_size: int  # tiles that run at once: n_sms * tiles_per_sm
    waves: int  # ceil(tiles / wave_size)
    tile_efficiency: float  # M * N over the padded area the tiles cover
    wave_efficiency: float  # tiles over waves * wave_size (idle SMs in the last wave)
    efficiency: float  # tile_efficiency * wave_efficiency
    aligned: bool  # every dimension a multiple of 16 bytes' worth of elements (Tensor Core rule)


def matmul_shape_efficiency(
    m: int,
    n: int,
    k: int,
    n_sms: int,
    tile_m: int = 256,
    tile_n: int = 128,
    tiles_per_sm: int = 1,
    dtype: str = "bf16",
) -> ShapeEfficiency:
    """Tile and wave quantization of a GEMM whose output is M x N.

    The output is cut into ``tile_m x tile_n`` tiles; each SM works on ``tiles_per_sm`` tiles at
    a time, so tiles run in waves of ``n_sms * tiles_per_sm``. A partial tile costs as much as a
    full one, and so does a partial last wave; the efficiency is the useful fraction of the work
    paid for. K does not change the quantization (each tile walks all of K) but enters the
    alignment check.

    References
    ----------
    NVIDIA, Matrix Multiplication Background User's Guide, "Dimension quantization effects"
    (A100: 108 SMs, 256x128 tiles, one tile per SM -> waves of 108 tiles).
    """
    m = _check.positive_int("m", m)
    n = _check.positive_int("n", n)
    return _shape_efficiencies(m, (n,), *_shape_inputs(k, n_sms, tile_m, tile_n, tiles_per_sm, dtype))[0]


#: Most values of N one :func:`matmul_shape_efficiencies` call takes (a chart's sweep has a few hundred).
MAX_SHAPES = 10_000


def matmul_shape_efficiencies(
    m: int,
    ns: Sequence[int],
    k: int,
    n_sms: int,
    tile_m: int = 256,
    tile_n: int = 128,
    tiles_per_sm: int = 1,
    dtype: str = "bf16",
) -> list[ShapeEfficiency]:
    """:func:`matmul_shape_efficiency` for each N of ``ns`` (at most :data:`MAX_SHAPES`), the other inputs
    checked once: the same numbers, for a sweep over N."""
    if isinstance(ns, (str, bytes)) or not isinstance(ns, Sequence) or len(ns) > MAX_SHAPES:
        raise ValueError(f"ns={_check._fmt(ns)} is not allowed: give a list of at most {MAX_SHAPES:,} whole numbers")
    m = _check.positive_int("m", m)
    checked = tuple(_check.positive_int("n", n) for n in ns)
    return _shape_efficiencies(m, checked, *_shape_inputs(k, n_sms, tile_m, tile_n, tiles_per_sm, dtype))


def _shape_inputs(k: int, n_sms: int, tile_m: int, tile_n: int, tiles_per_sm: int,
                  dtype: str) -> tuple[int, int, int, int, int, int]:
    """The inputs of a shape's quantization after M and N, checked (ValueError naming the first bad one); the
    dtype as the alignment step in elements (16 bytes' worth)."""
    k = _check.positive_int("k", k)
    n_sms = _check.positive_int("n_sms", n_sms)
    tile_m = _check.positive_int("tile_m", tile_m)
    tile_n = _check.positive_int("tile_n", tile_n)
    tiles_per_sm = _check.positive_int("tiles_per_sm", tiles_per_sm)
    return k, n_sms, tile_m, tile_n, tiles_per_sm, max(1, int(round(16 / _dtype_bytes(dtype))))


def _shape_efficiencies(m: int, ns: Sequence[int], k: int, n_sms: int, tile_m: int, tile_n: int, tiles_per_sm: int,
                        step: int) -> list[ShapeEfficiency]:
    """Tile and wave quantization for each N of ``ns``, the inputs checked: the one formula of both functions above."""
    tm = math.ceil(m / tile_m)
    wave_size = n_sms * tiles_per_sm
    out = []
    for n in ns:
        tn = math.ceil(n / tile_n)
        tiles = tm * tn
        waves = math.ceil(tiles / wave_size)
        tile_eff = (m * n) / (tm * tile_m * tn * tile_n)
        wave_eff = tiles / (waves * wave_size)
        aligned = m % step == 0 and n % step == 0 and k % step == 0
        out.append(ShapeEfficiency(tiles, wave_size, waves, tile_eff, wave_eff, tile_eff * wave_eff, aligned))
    return out


# ---------------------------------------------------------------------------------------------
# The kernel's own tile: tile, wave and split-K quantization of a GEMM, the tile chosen by shape
# ---------------------------------------------------------------------------------------------

#: The output tiles (rows x columns of one CTA's block of the product) a Hopper (sm90) GEMM library chooses among:
#: NVIDIA TensorRT-LLM, cpp/tensorrt_llm/kernels/cutlass_kernels/cutlass_heuristic.cpp, ``get_candidate_tiles_sm90``
#: (the non-grouped list: CtaShape64x{16,32,64,128,256}x128B and CtaShape128x{16,32,64,128,256}x128B; the K slice
#: is 128 bytes: 64 bf16 or 128 FP8 values). The same list serves bf16 and FP8.
HOPPER_TILES: tuple[tuple[int, int], ...] = ((64, 16), (64, 32), (64, 64), (64, 128), (64, 256),
                                             (128, 16), (128, 32), (128, 64), (128, 128), (128, 256))
#: Bytes of one K slice of a tile (the "128B" of the tile names above).
TILE_K_BYTES = 128
#: Rows one warpgroup's matrix instruction covers on Hopper (wgmma is m64nNk16: NVIDIA PTX ISA, "Asynchronous Warpgroup
#: Level Matrix Multiply-Accumulate", shapes .m64nNk*): a 128-row tile is two warpgroups, each reading its own 64 rows
#: of A and the whole tile width of B from shared memory.
WGMMA_ROWS = 64
#: Shared-memory bytes an SM delivers per clock: 32 banks of 4 bytes (NVIDIA CUDA C++ Programming Guide, "Shared
#: Memory", compute capability 5.x and later).
SMEM_BYTES_PER_CLOCK = 128.0
#: Dense matrix FLOP an H100 SM does per clock: 989.4 TFLOP/s bf16 (NVIDIA H100 datasheet, SXM, dense) over 132 SMs
#: at 1.83 GHz (NVIDIA H100 Tensor Core GPU Architecture whitepaper: boost clock for the dense peak) is 4,096;
#: FP8 twice that. Per byte of shared memory the tensor cores need 32 FLOP (bf16, 2-byte values) or 64 (FP8, 1 byte):
#: in both cases a warpgroup's block of ``WGMMA_ROWS x n`` keeps them fed only where ``64 n / (64 + n) >= 32``, i.e.
#: ``n >= 64``; a narrower block runs at ``(64 n / (64 + n)) / 32`` of the rate (n = 16: 40 %, n = 32: 67 %).
SMEM_BALANCE_ROWS = 32.0
#: The tile of :data:`HOPPER_TILES` whose operand traffic the memory behind the SMs (L2, fed from HBM) just keeps up
#: with at the full matrix rate: the largest. Each CTA reads its ``(tile_m + tile_n) x K`` operand bytes through L2;
#: a tile of less area per operand byte than 128 x 256 makes the whole product wait on that traffic instead of on
#: the tensor cores. An assumption, stated so that the measured maximum (the MAMF, found at large shapes where
#: libraries run their largest tiles) is the rate of that tile; checked on the book's measured GEMMs
#: (mlcalc/data/measured/*-gemm-tiles).
L2_BALANCED_TILE = (128, 256)
#: Split-K factors the kernel may use where the output has too few tiles to fill the SMs (TensorRT-LLM's CUTLASS
#: heuristic, ``estimate_best_config_from_occupancies``, tries split-K factors up to its limit when N is below
#: 256 x SMs; cuBLAS likewise splits K for small outputs).
MAX_SPLIT_K = 4


class GemmKernel(NamedTuple):
    """The tile a GEMM library picks for an M x N x K product (:func:`gemm_kernel`) and what of the work it pays for
    is useful."""

    tile_m: int  # output rows of a tile (the product's M, or its N when ``swapped``)
    tile_n: int  # output columns of a tile
    swapped: bool  # computed as (N x K) @ (K x M): the product's rows run along the tile's columns
    split_k: int  # K cut into this many slices, each a CTA of its own
    ctas: int  # tiles x split_k
    waves: int  # ceil(ctas / SMs): one CTA an SM at a time
    tile_rate: float  # the fraction of an SM's matrix rate a tile of this width reaches (shared-memory feed)
    useful: float  # m n k over what the SMs are paid for: waves x SMs x padded tile work / tile_rate (<= 1)


def gemm_kernel(m: int, n: int, k: int, n_sms: int, dtype: str = "bf16",
                tiles: Sequence[tuple[int, int]] = HOPPER_TILES, max_split_k: int = MAX_SPLIT_K) -> GemmKernel:
    """The tile, orientation and split-K a GEMM library picks for an ``m x n x k`` product on ``n_sms`` SMs, and the
    useful share of the work it pays for: the kernel that finishes first.

    Every candidate of ``tiles`` (default :data:`HOPPER_TILES`), in both orientations (the product as written, or
    swapped, (N x K) @ (K x M), as libraries run small-M products so that the few rows fill a narrow tile's columns),
    and every split of K into ``1 .. max_split_k`` slices, costs ``waves x tile_m x tile_n x K-slice / tile_rate``:
    each CTA computes its whole padded tile (a partial tile costs a full one), the CTAs run one an SM at a time in
    waves (a partial last wave costs a full one), each K slice is padded to :data:`TILE_K_BYTES`, and a tile whose
    warpgroup block is narrower than 64 columns runs below the SM's rate (:data:`SMEM_BALANCE_ROWS`). The cheapest
    wins (ties: fewer K slices, then fewer CTAs). ``useful = m n k / (waves x n_sms x tile work / tile_rate)``: the
    share of the SMs' time that does the product's own arithmetic, 1 at a shape that fills every tile and wave.

    The cost of reading the operands from memory is not here: it is the callers' (:func:`mlcalc.serving.matmul_s`),
    beside the arithmetic this prices.

    >>> g = gemm_kernel(8192, 8192, 8192, 132)
    >>> g.useful > 0.95
    True
    """
    m = _check.positive_int("m", m)
    n = _check.positive_int("n", n)
    k = _check.positive_int("k", k)
    sms = _check.positive_int("n_sms", n_sms)
    kt = max(1, int(TILE_K_BYTES // _dtype_bytes(dtype)))
    splits = _check.positive_int("max_split_k", max_split_k)
    cand = tuple(tiles)
    if not cand or not all(isinstance(t, tuple) and len(t) == 2 and all(isinstance(v, int) and v > 0 for v in t)
                           for t in cand):
        raise ValueError(f"tiles={_check._fmt(tiles)} is not allowed: give (rows, columns) pairs of positive whole "
                         "numbers")
    return _gemm_kernel(m, n, k, sms, kt, cand, splits)


@lru_cache(maxsize=65536)
def _gemm_kernel(m: int, n: int, k: int, sms: int, kt: int, tiles: tuple[tuple[int, int], ...],
                 splits: int) -> GemmKernel:
    best: tuple[float, int, int] | None = None
    pick: GemmKernel | None = None
    bm, bn = L2_BALANCED_TILE
    balance = bm * bn / (bm + bn)  # multiply-adds per operand value the memory behind the SMs keeps up with
    dbytes = TILE_K_BYTES / kt  # bytes of one operand value
    for swapped, (rows, cols) in ((False, (m, n)), (True, (n, m))):
        for tm, tn in tiles:
            block = WGMMA_ROWS * tn / (WGMMA_ROWS + tn) if tm >= WGMMA_ROWS else tm * tn / (tm + tn)
            rate = min(1.0, block / SMEM_BALANCE_ROWS)
            tiles_out = math.ceil(rows / tm) * math.ceil(cols / tn)
            for s in range(1, splits + 1):
                kslice = math.ceil(math.ceil(k / s) / kt) * kt
                if s > 1 and kslice * (s - 1) >= k:
                    break  # a slice would be empty
                ctas = tiles_out * s
                waves = math.ceil(ctas / sms)
                # the operands' traffic (and split-K's fp32 partial tiles, written and read back) over the memory
                # behind the SMs, in the same unit: one SM's full-rate time per multiply-add
                moved = ctas * (tm + tn) * kslice + (ctas * tm * tn * 8 / dbytes if s > 1 else 0.0)
                cost = max(waves * tm * tn * kslice / rate, moved * balance / sms)
                key = (cost, s, ctas)
                if best is None or key < best:
                    best = key
                    pick = GemmKernel(tm, tn, swapped, s, ctas, waves, rate, m * n * k / (sms * cost))
    assert pick is not None
    return pick


__all__ = [
    "ADVERTISED",
    "CHINCHILLA_TOKENS_PER_PARAM",
    "CLIMATEGPT_RUNS",
    "CatalogueRow",
    "PublishedRun",
    "COCKCROFT_P5_GPUS",
    "COCKCROFT_P5_PRICE_DATE",
    "COCKCROFT_P5_PRICE_PER_HOUR",
    "SORT_KEYS",
    "catalogue_rows",
    "DTYPE_BYTES",
    "executed_flops_per_token",
    "gpt_neox_flops_per_token",
    "DecodeBound",
    "IterationFlops",
    "MEGATRON_BATCH",
    "MEGATRON_SEQ_LEN",
    "RECOMPUTE_KINDS",
    "Utilization",
    "korthikanti_flops_per_iteration",
    "palm_flops_per_token",
    "palm_hardware_flops_per_token",
    "MFU_CONVENTION",
    "utilization",
    "gpt_iteration_flops",
    "ClusterOffer",
    "OfferResult",
    "RooflinePoint",
    "RunCost",
    "ShapeEfficiency",
    "GemmKernel",
    "HOPPER_TILES",
    "gemm_kernel",
    "achievable_flops",
    "achieved_flops_per_gpu",
    "compare_offers",
    "decode_bound",
    "decode_intensity",
    "flops_entry",
    "flops_sources",
    "has_flops",
    "hfu",
    "matmul_bytes",
    "matmul_flops",
    "matmul_intensity",
    "matmul_shape_efficiency",
    "matmul_shape_efficiencies",
    "megatron_flops_per_iteration",
    "megatron_params",
    "mfu",
    "mfu_from_tokens",
    "register_flops_table",
    "ridge_intensity",
    "roofline",
    "run_cost",
    "training_flops",
    "training_time_s",
    "tokens_from_budget",
    "unregister_flops_table",
    "wall_time_s_from_gpu_hours",
]


# Object parameters (a ModelConfig, a Fabric, a list of offers...) are checked by type before each call.
_check.guard(globals())
