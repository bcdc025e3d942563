"""Serving: decode step time on the roofline, prefill, KV-cache fit, and a serving plan with its dollars.

- Decode reads every weight and the whole KV cache once per step: memory-bound at small batch.
  Batching shares the weight read among more tokens, so tokens/s climb until the KV cache or
  the compute (2 N_active FLOP per token) takes over (Pope et al. 2022; the roofline chapter).
- Prefill is compute-bound: 2 N_active FLOP per prompt token at the achievable matmul rate.
- A framework that launches kernels one by one from Python pays a CPU floor per step: about a
  fixed cost plus a cost per layer, measured here with tiny models (:func:`measured_floor`);
  serving engines that replay CUDA graphs mostly remove it (floor 0).

Base units: bytes, seconds, FLOP, dollars.
"""

from __future__ import annotations

import json
import math
from functools import lru_cache
from importlib import resources
from types import MappingProxyType
from typing import Any, Mapping, NamedTuple

from mlcalc import _check, compute, memory
from mlcalc.accelerators import spec

DECODE_RUN = "h200x2-2026-11-26-decode"  # our measured decode points (mlcalc/data/measured/<run>)
MAX_BATCH = 1024  # largest batch the serving search tries (powers of two)
TENSOR_PARALLEL = (1, 2, 4, 8)


def _run_file(name: str) -> Mapping[str, Any]:
    path = resources.files("mlcalc.data").joinpath("measured").joinpath(DECODE_RUN).joinpath(name)
    return json.loads(path.read_text())


@lru_cache(maxsize=None)
def measured_decode() -> Mapping[str, Any]:
    """The measured run: read bandwidth, the floor probes and the decode points of the 1B and 8B models."""
    return MappingProxyType({"probe": _run_file("probe.json"), "1b": _run_file("decode_1b.json"),
                             "8b": _run_file("decode_8b.json")})


class Floor(NamedTuple):
    """CPU/launch floor of one decode step: ``fixed_s + per_layer_s x layers``."""

    fixed_s: float  # per step, whatever the model
    per_layer_s: float  # per transformer layer
    source: str  # where it was measured


def measured_floor() -> Floor:
    """Least-squares line through the tiny-model probes (2, 8, 32 layers) of our measured run.

    The probes have width 64 and a 256-token vocabulary, so their GPU work is negligible: their
    step time is the cost of launching eager PyTorch kernels and of ``generate``'s own loop.
    """
    pts = [(float(o["n_layers"]), float(o["decode_step_s"])) for o in measured_decode()["probe"]["overhead"]]
    n = len(pts)
    mx = sum(x for x, _ in pts) / n
    my = sum(y for _, y in pts) / n
    slope = sum((x - mx) * (y - my) for x, y in pts) / sum((x - mx) ** 2 for x, _ in pts)
    card = measured_decode()["probe"]["env"].get("device_name", "GPU")
    return Floor(max(0.0, my - slope * mx), max(0.0, slope),
                 f"measured: tiny Llama models, transformers generate (eager, static cache) on {card}")


def measured_read_bandwidth() -> float:
    """Bytes/s of a large bf16 reduction on the measured card (its achievable read bandwidth)."""
    return float(measured_decode()["probe"]["read_bandwidth"]["bytes_per_s"])


def attention_kv_reads(n_heads: int, n_kv_heads: int, expanded: bool) -> float:
    """How many times a decode step moves the KV cache's bytes.

    With ``expanded`` (transformers' SDPA path with a mask on CUDA calls ``repeat_kv``: the cache
    is read, written g = heads / kv_heads times larger, and read again by the kernel): ``1 + 2 g``.
    Otherwise (a GQA-aware kernel, e.g. vLLM's paged attention) once.
    """
    g = _check.positive_int("n_heads", n_heads) / _check.positive_int("n_kv_heads", n_kv_heads)
    return 1.0 + 2.0 * g if expanded else 1.0


class DecodeStep(NamedTuple):
    """One decode step of a batch: its bytes, FLOPs and time, and what bounds it."""

    bytes_per_gpu: float  # weights + KV traffic per GPU
    flops_per_gpu: float  # 2 N_active x batch / tp
    memory_s: float  # bytes / read bandwidth
    compute_s: float  # flops / matmul rate
    floor_s: float  # launch floor
    step_s: float  # max(memory, compute) + floor
    tokens_per_s: float  # batch / step
    bound: str  # "memory", "compute" or "launch floor"


