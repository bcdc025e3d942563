"""Serving: decode step time on the roofline, prefill, KV-cache fit, and a serving plan with its dollars.

- Decode reads every weight and the whole KV cache once per step: memory-bound at small batch.
  Batching shares the weight read among more tokens, so tokens/s climb until the KV cache or
  the compute (2 N_active FLOP per token) takes over (Pope et al. 2022; the roofline chapter).
- Prefill is compute-bound: 2 N_active FLOP per prompt token at the achievable matmul rate.
- A framework that launches kernels one by one from Python pays a CPU floor per step: about a
  fixed cost plus a cost per layer, measured here with tiny models (:func:`measured_floor`);
  serving engines that replay CUDA graphs mostly remove it (floor 0).
- On the GPU every kernel takes some time, however little it does: an unfused program's dozens of
  small element-wise kernels per layer add their count times a null kernel's time
  (:func:`hf_small_kernels_s`) once the GPU, not the launches, sets the pace.

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
#: Every run of scripts/gpu/bench_decode.py in mlcalc/data/measured, with the card that made it.
DECODE_RUNS = ("h200x2-2026-11-26-decode", "h200x4-2026-11-26-decode", "h100-2026-11-26-decode")
MAX_BATCH = 1024  # largest batch the serving search tries (powers of two)
TENSOR_PARALLEL = (1, 2, 4, 8)


def _run_file(name: str, run: str = DECODE_RUN) -> Mapping[str, Any]:
    path = resources.files("mlcalc.data").joinpath("measured").joinpath(run).joinpath(name)
    return json.loads(path.read_text())


@lru_cache(maxsize=None)
def measured_decode(run: str = DECODE_RUN) -> Mapping[str, Any]:
    """A measured run (one of :data:`DECODE_RUNS`): two floor probes (with the read bandwidth), the
    decode-attention micro-benchmark and the decode points of the 1B and 8B models, all on one card."""
    _check.choice("run", run, DECODE_RUNS)
    return MappingProxyType({"probes": (_run_file("probe.json", run), _run_file("probe_repeat.json", run)),
                             "attention": _run_file("attention.json", run),
                             "1b": _run_file("decode_1b.json", run), "8b": _run_file("decode_8b.json", run)})


@lru_cache(maxsize=None)
def _kernels() -> Mapping[str, Any]:
    return MappingProxyType(json.loads(resources.files("mlcalc.data").joinpath("kernels.json").read_text()))


def null_kernel_s() -> float:
    """Seconds one kernel that does nothing occupies a CUDA stream, back to back (mlcalc/data/kernels.json)."""
    return float(_kernels()["null_kernel_s"]["value"])


def hf_small_kernels_s() -> float:
    """GPU seconds per layer of the small kernels a transformers eager decode launches in a Llama layer.

    Besides its matrix products and attention, a layer runs 35 element-wise kernels (norms, rotary
    embeddings, cache writes, adds; counted, see mlcalc/data/kernels.json), each moving a few kB to MB at
    decode batch sizes: each costs about a null kernel's time on the device. Hidden behind the launch
    floor at small batch; added to the layer's GPU time once the GPU is the slower side.
    """
    return int(_kernels()["hf_llama_decode_small_kernels_per_layer"]["value"]) * null_kernel_s()


class Floor(NamedTuple):
    """CPU/launch floor of one decode step: ``fixed_s`` outside the layers, ``per_layer_s`` per layer."""

    fixed_s: float  # per step: generate's loop, embedding, sampling launches
    per_layer_s: float  # launching one transformer layer's kernels
    source: str  # where it was measured


def measured_floor(run: str = DECODE_RUN) -> Floor:
    """Least-squares line through the tiny-model probes (2, 8, 32 layers, two repeats) of our run.

    The probes have width 64 and a 256-token vocabulary, so their GPU work is negligible: their
    step time is the cost of launching eager PyTorch kernels and of ``generate``'s own loop.
    """
    pts = [(float(o["n_layers"]), float(o["decode_step_s"])) for pr in measured_decode(run)["probes"]
           for o in pr["overhead"]]
    n = len(pts)
    mx = sum(x for x, _ in pts) / n
    my = sum(y for _, y in pts) / n
    slope = sum((x - mx) * (y - my) for x, y in pts) / sum((x - mx) ** 2 for x, _ in pts)
    card = measured_decode(run)["probes"][0]["env"].get("device_name", "GPU")
    return Floor(max(0.0, my - slope * mx), max(0.0, slope),
                 f"measured: tiny Llama models, transformers generate (eager, static cache) on {card}")


def measured_read_bandwidth(run: str = DECODE_RUN) -> float:
    """Bytes/s of a large bf16 reduction on the measured card (mean of the two probes)."""
    vals = [float(pr["read_bandwidth"]["bytes_per_s"]) for pr in measured_decode(run)["probes"]]
    return sum(vals) / len(vals)


#: The shape of the attention micro-benchmark that gives the copy bandwidth of ``repeat_kv``:
#: head_dim 128, batch 8, cache 8,192 (none of the decode points has it).
COPY_CALIBRATION = (128, 8, 8192)


def measured_copy_bandwidth(run: str = DECODE_RUN) -> float:
    """Bytes/s of transformers' ``repeat_kv`` copy (read the cache, write it g = 4 times larger).

    An expand-then-reshape of a strided view: PyTorch runs a generic strided copy, far below the
    read bandwidth. From the attention micro-benchmark at :data:`COPY_CALIBRATION`.
    """
    att = measured_decode(run)["attention"]
    g = att["heads"] / att["kv_heads"]
    for pt in att["points"]:
        if (pt["head_dim"], pt["batch"], pt["cache_len"]) == COPY_CALIBRATION:
            return pt["kv_bytes"] * (1.0 + g) / pt["repeat_kv_s"]
    raise ValueError(f"COPY_CALIBRATION={COPY_CALIBRATION!r} is not among the measured attention shapes")


def attention_time_s(kv_bytes: float, n_heads: int, n_kv_heads: int, read_bytes_per_s: float,
                     copy_bytes_per_s: float | None = None) -> float:
    """Time of one layer's decode attention over ``kv_bytes`` of K and V.

    A GQA-aware kernel (``copy_bytes_per_s`` None; e.g. vLLM's paged attention) reads the cache
    once: ``kv / read``. transformers' SDPA path on CUDA with a mask (``use_gqa_in_sdpa`` is false
    when a mask is passed) first expands K and V to every query head with ``repeat_kv``: a copy
    that reads the cache and writes it g = heads / kv_heads times larger, then the kernel reads
    the expanded copy: ``kv (1 + g) / copy + kv g / read``.
    """
    kv = _check.non_negative("kv_bytes", kv_bytes)
    bw = _check.positive("read_bytes_per_s", read_bytes_per_s)
    if copy_bytes_per_s is None:
        return kv / bw
    g = _check.positive_int("n_heads", n_heads) / _check.positive_int("n_kv_heads", n_kv_heads)
    return kv * (1.0 + g) / _check.positive("copy_bytes_per_s", copy_bytes_per_s) + kv * g / bw


class DecodeStep(NamedTuple):
    """One decode step of a batch: its bytes, FLOPs and time, and what bounds it."""

    bytes_per_gpu: float  # weights read (layers + output projection; an embedding lookup reads only
    #                       its rows) + the KV cache once, per GPU
    flops_per_gpu: float  # 2 N_active x batch / tp
    layer_gpu_s: float  # one layer on the GPU: max(weights / bw, FLOPs / rate) + attention + small kernels
    layer_s: float  # one layer: max(its GPU time, its launch floor)
    outside_s: float  # outside the layers: max(output projection on the GPU, fixed floor)
    step_s: float  # outside + layers x layer + tensor-parallel all-reduces
    tokens_per_s: float  # batch / step
    bound: str  # what bounds the layers: "memory", "compute" or "launch floor"


def decode_step(model: memory.ModelConfig, batch: int, context: int, read_bytes_per_s: float,
                matmul_flops: float, tp: int = 1, floor: Floor | None = None,
                copy_bytes_per_s: float | None = None, weight_bytes_per_param: float = 2.0,
                kv_bytes_per_value: float = 2.0, tp_allreduce_s: float = 0.0,
                small_kernels_s: float = 0.0) -> DecodeStep:
    """Time of one decode step of ``batch`` sequences whose cache holds ``context`` tokens.

    Layer by layer (a layer's kernels cannot finish before Python has launched them, nor before
    their bytes have moved): ``layer = max(launch floor per layer, max(weights / bw, FLOPs / rate)
    + attention + small kernels)``; outside the layers, the output projection (vocab x hidden
    weights) against the fixed floor. Weights and cache are split over ``tp`` GPUs. ``floor`` None:
    CUDA graphs, no floor. ``copy_bytes_per_s`` None: GQA-aware attention (see
    :func:`attention_time_s`). ``small_kernels_s``: GPU seconds per layer of the program's small
    element-wise kernels (:func:`hf_small_kernels_s` for transformers eager; 0: fused, not counted).
    """
    b = _check.positive_int("batch", batch)
    c = _check.positive_int("context", context)
    bw = _check.positive("read_bytes_per_s", read_bytes_per_s)
    rate = _check.positive("matmul_flops", matmul_flops)
    tp = _check.positive_int("tp", tp)
    bpp = _check.positive("weight_bytes_per_param", weight_bytes_per_param)
    head = model.vocab * model.hidden  # output projection (read even when tied to the embedding)
    embed = model.params_breakdown()["embeddings"]
    layer_params = (model.n_params() - embed - (0 if model.tied_embeddings else head)) / model.n_layers
    active_layer = (model.n_active_params() - embed - (0 if model.tied_embeddings else head)) / model.n_layers
    kv_tok_layer = memory.kv_cache_bytes_per_token(1, model.n_kv_heads, model.head_dim, kv_bytes_per_value)
    kv_layer = kv_tok_layer * b * c / tp
    attn = attention_time_s(kv_layer, model.n_heads, model.n_kv_heads, bw, copy_bytes_per_s)
    w_s = layer_params * bpp / tp / bw
    f_s = 2.0 * active_layer * b / tp / rate
    layer_gpu = max(w_s, f_s) + attn + _check.non_negative("small_kernels_s", small_kernels_s)
    layer = layer_gpu if floor is None else max(floor.per_layer_s, layer_gpu)
    head_gpu = max(head * bpp / tp / bw, 2.0 * head * b / tp / rate)
    outside = head_gpu if floor is None else max(floor.fixed_s, head_gpu)
    step = outside + model.n_layers * layer + _check.non_negative("tp_allreduce_s", tp_allreduce_s)
    if floor is not None and floor.per_layer_s >= layer_gpu:
        bound = "launch floor"
    else:
        bound = "memory" if w_s + attn >= f_s else "compute"
    bytes_gpu = ((layer_params * model.n_layers + head) * bpp + kv_tok_layer * model.n_layers * b * c) / tp
    return DecodeStep(bytes_gpu, 2.0 * model.n_active_params() * b / tp, layer_gpu, layer, outside, step,
                      b / step, bound)


def llama_shape(key: str, run: str = DECODE_RUN) -> memory.ModelConfig:
    """The 1B or 8B shape we measured, as a ModelConfig (from the run's own record)."""
    _check.choice("model", key, ("1b", "8b"))
    sh = measured_decode(run)[key]["shape"]
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


def check_decode(run: str = DECODE_RUN) -> list[DecodeCheck]:
    """Every measured decode point of ``run`` (one of :data:`DECODE_RUNS`) against :func:`decode_step`.

    Inputs the prediction takes from the same card: the read bandwidth (a reduction), the floor
    (tiny models) and the copy rate of ``repeat_kv`` at a shape that is no decode point; the matmul
    rate is the catalogue's achievable one, the small kernels' time :func:`hf_small_kernels_s`. The
    static cache attends over its whole length (prompt + 1 + new tokens), so that is the context.
    """
    floor, bw, copy = measured_floor(run), measured_read_bandwidth(run), measured_copy_bandwidth(run)
    out = []
    for key in ("1b", "8b"):
        res = measured_decode(run)[key]
        model = llama_shape(key, run)
        card = res["env"].get("device_name", "GPU")
        rate = compute.achievable_flops("H200-SXM" if "H200" in card else "H100-SXM", "bf16", "achievable")
        for pt in res["points"]:
            if "error" in pt:
                continue
            d = decode_step(model, int(pt["batch"]), int(pt["max_cache_len"]), bw, rate, 1, floor, copy,
                            small_kernels_s=hf_small_kernels_s())
            meas = float(pt["decode_tokens_per_s"])
            out.append(DecodeCheck(key, int(pt["batch"]), int(pt["max_cache_len"]), meas, d.tokens_per_s,
                                   d.tokens_per_s / meas - 1.0, d.bound, card))
    return out


# --------------------------------------------------------------------------- published serving benchmarks

#: Share of the datasheet memory bandwidth a large read reaches: our measured H200 reduction over its
#: 4.8 TB/s datasheet (used for cards we did not measure).
def read_fraction() -> float:
    """Measured read bandwidth over the H200 datasheet's (the card of our run)."""
    return measured_read_bandwidth() / spec("H200-SXM").memory_bandwidth_bytes_per_s


def tp_allreduce_s(model: memory.ModelConfig, chip: str, batch: int, tp: int, bytes_per_value: float = 2.0) -> float:
    """Tensor-parallel all-reduces of one decode step: 2 per layer of batch x hidden values.

    Alpha-beta time on the node's NVLink (``mlcalc.network.fabric_collective_time``, NCCL's latencies):
    at decode sizes the latency dominates.
    """
    if _check.positive_int("tp", tp) == 1:
        return 0.0
    from mlcalc import network, plan  # plan: the chip's system; imported here to keep serving light
    fab = network.fabric(plan.chip_info(chip)["system"], 1, gpus_per_node=tp)
    msg = batch * model.hidden * bytes_per_value
    return 2 * model.n_layers * network.fabric_collective_time(msg, fab).time_s


def prefill_s(model: memory.ModelConfig, batch: int, prompt: int, matmul_flops: float, tp: int = 1) -> float:
    """Compute-bound prefill: ``2 N_active`` per token plus causal attention ``2 L s h`` per token."""
    b = _check.positive_int("batch", batch)
    p = _check.positive_int("prompt", prompt)
    flops = b * p * (2.0 * model.n_active_params() + 2.0 * model.n_layers * p * model.n_heads * model.head_dim)
    return flops / (_check.positive_int("tp", tp) * _check.positive("matmul_flops", matmul_flops))


def matmul_rate(chip: str, dtype: str = "bf16") -> float:
    """Matmul FLOP/s of a chip for a dtype: the achievable (MAMF) table, else the datasheet."""
    dt = "bf16" if dtype == "fp16" else dtype
    src = "achievable" if compute.has_flops(chip, dt, "achievable") else compute.ADVERTISED
    return compute.achievable_flops(chip, dt, src)


class BenchCheck(NamedTuple):
    """A published serving figure next to the prediction."""

    chip: str  # catalogue key
    model: str  # preset
    dtype: str  # weights and KV cache
    batch: int  # sequences
    tp: int  # tensor parallel
    input: int  # prompt tokens
    output: int  # output tokens (0: first-token latency)
    published: float  # out tokens/s per GPU, or TTFT in ms
    predicted: float  # the same, predicted
    error: float  # predicted / published - 1
    what: str  # "throughput (out tok/s/GPU)" or "first token (ms)"


def check_benchmarks() -> list[BenchCheck]:
    """TensorRT-LLM's published static-batch throughput and first-token latency against the model.

    A static batch of B sequences: prefill of B x input tokens, then ``output`` decode steps whose
    mean context is input + output / 2 (decode time is linear in the context). No launch floor
    (TensorRT engines), GQA-aware attention, bandwidth = datasheet x our measured read fraction.
    """
    from mlcalc import plan
    bench = plan.data()["serving_benchmarks"]
    frac = read_fraction()
    out = []
    for r in bench["throughput"]:
        model, chip, tp, b = memory.model_preset(r["model"]), r["chip"], int(r["tp"]), int(r["batch"])
        nbytes = memory.DTYPE_BYTES[r["dtype"]]
        rate = matmul_rate(chip, r["dtype"])
        bw = spec(chip).memory_bandwidth_bytes_per_s * frac
        ctx = int(r["input"]) + max(1, int(r["output"]) // 2)
        ar = tp_allreduce_s(model, chip, b, tp)
        d = decode_step(model, b, ctx, bw, rate, tp, None, None, nbytes, nbytes, ar)
        t = prefill_s(model, b, int(r["input"]), rate, tp) + int(r["output"]) * d.step_s
        pred = b * int(r["output"]) / t / tp
        pub = float(r["out_tokens_per_s_per_gpu"])
        out.append(BenchCheck(chip, r["model"], r["dtype"], b, tp, int(r["input"]), int(r["output"]), pub, pred,
                              pred / pub - 1.0, "throughput (out tok/s/GPU)"))
    for r in bench["first_token"]:
        model, chip, tp = memory.model_preset(r["model"]), r["chip"], int(r["tp"])
        nbytes = memory.DTYPE_BYTES[r["dtype"]]
        rate = matmul_rate(chip, r["dtype"])
        bw = spec(chip).memory_bandwidth_bytes_per_s * frac
        # one forward over the prompt: the larger of its compute and reading the weights once
        t = max(prefill_s(model, 1, int(r["input"]), rate, tp), model.n_params() * nbytes / tp / bw)
        t += tp_allreduce_s(model, chip, int(r["input"]), tp)
        out.append(BenchCheck(chip, r["model"], r["dtype"], 1, tp, int(r["input"]), 0, float(r["ttft_ms"]), t * 1e3,
                              t * 1e3 / float(r["ttft_ms"]) - 1.0, "first token (ms)"))
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
                 floor: Floor | None = None, mbu: float | None = None, weight_bytes_per_param: float = 2.0,
                 small_kernels_s: float = 0.0) -> Serving:
    """Fewest GPUs that serve ``requests_per_s`` within the TTFT and TPOT targets.

    For tp in (1, 2, 4, 8) (smallest first) the weights and at least one sequence's cache must
    fit (``mlcalc.memory.max_kv_tokens``); the batch is the largest power of two up to
    :data:`MAX_BATCH` that fits the KV cache and keeps the decode step under the TPOT target.
    Each request costs its prefill plus ``output_tokens`` steps shared by the batch:
    ``requests/s per replica = 1 / (prefill + output x step / batch)``. Memory bandwidth is the
    datasheet's times ``mbu`` (model bandwidth utilization; default: the read fraction we measured,
    :func:`read_fraction`). Tensor-parallel all-reduces are added per step. ``floor`` and
    ``small_kernels_s`` describe an eager program (:func:`measured_floor`, :func:`hf_small_kernels_s`);
    leave them out for an engine that replays CUDA graphs of fused kernels. Queueing is not modelled.
    """
    rps = _check.positive("requests per second", requests_per_s)
    p = _check.positive_int("prompt tokens", prompt_tokens)
    o = _check.positive_int("output tokens", output_tokens)
    ttft_t = _check.positive("TTFT target (s)", ttft_target_s)
    tpot_t = _check.positive("TPOT target (s)", tpot_target_s)
    price = _check.non_negative("price per GPU-hour", price_per_gpu_hour)
    acc = spec(chip)
    bw = acc.memory_bandwidth_bytes_per_s * _check.fraction("MBU", read_fraction() if mbu is None else mbu)
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
        # one forward over the prompt: its compute (attention included), at least one read of the weights
        prefill = (max(prefill_s(model, 1, p, rate, tp), model.n_params() * weight_bytes_per_param / tp / bw)
                   + tp_allreduce_s(model, chip, p, tp))
        batch, step = 0, None
        b = 1
        while b <= MAX_BATCH and b * ctx <= fit:
            d = decode_step(model, b, mean_ctx, bw, rate, tp, floor, weight_bytes_per_param=weight_bytes_per_param,
                            tp_allreduce_s=tp_allreduce_s(model, chip, b, tp), small_kernels_s=small_kernels_s)
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
        elif best is None or (best.problems and cand.tpot_s + cand.ttft_s < best.tpot_s + best.ttft_s):
            best = cand  # nothing meets the targets: keep the closest (the fastest tensor-parallel group)
    if best is None:
        need = (model.n_params() * memory.dtype_bytes("bf16")
                + memory.kv_cache_bytes_per_token(model.n_layers, model.n_kv_heads, model.head_dim) * ctx)
        have = max(TENSOR_PARALLEL) * acc.memory_bytes * memory.VLLM_MEMORY_UTILIZATION
        raise ValueError(f"model={model.name!r} is not allowed on {chip}: its weights and one {ctx:,}-token "
                         f"sequence ({need / 1e9:,.0f} GB in bf16) fit no tensor-parallel group of up to "
                         f"{max(TENSOR_PARALLEL)} x {acc.memory_gb:g} GB ({have / 1e9:,.0f} GB usable at "
                         f"{memory.VLLM_MEMORY_UTILIZATION:.0%}): {(need - have) / 1e9:,.0f} GB short")
    return best


__all__ = [
    "COPY_CALIBRATION", "DECODE_RUN", "DECODE_RUNS", "DecodeCheck", "DecodeStep", "Floor", "MAX_BATCH", "Serving", "attention_time_s",
    "BenchCheck", "check_benchmarks", "matmul_rate", "prefill_s", "read_fraction", "tp_allreduce_s",
    "check_decode", "decode_step", "llama_shape", "measured_copy_bandwidth", "measured_decode", "measured_floor",
    "measured_read_bandwidth", "hf_small_kernels_s", "null_kernel_s",
    "plan_serving",
]
