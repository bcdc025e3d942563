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

import bisect
import json
import math
from functools import lru_cache
from importlib import resources
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Mapping, NamedTuple, Sequence

from mlcalc import _check, compute, memory
from mlcalc.accelerators import spec

if TYPE_CHECKING:  # imported where used, to keep serving light
    from mlcalc.network import Fabric

DECODE_RUN = "h200x2-2026-11-26-decode"  # our measured decode points (mlcalc/data/measured/<run>)
#: The measured decode runs' names stay here (measured_decode reads them); the code that checks and scores them is in
#: mlcalc.serving_record.
#: Every run of scripts/gpu/bench_decode.py in mlcalc/data/measured, with the card that made it.
#: These are the family's history since the serve9 call.
DECODE_RUNS = ("h200x2-2026-11-26-decode", "h200x4-2026-11-26-decode", "h100-2026-11-26-decode")
#: The accuracy family ``decode``'s record: the serve14 call (scripts/gpu/run_serve14.sh, one H100) measured every point
#: of the family in 3 rounds in its process (serve13's protocol with the static-cache reset: every round at the point's
#: own cache length), a point's step the median of its rounds; checked by :func:`check_decode` (the call's own floor
#: probes). The rule written before the call (scripts/gpu/serve14_predictions.json) made it the record whatever its
#: score. serve13 (14 of 14 within 25 %, its 545-token points one round each), serve10, serve9 and the earlier runs are
#: history (:func:`decode_scores`).
DECODE_RECORD = "h100-2026-11-27-serve14"
#: Decode runs measured in rounds (scripts/gpu/bench_decode.py --rounds): their points are the median of each point's
#: rounds at its own cache length (:func:`mlcalc.serving_record.round_points`).
DECODE_ROUNDS = ("h100-2026-11-27-serve13", DECODE_RECORD)
_ALL_DECODE_RUNS = DECODE_RUNS + ("h100-2026-11-27-serve9", "h100-2026-11-27-serve10") + DECODE_ROUNDS
#: Decode runs whose processes were metered (scripts/gpu/pacemeter.py on the pinned vCPU, ``logs/pace_<process>_c<vCPU>
#: .txt``), so every point and floor probe can be priced at the meter's readings over its own window
#: (:func:`check_decode_paced`). serve13 and serve14 were metered too (their logs/) but are not priced so: that rule was
#: not adopted.
DECODE_METERED = ("h100-2026-11-27-serve9", "h100-2026-11-27-serve10")
MAX_BATCH = 1024  # largest batch the serving search tries (powers of two)
TENSOR_PARALLEL = (1, 2, 4, 8)


def _run_file(name: str, run: str = DECODE_RUN) -> Mapping[str, Any]:
    path = resources.files("mlcalc.data").joinpath("measured").joinpath(run).joinpath(name)
    return json.loads(path.read_text())


@lru_cache(maxsize=None)
def measured_decode(run: str = DECODE_RUN) -> Mapping[str, Any]:
    """A measured run (one of :data:`DECODE_RUNS`): two floor probes (with the read bandwidth), the
    decode-attention micro-benchmark and the decode points of the 1B and 8B models, all on one card."""
    _check.choice("run", run, _ALL_DECODE_RUNS)
    names = (("probe_start.json", "probe_middle.json", "probe_end.json") if run in DECODE_METERED + DECODE_ROUNDS
             else ("probe.json", "probe_repeat.json"))
    res = {k: _run_file(f"decode_{k}.json", run) for k in ("1b", "8b")}
    if run in DECODE_ROUNDS:
        from mlcalc import serving_record  # record code, kept out of the site's snapshot

        res = {k: dict(v, points=serving_record.round_points(v)) for k, v in res.items()}
    return MappingProxyType({"probes": tuple(_run_file(n, run) for n in names),
                             "attention": _run_file("attention.json", run), **res})


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


# --------------------------------------------------------------------------- engines

#: The two ways a reader runs decode, and what each result describes:
#: "hf-eager": transformers ``generate`` in eager PyTorch with a static cache (SDPA after ``repeat_kv``): a floor
#: of Python launches per layer (measured on tiny models, scaled by the layer's operation count), ~35 small
#: element-wise kernels per layer, MLA stored decompressed. "cuda-graph": the production path (vLLM, SGLang,
#: TensorRT-LLM): each decode step replayed as a CUDA graph of fused kernels, attention that reads a GQA or
#: MLA cache once, paged blocks; no host floor, a few small kernels per layer.
ENGINES = ("hf-eager", "cuda-graph")


def arch_family(model: memory.ModelConfig) -> str:
    """Which counted decoder layer a model's resembles (mlcalc/data/kernels.json ``eager_ops_per_layer``):
    "gemma2" / "gemma3" (4 norms per layer, without / with query-key norms), "qwen3" (query-key norms),
    "llama" otherwise (Llama, Mistral, Qwen 2.5, GPT-like)."""
    if model.norms_per_layer >= 4:
        return "gemma3" if model.qk_norm else "gemma2"
    return "qwen3" if model.qk_norm else "llama"


def ops_per_layer(model: memory.ModelConfig) -> float:
    """PyTorch operations one transformers eager decode layer dispatches (mlcalc/data/kernels.json): the
    counted layer's, less ``repeat_kv``'s operations when every query head has its own KV head (MHA).

    >>> ops_per_layer(memory.model_preset("Gemma-2 9B")) / ops_per_layer(memory.model_preset("Llama-3 8B"))
    1.2834645669291338
    """
    k = _kernels()["eager_ops_per_layer"]
    mha = model.attention != "mla" and model.n_kv_heads == model.n_heads
    return float(k["value"][arch_family(model)]) - (float(k["repeat_kv_ops"]) if mha else 0.0)


def _llama_ops() -> float:
    return float(_kernels()["eager_ops_per_layer"]["value"]["llama"])


def engine_floor(engine: str, model: memory.ModelConfig, run: str = DECODE_RUN) -> Floor | None:
    """The host floor of ``engine`` for ``model``: None for "cuda-graph" (the graph replays without Python);
    for "hf-eager" the floor measured on tiny Llama models (:func:`measured_floor`) with its per-layer part
    scaled by the model's operation count over a Llama layer's (:func:`ops_per_layer`)."""
    _check.choice("engine", engine, ENGINES)
    if engine == "cuda-graph":
        return None
    f = measured_floor(run)
    r = ops_per_layer(model) / _llama_ops()
    return Floor(f.fixed_s, f.per_layer_s * r, f.source + f", x {r:.3f} for a {arch_family(model)}-like layer")