def decode_step(model: memory.ModelConfig, batch: int, context: int, read_bytes_per_s: float,
                matmul_flops: float, tp: int = 1, floor: Floor | None = None, expanded_kv: bool = False,
                weight_bytes_per_param: float = 2.0, kv_bytes_per_value: float = 2.0,
                tp_allreduce_s: float = 0.0) -> DecodeStep:
    """Time of one decode step of ``batch`` sequences whose cache holds ``context`` tokens.

    ``step = max(bytes / read bandwidth, FLOPs / matmul rate) + floor`` where bytes are the
    weights plus the KV cache (moved ``attention_kv_reads`` times), split over ``tp`` GPUs. The
    floor adds: a step's kernels cannot start before Python has launched them, and
    ``generate`` waits for each step's token before launching the next.
    """
    b = _check.positive_int("batch", batch)
    c = _check.positive_int("context", context)
    bw = _check.positive("read_bytes_per_s", read_bytes_per_s)
    rate = _check.positive("matmul_flops", matmul_flops)
    tp = _check.positive_int("tp", tp)
    w = model.n_params() * _check.positive("weight_bytes_per_param", weight_bytes_per_param)
    kv_tok = memory.kv_cache_bytes_per_token(model.n_layers, model.n_kv_heads, model.head_dim, kv_bytes_per_value)
    kv = kv_tok * b * c * attention_kv_reads(model.n_heads, model.n_kv_heads, expanded_kv)
    bytes_gpu = (w + kv) / tp
    flops_gpu = 2.0 * model.n_active_params() * b / tp
    mem_s, comp_s = bytes_gpu / bw, flops_gpu / rate
    fl = 0.0 if floor is None else floor.fixed_s + floor.per_layer_s * model.n_layers
    gpu_s = max(mem_s, comp_s) + _check.non_negative("tp_allreduce_s", tp_allreduce_s)
    step = gpu_s + fl
    bound = "launch floor" if fl > gpu_s else ("memory" if mem_s >= comp_s else "compute")
    return DecodeStep(bytes_gpu, flops_gpu, mem_s, comp_s, fl, step, b / step, bound)


def llama_shape(key: str) -> memory.ModelConfig:
    """The 1B or 8B shape we measured, as a ModelConfig (from the run's own record)."""
    _check.choice("model", key, ("1b", "8b"))
    sh = measured_decode()[key]["shape"]
    return memory.ModelConfig(name=f"Llama-shaped {key.upper()}", n_layers=sh["num_hidden_layers"],
                              hidden=sh["hidden_size"], n_heads=sh["num_attention_heads"],
                              n_kv_heads=sh["num_key_value_heads"], head_dim=sh["head_dim"],
                              ffn_hidden=sh["intermediate_size"], vocab=sh["vocab_size"],
                              tied_embeddings=sh["tie_word_embeddings"])


class DecodeCheck(NamedTuple):
    """A measured decode point next to the prediction."""

    model: str  # "1b" or "8b"
    batch: int  # sequences
    context: int  # tokens in the static cache (prompt + new tokens)
    measured_tokens_per_s: float  # from the run
    predicted_tokens_per_s: float  # decode_step
    error: float  # predicted / measured - 1
    bound: str  # what bounds the predicted step
    card: str  # the GPU it ran on


def check_decode() -> list[DecodeCheck]:
    """Every measured decode point against :func:`decode_step` with the measured floor and bandwidth.

    Inputs the prediction takes from the same card: the read bandwidth (a reduction) and the floor
    (tiny models); the matmul rate is the catalogue's achievable one. The static cache attends over
    its whole length (prompt + 1 + new tokens), so that is the context.
    """
    floor, bw = measured_floor(), measured_read_bandwidth()
    out = []
    for key in ("1b", "8b"):
        run = measured_decode()[key]
        model = llama_shape(key)
        card = run["env"].get("device_name", "GPU")
        rate = compute.achievable_flops("H200-SXM" if "H200" in card else "H100-SXM", "bf16", "achievable")
        for pt in run["points"]:
            if "error" in pt:
                continue
            d = decode_step(model, int(pt["batch"]), int(pt["max_cache_len"]), bw, rate, 1, floor, expanded_kv=True)
            meas = float(pt["decode_tokens_per_s"])
            out.append(DecodeCheck(key, int(pt["batch"]), int(pt["max_cache_len"]), meas, d.tokens_per_s,
                                   d.tokens_per_s / meas - 1.0, d.bound, card))
    return out


# --------------------------------------------------------------------------- the serving plan