def engine_small_kernels_s(engine: str, model: memory.ModelConfig) -> float:
    """GPU seconds per layer of the small (non-matmul, non-attention) kernels ``engine`` runs for ``model``.

    "hf-eager": :func:`hf_small_kernels_s` scaled by the layer's operation count; "cuda-graph": the
    fused layer's few kernels (mlcalc/data/kernels.json, counted from vLLM's model code) x a null kernel.
    """
    _check.choice("engine", engine, ENGINES)
    if engine == "hf-eager":
        # element-wise kernels scale with the layer's family; repeat_kv's copies are not among them
        return hf_small_kernels_s() * float(_kernels()["eager_ops_per_layer"]["value"][arch_family(model)]) / _llama_ops()
    k = _kernels()["graph_small_kernels_per_layer"]["value"]
    n = k["gemma" if arch_family(model).startswith("gemma") else "llama"] + (k["moe_extra"] * model.n_moe_layers / model.n_layers if model.is_moe else 0)
    return n * null_kernel_s()


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
    the expanded copy: ``kv (1 + g) / copy + kv g / read``. With g = 1 (MHA) there is no copy.
    """
    kv = _check.non_negative("kv_bytes", kv_bytes)
    bw = _check.positive("read_bytes_per_s", read_bytes_per_s)
    g = _check.positive_int("n_heads", n_heads) / _check.positive_int("n_kv_heads", n_kv_heads)
    if copy_bytes_per_s is None or g == 1:
        # one KV head per query head (MHA): transformers' repeat_kv returns its input unchanged when
        # n_rep == 1 (modeling_llama.repeat_kv: ``if n_rep == 1: return hidden_states``): no copy
        return kv / bw
    return kv * (1.0 + g) / _check.positive("copy_bytes_per_s", copy_bytes_per_s) + kv * g / bw


#: Weight dtypes whose matmuls do not hide their bytes behind their math (:func:`matmul_s`): FP8 on Hopper, where
#: DeepGEMM's published times sit at bytes + FLOPs (mlcalc.servemeasured.check_fp8_gemm). BF16 matmuls take the
#: longer of the two: our H200 probes (scripts/gpu/bench_kernels.py) sit within 12 % of it from 512 rows up.
#: The in-flight engine (mlcalc.servemeasured.inflight, mlcalc.mlperf) no longer uses this split: it prices every
#: product by :func:`gemm_law_s`, one law for every dtype, which the gemm-tiles call (1,088 products on an H100)
#: supports and FP8's sum does not (median |error| 12/7/7/14 % by row band against 20/31/18/7 %). The static-batch
#: and first-token paths (:func:`predict_decode`, :func:`predict_prefill`, :func:`step_model`) keep it. Moved to the
#: one law (unify16, 2026-11-28; with TensorRT-LLM 0.9.0's 16-bit context attention, its per-expert all-reduces,
#: mlcalc.serving_record.trtllm_v090_moe_allreduces, and the fused engine's element-wise passes,
#: :func:`engine_elementwise_bytes_per_token`, all charged) the TensorRT-LLM family holds 132 of 169 and SGLang's 3
#: of 9, against 135 and 5 on this split. Lost: Mistral 7B H100 84 x 2048/128 (+24 % to +30 %), Mixtral H100
#: 32 x 2048/2048 (-14 % to -31 %, its 9 all-reduces a layer at NCCL's latency), Llama 2 70B H200 TP 4 first token
#: of 128 (-21 % to -27 %), and SGLang's two concurrency-16 rows (+16 %/+18 % to +30 %/+32 %): on B200 the one law
#: adds the decode-matmul probe's fixed time (about 5 us a kernel, measured on H200 and carried over) to each of the
#: 470 matmuls of a Qwen3 235B step, 2.1 ms where the step's 188 all-reduces are already 57-76 % of the prediction.
#: That fixed time is not counted twice: the probe replays its matmuls from a CUDA graph (bench_kernels.py), as the
#: "cuda-graph" path assumes, and the small kernels are charged apart (:func:`engine_small_kernels_s`).
SERIAL_MATMUL_DTYPES = ("fp8",)

#: Dtypes :func:`predict_prefill` prices a prompt's attention in (``attention_dtype``).
ATTENTION_DTYPES = ("bf16", "fp16", "fp8")


def interpolate(points: Sequence[tuple[float, float]], x: float) -> float:
    """Piecewise-linear through ``points`` (sorted by their first value, which differ), held flat beyond the ends:
    how every law read from probed points is evaluated between them."""
    if x <= points[0][0]:
        return points[0][1]
    if x >= points[-1][0]:
        return points[-1][1]
    i = max(j for j in range(len(points)) if points[j][0] <= x)
    (x0, y0), (x1, y1) = points[i], points[i + 1]
    return y0 + (y1 - y0) * (x - x0) / (x1 - x0)


def _combined_s(read_s: float, math_s: float, overlap: bool) -> float:
    """A matmul's time from its bytes' and its FLOPs' seconds: the longer when the kernel overlaps them, else
    their sum (:data:`SERIAL_MATMUL_DTYPES`)."""
    return max(read_s, math_s) if overlap else read_s + math_s


def matmul_s(moved_bytes: float, flops: float, read_bytes_per_s: float, matmul_flops: float,
             overlap: bool = True) -> float:
    """Seconds of matmuls that move ``moved_bytes`` and do ``flops``: the longer of the two at their rates when
    the kernel overlaps them (``overlap``, the roofline), their sum when it does not (FP8 on Hopper, see
    :data:`SERIAL_MATMUL_DTYPES`)."""
    m = _check.non_negative("moved_bytes", moved_bytes) / _check.positive("read_bytes_per_s", read_bytes_per_s)
    f = _check.non_negative("flops", flops) / _check.positive("matmul_flops", matmul_flops)
    return _combined_s(m, f, overlap)


def matmul_activation_bytes_per_token(model: memory.ModelConfig, tp: int = 1, in_bytes: float = 1.0,
                                      out_bytes: float = 2.0) -> float:
    """Bytes the matmuls of one token move besides their weights, all layers, per GPU of ``tp``: each reads its
    input (``in_bytes`` a value: FP8 activations, as TensorRT-LLM's FP8 path quantizes them) and writes its output
    (``out_bytes``: bf16). QKV (query and key/value widths split over the GPUs; MLA: the queries split, its latents
    whole), attention output, the feed-forward
    (or the ``experts_per_token`` experts a token visits, and the shared ones) and its down projection; the
    hidden-sized outputs of the output and down projections are whole on every GPU (before the all-reduce)."""
    t = _check.positive_int("tp", tp)
    h = model.hidden
    if model.attention == "mla":  # queries (split), the query latent, the joint KV latent and rotary key (whole)
        qkv = model.q_width / t + model.q_lora_rank + model.kv_lora_rank + model.qk_rope_head_dim
    else:
        qkv = model.q_width / t + model.n_kv_heads * (model.head_dim + model.v_dim) / min(t, max(1, model.n_kv_heads))
    per_layer = in_bytes * (h + model.attn_out_width / t) + out_bytes * (qkv + h)
    dense = model.n_layers - model.n_moe_layers
    total = model.n_layers * per_layer + dense * _ffn_activation_bytes(model, model.ffn_hidden, t, in_bytes, out_bytes)
    return total + expert_activation_bytes_per_token(model, t, in_bytes, out_bytes)


def _ffn_activation_bytes(model: memory.ModelConfig, width: float, tp: int, in_bytes: float, out_bytes: float) -> float:
    """Bytes one token's pass through one feed-forward block of ``width`` moves besides its weights, per GPU of
    ``tp``: the input and the (split) intermediate read, the (split) gate/up outputs and the hidden-sized output
    written."""
    mats = 3 if model.gated_mlp else 2
    return in_bytes * (model.hidden + width / tp) + out_bytes * ((mats - 1) * width / tp + model.hidden)


def expert_activation_bytes_per_token(model: memory.ModelConfig, tp: int = 1, in_bytes: float = 1.0,
                                      out_bytes: float = 2.0) -> float:
    """The routed and shared experts' part of :func:`matmul_activation_bytes_per_token`: every MoE layer, the
    ``experts_per_token`` experts a token visits and the shared ones, each expert's intermediate width split over
    ``tp`` GPUs (its hidden-sized input and output whole on each). 0 for a dense model.

    Mixtral 8x7B (hidden 4,096, experts 14,336 wide, 2 of 8, 32 layers), FP8 inputs, bf16 outputs, one GPU: per
    expert visit 4,096 + 14,336 bytes read and 2 x (2 x 14,336 + 4,096) written; 2 visits, 32 layers:

    >>> expert_activation_bytes_per_token(memory.model_preset("Mixtral 8x7B"))
    5373952.0
    """
    t = _check.positive_int("tp", tp)
    if not model.is_moe:
        return 0.0
    visits = model.experts_per_token + model.n_shared_experts
    return float(model.n_moe_layers * visits * _ffn_activation_bytes(model, model.expert_ffn, t, in_bytes, out_bytes))


#: Bytes per hidden value of one residual-add + RMSNorm pass as TensorRT-LLM runs it after a layer's all-reduce
#: (cpp/tensorrt_llm/plugins/ncclPlugin/allreducePlugin.cpp, ``enqueue``: ``ncclAllReduce`` into an intermediate
#: buffer, then ``residualRmsNorm`` reads that sum and the residual and writes the new residual and the normed
#: output): four bf16 accesses of 2 bytes.
RESIDUAL_NORM_BYTES_PER_VALUE = 8.0


def replicated_norm_bytes_per_token(model: memory.ModelConfig, bytes_per_value: float = RESIDUAL_NORM_BYTES_PER_VALUE
                                    ) -> float:
    """Bytes one token's residual adds and RMSNorms move on every GPU, all layers: two passes a layer (before
    attention and before the feed-forward block), each over the whole hidden vector (``bytes_per_value`` a value,
    :data:`RESIDUAL_NORM_BYTES_PER_VALUE`). Not split over tensor-parallel GPUs: Megatron-LM's tensor parallelism
    (Shoeybi et al. 2019, section 3) duplicates the layer norms and residual connections on every GPU, each holding
    the whole all-reduced hidden state. At 1 GPU the same pass runs without the all-reduce.

    Llama 3.1 70B (80 layers, hidden 8,192): 2 x 8 x 8,192 bytes a layer, 10.5 MB a token:

    >>> replicated_norm_bytes_per_token(memory.model_preset("Llama-3.1 70B"))
    10485760.0
    """
    b = _check.positive("bytes_per_value", bytes_per_value)
    return float(model.n_layers * 2 * b * model.hidden)


#: Bytes per value of the element-wise passes an in-flight engine's layer runs besides its matmuls, attention and
#: its residual-add + RMSNorm passes (:func:`layer_elementwise_bytes_per_token`): the quantization of an FP8 product's
#: input that no norm writes (read bf16, write FP8: 3 bytes; the training engine's rule,
#: mlcalc.steptime.FP8_CAST_BYTES_PER_ELEMENT, less the transposed copy only a backward pass needs), SiLU x mul
#: (read the gate and up outputs, write their product, bf16: 6 bytes per intermediate value), and the rotary and
#: cache-write pass (read the QKV product's bf16 output, write the rotated queries in bf16 and the keys and values
#: into the cache at its own bytes).
FP8_QUANT_BYTES_PER_VALUE = 3.0
SWIGLU_BYTES_PER_VALUE = 6.0


def layer_elementwise_bytes_per_token(model: memory.ModelConfig, tp: int = 1, dtype: str = "bf16") -> float:
    """Bytes one token's element-wise passes move on one GPU of ``tp``, all layers, besides the residual-add +
    RMSNorm passes (:func:`replicated_norm_bytes_per_token`) and the matmuls' own inputs and outputs
    (:func:`gemm_law_s`): with FP8 matmuls (``dtype``) the quantization of the attention output and the
    feed-forward intermediate (the inputs of the output and down projections; the norms write the other products'
    FP8 inputs themselves), :data:`FP8_QUANT_BYTES_PER_VALUE` a value; SiLU x mul over the intermediate (an MoE
    token's ``experts_per_token`` experts and the shared ones), :data:`SWIGLU_BYTES_PER_VALUE`; the rotary and
    cache-write pass over the query, key and value widths (each GPU's share of the KV heads). Split as tensor
    parallelism splits those widths.

    Llama 3.1 8B on one GPU in FP8: per layer 3 x (4,096 + 14,336) + 6 x 14,336 + 2 x (4,096 + 2,048) + 2 x 4,096
    + 1 x 2,048 bytes, 5.2 MB a token over 32 layers:

    >>> round(layer_elementwise_bytes_per_token(memory.model_preset("Llama-3.1 8B"), 1, "fp8") / 1e6, 1)
    5.2
    """
    t = _check.positive_int("tp", tp)
    kv_b = memory.dtype_bytes(dtype)
    ffn = model.ffn_hidden if not model.is_moe else model.expert_ffn * (model.experts_per_token
                                                                         + model.n_shared_experts)
    dense = model.n_layers - model.n_moe_layers
    inter = (dense * model.ffn_hidden + model.n_moe_layers * ffn) / t  # all layers' intermediate values
    q = model.q_width / t
    kv = model.n_kv_heads * (model.head_dim + model.v_dim) / min(t, max(1, model.n_kv_heads))
    total = model.n_layers * (2.0 * (q + kv) + 2.0 * q + kv_b * kv)
    if model.gated_mlp:
        total += SWIGLU_BYTES_PER_VALUE * inter
    if dtype == "fp8":
        total += FP8_QUANT_BYTES_PER_VALUE * (model.n_layers * model.attn_out_width / t + inter)
    return total


def engine_elementwise_bytes_per_token(model: memory.ModelConfig, tp: int = 1, dtype: str = "bf16") -> float:
    """Bytes one token moves on one GPU of ``tp`` in a fused serving engine's passes that are neither matmuls nor
    attention, all layers: the residual-add + RMSNorm passes (:func:`replicated_norm_bytes_per_token`, whole on every
    GPU) and the other element-wise passes (:func:`layer_elementwise_bytes_per_token`: FP8 quantization of the inputs
    no norm writes, SiLU x mul, rotary and cache write). The same passes for every token an iteration carries,
    whether it decodes (:func:`predict_decode`), is prefilled (:func:`predict_prefill`, :func:`step_model`) or both
    (:func:`mlcalc.servemeasured.inflight`).

    Llama 3.1 8B on one GPU in FP8: 2.1 MB of norms and 5.2 MB of other passes a token:

    >>> round(engine_elementwise_bytes_per_token(memory.model_preset("Llama-3.1 8B"), 1, "fp8") / 1e6, 1)
    7.3
    """
    return replicated_norm_bytes_per_token(model) + layer_elementwise_bytes_per_token(model, tp, dtype)


#: One transformers eager decoder layer (Llama; static cache, SDPA after ``repeat_kv``) in the order the host issues its
#: operations: (what, operations dispatched). "small": element-wise kernels (mlcalc/data/kernels.json
#: ``hf_llama_decode_small_kernels_per_layer``: 2 RMSNorms of 8, rotary 10, cache writes 2, arange 1, adds 4, SiLU and
#: the gate product 2), "view": operations that launch no kernel (host work only), "copy": ``repeat_kv``'s two copies,
#: "attention": the SDPA call (its copies' and its own GPU time), q/k/v/o/gate/up/down: the matmuls. 63 in all against
#: the 63.5 counted (``eager_ops_per_layer``): a family's other count goes to the small kernels.
HF_EAGER_LAYER_ORDER: tuple[tuple[str, int], ...] = (
    ("view", 2), ("small", 8), ("q", 1), ("view", 2), ("k", 1), ("view", 2), ("v", 1), ("view", 2), ("small", 1),
    ("small", 5), ("view", 2), ("small", 5), ("view", 2), ("small", 2), ("view", 2), ("copy", 1), ("view", 2),
    ("copy", 1), ("attention", 1), ("view", 2), ("o", 1), ("small", 2), ("small", 8), ("gate", 1), ("small", 1),
    ("up", 1), ("small", 1), ("down", 1), ("small", 2))


def in_order_path_s(ops: Sequence[tuple[float, float]], repeats: int = 1) -> float:
    """Seconds from the host's first launch to the GPU's last kernel when ``ops`` (host seconds to issue it, GPU seconds
    to run it), repeated ``repeats`` times, run as eager PyTorch runs them: the host issues them in order without
    waiting (CUDA launches are asynchronous; PyTorch's "CUDA semantics", asynchronous execution), the GPU runs them in
    order on one stream and cannot start one before it is issued. The critical path ``max_k(host of ops 1..k + GPU of
    ops k..n)``: the longer of all host and all GPU time when every op has the same ratio, longer when host-bound and
    GPU-bound ops alternate. For ``repeats`` identical blocks of host ``H`` and GPU ``G`` it is ``(repeats - 1) max(H,
    G)`` plus one block's path (at most ``min(H, G)`` beyond ``repeats x max(H, G)``); bounded by ``len(ops)``.

    Two ops: one host-bound (3 us to issue, 1 us to run), then one GPU-bound (1 us, 5 us): the second starts at 4 us
    and ends at 9 us, where the larger total (6 us of GPU) would say 6:

    >>> round(in_order_path_s([(3e-6, 1e-6), (1e-6, 5e-6)]) * 1e6, 9)
    9.0
    """
    n = _check.positive_int("repeats", repeats)
    h = total_h = total_g = 0.0
    for hs, gs in ops:
        total_h += _check.non_negative("host seconds", hs)
        total_g += _check.non_negative("GPU seconds", gs)
    best = 0.0
    suffix = total_g
    for hs, gs in ops:
        h += hs
        best = max(best, h + suffix)
        suffix -= gs
    best = max(best, total_h)
    return (n - 1) * max(total_h, total_g) + best


def hf_eager_layer_ops(model: memory.ModelConfig, host_s: float, matmul_s: float, attention_s: float,
                       small_s: float) -> list[tuple[float, float]]:
    """One eager decoder layer as (host seconds, GPU seconds) per operation in issue order
    (:data:`HF_EAGER_LAYER_ORDER`): the host's ``host_s`` a layer split evenly over the family's counted operations
    (``eager_ops_per_layer``; one KV head per query head: without ``repeat_kv``'s), ``small_s`` over the small
    kernels, ``attention_s`` at the SDPA call, ``matmul_s`` over the projections by their weights (the attention's
    share :meth:`~mlcalc.models.ModelConfig.attention_params_per_layer` of the layer's active parameters, the rest
    over the feed-forward's matrices)."""
    k = _kernels()["eager_ops_per_layer"]
    n_ops = float(k["value"][arch_family(model)])
    if model.attention != "mla" and model.n_heads == model.n_kv_heads:
        n_ops -= float(k["repeat_kv_ops"])
    base = sum(n for _, n in HF_EAGER_LAYER_ORDER)
    n_small = sum(n for w, n in HF_EAGER_LAYER_ORDER if w == "small")
    scale = max(0.0, (n_small + n_ops - base) / n_small)
    hop = _check.non_negative("host_s", host_s) / max(1.0, base - n_small + n_small * scale)
    active = max(1.0, model.n_active_params() - model.params_breakdown()["embeddings"]
                 - (0 if model.tied_embeddings else model.vocab * model.hidden)) / model.n_layers
    attn_share = min(1.0, model.attention_params_per_layer() / active)
    if model.attention == "mla":
        proj = {"q": 0.25, "k": 0.25, "v": 0.25, "o": 0.25}
    else:
        w = {"q": model.q_width, "k": model.n_kv_heads * model.head_dim, "v": model.n_kv_heads * model.v_dim,
             "o": model.attn_out_width}
        proj = {x: y / sum(w.values()) for x, y in w.items()}
    ffn = ("gate", "up", "down") if model.gated_mlp else ("up", "down")
    gpu = {x: matmul_s * attn_share * y for x, y in proj.items()}
    gpu.update({x: matmul_s * (1.0 - attn_share) / len(ffn) for x in ffn})
    out = []
    for what, n in HF_EAGER_LAYER_ORDER:
        for _ in range(n):
            if what == "small":
                out.append((hop * scale, small_s / n_small))
            elif what == "attention":
                out.append((hop, attention_s))
            else:
                out.append((hop, gpu.get(what, 0.0)))
    return out


class DecodeStep(NamedTuple):
    """One decode step of a batch: its bytes, FLOPs and time, and what bounds it."""

    bytes_per_gpu: float  # weights read (layers + output projection; an embedding lookup reads only
    #                       its rows) + the KV cache once, per GPU
    flops_per_gpu: float  # 2 N_active x batch / tp
    layer_gpu_s: float  # one layer on the GPU: max(weights / bw, FLOPs / rate) + attention + small kernels
    layer_s: float  # one layer: its GPU time; eager, the layers' in-order critical path over their count (in_order_path_s)
    outside_s: float  # outside the layers: max(output projection on the GPU, fixed floor)
    step_s: float  # outside + layers x layer + tensor-parallel all-reduces
    tokens_per_s: float  # batch / step
    bound: str  # what bounds the layers: "memory", "compute" or "launch floor"


def decode_step(model: memory.ModelConfig, batch: int, context: int, read_bytes_per_s: float,
                matmul_flops: float, tp: int = 1, floor: Floor | None = None,
                copy_bytes_per_s: float | None = None, weight_bytes_per_param: float = 2.0,
                kv_bytes_per_value: float = 2.0, tp_allreduce_s: float = 0.0,
                small_kernels_s: float = 0.0, cache_layout: str = "engine", ep: int = 1,
                matmul_law: MatmulLaw | None = None, fused: bool = True,
                attention_law: tuple[float, float] | None = None,
                attention_s: float | None = None, overlap: bool = True,
                activation_bytes_per_token: float = 0.0, matmul_layer_s: float | None = None,
                norm_bytes_per_token: float = 0.0) -> DecodeStep:
    """Time of one decode step of ``batch`` sequences whose cache holds ``context`` tokens.

    Layer by layer (a layer's kernels cannot finish before Python has launched them, nor before
    their bytes have moved): the GPU's ``max(weights / bw, FLOPs / rate) + attention + small kernels`` a layer;
    with a launch floor (eager) the layers take the critical path of their operations issued in order
    (:func:`in_order_path_s` over :func:`hf_eager_layer_ops`: the floor per layer split over the layer's operations),
    at least the longer of the two and at most one layer's shorter side beyond it; outside the layers, the output
    projection (vocab x hidden weights) against the fixed floor. Weights and cache are split over ``tp`` GPUs. ``floor`` None:
    CUDA graphs, no floor. ``copy_bytes_per_s`` None: GQA-aware attention (see
    :func:`attention_time_s`). ``small_kernels_s``: GPU seconds per layer of the program's small
    element-wise kernels (:func:`hf_small_kernels_s` for transformers eager; 0: fused, not counted).

    The weights read per step are what the batch touches (:func:`mlcalc.memory.decode_weight_params`:
    a mixture of experts reads only the experts its tokens chose). The cache follows the model's layout
    (:func:`sequence_kv_bytes`: GQA/MQA/MLA, sliding windows); ``cache_layout="transformers"`` adds the
    traffic transformers' attention makes beyond reading it (:func:`attention_extra_bytes`: MLA's latent
    decompressed every step, the sliding buffer rolled). Attention takes the longer of its bytes and its
    FLOPs (:func:`attention_flops_per_token`). ``ep > 1``: ``ep`` groups of ``tp`` GPUs
    (``tp x ep`` in all) each run attention for ``batch / ep`` sequences (data parallel) and hold ``1 / (tp
    ep)`` of the experts (expert parallel, as DeepSeek-V3 is served); the collectives come in through
    ``tp_allreduce_s`` (:func:`comm_s`).

    ``matmul_law``: the weights are read kernel by kernel (:func:`decode_kernels`, ``fused`` as an engine
    fuses them, else as transformers runs them), each at the measured decode-matmul law
    (:class:`MatmulLaw`: a fixed time plus its bytes at the probed rate) instead of all of them at
    ``read_bytes_per_s``; the output projection likewise. None: one stream at ``read_bytes_per_s``.
    ``attention_law``: ``(fixed_s, bytes_per_s)`` of the attention kernel a program calls once per layer
    (:func:`masked_decode_attention_law`: SDPA with a boolean mask at decode), instead of the cache at
    ``read_bytes_per_s``. ``attention_s``: seconds of that one call per layer, given by a law of the kernel a
    program calls (e.g. :func:`mlcalc.servemeasured.engine_attention_s`); it replaces both. ``overlap`` False: the
    matmuls' bytes (weights, and ``activation_bytes_per_token`` per token: :func:`matmul_activation_bytes_per_token`)
    and their FLOPs add (:func:`matmul_s`, FP8), else the longer. ``matmul_layer_s``: seconds per layer of the
    weight-reading matmuls as a program's own kernels were timed (e.g.
    :func:`mlcalc.servemeasured.engine_layer_matmul_s`); it replaces ``matmul_law`` and ``read_bytes_per_s`` for the
    layers (the output projection keeps them). ``norm_bytes_per_token``: bytes one token's residual adds and
    RMSNorms move, all layers, whole on every tensor-parallel GPU (:func:`replicated_norm_bytes_per_token`, as
    :func:`predict_decode` counts them for "cuda-graph"); each layer adds its share for the sequences of its
    attention group at ``read_bytes_per_s``, beside ``small_kernels_s`` (the kernels' launch cost). 0: not counted
    (a measured ``small_kernels_s`` that already holds them).

    TensorRT-LLM performance.md (v0.9.0, FP8): Llama 2 7B on one H100 SXM, static batches of 56 with 2,048 tokens
    in and out, 2,826 output tokens/s; these steps (:func:`check_benchmarks`) give the same within 2 %:

    >>> from mlcalc.serving_record import check_benchmarks
    >>> c = next(c for c in check_benchmarks()
    ...          if (c.chip, c.model, c.batch, c.input, c.output) == ("H100-SXM", "Llama-2 7B", 56, 2048, 2048))
    >>> abs(c.predicted / c.published - 1) < 0.02
    True
    """
    b = _check.positive_int("batch", batch)
    c = _check.positive_int("context", context)
    bw = _check.positive("read_bytes_per_s", read_bytes_per_s)
    rate = _check.positive("matmul_flops", matmul_flops)
    tp = _check.positive_int("tp", tp)
    ep = _check.positive_int("ep", ep)
    bpp = _check.positive("weight_bytes_per_param", weight_bytes_per_param)
    kvb = _check.positive("kv_bytes_per_value", kv_bytes_per_value)
    _check.choice("cache_layout", cache_layout, CACHE_LAYOUTS)
    L = model.n_layers
    head = model.vocab * model.hidden  # output projection (read even when tied to the embedding)
    read = memory.decode_weight_params(model, b)  # layers + output projection, the experts b tokens touch
    experts = (model.n_moe_layers * model.mlp_params_per_expert()  # routed experts touched, shared ones
               * (memory.moe_experts_touched(model.n_experts, model.experts_per_token, b) + model.n_shared_experts)
               if model.is_moe else 0.0)
    dense_layer = (read - experts - head) / L  # attention, norms, dense FFNs, routers: split over tp
    expert_layer = experts / L  # touched experts: split over tp x ep
    active_layer = (model.n_active_params() - model.params_breakdown()["embeddings"]
                    - (0 if model.tied_embeddings else head)) / L
    seq_kv = sequence_kv_bytes(model, c, kvb)  # one sequence's cache, every layer
    group = -(-b // ep)  # sequences in this GPU's attention group
    split = kv_split(model, tp)
    kv_layer = seq_kv / L * group / split
    extra_layer = attention_extra_bytes(model, c, kvb, cache_layout) / L * group / split
    n_kv = model.n_heads if (model.attention == "mla") else model.n_kv_heads
    if attention_s is not None:
        read_kv = _check.non_negative("attention_s", attention_s)
    elif attention_law is None:
        read_kv = attention_time_s(kv_layer, model.n_heads, n_kv, bw, copy_bytes_per_s)
    else:
        read_kv = attention_law[0] + kv_layer / _check.positive("attention_law bytes_per_s", attention_law[1])
    attn = max(read_kv + extra_layer / bw,
               attention_flops_per_token(model, c, cache_layout) / L * group / tp / rate)
    if model.attention == "mla" and cache_layout == "transformers":
        # transformers runs the decompression as its own matmul before attention: its time adds
        attn += 2.0 * model.kv_lora_rank * model.n_heads * (model.head_dim + model.v_dim) * c * group / tp / rate
    act = _check.non_negative("activation_bytes_per_token", activation_bytes_per_token) * b / L
    if matmul_layer_s is not None:
        w_s = _check.non_negative("matmul_layer_s", matmul_layer_s) + act / bw
    elif matmul_law is None:
        w_s = ((dense_layer / tp + expert_layer / (tp * ep)) * bpp + act) / bw
    else:
        w_s = kernel_weight_s(model, b, matmul_law, fused, tp, ep, bpp)[0] + act / bw
    f_s = 2.0 * active_layer * b / (tp * ep) / rate
    mm = _combined_s(w_s, f_s, overlap)
    norm = _check.non_negative("norm_bytes_per_token", norm_bytes_per_token) / L * group / bw
    layer_gpu = mm + attn + _check.non_negative("small_kernels_s", small_kernels_s) + norm
    if floor is None:
        layer = layer_gpu
    else:  # eager: the layers' in-order critical path (each op no earlier than its launch), per layer
        layer = in_order_path_s(hf_eager_layer_ops(model, floor.per_layer_s, mm, attn, small_kernels_s + norm), L) / L
    head_read = head * bpp / tp / bw if matmul_law is None else matmul_law.seconds(head * bpp / tp, group)
    head_f = 2.0 * head * group / tp / rate
    head_gpu = _combined_s(head_read, head_f, overlap)
    outside = head_gpu if floor is None else max(floor.fixed_s, head_gpu)
    step = outside + L * layer + _check.non_negative("tp_allreduce_s", tp_allreduce_s)
    if floor is not None and floor.per_layer_s >= layer_gpu:
        bound = "launch floor"
    else:
        bound = "memory" if w_s + attn >= f_s else "compute"
    bytes_gpu = ((dense_layer * L + head) / tp + experts / (tp * ep)) * bpp + seq_kv * group / split
    return DecodeStep(bytes_gpu, 2.0 * model.n_active_params() * b / (tp * ep), layer_gpu, layer, outside, step,
                      b / step, bound)


# --------------------------------------------------------------------------- decode matmuls, kernel by kernel

class MatmulLaw(NamedTuple):
    """Seconds of one decode matmul kernel that reads ``w`` bytes of weights at a batch: ``fixed_s + w /
    bytes_per_s``, a line through a probe of many weight shapes (2 MB to 1 GB) replayed from a CUDA graph on one
    card (scripts/gpu/bench_kernels.py). A small matrix reads far below the streaming rate: a kernel takes a few
    microseconds to ramp up and drain whatever it reads (4096 x 4096 bf16, 34 MB: about 60 % of the rate).
    ``grouped_*``: the same for transformers' grouped expert matmul (every expert's weights in one kernel,
    tokens sorted by expert), slower per byte. ``empty_s``: a matmul with nothing to read (64 x 64), the part
    of a tiny model's per-layer floor a matmul takes. Batches between the probe's are interpolated on log2."""

    batches: tuple[int, ...]
    fixed_s: tuple[float, ...]
    bytes_per_s: tuple[float, ...]
    grouped_fixed_s: float
    grouped_bytes_per_s: float
    empty_s: float
    read_bytes_per_s: float  # the probe card's large-reduction read rate (to carry the law to another card)
    source: str

    def _at(self, batch: int) -> tuple[float, float]:
        b = max(1, int(batch))
        xs = self.batches
        if b <= xs[0]:
            return self.fixed_s[0], self.bytes_per_s[0]
        if b >= xs[-1]:
            return self.fixed_s[-1], self.bytes_per_s[-1]
        i = max(j for j in range(len(xs)) if xs[j] <= b)
        t = (math.log2(b) - math.log2(xs[i])) / (math.log2(xs[i + 1]) - math.log2(xs[i]))
        inv = (1 - t) / self.bytes_per_s[i] + t / self.bytes_per_s[i + 1]
        return (1 - t) * self.fixed_s[i] + t * self.fixed_s[i + 1], 1.0 / inv

    def seconds(self, weight_bytes: float, batch: int, grouped: bool = False) -> float:
        """Seconds of one kernel reading ``weight_bytes`` at ``batch`` tokens (0 bytes: no kernel)."""
        w = _check.non_negative("weight_bytes", weight_bytes)
        if w == 0:
            return 0.0
        if grouped:
            return self.grouped_fixed_s + w / self.grouped_bytes_per_s
        f, bw = self._at(batch)
        return f + w / bw

    def on_card(self, read_bytes_per_s: float) -> "MatmulLaw":
        """The law on a card whose large reads reach ``read_bytes_per_s``: the same fixed times, every rate
        scaled by that card's read rate over the probe card's (a kernel streams the same share of it)."""
        r = _check.positive("read_bytes_per_s", read_bytes_per_s) / self.read_bytes_per_s
        return self._replace(bytes_per_s=tuple(x * r for x in self.bytes_per_s),
                             grouped_bytes_per_s=self.grouped_bytes_per_s * r, read_bytes_per_s=read_bytes_per_s,
                             source=self.source + f", rates x {r:.3f}")


def _line(points: list[tuple[float, float]]) -> tuple[float, float]:
    """Least-squares ``s = a + bytes / rate``: (a, rate)."""
    n = len(points)
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    slope = sum((x - mx) * (y - my) for x, y in points) / sum((x - mx) ** 2 for x, _ in points)
    return max(0.0, my - slope * mx), 1.0 / slope


def matmul_law_from(probes: list[Mapping[str, Any]], read_bytes_per_s: float, source: str) -> MatmulLaw:
    """:class:`MatmulLaw` from kernel probes (``kernels_gpu*.json`` of a run, every GPU's points together)."""
    gem = [r for p in probes for r in p["gemv"] if "s" in r and r.get("what") != "empty matmul"]
    empty = [float(r["s"]) for p in probes for r in p["gemv"] if r.get("what") == "empty matmul"]
    grp = [(float(r["touched_bytes"]), float(r["s"])) for p in probes for r in p.get("grouped", ()) if "s" in r]
    if not gem or not empty or not grp:
        raise ValueError("probes=... is not allowed: they hold no decode-matmul, empty-matmul or grouped points")
    batches = tuple(sorted({int(r["batch"]) for r in gem}))
    fixed, rate = [], []
    for b in batches:
        a, r = _line([(float(x["weight_bytes"]), float(x["s"])) for x in gem if int(x["batch"]) == b])
        fixed.append(a)
        rate.append(r)
    ga, gr = _line(grp)
    return MatmulLaw(batches, tuple(fixed), tuple(rate), ga, gr, sum(empty) / len(empty),
                     _check.positive("read_bytes_per_s", read_bytes_per_s), source)


#: The measured run whose kernel probe gives the decode-matmul law for every chip (mlcalc/data/measured/<run>).
KERNEL_RUN = "h200x2-2026-11-26-serve2"


@lru_cache(maxsize=None)
def kernel_probes(run: str = KERNEL_RUN) -> tuple[Mapping[str, Any], ...]:
    """Every ``kernels_gpu*.json`` of ``run`` (scripts/gpu/bench_kernels.py), one per GPU."""
    folder = resources.files("mlcalc.data").joinpath("measured").joinpath(run)
    return tuple(MappingProxyType(json.loads(f.read_text())) for f in sorted(folder.iterdir(), key=lambda f: f.name)
                 if f.name.startswith("kernels_gpu") and f.name.endswith(".json"))


@lru_cache(maxsize=None)
def measured_matmul_law(run: str = KERNEL_RUN) -> MatmulLaw:
    """The decode-matmul law of the card ``run`` measured, at that card's read rate (its probes' 4 GiB
    reductions, mean)."""
    folder = resources.files("mlcalc.data").joinpath("measured").joinpath(run)
    reads = [float(json.loads(f.read_text())["probe"]["read_bandwidth"]["bytes_per_s"]) for f in folder.iterdir()
             if f.name.startswith("probe_") and f.name.endswith(".json")]
    probes = kernel_probes(run)
    card = probes[0].get("device_name", "GPU")
    return matmul_law_from(list(probes), sum(reads) / len(reads),
                           f"decode matmuls probed on {card} (scripts/gpu/bench_kernels.py, run {run})")


@lru_cache(maxsize=None)
def chip_matmul_law(chip: str) -> MatmulLaw:
    """:func:`measured_matmul_law` carried to ``chip`` (its large-read rate, :func:`read_bandwidth`)."""
    return measured_matmul_law().on_card(read_bandwidth(chip))


@lru_cache(maxsize=None)  # pure: the bundled measurements do not change; read for every product gemm_law_s prices
def sustained_matmul_rate(chip: str, dtype: str = "bf16") -> float:
    """The matmul FLOP/s a card keeps up under continuous load where the book measured it (mlcalc.bench's matmul
    runs, :func:`mlcalc.measured.best_matmul_flops` with ``sustained=True``: the rate the training engine scales its
    burst rates to, :func:`mlcalc.hfruns.machine`), else :func:`matmul_rate`.

    H100 SXM, FP8: 1,316 TFLOPS sustained (mlcalc/data/measured/h100-2026-11-26, matmul.json), against the 1,403 of
    the achievable table :func:`matmul_rate` reads:

    >>> round(sustained_matmul_rate("H100-SXM", "fp8") / 1e12)
    1316
    """
    from mlcalc import measured

    dt = "bf16" if dtype == "fp16" else dtype
    try:
        return measured.best_matmul_flops(chip, dt, sustained=True)
    except ValueError:
        return matmul_rate(chip, dt)


def gemm_law_s(m: int, n: int, k: int, chip: str, dtype: str = "bf16", groups: float = 1.0) -> float:
    """Seconds of one ``m x k`` by ``k x n`` matmul in ``dtype`` (bf16 or FP8 weights and inputs, bf16 output) by one
    law for every dtype: the longer of its bytes and its FLOPs, overlapped as a pipelined kernel overlaps them.
    Bytes: the weights ``n k`` and inputs ``m k`` at the dtype's size and the output ``2 m n``, read as the book's
    decode-matmul probe reads them (:func:`chip_matmul_law` at ``m`` rows: a few microseconds to ramp up and
    drain, then the probe's streaming rate carried to the chip's read rate). FLOPs: ``2 m n k`` at the chip's
    sustained matmul rate (:func:`sustained_matmul_rate`) over the useful share of the tile, orientation and
    split-K its library picks (:func:`mlcalc.compute.gemm_kernel` on the chip's SMs; 1 where the catalogue has no
    SM count). Checked on the 1,088 products of the gemm-tiles call (tests/core/test_gemm_law.py). ``groups``: that
    many such products run as one grouped kernel (an MoE layer's experts, each at its own ``m`` rows): one fixed
    time, every group's bytes and FLOPs.

    Llama 3.1 8B's gate and up projections in FP8 at 1,024 rows on an H100 (measured 190 us,
    mlcalc/data/measured/h100-2026-11-27-gemm-tiles):

    >>> round(gemm_law_s(1024, 28672, 4096, "H100-SXM", "fp8") * 1e6)
    188
    """
    mm, nn, kk = _check.positive_int("m", m), _check.positive_int("n", n), _check.positive_int("k", k)
    _check.choice("dtype", dtype, ("bf16", "fp16", "fp8"))
    g = _check.positive("groups", groups)
    b = memory.dtype_bytes(dtype)
    read = chip_matmul_law(chip).seconds(g * (nn * kk * b + mm * kk * b + 2.0 * mm * nn), mm)
    sms = spec(chip).sm_count
    useful = 1.0 if sms is None else compute.gemm_kernel(mm, nn, kk, sms, "fp8" if dtype == "fp8" else "bf16").useful
    return max(read, g * 2.0 * mm * nn * kk / (sustained_matmul_rate(chip, dtype) * useful))


@lru_cache(maxsize=65536)
def layers_gemm_law_s(model: memory.ModelConfig, tokens: int, tp: int, chip: str, dtype: str = "bf16",
                      part: str = "all") -> float:
    """Seconds of every layer's matmuls for an iteration of ``tokens`` tokens on one GPU of ``tp``, each product by
    :func:`gemm_law_s` as an engine runs them: one fused QKV product, the gate and up projections as one product
    twice as wide, the attention output and down projections, split as tensor parallelism splits them
    (:func:`mlcalc.steptime.layer_products`); an MoE layer's router, and its experts as one grouped kernel per
    projection: the experts the tokens touch (:func:`mlcalc.memory.moe_experts_touched`), each at the rows routed to
    it (balanced routing; every expert split over the ``tp`` GPUs). ``part``: "all", "experts" (the routed experts'
    kernels only) or "rest" (all but those), for a layout that runs the two at different row counts (attention data
    parallelism)."""
    from mlcalc import steptime

    t = _check.positive_int("tokens", tokens)
    _check.choice("part", part, ("all", "experts", "rest"))
    total = 0.0
    for layers, m, n, k, count, label in steptime.engine_products(model, t, _check.positive_int("tp", tp)):
        if (part == "experts") != label.startswith("expert ") and part != "all":
            continue
        if label.startswith("expert "):  # routed experts: one grouped kernel over those touched
            touched = memory.moe_experts_touched(model.n_experts, model.experts_per_token, t)
            rows = max(1, round(t * model.experts_per_token / touched))
            total += layers * gemm_law_s(rows, n, k, chip, dtype, touched)
        else:
            total += layers * count * gemm_law_s(m, n, k, chip, dtype)
    return total


#: How PyTorch's SDPA runs a prefill: "causal" (``is_causal=True``, no mask: the flash kernel, which skips the
#: blocks above the diagonal) or "mask" (an explicit boolean mask, as transformers passes for a sliding window
#: shorter than the prompt: the memory-efficient kernel, which computes every block and masks).
SDPA_WAYS = ("causal", "mask")


def sdpa_prefill_s(how: str, batch: int, heads: int, length: int, qk_dim: int, v_dim: int,
                   run: str = KERNEL_RUN) -> float:
    """Seconds of one layer's prefill attention over ``length`` tokens, from the kernel probe's SDPA points
    (scripts/gpu/bench_kernels.py ``attention``): the rate (causal FLOPs ``2 b h L (L + 1) / 2 (d_qk + d_v)`` per
    second) of the probed head shape nearest to ``(qk_dim, v_dim)``, interpolated on log FLOPs between the
    probed sizes (clamped at the ends), applied to this call's causal FLOPs."""
    _check.choice("how", how, SDPA_WAYS)
    b, h, n = _check.positive_int("batch", batch), _check.positive_int("heads", heads), _check.positive_int("length", length)
    dq, dv = _check.positive_int("qk_dim", qk_dim), _check.positive_int("v_dim", v_dim)
    pts = [r for p in kernel_probes(run) for r in p["attention"] if "s" in r and r["how"] == how]
    if not pts:
        raise ValueError(f"run={run!r} is not allowed: its kernel probe has no attention points")
    near = min({(int(r["head_dim"]), int(r["v_head_dim"])) for r in pts},
               key=lambda d: (abs(math.log(d[0] / dq)) + abs(math.log(d[1] / dv)), d))
    xs = sorted((math.log(float(r["causal_flops"])), float(r["flops_per_s"])) for r in pts
                if (int(r["head_dim"]), int(r["v_head_dim"])) == near)
    flops = 2.0 * b * h * n * (n + 1) / 2.0 * (dq + dv)
    return flops / interpolate(xs, math.log(flops))


def decode_kernels(model: memory.ModelConfig, batch: int, fused: bool = True, tp: int = 1, ep: int = 1,
                   bytes_per_param: float = 2.0,
                   grouped_experts: bool | None = None) -> tuple[tuple[float, float, bool], ...]:
    """The weight-reading matmul kernels of one decode step, layers only (the output projection apart):
    ``(bytes, layers, grouped)`` per kernel, ``layers`` the number of layers that run it, bytes per GPU.

    ``fused``: an engine's layer (vLLM, TensorRT-LLM, our plain engine): one QKV matmul, one gate-and-up matmul;
    else transformers' (one matmul per projection). MLA: the query projection(s), the joint KV down-projection,
    the KV up-projection (``kv_b_proj``: read once a step), the output projection. MoE layers: the router, the
    shared experts as one feed-forward block (three or two kernels), and the routed experts the batch touches
    (:func:`mlcalc.memory.moe_experts_touched`) as two kernels (gate-and-up, down): ``grouped`` (transformers'
    grouped_mm) when not ``fused``. ``grouped_experts``: whether those two are grouped kernels, whatever ``fused``
    says (SGLang's fused layer calls its fused-MoE Triton kernel, every expert in one launch:
    :func:`mlcalc.servemeasured.sglang_decode_step`); None: as ``fused`` implies.
    """
    b = _check.positive_int("batch", batch)
    t = _check.positive_int("tp", tp)
    e = _check.positive_int("ep", ep)
    bpp = _check.positive("bytes_per_param", bytes_per_param)
    h, L = model.hidden, model.n_layers
    ks: list[tuple[float, float, bool]] = []

    def add(params: float, layers: float, split: float = t, grouped: bool = False) -> None:
        if params > 0 and layers > 0:
            ks.append((params * bpp / split, float(layers), grouped))

    if model.attention == "mla":
        qd = model.n_heads * model.qk_head_dim
        if model.q_lora_rank:
            add(h * model.q_lora_rank, L, 1)
            add(model.q_lora_rank * qd, L)
        else:
            add(h * qd, L)
        add(h * (model.kv_lora_rank + model.qk_rope_head_dim), L, 1)
        add(model.kv_lora_rank * model.n_heads * (model.head_dim + model.v_dim), L)
    else:
        qd, kvd, vd = model.q_width, model.n_kv_heads * model.head_dim, model.n_kv_heads * model.v_dim
        kv_split_ = min(t, model.n_kv_heads)
        if fused:
            add(h * qd + h * (kvd + vd) * t / kv_split_, L)
        else:
            add(h * qd, L)
            add(h * kvd, L, kv_split_)
            add(h * vd, L, kv_split_)
    add(model.attn_out_width * h, L)
    mats = 3 if model.gated_mlp else 2

    def ffn(width: int, layers: float) -> None:
        if fused:
            add(h * width * (mats - 1), layers)
            add(h * width, layers)
        else:
            for _ in range(mats):
                add(h * width, layers)

    ffn(model.ffn_hidden, L - model.n_moe_layers)
    if model.is_moe:
        moe = model.n_moe_layers
        add(h * model.n_experts, moe, 1)
        if model.n_shared_experts:
            ffn(model.expert_ffn * model.n_shared_experts, moe)
        touched = memory.moe_experts_touched(model.n_experts, model.experts_per_token, b)
        grouped = (not fused) if grouped_experts is None else bool(grouped_experts)
        add(touched * h * model.expert_ffn * (mats - 1), moe, t * e, grouped)
        add(touched * h * model.expert_ffn, moe, t * e, grouped)
    return tuple(ks)


def kernel_weight_s(model: memory.ModelConfig, batch: int, law: MatmulLaw, fused: bool = True, tp: int = 1,
                    ep: int = 1, bytes_per_param: float = 2.0,
                    grouped_experts: bool | None = None) -> tuple[float, int]:
    """Seconds per layer (mean over layers) the step's weight-reading matmuls take under ``law``, and how many
    such kernels a layer runs (rounded mean): :func:`decode_kernels` kernel by kernel."""
    ks = decode_kernels(model, batch, fused, tp, ep, bytes_per_param, grouped_experts)
    L = model.n_layers
    t = sum(law.seconds(w, batch, g) * n for w, n, g in ks) / L
    return t, round(sum(n for _, n, _ in ks) / L)


#: Whose attention reads the cache: "engine" (vLLM, SGLang, TensorRT-LLM: the cache read once, MLA attended in
#: its latent form, a sliding window as a ring); "transformers" (Hugging Face's modelling code: see
#: :func:`attention_extra_bytes`).
CACHE_LAYOUTS = ("engine", "transformers")


def sequence_kv_bytes(model: memory.ModelConfig, context: int, bytes_per_value: float = 2.0) -> float:
    """KV-cache bytes of one sequence of ``context`` tokens, all layers, at ``bytes_per_value``
    (:func:`mlcalc.memory.kv_cache_bytes`: the MLA latent, windows applied). transformers 5.17 stores the
    same: its DeepSeek-V2/V3 attention caches the latent, its sliding layers a buffer of the window."""
    scale = _check.positive("bytes_per_value", bytes_per_value) / 2.0
    return memory.kv_cache_bytes(model, context, "bf16") * scale


def attention_extra_bytes(model: memory.ModelConfig, context: int, bytes_per_value: float = 2.0,
                          cache_layout: str = "engine") -> float:
    """Bytes one decode step's attention moves for one sequence beyond reading its cache, all layers.

    "engine": none. "transformers" (5.17, read in its source): MLA decompresses the whole latent cache every
    step into a key and a value per head (``kv_b_proj``: written, then read by attention,
    ``2 n_heads (d_nope + d_v)`` values per token and layer); a full sliding buffer is rolled by one
    position and rewritten every step (``roll`` then ``copy_``: about two reads and two writes of the
    window per local layer).
    """
    _check.choice("cache_layout", cache_layout, CACHE_LAYOUTS)
    c = _check.positive_int("context", context)
    b = _check.positive("bytes_per_value", bytes_per_value)
    if cache_layout == "engine":
        return 0.0
    extra = 0.0
    if model.attention == "mla":
        # per head and cached token: kv_b_proj writes nope + v; the key is built by reading nope and writing
        # nope + rope (the rotary part broadcast to every head); attention reads that key and the value
        nope, rope, v = model.head_dim, model.qk_rope_head_dim, model.v_dim
        extra += model.n_layers * model.n_heads * ((nope + v) + nope + 2 * (nope + rope) + v) * b * c
    lay = memory.kv_layout(model)
    if lay.local_layers and c >= lay.window:
        extra += 4.0 * lay.local_layers * lay.window * lay.bytes_per_token_per_layer * b / 2.0
    return extra


def masked_decode_attention_law(head_dim: int = 128, run: str = DECODE_RUN) -> tuple[float, float]:
    """``(fixed_s, bytes_per_s)`` of PyTorch's memory-efficient SDPA kernel at decode (one query row per head, a
    boolean mask over the cache, the kernel PyTorch picks when a mask is passed and flash cannot take it): the
    least-squares line of its time against the K and V bytes it reads, over the attention micro-benchmark's
    points at ``head_dim`` (scripts/gpu/bench_attention_decode.py, ``sdpa_efficient_s``). On an H200 about
    90 microseconds a call plus the cache at about half the read rate: one query row leaves most of the GPU
    idle while each block of keys is read in turn."""
    att = measured_decode(run)["attention"]
    g = att["heads"] / att["kv_heads"]  # the benchmark expands K and V to every query head before the kernel
    pts = [(float(p["kv_bytes"]) * g, float(p["sdpa_efficient_s"])) for p in att["points"]
           if p["head_dim"] == head_dim and p.get("sdpa_efficient_s")]
    if len(pts) < 2:
        raise ValueError(f"head_dim={head_dim!r} is not allowed: the benchmark measured "
                         f"{sorted({p['head_dim'] for p in att['points']})}")
    return _line(pts)


def kv_split(model: memory.ModelConfig, tp: int) -> float:
    """Over how many of the ``tp`` GPUs one sequence's cache is divided.

    Tensor parallelism splits KV heads; with fewer KV heads than GPUs each GPU keeps one (vLLM replicates
    them), and an MLA latent is one vector per token that every GPU keeps whole (vLLM's MLA with tensor
    parallelism replicates it).
    """
    t = _check.positive_int("tp", tp)
    if model.attention == "mla":
        return 1.0
    return float(min(t, model.n_kv_heads))


def weight_params_per_gpu(model: memory.ModelConfig, tp: int = 1, ep: int = 1) -> float:
    """Parameters one GPU of a replica of ``ep`` groups of ``tp`` GPUs holds: every weight but the routed and shared
    experts split over the ``tp`` GPUs of its group (attention, norms, routers, dense FFNs, embeddings: replicated
    in each of the ``ep`` groups), the experts over all ``tp x ep``. With ``ep`` groups the attention is data
    parallel: "All GEMM weights are replicated on every GPU. The KV-cache is partitioned, because different user
    requests are routed to different DP ranks" (NVIDIA TensorRT-LLM docs, "Parallelism in TensorRT LLM",
    docs/source/features/parallel-strategy.md, "Attention Module: Data Parallelism (DP)").

    Qwen3-235B-A22B, attention data parallel over 8 GPUs (``tp=1, ep=8``): the 227 G expert parameters split, the
    8 G others whole, about 36 G a GPU (against 29 G when everything is split over 8):

    >>> round(weight_params_per_gpu(memory.model_preset("Qwen3 235B-A22B"), 1, 8) / 1e9)
    36
    """
    t = _check.positive_int("tp", tp)
    e = _check.positive_int("ep", ep)
    experts = (model.n_moe_layers * model.mlp_params_per_expert() * (model.n_experts + model.n_shared_experts)
               if model.is_moe else 0.0)
    return (model.n_params() - experts) / t + experts / (t * e)


def read_params_per_gpu(model: memory.ModelConfig, tokens: int, tp: int = 1, ep: int = 1) -> float:
    """Parameters one GPU reads in a forward pass of ``tokens`` tokens (:func:`mlcalc.memory.decode_weight_params`:
    the experts those tokens touch) on ``ep`` groups of ``tp`` GPUs: the experts over all ``tp x ep`` GPUs, every
    other weight over the ``tp`` of a group and read whole by each group (:func:`weight_params_per_gpu`)."""
    n = _check.positive_int("tokens", tokens)
    t, e = _check.positive_int("tp", tp), _check.positive_int("ep", ep)
    read = memory.decode_weight_params(model, n)
    experts = (model.n_moe_layers * model.mlp_params_per_expert()
               * (memory.moe_experts_touched(model.n_experts, model.experts_per_token, n) + model.n_shared_experts)
               if model.is_moe else 0.0)
    return (read - experts) / t + experts / (t * e)


def kv_bytes_per_token_per_gpu(model: memory.ModelConfig, tp: int = 1, kv_dtype: str = "bf16") -> float:
    """KV-cache bytes one token of a sequence costs each GPU of its attention group of ``tp`` GPUs (every layer):
    the whole token over :func:`kv_split`. Tensor parallelism splits the KV heads, and "if num_heads <
    tensor_parallel_size, the KV-cache is replicated" (TensorRT-LLM docs, "Parallelism in TensorRT LLM"): with 4 KV
    heads over 8 GPUs each head is held by 2, so the 8 GPUs hold the cache twice over. Attention data parallelism
    (``tp`` = 1 a group) keeps each sequence's cache whole on the one GPU that runs it, held once.

    Qwen3-235B-A22B (94 layers, 4 KV heads of 128, FP8 cache): 96,256 bytes a token whole; at TP 8 each GPU keeps
    one head, 24,064 bytes, 192,512 over the 8 GPUs, as trtllm-bench's memory heuristic counts it ("Each GPU in TP
    group has at least 1 kv head": ``max(tp_size, num_key_value_heads)`` heads, tensorrt_llm/bench/build/tuning.py):

    >>> q = memory.model_preset("Qwen3 235B-A22B")
    >>> kv_bytes_per_token_per_gpu(q, 1, "fp8"), kv_bytes_per_token_per_gpu(q, 8, "fp8") * 8
    (96256.0, 192512.0)
    """
    return memory.model_kv_bytes_per_token(model, kv_dtype) / kv_split(model, tp)


#: Bytes of routing metadata one token carries into the attention-DP all-gather for each of its experts: the
#: chosen expert's index (int32) and its weight (fp32), gathered with the hidden states (TensorRT-LLM
#: tensorrt_llm/_torch/modules/fused_moe, CutlassFusedMoE: ``allgather([x, x_sf, token_selected_experts,
#: token_final_scales], ...)``).
ADP_ROUTE_BYTES_PER_EXPERT = 8.0


def attention_dp_comm_s(model: memory.ModelConfig, chip: str, tokens: int, ranks: int,
                        bytes_per_value: float = 2.0, gather_bytes_per_value: float | None = None) -> float:
    """Collectives of one forward pass of ``tokens`` tokens (all ranks') under attention data parallelism over
    ``ranks`` GPUs with the experts split over them (TensorRT-LLM's ``enable_attention_dp`` with its MoE on the
    same GPUs): no all-reduce after attention (each rank runs its own requests' attention whole); per MoE layer an
    all-gather of every rank's tokens before the experts (each GPU's experts see every token) and a reduce-scatter
    of the expert outputs back to the ranks that own the tokens (:func:`mlcalc.network.fabric_collective_time`).
    TensorRT-LLM's MoE quantizes the hidden states before it gathers them (``x, x_sf = self.quantize_input(x)``,
    then ``allgather([x, x_sf, token_selected_experts, token_final_scales])``, fused_moe_cutlass.py as stored):
    ``gather_bytes_per_value`` a hidden value (the matmuls' input dtype: 1 for FP8; None: ``bytes_per_value``)
    plus :data:`ADP_ROUTE_BYTES_PER_EXPERT` for each of the token's experts; the outputs are reduce-scattered at
    ``bytes_per_value`` (bf16). Dense layers of such a model would need the same pair around their
    tensor-parallel FFN; the MoE models served so have none. (SGLang's DP attention with expert parallelism
    exchanges the tokens by all-to-all dispatch and combine instead, "DP, DPA and SGLang DP Router":
    :func:`comm_s` with ``ep``.)"""
    from mlcalc import network
    t = _check.positive_int("tokens", tokens)
    r = _check.positive_int("ranks", ranks)
    out_b = _check.positive("bytes_per_value", bytes_per_value)
    in_b = out_b if gather_bytes_per_value is None else _check.positive("gather_bytes_per_value",
                                                                        gather_bytes_per_value)
    if r == 1 or not model.is_moe:
        return 0.0
    fab = _fabric(chip, r, 1)
    gather = t * (model.hidden * in_b + model.experts_per_token * ADP_ROUTE_BYTES_PER_EXPERT)
    return model.n_moe_layers * (network.fabric_collective_time(gather, fab, "all_gather").time_s
                                 + network.fabric_collective_time(t * model.hidden * out_b, fab,
                                                                  "reduce_scatter").time_s)


def attention_flops_per_token(model: memory.ModelConfig, context: int, cache_layout: str = "engine") -> float:
    """FLOPs of one new token attending to ``context`` cached tokens, all layers.

    Standard attention: scores and the weighted sum, ``4 x n_heads x head_dim`` per cached token and
    layer. MLA in an engine (weights absorbed, attention over the latent): scores over rank + rotary part,
    sum over the rank, ``2 n_heads (2 d_c + d_r)`` (DeepSeek-V2 paper, appendix on MLA with absorbed
    matrices); in transformers the latent is first decompressed by a separate matmul (``2 d_c n_heads
    (d_nope + d_v)`` per cached token, added by :func:`decode_step`), then attended as standard attention.
    Sliding-window layers attend to at most the window.
    """
    c = _check.positive_int("context", context)
    lay = memory.kv_layout(model)
    tokens = lay.global_layers * c + lay.local_layers * min(c, lay.window or c)
    if model.attention == "mla" and cache_layout == "engine":
        return 2.0 * model.n_heads * (2 * model.kv_lora_rank + model.qk_rope_head_dim) * tokens
    return 2.0 * model.n_heads * (model.qk_head_dim + model.v_dim) * tokens



# --------------------------------------------------------------------------- published serving benchmarks

#: Share of the datasheet memory bandwidth a large read reaches: our measured H200 reduction over its
#: 4.8 TB/s datasheet (used for cards we did not measure).
def read_fraction() -> float:
    """Measured read bandwidth over the H200 datasheet's (the card of our run)."""
    return measured_read_bandwidth() / spec("H200-SXM").memory_bandwidth_bytes_per_s


@lru_cache(maxsize=256)
def _fabric(chip: str, ranks: int, nodes: int, in_network: str = "none") -> Fabric:
    from mlcalc import network, plan  # plan: the chip's system; imported here to keep serving light
    system = plan.chip_info(chip)["system"]
    per_node = network.system(system).gpus_per_node
    n_nodes = max(_check.positive_int("nodes", nodes), -(-ranks // per_node))
    if ranks % n_nodes:
        raise ValueError(f"nodes={nodes!r} is not allowed: {ranks} GPUs do not split evenly over {n_nodes} nodes")
    return network.fabric(system, n_nodes, gpus_per_node=ranks // n_nodes, in_network=in_network)


def comm_s(model: memory.ModelConfig, chip: str, tokens: int, tp: int = 1, ep: int = 1, nodes: int = 1,
           bytes_per_value: float = 2.0, moe_allreduces: int = 1) -> float:
    """Collectives of one forward pass over ``tokens`` tokens on the critical path (decode: tokens = batch).

    Tensor parallel (``tp`` GPUs): two all-reduces per layer of the group's tokens x hidden values, after
    attention and after the feed-forward block (Shoeybi et al. 2019, Megatron-LM, section 3). Expert
    parallel (``ep`` groups, DeepSeek-V3's serving layout): per MoE layer a dispatch and a combine
    all-to-all, each rank sending its tokens' hidden vectors to their ``k`` experts (DeepSeek-V3 report,
    section 3.4). Alpha-beta times on the chip's system (``mlcalc.network.fabric_collective_time``, NCCL
    latencies): at decode sizes the latency dominates. ``nodes``: nodes the replica spans (more than one
    node puts the collectives on the NICs). NCCL's Ring/Simple for every engine: SGLang and TensorRT-LLM run
    all-reduce kernels of their own inside a node, and in a CUDA graph on 4 H200s NCCL's own Ring/LL took 17.5 us at
    8 KiB where this charges 28.8 (:func:`mlcalc.network.engine_allreduce_paths`; links.json nccl_latency).
    ``moe_allreduces``: the all-reduces a tensor-parallel MoE layer's feed-forward block makes (1: one after the
    block, as Megatron's; an engine that runs every expert as its own tensor-parallel MLP all-reduces each expert's
    output, as TensorRT-LLM 0.9.0 without its MoE plugin does: :func:`mlcalc.serving_record.trtllm_v090_moe_allreduces`).
    """
    from mlcalc import network
    t = _check.positive_int("tokens", tokens)
    tp = _check.positive_int("tp", tp)
    ep = _check.positive_int("ep", ep)
    b = _check.positive("bytes_per_value", bytes_per_value)
    total = 0.0
    group = -(-t // ep)
    if tp > 1:
        fab = _fabric(chip, tp, -(-_check.positive_int("nodes", nodes) // ep))  # each TP group's share of nodes
        msg = group * model.hidden * b
        per_layer = 2 * model.n_layers + (_check.positive_int("moe_allreduces", moe_allreduces) - 1) * model.n_moe_layers
        total += per_layer * network.fabric_collective_time(msg, fab).time_s
    if ep > 1 and model.is_moe:
        fab = _fabric(chip, tp * ep, nodes)
        msg = group * model.experts_per_token * model.hidden * b / tp
        total += 2 * model.n_moe_layers * network.fabric_collective_time(msg, fab, "all_to_all").time_s
    return total


#: The products whose all-reduce TensorRT-LLM's GEMM + all-reduce fusion runs inside them: the row-parallel linear
#: layers of a dense layer (labels of :func:`mlcalc.steptime.engine_products`). An MoE layer's experts run in the
#: MoE plugin, not a row-parallel linear layer, so its feed-forward all-reduce stays a collective of its own.
FUSED_ALLREDUCE_PRODUCTS = ("attention out", "mlp out")


def gemm_allreduce_comm_s(model: memory.ModelConfig, chip: str, tokens: int, tp: int, dtype: str = "fp8",
                          bytes_per_value: float = 2.0) -> float:
    """The tensor-parallel all-reduce time one forward pass over ``tokens`` tokens leaves on the critical path when
    each all-reduce runs inside the row-parallel product before it, as TensorRT-LLM's GEMM + all-reduce fusion runs
    them (``gemm_allreduce_plugin``; tensorrt_llm/quantization/layers.py, ``FP8RowLinear.forward``: with the plugin
    set, the FP8 row-parallel product and its all-reduce are one ``gemm_allreduce`` call). The kernel
    (cpp/tensorrt_llm/kernels/cutlass_kernels/allreduce_gemm/allreduce_gemm_impl_sm90.h,
    ``GemmAllReduceImplTwoshot_Sm90``: a persistent warp-specialized GEMM whose epilogue marks each output tile done
    and whose ``CollectiveAllReduceMulticastWarpSpecialized`` reduces each done tile through NVLink multicast memory)
    reduces the output tile by tile while the product computes the rest, so each such product with its all-reduce
    takes the longer of the two: the product by :func:`gemm_law_s`, the all-reduce of its ``tokens x hidden``
    output over NVLink SHARP (:func:`mlcalc.network.fabric_collective_time` with ``in_network="nvls"``: the
    multicast all-reduce NCCL's NVLS algorithm runs, at the node's NVLink SHARP bandwidth from ``nvls_min_gpus``
    GPUs, the ring's below). This returns what the all-reduces add beyond their products,
    ``sum max(0, all-reduce - product)`` over :data:`FUSED_ALLREDUCE_PRODUCTS`, plus an MoE layer's feed-forward
    all-reduce as :func:`comm_s` prices it; the products themselves stay in the matmuls' time. One node only: the
    multicast memory is the node's NVSwitch."""
    from mlcalc import network, steptime
    t = _check.positive_int("tokens", tokens)
    tp = _check.positive_int("tp", tp)
    b = _check.positive("bytes_per_value", bytes_per_value)
    if tp == 1:
        return 0.0
    fab = _fabric(chip, tp, 1, "nvls")
    if fab.n_nodes > 1:
        raise ValueError(f"tp={tp!r} is not allowed with the GEMM + all-reduce fusion on {chip}: its multicast "
                         f"all-reduce runs inside one node of {fab.gpus_per_node} GPUs")
    ar = network.fabric_collective_time(t * model.hidden * b, fab).time_s
    total = 0.0
    for layers, m, n, k, count, label in steptime.engine_products(model, t, tp):
        if label in FUSED_ALLREDUCE_PRODUCTS:
            total += layers * max(0.0, ar - count * gemm_law_s(m, n, k, chip, dtype))
    if model.n_moe_layers:  # their feed-forward all-reduce: unfused, on the ring as comm_s runs it
        total += model.n_moe_layers * network.fabric_collective_time(t * model.hidden * b,
                                                                       _fabric(chip, tp, 1)).time_s
    return total


def tp_allreduce_s(model: memory.ModelConfig, chip: str, batch: int, tp: int, bytes_per_value: float = 2.0) -> float:
    """Tensor-parallel all-reduces of one decode step inside a node (:func:`comm_s` with ``tp`` alone)."""
    if _check.positive_int("tp", tp) == 1:
        return 0.0
    return comm_s(model, chip, batch, tp, 1, 1, bytes_per_value)


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


def read_bandwidth(chip: str) -> float:
    """Bytes/s a large read reaches on ``chip``: the datasheet's times the fraction we measured (:func:`read_fraction`)."""
    return spec(chip).memory_bandwidth_bytes_per_s * read_fraction()


def predict_decode(model: memory.ModelConfig, chip: str, batch: int, context: int, engine: str = "cuda-graph",
                   tp: int = 1, ep: int = 1, weight_dtype: str = "bf16", kv_dtype: str = "bf16", nodes: int = 1,
                   read_bytes_per_s: float | None = None, floor: Floor | None = None,
                   matmul_flops: float | None = None, moe_allreduces: int = 1) -> DecodeStep:
    """One decode step of ``batch`` sequences at ``context`` cached tokens on ``chip``, as ``engine`` runs it.

    The one call to compare a measured decode step with. "cuda-graph": no host floor, attention that reads
    the cache once, the fused layer's few small kernels (:func:`engine_small_kernels_s`) and the bytes its two
    fused residual-add + RMSNorm passes move, whole on every tensor-parallel GPU
    (:func:`replicated_norm_bytes_per_token`) and its other element-wise passes (FP8 quantization, SiLU x mul,
    rotary and cache write: :func:`engine_elementwise_bytes_per_token`, as :func:`mlcalc.servemeasured.inflight`
    charges them). "hf-eager": the
    measured launch floor scaled by the layer's operation count (:func:`engine_floor`), ``repeat_kv``'s copy
    for grouped KV heads at the copy rate we measured, the ~35 small kernels, MLA decompressed every step and
    sliding buffers rolled (:func:`attention_extra_bytes`).
    ``read_bytes_per_s``, ``floor``, ``matmul_flops``: the card's own measured figures when you have them
    (default: datasheet x measured read fraction; the engine's floor; the achievable matmul table).
    Collectives of ``tp`` and ``ep`` (:func:`comm_s`) are added to the step. FP8 weights
    (:data:`SERIAL_MATMUL_DTYPES`): the matmuls' bytes, their FP8 inputs and bf16 outputs included, and their
    FLOPs add (:func:`matmul_s`). ``moe_allreduces``: the all-reduces of an MoE layer's feed-forward block
    (:func:`comm_s`).
    """
    _check.choice("engine", engine, ENGINES)
    bw = read_bandwidth(chip) if read_bytes_per_s is None else _check.positive("read_bytes_per_s", read_bytes_per_s)
    rate = matmul_rate(chip, weight_dtype) if matmul_flops is None else _check.positive("matmul_flops", matmul_flops)
    eager = engine == "hf-eager"
    fl = (engine_floor(engine, model) if floor is None else floor) if eager else None
    comm = comm_s(model, chip, batch, tp, ep, nodes, memory.dtype_bytes("bf16"), moe_allreduces)
    serial = weight_dtype in SERIAL_MATMUL_DTYPES
    return decode_step(model, batch, context, bw, rate, tp, fl,
                       measured_copy_bandwidth() if eager else None, memory.dtype_bytes(weight_dtype),
                       memory.dtype_bytes(kv_dtype), comm,
                       engine_small_kernels_s(engine, model), "transformers" if eager else "engine", ep,
                       overlap=not serial,
                       activation_bytes_per_token=matmul_activation_bytes_per_token(model, tp) if serial else 0.0,
                       norm_bytes_per_token=0.0 if eager else engine_elementwise_bytes_per_token(model, tp, weight_dtype))


def predict_prefill(model: memory.ModelConfig, chip: str, batch: int, prompt: int, engine: str = "cuda-graph",
                    tp: int = 1, ep: int = 1, weight_dtype: str = "bf16", nodes: int = 1,
                    matmul_flops: float | None = None, moe_allreduces: int = 1,
                    attention_dtype: str | None = None) -> float:
    """Seconds to prefill ``batch`` prompts of ``prompt`` tokens: the longer of its FLOPs (``2 N_active`` per
    token plus causal attention, sliding windows applied) at the matmul rate and one read of the weights each GPU
    holds (:func:`read_params_per_gpu`: with ``ep`` groups every group reads its own copy of all but the experts; FP8
    weights: their sum, the matmuls' inputs and outputs added to the bytes, :func:`matmul_s`),
    plus the collectives of ``tp`` / ``ep`` over ``batch x prompt`` tokens (``moe_allreduces``: :func:`comm_s`).
    "cuda-graph": plus the fused engine's element-wise passes over every prompt token
    (:func:`engine_elementwise_bytes_per_token`, as :func:`mlcalc.servemeasured.inflight` charges a prompt's tokens);
    "hf-eager": at least the engine's floor. ``attention_dtype``: the dtype the engine runs the prompt's attention in
    (one of :data:`ATTENTION_DTYPES`; None: the weights'), its FLOPs at that dtype's matmul rate (scaled as
    ``matmul_flops`` scales the weights' rate): TensorRT-LLM 0.9.0's FP8 engines ran it in 16-bit
    (:func:`mlcalc.servemeasured.engine_facts`).

    Llama 2 7B on one H100 SXM in FP8, a 2,048-token prompt with the attention in 16-bit, as TensorRT-LLM 0.9.0 ran
    it: the prompt's 1.1 TFLOPs of attention (0.54 GFLOPs a token, all layers) at 795 rather than 1,403 TFLOPS (the
    achievable table's bf16 and FP8 rates) add 0.6 ms to the 30.3 ms it takes with FP8 attention:

    >>> m = memory.model_preset("Llama-2 7B")
    >>> fp8 = predict_prefill(m, "H100-SXM", 1, 2048, weight_dtype="fp8")
    >>> round(fp8 * 1e3, 1), round((predict_prefill(m, "H100-SXM", 1, 2048, weight_dtype="fp8",
    ...                                             attention_dtype="fp16") - fp8) * 1e3, 1)
    (30.3, 0.6)
    """
    _check.choice("engine", engine, ENGINES)
    b = _check.positive_int("batch", batch)
    p = _check.positive_int("prompt", prompt)
    n = _check.positive_int("tp", tp) * _check.positive_int("ep", ep)
    rate = matmul_rate(chip, weight_dtype) if matmul_flops is None else _check.positive("matmul_flops", matmul_flops)
    # causal attention: token i attends to i tokens, so on average to (p + 1) / 2 (a window caps it)
    lay = memory.kv_layout(model)
    mean_ctx = (p + 1) / 2.0
    local_ctx = min(mean_ctx, lay.window) if lay.local_layers else 0.0
    attn_tok = 2.0 * model.n_heads * (model.qk_head_dim + model.v_dim) * (lay.global_layers * mean_ctx
                                                                           + lay.local_layers * local_ctx)
    # the attention's FLOPs at its own dtype's rate where the engine runs it in another dtype than the weights'
    adt = weight_dtype if attention_dtype is None else _check.choice("attention_dtype", attention_dtype,
                                                                       ATTENTION_DTYPES)
    attn_rate = rate if adt == weight_dtype else rate * matmul_rate(chip, adt) / matmul_rate(chip, weight_dtype)
    flops = b * p * (2.0 * model.n_active_params() + attn_tok * rate / attn_rate)
    weights = read_params_per_gpu(model, b * p, tp, ep) * memory.dtype_bytes(weight_dtype)
    if weight_dtype in SERIAL_MATMUL_DTYPES:
        moved = weights + b * p * matmul_activation_bytes_per_token(model, tp)
        t = matmul_s(moved, flops / n, read_bandwidth(chip), rate, overlap=False)
    else:
        t = matmul_s(weights, flops / n, read_bandwidth(chip), rate)
    fl = engine_floor(engine, model)
    if fl is None:  # the fused engine's element-wise passes over every prompt token of its attention group
        t += -(-b * p // ep) * engine_elementwise_bytes_per_token(model, tp, weight_dtype) / read_bandwidth(chip)
    else:
        t = max(t, fl.fixed_s + model.n_layers * fl.per_layer_s)
    return t + comm_s(model, chip, b * p, tp, ep, nodes, moe_allreduces=moe_allreduces)


# --------------------------------------------------------------------------- load: continuous batching

SIM_MAX_REQUESTS = 2000  # most requests one simulation draws (the reader's number is refused above it)
SIM_MAX_REQUESTS_CHECK = 20_000  # most a checked case may simulate (mlcalc.mlperf: ten request lifetimes at full
#                                  load, so that the first 10 % left out is the ramp from the empty start)
SIM_MAX_EVENTS = 200_000  # most scheduler events (iterations with a prefill, admissions, finishes) it runs
SIM_MAX_OUTPUT = 32_768  # longest output a drawn request may ask for (a drawn length is clipped to it)
SIM_MAX_PROMPT = 1_000_000  # longest prompt a drawn request may carry
PLAN_REQUESTS_DEFAULT = 300  # requests a simulation draws unless told
SIM_WARMUP = 0.1  # share of the first arrivals left out of the percentiles (the empty start)
CHUNK_MIN = 64  # smallest chunked-prefill token budget the simulator takes (0 = off): a prompt of P tokens then
#                 needs at most P / 64 iterations, which bounds the simulation's work (a budget of 1 token took
#                 19 CPU-s a plan, every iteration one token, and ran into SIM_MAX_EVENTS)
DEFAULT_BATCHED_TOKENS = 8192  # prompt tokens one prefill iteration takes at most (vLLM's max_num_batched_tokens
#                                for chunked prefill at its larger settings; a whole prompt is never split without
#                                chunking)


class Workload(NamedTuple):
    """Traffic to serve: a Poisson arrival rate and the lengths of prompts and outputs."""

    rate_per_s: float  # mean requests per second (Poisson arrivals)
    input_mean: int  # mean prompt tokens
    output_mean: int  # mean output tokens
    input_cv: float = 0.0  # coefficient of variation of prompt lengths (0: all equal; lognormal otherwise)
    output_cv: float = 0.0  # the same for output lengths
    seed: int = 0  # the simulation draws from random.Random(seed): same inputs, same result


def draw_requests(w: Workload, n_requests: int) -> list[tuple[float, int, int]]:
    """``n_requests`` (arrival s, prompt tokens, output tokens), seeded: exponential gaps at ``rate_per_s``;
    lengths lognormal with the asked mean and coefficient of variation (fixed at cv 0), at least 1 token,
    clipped to :data:`SIM_MAX_PROMPT` / :data:`SIM_MAX_OUTPUT`."""
    import random
    n = _check.positive_int("n_requests", n_requests)
    if n > SIM_MAX_REQUESTS:
        raise ValueError(f"n_requests={n_requests!r} is not allowed: at most {SIM_MAX_REQUESTS:,} per simulation")
    rate = _check.positive("rate_per_s", w.rate_per_s)
    pi = _check.positive_int("input_mean", w.input_mean)
    po = _check.positive_int("output_mean", w.output_mean)
    if pi > SIM_MAX_PROMPT or po > SIM_MAX_OUTPUT:
        raise ValueError(f"input_mean={pi!r}, output_mean={po!r} are not allowed: at most {SIM_MAX_PROMPT:,} "
                         f"prompt and {SIM_MAX_OUTPUT:,} output tokens")
    cvi = _check.non_negative("input_cv", w.input_cv)
    cvo = _check.non_negative("output_cv", w.output_cv)
    if cvi > 4 or cvo > 4:
        raise ValueError(f"input_cv={cvi!r}, output_cv={cvo!r} are not allowed: at most 4")
    rng = random.Random(int(w.seed))

    def length(mean: int, cv: float, top: int) -> int:
        if cv == 0:
            return mean
        sigma = math.sqrt(math.log(1.0 + cv * cv))
        return max(1, min(top, round(rng.lognormvariate(math.log(mean) - sigma * sigma / 2.0, sigma))))

    out, t = [], 0.0
    for _ in range(n):
        t += rng.expovariate(rate)
        out.append((t, length(pi, cvi, SIM_MAX_PROMPT), length(po, cvo, SIM_MAX_OUTPUT)))
    return out


def kv_capacity_tokens(model: memory.ModelConfig, chip: str, tp: int = 1, ep: int = 1, weight_dtype: str = "bf16",
                       kv_dtype: str = "bf16", usable_fraction: float = memory.VLLM_MEMORY_UTILIZATION) -> int:
    """Tokens of KV cache (every layer) a replica of ``tp x ep`` GPUs holds beside its weights (0: they don't fit).

    Each GPU keeps its share of the weights (:func:`weight_params_per_gpu`: the experts split over all ``tp x ep``
    GPUs, every other weight over the ``tp`` of its group, whole in each of the ``ep`` groups) and ``1 / kv_split``
    of every token of its attention group (:func:`kv_bytes_per_token_per_gpu`: an MLA latent is kept whole by every
    GPU of a tensor-parallel group, a KV head by ``tp / n_kv_heads`` when there are fewer heads than GPUs); the
    ``ep`` groups hold different sequences (attention data parallel).
    """
    t, e = _check.positive_int("tp", tp), _check.positive_int("ep", ep)
    per_gpu = spec(chip).memory_bytes * _check.fraction("usable_fraction", usable_fraction)
    free = per_gpu - weight_params_per_gpu(model, t, e) * memory.dtype_bytes(weight_dtype)
    if free <= 0:
        return 0
    return int(e * (free // kv_bytes_per_token_per_gpu(model, t, kv_dtype)))


def trace_requests(rows: list[tuple[float, int, int]]) -> list[tuple[float, int, int]]:
    """A recorded trace as :func:`simulate_replica` takes it: (arrival s, prompt tokens, output tokens) rows,
    checked (finite non-negative arrivals, whole positive lengths within the simulation's bounds, at most
    :data:`SIM_MAX_REQUESTS` rows) and sorted by arrival."""
    if not 0 < len(rows) <= SIM_MAX_REQUESTS:
        raise ValueError(f"rows={len(rows)!r} is not allowed: a trace of 1 to {SIM_MAX_REQUESTS:,} requests")
    out = []
    for a, p, o in rows:
        arrival = _check.non_negative("arrival_s", a)
        prompt = _check.positive_int("prompt", p)
        output = _check.positive_int("output", o)
        if prompt > SIM_MAX_PROMPT or output > SIM_MAX_OUTPUT:
            raise ValueError(f"prompt={prompt!r}, output={output!r} are not allowed: at most {SIM_MAX_PROMPT:,} "
                             f"and {SIM_MAX_OUTPUT:,} tokens")
        out.append((float(arrival), int(prompt), int(output)))
    out.sort(key=lambda r: r[0])
    if out[-1][0] <= 0:
        raise ValueError("arrival_s=0 for every row is not allowed: a trace needs arrivals spread in time")
    return out


class StepModel(NamedTuple):
    """A replica's iteration times as a few numbers, so that a simulation costs no roofline call per step.

    decode(B, T) = base(B) + per_cached_token_s x T, with base interpolated over powers of two of the batch;
    prefill(tokens, attended) = max(read weights once, (2 N_active tokens + attention) / rate), their sum when
    ``serial`` (FP8 weights: :data:`SERIAL_MATMUL_DTYPES`).

    ``by_rows``: ``base_s`` is the work of one iteration of that many rows through the layers, a decode token and
    a prompt token alike (:func:`mlcalc.mlperf.step_model`: the in-flight law, whose tiles make that work a step
    function of the rows, not a line), and ``head_s`` the output projection's at that many rows that compute
    logits; an iteration of ``B`` decode and ``k`` prompt tokens, ``f`` of whose prompts end in it, then costs
    base(B + k) + head(B + f) + per_cached_token_s x T + its prompt attention, and ``batches`` runs to the chunk
    budget.
    """

    batches: tuple[int, ...]  # 1, 2, 4, ... max_batch
    base_s: tuple[float, ...]  # decode step at each batch with an empty cache (weights, floor, collectives)
    per_cached_token_s: float  # added per token held in the replica's KV cache (reading it once)
    prefill_per_token_s: float  # 2 N_active / (GPUs x rate), plus the collectives and element-wise passes per token
    attention_per_pair_s: float  # one query-key pair of prefill attention, all layers
    prefill_min_s: float  # a prefill iteration cannot beat one read of the weights (or the engine floor)
    kv_capacity_tokens: int  # KV tokens the replica holds beside its weights (every layer; windows aside)
    kv_tokens_per_request_token: float  # share of a full-attention token one context token costs (windows: < 1)
    serial: bool = False  # FP8 matmuls: an iteration's weight read and its tokens' work add (:func:`matmul_s`)
    by_rows: bool = False  # base_s is an iteration's work at that many rows, prompt tokens included (see above)
    head_s: tuple[float, ...] = ()  # by rows: the output projection at each of ``batches`` rows that compute logits


def step_model(model: memory.ModelConfig, chip: str, engine: str = "cuda-graph", tp: int = 1, ep: int = 1,
               max_batch: int = 256, weight_dtype: str = "bf16", kv_dtype: str = "bf16", nodes: int = 1,
               context_hint: int = 2048) -> StepModel:
    """Fit the replica's iteration times from :func:`predict_decode` / :func:`predict_prefill` (a few calls): a
    prompt token's matmul FLOPs, collectives and ("cuda-graph") element-wise passes
    (:func:`engine_elementwise_bytes_per_token`) as :func:`predict_prefill` charges them."""
    mb = _check.positive_int("max_batch", max_batch)
    if mb > MAX_BATCH:
        raise ValueError(f"max_batch={max_batch!r} is not allowed: at most {MAX_BATCH:,}")
    batches = tuple(2 ** k for k in range(int(math.log2(mb)) + 1)) + ((mb,) if mb & (mb - 1) else ())
    base = tuple(predict_decode(model, chip, b, 1, engine, tp, ep, weight_dtype, kv_dtype, nodes).step_s
                 for b in batches)
    c = _check.positive_int("context_hint", context_hint)
    one = predict_decode(model, chip, 1, c, engine, tp, ep, weight_dtype, kv_dtype, nodes).step_s
    per_tok = max(0.0, (one - base[0]) / max(1, c - 1))
    n = tp * ep
    rate = matmul_rate(chip, weight_dtype)
    lay = memory.kv_layout(model)
    pair = 2.0 * model.n_heads * (model.qk_head_dim + model.v_dim) * lay.global_layers / (n * rate)
    serial = weight_dtype in SERIAL_MATMUL_DTYPES
    fl = engine_floor(engine, model)
    per_token = (2.0 * model.n_active_params() / (n * rate) + comm_s(model, chip, 4096, tp, ep, nodes) / 4096
                 + (matmul_activation_bytes_per_token(model, tp) / read_bandwidth(chip) if serial else 0.0)
                 + (engine_elementwise_bytes_per_token(model, tp, weight_dtype) / (ep * read_bandwidth(chip))
                    if fl is None else 0.0))
    floor = 0.0 if fl is None else fl.fixed_s + model.n_layers * fl.per_layer_s
    pmin = max(floor, weight_params_per_gpu(model, tp, ep) * memory.dtype_bytes(weight_dtype) / read_bandwidth(chip))
    cap = kv_capacity_tokens(model, chip, tp, ep, weight_dtype, kv_dtype)
    ratio = memory.kv_cache_bytes(model, c) / (c * memory.model_kv_bytes_per_token(model))
    return StepModel(batches, base, per_tok, per_token, pair, pmin, cap, ratio, serial)


class LoadResult(NamedTuple):
    """Continuous batching of one replica in steady state, from a seeded simulation."""

    requests: int  # requests simulated (the first SIM_WARMUP share left out of the percentiles)
    offered_per_s: float  # the workload's arrival rate
    throughput_per_s: float  # requests completed per second between the warm-up's end and the last arrival
    output_tokens_per_s: float  # output tokens of those requests per second
    ttft_p50_s: float  # time to first token: arrival to the end of its prefill (queueing included)
    ttft_p99_s: float
    tpot_p50_s: float  # time per output token after the first: (last - first token) / (output - 1)
    tpot_p99_s: float
    ttft_mean_s: float  # mean time to first token
    tpot_mean_s: float  # mean time per output token
    mean_batch: float  # sequences decoding together, averaged over decode time
    slo_attainment: float  # share of measured requests within both targets (1.0 when no targets given)
    goodput_per_s: float  # offered rate x attainment: requests/s served within the targets
    queue_growing: bool  # overloaded: more than max(5, 5%) of the requests wait when the last one arrives
    events: int  # scheduler events the simulation ran (at most SIM_MAX_EVENTS)
    bounds: str  # what bounded it, stated
    measured: int = 0  # requests the percentiles are taken over (those after the warm-up share that finished)
    ttft_over: int = 0  # measured requests (a first token given, done or not) whose TTFT exceeds ttft_slo_s (0: none given)
    tpot_over: int = 0  # of those, requests whose TPOT exceeds tpot_slo_s (0 when no target is given)


def _percentile(xs: list[float], q: float) -> float:
    if not xs:
        return 0.0
    ys = sorted(xs)
    k = min(len(ys) - 1, max(0, math.ceil(q * len(ys)) - 1))
    return ys[k]


def _base(sm: StepModel, b: int) -> float:
    """Decode base time at batch ``b`` (with ``sm.by_rows``: the layers' work at ``b`` rows), linear between the
    fitted points."""
    return _between(sm.batches, sm.base_s, b)


def _head(sm: StepModel, b: int) -> float:
    """With ``sm.by_rows``: the output projection at ``b`` rows that compute logits (0 without a table or rows)."""
    return _between(sm.batches, sm.head_s, b) if sm.head_s and b > 0 else 0.0


def _between(bs: tuple[int, ...], ts: tuple[float, ...], b: int) -> float:
    """``ts`` at ``b``, linear between the points ``bs``; the first below them, in proportion beyond them."""
    if b <= bs[0]:
        return ts[0]
    if b > bs[-1]:
        return ts[-1] * b / bs[-1]
    i = bisect.bisect_left(bs, b)
    f = (b - bs[i - 1]) / (bs[i] - bs[i - 1])
    return ts[i - 1] + f * (ts[i] - ts[i - 1])


def _check_chunk(chunk_tokens: float, name: str = "chunk_tokens") -> float:
    """A chunked-prefill token budget: 0 (off) or from :data:`CHUNK_MIN` tokens up."""
    ck = _check.non_negative(name, chunk_tokens)
    if 0 < ck < CHUNK_MIN:
        raise ValueError(f"{name}={chunk_tokens!r} is not allowed: 0 (off) or at least {CHUNK_MIN} tokens (a "
                         "smaller budget cuts a prompt into so many iterations that the simulation would run for "
                         "seconds)")
    return ck


def simulate_replica(sm: StepModel, reqs: list[tuple[float, int, int]], max_batch: int = 256,
                     chunk_tokens: int = 0, ttft_slo_s: float = 0.0, tpot_slo_s: float = 0.0,
                     prefill_only: bool = False, max_prefills: int = 0,
                     prefill_tokens: int = DEFAULT_BATCHED_TOKENS,
                     max_requests: int = SIM_MAX_REQUESTS, give_up_over: int = 0) -> LoadResult:
    """Iteration-level (continuous) batching of one replica over ``reqs``, deterministic.

    The scheduler of vLLM and its kind, reduced to its arithmetic. A request is admitted when a batch slot
    and KV room for its prompt and whole output are free (no preemption: the cache is reserved, as
    TensorRT-LLM's guaranteed-no-evict policy does), first come first served. Without chunking
    (``chunk_tokens`` 0) an iteration that admits requests prefills their prompts alone (up to
    :data:`DEFAULT_BATCHED_TOKENS`, at least one whole prompt) and pauses decoding; its end is each one's
    first token. With chunking (Agrawal et al. 2024, Sarathi-Serve) every iteration decodes the running batch
    and adds up to ``chunk_tokens`` minus the batch prompt tokens, taking the longer of the decode step and
    the compute of all its tokens (FP8 weights, ``sm.serial``: the decode step plus its prompt tokens' work, as
    :func:`matmul_s` adds bytes and FLOPs). Between events (an arrival, a finish, a prefill) the decode steps are
    summed in closed form: step(B, T + kB) grows linearly, so k steps cost ``k base + c (k T + B k(k-1)/2)``.
    ``prefill_only``: a prefill pool (disaggregated serving): requests leave after their first token.
    ``max_prefills`` > 0: at most that many prompts per prefill iteration; ``prefill_tokens``: the token budget of
    one (unchunked) prefill iteration. ``reqs``: (arrival s, prompt tokens, output tokens), from
    :func:`draw_requests` or a recorded trace (:func:`trace_requests` checks one). ``max_requests``: the most
    requests taken (:data:`SIM_MAX_REQUESTS` for a reader's workload; a check that must reach steady state on
    long-lived requests may raise it up to :data:`SIM_MAX_REQUESTS_CHECK`). ``give_up_over`` > 0: stop as soon as
    more than that many measured requests are beyond ``ttft_slo_s``, or more than that many beyond ``tpot_slo_s``
    (counts that only grow: a search asking only whether a rate passes knows the answer there); the result then
    counts as not finished (``queue_growing``, attainment 0) and its percentiles are those of the requests done.
    """
    import heapq
    mb = _check.positive_int("max_batch", max_batch)
    ck = _check_chunk(chunk_tokens)
    if ck and mb > ck:  # vLLM's SchedulerConfig._verify_args: every running sequence takes a token of the budget
        raise ValueError(f"max_batch={max_batch!r} is not allowed with chunk_tokens={chunk_tokens!r}: a chunked "
                         "iteration decodes every running sequence inside its token budget, so the batch is at "
                         "most the budget (vLLM refuses max_num_batched_tokens below max_num_seqs)")
    mp = _check.non_negative("max_prefills", max_prefills)
    stop = _check.non_negative("give_up_over", give_up_over)
    if stop and not (ttft_slo_s or tpot_slo_s):
        raise ValueError(f"give_up_over={give_up_over!r} is not allowed without a target: give ttft_slo_s or "
                         "tpot_slo_s")
    budget = _check.positive_int("prefill_tokens", prefill_tokens)
    n = len(reqs)
    top = _check.positive_int("max_requests", max_requests)
    if top > SIM_MAX_REQUESTS_CHECK:
        raise ValueError(f"max_requests={max_requests!r} is not allowed: at most {SIM_MAX_REQUESTS_CHECK:,}")
    if not 0 < n <= top:
        raise ValueError(f"requests={n!r} is not allowed: from 1 to {top:,}")
    if not reqs[-1][0] > 0:  # the offered rate divides by the last arrival (trace_requests refuses this too)
        raise ValueError(f"arrival_s={reqs[-1][0]!r} for the last request is not allowed: arrivals must spread in "
                         "time (the last one after 0 s)")
    cap = sm.kv_capacity_tokens
    big = max(reqs, key=lambda q: q[1] + q[2])
    if math.ceil((big[1] + big[2]) * sm.kv_tokens_per_request_token) > cap:
        raise ValueError(f"a request of {big[1]:,} + {big[2]:,} tokens is not allowed: its KV cache needs more than "
                         f"the replica's {cap:,} tokens of room")
    c = sm.per_cached_token_s
    # the decode base at every batch the run can hold (by rows, its logits included), read per event; by rows also
    # the layers' work at every row count an iteration can carry (the budget, one more where the batch fills it)
    bt = [_base(sm, b) + _head(sm, b) for b in range(mb + 1)]
    rt = [_base(sm, b) for b in range(max(mb, int(ck)) + 2)] if sm.by_rows else []
    A = [q[0] for q in reqs]  # arrivals, prompts, outputs, KV reservations: read once
    P = [q[1] for q in reqs]
    O = [q[2] for q in reqs]
    need_of = [math.ceil((q[1] + q[2]) * sm.kv_tokens_per_request_token) for q in reqs]
    push, pop = heapq.heappush, heapq.heappop
    first = [0.0] * n
    done = [0.0] * n
    t = 0.0
    nxt = 0  # next arrival to enqueue
    waiting: list[int] = []  # FIFO of arrived requests not admitted
    wpos = 0
    prefilling: list[list[int]] = []  # [request, prompt tokens left] being chunk-prefilled
    pend = 0  # prompt tokens left over all of prefilling
    running: list[tuple[int, int]] = []  # heap of (decode iteration at which it finishes, request)
    it = 0  # decode iterations so far
    B = 0  # sequences decoding
    T = 0  # tokens in their caches
    reserved = 0  # KV tokens reserved by admitted requests
    events = 0
    busy_b = 0.0  # integral of B over decode time
    late_queue = 0
    busy_t = 0.0
    skip = int(n * SIM_WARMUP)
    seen_ttft = seen_tpot = 0  # measured requests beyond the targets so far (counted only to give up)

    def prefilled(rs: list[int]) -> None:
        """Requests whose prompt is done at ``t``: first token now, then decoding (or done: one token)."""
        nonlocal B, T, reserved
        nonlocal seen_ttft
        for r in rs:
            first[r] = t
            if stop and ttft_slo_s and r >= skip and t - A[r] > ttft_slo_s:
                seen_ttft += 1
            if prefill_only or O[r] <= 1:
                done[r] = t
                reserved -= need_of[r]
            else:
                push(running, (it + O[r] - 1, r))
                B += 1
                T += P[r] + 1

    while ((nxt < n or wpos < len(waiting) or prefilling or running) and events < SIM_MAX_EVENTS
           and not (stop and (seen_ttft > stop or seen_tpot > stop))):
        events += 1
        while nxt < n and A[nxt] <= t:
            waiting.append(nxt)
            nxt += 1
            if nxt == n:
                late_queue = len(waiting) - wpos + len(prefilling)  # waiting when the last request arrives
        if not running and not prefilling and wpos >= len(waiting):
            t = max(t, A[nxt])  # idle until the next arrival
            continue
        # admission (FIFO): a slot and KV room for prompt + output; without chunking a prefill iteration takes
        # whole prompts up to the token budget; with chunking only what this iteration's chunk reaches
        room = int(ck) - B if ck else budget
        room -= pend if ck else 0
        admitted: list[int] = []
        while (wpos < len(waiting) and B + len(prefilling) + len(admitted) < mb and (room > 0 or not admitted)
               and (not mp or len(admitted) < mp)):
            r = waiting[wpos]
            need = need_of[r]
            if reserved + need > cap or (admitted and room < (1 if ck else P[r])):
                break
            admitted.append(r)
            reserved += need
            room -= P[r]
            wpos += 1
        if not ck and admitted:
            toks = sum(P[r] for r in admitted)
            pairs = sum(P[r] * (P[r] + 1) / 2.0 for r in admitted)
            if sm.by_rows:
                t += _base(sm, toks) + _head(sm, len(admitted)) + pairs * sm.attention_per_pair_s
            else:
                work = toks * sm.prefill_per_token_s + pairs * sm.attention_per_pair_s
                t += _combined_s(sm.prefill_min_s, work, not sm.serial)
            prefilled(admitted)
            continue
        if ck and admitted:
            prefilling.extend([r, P[r]] for r in admitted)
            pend += sum(P[r] for r in admitted)
        if prefilling:
            # one mixed iteration: decode the batch, prefill up to the chunk budget (oldest first)
            room = max(1, int(ck) - B)
            toks, pairs, finished = 0, 0.0, []
            for entry in prefilling:
                if room <= 0:
                    break
                r, left = entry
                take = min(left, room)
                done_before = P[r] - left
                pairs += take * done_before + take * (take + 1) / 2.0
                entry[1] -= take
                pend -= take
                toks += take
                room -= take
                if entry[1] == 0:
                    finished.append(r)
            dec = bt[B] + c * T if B else 0.0
            comp = (toks + B) * sm.prefill_per_token_s + pairs * sm.attention_per_pair_s
            if sm.by_rows:  # B + toks rows through the layers, logits for the decode rows and the prompts done
                dt = rt[B + toks] + _head(sm, B + len(finished)) + c * T + pairs * sm.attention_per_pair_s
            elif sm.serial:  # the decode step holds the weight read and its B tokens' work; the chunk's tokens add
                dt = (dec + toks * sm.prefill_per_token_s + pairs * sm.attention_per_pair_s if B
                      else sm.prefill_min_s + comp)
            else:
                dt = max(dec, comp, sm.prefill_min_s if not B else 0.0)
            t += dt
            if B:
                busy_b += B * dt
                busy_t += dt
                it += 1
                T += B
            if finished:
                prefilling = prefilling[len(finished):]
                prefilled(finished)
            while running and running[0][0] <= it:
                _, r = pop(running)
                done[r] = t
                if stop and tpot_slo_s and r >= skip and (t - first[r]) / (O[r] - 1) > tpot_slo_s:
                    seen_tpot += 1
                B -= 1
                T -= P[r] + O[r]
                reserved -= need_of[r]
            continue
        # decode only: jump to the next finish or the first iteration boundary after the next arrival
        k = running[0][0] - it
        a = bt[B] + c * T
        if nxt < n:
            gap = A[nxt] - t
            # smallest k with k a + c B k (k - 1) / 2 >= gap
            if c * B > 0:
                qa, qb = c * B / 2.0, a - c * B / 2.0
                ka = math.ceil((-qb + math.sqrt(qb * qb + 4 * qa * max(0.0, gap))) / (2 * qa))
            else:
                ka = math.ceil(max(0.0, gap) / a)
            k = max(1, min(k, ka))
        dt = k * a + c * B * k * (k - 1) / 2.0
        t += dt
        busy_b += B * dt
        busy_t += dt
        it += k
        T += B * k
        while running and running[0][0] <= it:
            _, r = pop(running)
            done[r] = t
            if stop and tpot_slo_s and r >= skip and (t - first[r]) / (O[r] - 1) > tpot_slo_s:
                seen_tpot += 1
            B -= 1
            T -= P[r] + O[r]
            reserved -= need_of[r]
    finished_all = nxt >= n and wpos >= len(waiting) and not prefilling and not running
    gave_up = bool(stop) and (seen_ttft > stop or seen_tpot > stop)
    meas = [i for i in range(skip, n) if done[i] > 0]
    ttft = [first[i] - reqs[i][0] for i in meas]
    tpot = [(done[i] - first[i]) / (reqs[i][2] - 1) for i in meas if reqs[i][2] > 1]
    ok = [i for i in meas if (not ttft_slo_s or first[i] - reqs[i][0] <= ttft_slo_s)
          and (not tpot_slo_s or reqs[i][2] <= 1 or (done[i] - first[i]) / (reqs[i][2] - 1) <= tpot_slo_s)]
    # steady throughput: completions between the end of the warm-up arrivals and the last arrival
    t0, t1 = reqs[skip][0] if skip < n else 0.0, reqs[-1][0]
    inside = [i for i in range(n) if t0 < done[i] <= t1]
    span = t1 - t0
    completed = len(inside)
    out_tok = sum(reqs[i][2] for i in inside)
    attain = len(ok) / max(1, len(meas)) if finished_all else 0.0
    offered = n / reqs[-1][0]
    growing = not finished_all or late_queue > max(5, n // 20)
    bounds = (f"{n:,} requests (at most {SIM_MAX_REQUESTS:,}), {events:,} events (at most {SIM_MAX_EVENTS:,}"
              f"{', reached: the run was cut short' if not finished_all and not gave_up else ''})"
              f"{f'; given up: more than {stop:,} measured requests beyond a target' if gave_up else ''}; the first "
              f"{skip:,} arrivals left out of the percentiles; KV reserved for prompt + output, no preemption")
    return LoadResult(n, offered, completed / span if span > 0 else 0.0, out_tok / span if span > 0 else 0.0,
                      _percentile(ttft, 0.5), _percentile(ttft, 0.99), _percentile(tpot, 0.5),
                      _percentile(tpot, 0.99), sum(ttft) / max(1, len(ttft)), sum(tpot) / max(1, len(tpot)),
                      busy_b / busy_t if busy_t else 0.0, attain, offered * attain,
                      growing, events, bounds, len(meas),
                      sum(1 for i in range(skip, n) if first[i] > 0 and first[i] - A[i] > ttft_slo_s) if ttft_slo_s else 0,
                      sum(1 for x in tpot if x > tpot_slo_s) if tpot_slo_s else 0)


class Disaggregated(NamedTuple):
    """Prefill and decode on separate pools (DistServe, Zhong et al. 2024; Splitwise, Patel et al. 2024)."""

    prefill: LoadResult  # the prefill pool (one replica's share): its TTFT is the deployment's, less the transfer
    decode: LoadResult  # the decode pool (one replica's share): its TPOT is the deployment's
    transfer_s: float  # moving one request's KV cache from a prefill to a decode GPU (one NIC, alpha-beta)
    ttft_p50_s: float  # prefill pool's TTFT (the first token comes from the prefill GPU)
    ttft_p99_s: float
    tpot_p50_s: float  # decode pool's
    tpot_p99_s: float
    gpus: int  # (prefill replicas + decode replicas) x tp


def simulate_disaggregated(model: memory.ModelConfig, chip: str, workload: Workload, prefill_replicas: int,
                           decode_replicas: int, engine: str = "cuda-graph", tp: int = 1, max_batch: int = 256,
                           n_requests: int = PLAN_REQUESTS_DEFAULT) -> Disaggregated:
    """Disaggregated serving: ``prefill_replicas`` replicas only prefill (and give the first token),
    ``decode_replicas`` only decode; each request's cache crosses the network between them.

    Each pool is simulated as one replica at its share of the rate (random, even routing). The decode pool
    receives each request when its cache has arrived: the prefill pool's first-token time plus the transfer
    (``kv_cache_bytes(prompt)`` at one 400G NIC's achievable bandwidth, ``mlcalc.network``). A request's
    output time per token counts from its arrival in the decode pool.
    """
    import random
    pr = _check.positive_int("prefill_replicas", prefill_replicas)
    dr = _check.positive_int("decode_replicas", decode_replicas)
    sm = step_model(model, chip, engine, tp, 1, max_batch)
    reqs = draw_requests(workload, n_requests)
    rng = random.Random(int(workload.seed) + 1)
    mine_p = [r for r in reqs if rng.random() < 1.0 / pr] or reqs[:1]
    pre = simulate_replica(sm, mine_p, max_batch, prefill_only=True)
    from mlcalc import network, plan
    nic = network.system(plan.chip_info(chip)["system"]).nic.achievable_bytes_per_s
    kvb = memory.kv_cache_bytes(model, max(1, workload.input_mean)) / kv_split(model, tp)
    transfer = kvb / nic + network.nccl_base_latency_s()
    # the decode pool sees the requests shifted by their prefill and transfer (the mean of both)
    shift = pre.ttft_mean_s + transfer
    mine_d = [(a + shift, p_, o) for a, p_, o in reqs if rng.random() < 1.0 / dr] or [(reqs[0][0] + shift,) +
                                                                                        reqs[0][1:]]
    dec_sm = sm._replace(prefill_per_token_s=0.0, attention_per_pair_s=0.0, prefill_min_s=0.0)
    dec = simulate_replica(dec_sm, mine_d, max_batch)
    return Disaggregated(pre, dec, transfer, pre.ttft_p50_s, pre.ttft_p99_s, dec.tpot_p50_s, dec.tpot_p99_s,
                         (pr + dr) * tp)


# --------------------------------------------------------------------------- the serving plan


#: Replica layouts the planner tries, (tensor parallel, expert-parallel groups, nodes), fewest GPUs first.
#: Dense models: tensor parallel inside a node, then 16 GPUs over two nodes. Mixtures of experts also: data-
#: parallel attention with the experts spread over 2-8 GPUs, and 2-4 nodes of 8 (DeepSeek-V3's layout).
DENSE_LAYOUTS = ((1, 1, 1), (2, 1, 1), (4, 1, 1), (8, 1, 1), (16, 1, 2))
MOE_LAYOUTS = ((1, 2, 1), (1, 4, 1), (1, 8, 1), (8, 2, 2), (8, 4, 4))
PLAN_REQUESTS = 300  # requests per verifying simulation (SIM_MAX_REQUESTS at most)
PLAN_MAX_SIMS = 10  # simulations one layout may run while replicas are added (a quarter more, half when far
#                      from the target) or its batch cut (by a quarter, or half)
MAX_REPLICAS = 100_000  # more replicas than this: refused, not planned


class Serving(NamedTuple):
    """How to serve a model at a traffic level within latency targets (or why it cannot be done)."""

    chip: str  # catalogue key
    tp: int  # tensor-parallel GPUs per attention group
    batch: int  # most sequences one replica decodes together (the scheduler's max batch)
    kv_tokens_fit: int  # KV-cache tokens that fit beside the weights on one replica
    ttft_s: float  # time to first token at the asked percentile, simulated (queueing included; 0: impossible)
    tpot_s: float  # time per output token at the asked percentile, simulated (0: impossible)
    replica_requests_per_s: float  # requests/s one replica is given (the rate / replicas)
    replicas: int  # replicas for the traffic (0: impossible)
    gpus: int  # replicas x tp x ep (0: impossible)
    output_tokens_per_s: float  # whole deployment, at the asked traffic
    dollars_per_million_tokens: float  # all GPU-hours per million output tokens (0: impossible)
    bound: str  # the bottleneck: "compute", "memory bandwidth", "KV capacity", "network", "launch floor",
    #             "prefill and queueing (TTFT)"
    problems: tuple[str, ...]  # why a target cannot be met (empty when all are met)
    ep: int = 1  # expert-parallel groups per replica (1: none)
    nodes: int = 1  # nodes one replica spans
    engine: str = "cuda-graph"  # which engine the numbers describe (ENGINES)
    feasible: bool = True  # every target met
    dollars_per_million_input: float = 0.0  # GPU-hours spent on prefill per million prompt tokens
    dollars_per_million_output: float = 0.0  # GPU-hours spent on decode per million output tokens
    load: LoadResult | None = None  # the verifying simulation of one replica
    checked: str = ""  # where the model was checked, and whether this plan is inside it


def _closed_form(model: memory.ModelConfig, chip: str, lay: tuple[int, int, int], p: int, o: int, tpot_t: float,
                 engine: str, weight_dtype: str, kv_dtype: str, max_batch: int | None = None
                 ) -> tuple[StepModel, int, int, float, str] | str | float:
    """(step model, batch, KV-limited batch, requests/s per replica, bound), or why it does not work: a reason, or
    batch 1's step time when that alone misses the TPOT target."""
    tp, ep, nodes = lay
    cap = kv_capacity_tokens(model, chip, tp, ep, weight_dtype, kv_dtype)
    ratio = memory.kv_cache_bytes(model, p + o) / ((p + o) * memory.model_kv_bytes_per_token(model))
    per_req = math.ceil((p + o) * ratio)
    if cap < per_req:
        return (f"tp={tp}, ep={ep}: weights and one {p + o:,}-token request do not fit "
                f"{tp * ep} x {spec(chip).memory_gb:g} GB")
    b_kv = min(MAX_BATCH, cap // per_req)
    mean_ctx = p + max(1, o // 2)

    d1 = predict_decode(model, chip, 1, mean_ctx, engine, tp, ep, weight_dtype, kv_dtype, nodes)
    if d1.step_s > tpot_t:
        return d1.step_s  # batch 1 already misses the TPOT target
    top = b_kv if max_batch is None else min(b_kv, max_batch)
    sm = step_model(model, chip, engine, tp, ep, max(1, top), weight_dtype, kv_dtype, nodes, mean_ctx)

    def step_s(b: int) -> float:  # the simulation's own step (the fitted model), at the mean context
        return _base(sm, b) + sm.per_cached_token_s * b * mean_ctx

    lo, hi = 1, top
    while lo < hi:  # largest batch whose step meets the target (the step grows with the batch)
        mid = (lo + hi + 1) // 2
        if step_s(mid) <= tpot_t:
            lo = mid
        else:
            hi = mid - 1
    b = lo
    d = predict_decode(model, chip, b, mean_ctx, engine, tp, ep, weight_dtype, kv_dtype, nodes)
    prefill = p * sm.prefill_per_token_s + p * (p + 1) / 2.0 * sm.attention_per_pair_s
    per_replica = 1.0 / (prefill + o * step_s(b) / b)
    comm = comm_s(model, chip, b, tp, ep, nodes)
    if b == b_kv and b < MAX_BATCH and (max_batch is None or b < max_batch):
        bound = "KV capacity"
    elif comm > 0.3 * d.step_s:
        bound = "network"
    else:
        bound = {"memory": "memory bandwidth", "compute": "compute", "launch floor": "launch floor"}[d.bound]
    return sm, b, b_kv, per_replica, bound



def plan_serving(model: memory.ModelConfig, chip: str, requests_per_s: float, prompt_tokens: int,
                 output_tokens: int, ttft_target_s: float, tpot_target_s: float, price_per_gpu_hour: float,
                 engine: str = "cuda-graph", weight_dtype: str = "bf16", kv_dtype: str = "bf16",
                 input_cv: float = 0.0, output_cv: float = 0.0, chunk_tokens: int = 0, percentile: float = 0.99,
                 n_requests: int = PLAN_REQUESTS, seed: int = 0, max_batch: int | None = None) -> Serving:
    """Fewest GPUs that serve ``requests_per_s`` with TTFT and TPOT within their targets at ``percentile``.

    For each replica layout (:data:`DENSE_LAYOUTS`, and :data:`MOE_LAYOUTS` for a mixture of experts) the
    closed form comes first: the weights and one request must fit; the largest batch whose decode step
    (at the mean context, :func:`predict_decode`) meets the TPOT target; each request costs its prefill plus
    ``output`` steps shared by the batch, so a replica sustains ``1 / (prefill + output x step / batch)``
    requests/s and the rate needs that many replicas. Then a seeded simulation of one replica at its share of
    the traffic (:func:`simulate_replica`, Poisson arrivals, continuous batching) checks the targets at the
    percentile; replicas are added where TTFT or the queue fails, the batch is cut where TPOT's tail fails (a
    quarter each time, half when under 90% of requests meet the targets; at most :data:`PLAN_MAX_SIMS`
    simulations) until the share of requests within both targets reaches ``percentile``. The fewest GPUs wins (then the cheaper
    per token). Impossible targets (a batch of 1 too slow, one prompt's prefill over the TTFT target, weights
    that fit no layout) come back with ``feasible`` False, no GPUs (times and dollars 0), and the reason. Dollars: all GPU-hours at
    ``price_per_gpu_hour``, split between input and output tokens by the replica time prefill and decode take.
    """
    rps = _check.positive("requests per second", requests_per_s)
    p = _check.positive_int("prompt tokens", prompt_tokens)
    o = _check.positive_int("output tokens", output_tokens)
    ttft_t = _check.positive("TTFT target (s)", ttft_target_s)
    tpot_t = _check.positive("TPOT target (s)", tpot_target_s)
    price = _check.non_negative("price per GPU-hour", price_per_gpu_hour)
    _check.choice("engine", engine, ENGINES)
    q = _check.fraction("percentile", percentile)
    from mlcalc import serving_record  # the "checked" sentence; kept out of the snapshot's `import mlcalc`
    if _check_chunk(chunk_tokens, "chunked prefill (tokens)"):  # with chunked prefill the batch is at most the token budget (simulate_replica)
        max_batch = min(max_batch or MAX_BATCH, int(chunk_tokens))
    spec(chip)
    layouts = DENSE_LAYOUTS + (MOE_LAYOUTS if model.is_moe else ())
    problems: list[str] = []
    fastest = (math.inf, 0, 0)  # the fastest batch-1 step of a layout that misses the TPOT target
    # (GPUs, layout, step model, batch, requests/s per replica, bound, replicas) of each layout that serves
    cands: list[tuple[int, tuple[int, int, int], StepModel, int, float, str, int]] = []
    for lay in layouts:
        tp, ep, nodes = lay
        if (model.n_heads % tp) or (model.is_moe and ep > 1 and model.n_experts % (tp * ep)):
            continue
        if cands and min(c[0] for c in cands) <= tp * ep:
            continue  # one replica of this layout already has as many GPUs as a plan found
        try:
            cf = _closed_form(model, chip, lay, p, o, tpot_t, engine, weight_dtype, kv_dtype, max_batch)
        except ValueError as e:  # a layout the chip's system cannot form (e.g. 16 GPUs of an 8-GPU node)
            problems.append(f"tp={tp}, ep={ep}: {e}")
            continue
        if isinstance(cf, str):
            problems.append(cf)
            continue
        if isinstance(cf, float):  # batch 1's step, over the TPOT target
            fastest = min(fastest, (cf, tp, ep))
            continue
        sm, b, b_kv, per_rep, bound = cf
        alone = max(sm.prefill_min_s, p * sm.prefill_per_token_s + p * (p + 1) / 2.0 * sm.attention_per_pair_s)
        if alone > ttft_t:
            problems.append(f"TTFT: the prefill of one {p:,}-token prompt alone takes {alone * 1e3:,.0f} ms on "
                            f"tp={tp}, ep={ep}, over the {ttft_t * 1e3:,.0f} ms target")
            continue
        replicas = math.ceil(rps / per_rep)
        if replicas > MAX_REPLICAS:
            problems.append(f"tp={tp}, ep={ep}: {replicas:,} replicas, over the {MAX_REPLICAS:,} the planner allows")
            continue
        cands.append((replicas * tp * ep, lay, sm, b, per_rep, bound, replicas))
    if fastest[1]:
        problems.insert(0, f"TPOT: even the fastest layout (tp={fastest[1]}, ep={fastest[2]}) takes "
                           f"{fastest[0] * 1e3:,.1f} ms per token at batch 1, over the {tpot_t * 1e3:,.1f} ms target")
    if not cands:
        problems.sort(key=lambda t: 0 if t.startswith(("TPOT", "TTFT")) else 1)
        why = "; ".join(dict.fromkeys(problems)) or "no layout fits"
        return Serving(chip, 0, 0, 0, 0.0, 0.0, 0.0, 0, 0, rps * o, 0.0, "impossible",
                       tuple(dict.fromkeys(problems)) or (why,), engine=engine, feasible=False,
                       checked=f"impossible on {chip} with {engine}: {why}")
    cands.sort(key=lambda c: (c[0], c[1]))
    best: Serving | None = None
    n_req = min(_check.positive_int("n_requests", n_requests), SIM_MAX_REQUESTS)
    for gpus, lay, sm, b, per_rep, bound, replicas in cands[:3]:  # verify the three cheapest by simulation
        if best is not None and gpus >= best.gpus:
            break
        tp, ep, nodes = lay
        res: LoadResult | None = None
        why_more = ""
        mean_ctx = p + max(1, o // 2)
        b0 = b
        for _ in range(PLAN_MAX_SIMS):
            w = Workload(rps / replicas, p, o, input_cv, output_cv, seed)
            res = simulate_replica(sm, draw_requests(w, n_req), b, chunk_tokens, ttft_t, tpot_t)
            if res.slo_attainment >= q and not res.queue_growing:
                break
            ttft_q = res.ttft_p99_s if q >= 0.99 else res.ttft_p50_s
            tpot_q = res.tpot_p99_s if q >= 0.99 else res.tpot_p50_s
            far = res.slo_attainment < 0.9 or res.queue_growing  # far from the target: bigger moves
            if ttft_q > ttft_t or res.queue_growing:
                why_more = "prefill and queueing (TTFT)" if ttft_q > ttft_t else why_more or bound
                replicas = replicas + max(1, math.ceil(replicas / (2 if far else 4)))
            elif tpot_q > tpot_t and b > 1:
                # prefill stalls and longer contexts stretch the tail: a smaller batch per replica, more replicas
                b = max(1, b // 2 if far else (3 * b) // 4)
                pre_req = p * sm.prefill_per_token_s + p * (p + 1) / 2.0 * sm.attention_per_pair_s
                step_b = _base(sm, b) + sm.per_cached_token_s * b * mean_ctx
                per_rep = 1.0 / (pre_req + o * step_b / b)
                replicas = max(replicas, math.ceil(rps / per_rep))
            else:
                replicas = replicas + max(1, math.ceil(replicas / (2 if far else 4)))
        assert res is not None
        met = res.slo_attainment >= q and not res.queue_growing
        if b < b0 and not why_more:  # the batch was cut for TPOT's tail: the decode step is the bottleneck
            d = predict_decode(model, chip, b, mean_ctx, engine, tp, ep, weight_dtype, kv_dtype, nodes)
            comm = comm_s(model, chip, b, tp, ep, nodes)
            why_more = "network" if comm > 0.3 * d.step_s else {"memory": "memory bandwidth", "compute": "compute",
                                                                 "launch floor": "launch floor"}[d.bound]
        gpus = replicas * tp * ep
        cost_s = gpus * price / 3600.0
        pre = p * sm.prefill_per_token_s + p * (p + 1) / 2.0 * sm.attention_per_pair_s
        dec = max(0.0, 1.0 / per_rep - pre)
        share = pre / (pre + dec) if pre + dec > 0 else 0.0
        ttft_at = res.ttft_p99_s if q >= 0.99 else res.ttft_p50_s
        tpot_at = res.tpot_p99_s if q >= 0.99 else res.tpot_p50_s
        probs = () if met else (f"not reached: after {PLAN_MAX_SIMS} simulations ({replicas:,} replicas, batch up to "
                                f"{b:,}) {res.slo_attainment:.1%} of requests meet both targets, short of "
                                f"{q:.0%}: more replicas may still get there",)
        cand = Serving(chip, tp, b, sm.kv_capacity_tokens, ttft_at, tpot_at, rps / replicas, replicas, gpus, rps * o,
                       cost_s / (rps * o) * 1e6, why_more or bound, probs, ep, nodes * 1, engine, met,
                       cost_s * share / (rps * p) * 1e6, cost_s * (1 - share) / (rps * o) * 1e6, res,
                       serving_record.checked_range(model, chip, engine, b, p + o, tp * ep, ep))
        if best is None or (cand.feasible and not best.feasible) or (cand.feasible == best.feasible
                                                                     and cand.gpus < best.gpus):
            best = cand
    assert best is not None
    return best


def serving_offers(on_demand_only: bool = True) -> tuple[str, ...]:
    """Names of the priced rent offers of mlcalc/data/plan.json (each with its date) a serving plan can use:
    rented by the hour, not subsidised; ``on_demand_only``: without a commitment term."""
    from mlcalc import plan
    return tuple(n for n, o in plan.offers().items() if o.way == "rent" and o.price_per_gpu_hour > 0
                 and not o.subsidised and (o.term_years == 0 or not on_demand_only))


def plan_serving_offers(model: memory.ModelConfig, offer_names: tuple[str, ...], requests_per_s: float,
                        prompt_tokens: int, output_tokens: int, ttft_target_s: float, tpot_target_s: float,
                        **kwargs: Any) -> list[tuple[str, Serving]]:
    """:func:`plan_serving` on each offer's chip at its dated price; feasible plans first, cheapest per output
    token first (the answer to "which chip"). At most 8 offers."""
    from mlcalc import plan
    names = tuple(offer_names)
    if not 0 < len(names) <= 8:
        raise ValueError(f"offer_names={names!r} is not allowed: from 1 to 8 offers")
    offers = plan.offers()
    out = []
    for n in names:
        _check.choice("offer", n, offers)
        o = offers[n]
        out.append((n, plan_serving(model, o.chip, requests_per_s, prompt_tokens, output_tokens, ttft_target_s,
                                    tpot_target_s, o.price_per_gpu_hour, **kwargs)))
    out.sort(key=lambda t: (not t[1].feasible, t[1].gpus == 0, t[1].dollars_per_million_output, t[1].gpus))
    return out


__all__ = [
    "DECODE_RECORD", "DECODE_METERED", "DECODE_ROUNDS", "DECODE_RUNS",
    "SERIAL_MATMUL_DTYPES", "ATTENTION_DTYPES", "matmul_s", "matmul_activation_bytes_per_token", "expert_activation_bytes_per_token", "CACHE_LAYOUTS", "COPY_CALIBRATION",
    "DECODE_RUN", "DEFAULT_BATCHED_TOKENS", "DENSE_LAYOUTS", "DecodeStep", "Disaggregated", "ENGINES", "Floor",
    "LoadResult", "MAX_BATCH", "MAX_REPLICAS", "MOE_LAYOUTS", "PLAN_MAX_SIMS", "PLAN_REQUESTS",
    "PLAN_REQUESTS_DEFAULT", "SIM_MAX_EVENTS", "SIM_MAX_OUTPUT", "SIM_MAX_PROMPT", "SIM_MAX_REQUESTS", "SIM_MAX_REQUESTS_CHECK", "SIM_WARMUP",
    "Serving", "StepModel", "TENSOR_PARALLEL", "Workload", "arch_family", "attention_extra_bytes",
    "attention_flops_per_token", "attention_time_s", "comm_s", "gemm_allreduce_comm_s", "FUSED_ALLREDUCE_PRODUCTS", "decode_step", "draw_requests", "engine_floor",
    "interpolate", "engine_small_kernels_s", "hf_small_kernels_s", "replicated_norm_bytes_per_token",
    "RESIDUAL_NORM_BYTES_PER_VALUE", "kv_capacity_tokens", "kv_split", "matmul_rate", "measured_copy_bandwidth",
    "measured_decode", "measured_floor", "measured_read_bandwidth", "null_kernel_s", "ops_per_layer", "plan_serving",
    "plan_serving_offers", "predict_decode", "predict_prefill", "prefill_s", "read_bandwidth", "read_fraction",
    "sequence_kv_bytes", "serving_offers", "simulate_disaggregated", "simulate_replica", "step_model",
    "tp_allreduce_s", "trace_requests", "MatmulLaw", "matmul_law_from", "KERNEL_RUN", "kernel_probes",
    "measured_matmul_law", "chip_matmul_law", "sustained_matmul_rate", "gemm_law_s", "layers_gemm_law_s", "FP8_QUANT_BYTES_PER_VALUE", "SWIGLU_BYTES_PER_VALUE", "layer_elementwise_bytes_per_token", "engine_elementwise_bytes_per_token", "decode_kernels", "kernel_weight_s", "SDPA_WAYS", "sdpa_prefill_s",
    "masked_decode_attention_law", "weight_params_per_gpu", "read_params_per_gpu", "kv_bytes_per_token_per_gpu", "attention_dp_comm_s", "ADP_ROUTE_BYTES_PER_EXPERT",
]


# The serving model's checked record (the measured decode runs' checks, scores and causes, the published benchmarks'
# checks, the planner's "checked" sentence) lives in mlcalc.serving_record, out of the site's memory snapshot (see
# that module): its names are still served from here, imported the first time one is asked for.
_RECORD_NAMES = frozenset((
    "DECODE_PROTOCOL", "llama_shape", "DecodeCheck", "check_decode", "PacedWindow", "decode_point_window",
    "floor_probe_windows", "floor_work", "paced_floor", "check_decode_paced", "FIRST_POINT_RUN", "first_point_ratio",
    "decode_miss_cause", "CROSSOVER_BAND", "decode_layer_parts", "DecodeScore", "decode_scores", "PacedDecodeScore",
    "decode_paced_scores", "ProbePace", "host_probe_pace_slope", "BenchCheck", "check_benchmarks", "ENGINE_FAMILIES",
    "CheckedPath", "checked_paths", "CHECKED_SIZE_MARGIN", "checked_range",
))


def __getattr__(name: str) -> Any:
    if name in _RECORD_NAMES:
        from mlcalc import serving_record

        return getattr(serving_record, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# Object parameters (a ModelConfig, a Fabric, a list of offers...) are checked by type before each call.
_check.guard(globals())