class Serving(NamedTuple):
    """How to serve a model at a traffic level within latency targets."""

    chip: str  # catalogue key
    tp: int  # GPUs per replica (tensor parallel)
    batch: int  # concurrent sequences per replica
    kv_tokens_fit: int  # KV-cache tokens that fit beside the weights on one replica
    ttft_s: float  # time to first token: the prompt's prefill
    tpot_s: float  # time per output token: one decode step at the mean context
    replica_requests_per_s: float  # requests/s one replica sustains
    replicas: int  # replicas for the traffic
    gpus: int  # replicas x tp
    output_tokens_per_s: float  # whole deployment, at the asked traffic
    dollars_per_million_tokens: float  # per million output tokens
    bound: str  # what bounds the decode step
    problems: tuple[str, ...]  # targets that no batch meets (empty when all are met)


def plan_serving(model: memory.ModelConfig, chip: str, requests_per_s: float, prompt_tokens: int,
                 output_tokens: int, ttft_target_s: float, tpot_target_s: float, price_per_gpu_hour: float,
                 floor: Floor | None = None, mbu: float = 0.8, weight_bytes_per_param: float = 2.0) -> Serving:
    """Fewest GPUs that serve ``requests_per_s`` within the TTFT and TPOT targets.

    For tp in (1, 2, 4, 8) (smallest first) the weights and at least one sequence's cache must
    fit (``mlcalc.memory.max_kv_tokens``); the batch is the largest power of two up to
    :data:`MAX_BATCH` that fits the KV cache and keeps the decode step under the TPOT target.
    Each request costs its prefill plus ``output_tokens`` steps shared by the batch:
    ``requests/s per replica = 1 / (prefill + output x step / batch)``. Memory bandwidth is the
    datasheet's times ``mbu`` (model bandwidth utilization). Queueing is not modelled.
    """
    rps = _check.positive("requests per second", requests_per_s)
    p = _check.positive_int("prompt tokens", prompt_tokens)
    o = _check.positive_int("output tokens", output_tokens)
    ttft_t = _check.positive("TTFT target (s)", ttft_target_s)
    tpot_t = _check.positive("TPOT target (s)", tpot_target_s)
    price = _check.non_negative("price per GPU-hour", price_per_gpu_hour)
    acc = spec(chip)
    bw = acc.memory_bandwidth_bytes_per_s * _check.fraction("MBU", mbu)
    rate = compute.achievable_flops(chip, "bf16", "achievable" if compute.has_flops(chip, "bf16", "achievable")
                                    else compute.ADVERTISED)
    ctx = p + o
    mean_ctx = p + max(1, o // 2)
    best: Serving | None = None
    problems: list[str] = []
    for tp in TENSOR_PARALLEL:
        if model.n_heads % tp:
            continue
        fit = memory.max_kv_tokens(model, acc.memory_bytes, tp, weight_dtype="bf16")
        if fit < ctx:
            continue
        prefill = 2.0 * model.n_active_params() * p / (tp * rate)
        batch, step = 0, None
        b = 1
        while b <= MAX_BATCH and b * ctx <= fit:
            d = decode_step(model, b, mean_ctx, bw, rate, tp, floor, weight_bytes_per_param=weight_bytes_per_param)
            if d.step_s <= tpot_t or batch == 0:
                batch, step = b, d
            if d.step_s > tpot_t:
                break
            b *= 2
        assert step is not None
        per_replica = 1.0 / (prefill + o * step.step_s / batch)
        replicas = max(1, math.ceil(rps / per_replica))
        gpus = replicas * tp
        out_tps = rps * o
        dollars = gpus * price / (out_tps * 3600.0) * 1e6
        probs = []
        if prefill > ttft_t:
            probs.append(f"TTFT: the prefill of {p:,} tokens takes {prefill * 1e3:,.1f} ms on tp={tp}, "
                         f"over the {ttft_t * 1e3:,.0f} ms target")
        if step.step_s > tpot_t:
            probs.append(f"TPOT: even batch 1 takes {step.step_s * 1e3:,.1f} ms per token on tp={tp}, "
                         f"over the {tpot_t * 1e3:,.0f} ms target")
        cand = Serving(chip, tp, batch, fit, prefill, step.step_s, per_replica, replicas, gpus, out_tps, dollars,
                       step.bound, tuple(probs))
        if not probs:
            if best is None or best.problems or cand.gpus < best.gpus:
                best = cand
        elif best is None:
            best = cand
    if best is None:
        raise ValueError(f"model={model.name!r} is not allowed on {chip}: its weights and one {ctx:,}-token "
                         f"sequence fit no tensor-parallel group of up to 8 x {acc.memory_gb:g} GB")
    return best


__all__ = [
    "DECODE_RUN", "DecodeCheck", "DecodeStep", "Floor", "MAX_BATCH", "Serving", "attention_kv_reads",
    "check_decode", "decode_step", "llama_shape", "measured_decode", "measured_floor", "measured_read_bandwidth",
    "plan_serving",
]
