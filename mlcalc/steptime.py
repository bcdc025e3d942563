"""Time of one training step of any :class:`mlcalc.models.ModelConfig`, without a guessed MFU.

Two routes, side by side:

* **textbook**: ``6 N T`` FLOP (``N`` active parameters, ``T`` tokens) over a FLOP/s figure; it needs an
  MFU, and :func:`implied_mfu` says which MFU a measured step time means;
* **kernel by kernel** (:func:`step_time`): every matrix product at its own shape over the rate a
  machine reaches at that shape, causal flash attention by its FLOPs at the rate measured for its head
  width and length, the element-wise kernels (norms, casts, rotary embeddings, activations, residual
  adds, the loss over the logits) and the AdamW step by the bytes they move over the measured memory
  bandwidth; and the host: an eager PyTorch program dispatches its operations one by one, so each
  operation takes the longer of dispatching it and running it (big matmuls hide the host, small
  element-wise kernels leave the device waiting for the next launch).

The program modelled is Hugging Face ``transformers`` trained the way ``Trainer`` does by default: fp32
weights, bf16 ``torch.autocast``, SDPA (flash) attention, fused AdamW; the byte and operation counts
below are counted for that program (transformers 5.x, PyTorch 2.11) and named where they are defined.

Base units: FLOP, FLOP/s, bytes, bytes/s, seconds.
"""

from __future__ import annotations

import bisect
import math
import statistics
from types import MappingProxyType
from dataclasses import dataclass, fields
from functools import lru_cache
from typing import Any, Callable, Iterable, Mapping, NamedTuple, Sequence

from mlcalc import _check
from mlcalc.models import ModelConfig

MAX_TOKENS = 10**9  # batch x seq_len above this is refused (nothing real trains a step of a billion tokens)


class Gemm(NamedTuple):
    """One matrix product of a training step: (m x k) @ (k x n), run ``count`` times."""

    m: int  # rows of the output
    n: int  # columns of the output
    k: int  # inner dimension
    count: int  # type: ignore[assignment]  # how many times per step (the name hides tuple.count, as NamedTuple allows)
    label: str  # what it is, e.g. "attention q (fwd)"
    phase: str  # "forward" or "backward" (a recomputed forward counts in backward)
    dtype: str = "bf16"  # "bf16" (autocast) or "fp32" (products autocast does not cover)

    @property
    def flop(self) -> float:
        """FLOP of all ``count`` products: 2 m n k each."""
        return 2.0 * self.m * self.n * self.k * self.count


class Machine(NamedTuple):
    """What the step-time model needs to know about a machine (measured or assumed)."""

    name: str  # e.g. "H200, measured 2026-11-26"
    matmul_flops_per_s: Callable[[int, int, int], float]  # bf16 rate of an (m, n, k) product
    attention_flops_per_s: Callable[[int, int], float]  # causal flash fwd+bwd rate at (head_dim, seq_len)
    memory_bytes_per_s: float  # element-wise kernels: bytes read + written per second
    host_s_per_op: float = 0.0  # host time to dispatch one forward op (autograd + autocast on); 0: ignore
    host_s_per_backward_op: float = 0.0  # host time per op the backward pass runs; 0: ignore
    fp32_matmul_flops_per_s: float = 0.0  # rate of fp32 products (0: the bf16 rate / 14.8, H100's ratio)
    host_s_per_checkpoint: float = 0.0  # host time torch.utils.checkpoint adds per checkpointed layer and pass
    key: str = ""  # catalogue key of the chip (mlcalc/data/accelerators.json), "" if unknown
    device_bytes: float = 0.0  # memory capacity a fit may use (0: unknown)
    peak_flops_per_s: float = 0.0  # dense bf16 peak, the MFU denominator (0: unknown)
    fp8_matmul_speedup: float = 0.0  # fp8 / bf16 matmul rate as published for the chip (0: no fp8)
    # eager multi-GPU programs (from host floors, :func:`dist_host_constants`; 0: not measured, ignored):
    host_s_per_dtensor_op: float = 0.0  # host time a forward op on DTensors takes beyond a plain op
    host_s_per_dtensor_backward_op: float = 0.0  # the same for a backward op
    host_s_per_fsdp_layer: float = 0.0  # host time FSDP2 adds per layer to a forward pass (hooks, gathers, copies)
    host_s_per_fsdp_backward_layer: float = 0.0  # ... and to a backward pass (gathers, reduce-scatters)
    # FSDP2 over tensor-parallel (DTensor) parameters on a 2-D mesh, per layer and pass, in place of the two above
    # (:func:`fsdp_dtensor_host_constants`; 0: not measured, the plain FSDP2 cost is used):
    host_s_per_fsdp_dtensor_layer: float = 0.0
    host_s_per_fsdp_dtensor_backward_layer: float = 0.0


def flat_machine(name: str, matmul_flops_per_s: float, memory_bytes_per_s: float,
                 attention_flops_per_s: float | None = None, host_s_per_op: float = 0.0,
                 host_s_per_backward_op: float = 0.0, fp32_matmul_flops_per_s: float = 0.0) -> Machine:
    """A machine with one matmul rate for every shape (e.g. a datasheet peak or a published MAMF)."""
    mm = _check.positive("matmul_flops_per_s", matmul_flops_per_s)
    bw = _check.positive("memory_bytes_per_s", memory_bytes_per_s)
    at = _check.positive("attention_flops_per_s", attention_flops_per_s) if attention_flops_per_s else mm
    return Machine(name, lambda m, n, k: mm, lambda d, s: at, bw,
                   _check.non_negative("host_s_per_op", host_s_per_op),
                   _check.non_negative("host_s_per_backward_op", host_s_per_backward_op),
                   _check.non_negative("fp32_matmul_flops_per_s", fp32_matmul_flops_per_s))


def _nearest(rows: Sequence[tuple[tuple[float, ...], float]], key: tuple[float, ...]) -> float:
    best = min(rows, key=lambda r: sum(math.log(a / b) ** 2 for a, b in zip(r[0], key)))
    return best[1]


_LOOKUP_CACHE = 4096  # shapes remembered per machine (the cache is emptied when full: bounded memory)


def _nearest_lookup(rows: Sequence[tuple[tuple[float, ...], float]]) -> Callable[..., float]:
    """:func:`_nearest` over fixed rows as a function of the key, remembering recent keys.

    Same answer as :func:`_nearest`, found faster (:func:`_nearest_pruned`) where every row and key is made of
    positive finite numbers of one length."""
    rows = list(rows)
    memo: dict[tuple[float, ...], float] = {}
    logs = _log_rows(rows)

    def look(*key: float) -> float:
        if key not in memo:
            if len(memo) >= _LOOKUP_CACHE:
                memo.clear()
            memo[key] = _nearest_pruned(rows, logs, key) if logs is not None else _nearest(rows, key)
        return memo[key]
    return look


# _nearest_pruned: the row _nearest picks, without the log distance of every row. Each row's coordinates are kept as
# logs, grouped by the first coordinate; the distance is estimated as sum((log a - log b)^2) and a group is skipped
# when its first coordinate alone puts it beyond the best estimate found plus _NEAREST_SLACK. Why the same row:
# log(a/b) and log a - log b differ by rounding only, at most 4 ulps of (|log a| + |log b| + |log(a/b)| + 1) <= 2,131
# (every log of a finite float is below 710 in size), so each coordinate's difference errs by less than 1e-12 and
# its square by less than 1e-12 x 2 x 1,420 + rounding; over at most 4 coordinates the estimate is within
# delta < 1e-7 of _nearest's distance (log ratios of finite floats are below 1,420; squares below 2.1e6: the
# rounding of each square and sum is below 2.1e6 x 8 ulps ~ 4e-9). With slack 1e-6 > 2 delta, a row skipped, or
# kept but with an estimate beyond best + slack, is farther than the nearest row in _nearest's own arithmetic; the
# rows kept are compared with _nearest's exact expression, in their original order (min keeps the first of equals):
# the same row as _nearest. Tested against _nearest on random keys (tests/core/test_steptime_speed.py).
_NEAREST_SLACK = 1e-6


def _log_rows(rows: Sequence[tuple[tuple[float, ...], float]]) -> list[tuple[float, list[tuple[int, tuple[float, ...]]]]] | None:
    """Rows grouped by the log of their first coordinate: [(log first, [(row index, logs of the rest)])], or None
    where a row is not made of positive finite numbers of one length (then :func:`_nearest` is used)."""
    if not rows:
        return None
    width = len(rows[0][0])
    groups: dict[float, list[tuple[int, tuple[float, ...]]]] = {}
    for i, (shape, _) in enumerate(rows):
        if len(shape) != width or not all(type(a) is float and 0 < a < math.inf for a in shape):
            return None
        logs = tuple(math.log(a) for a in shape)
        groups.setdefault(logs[0], []).append((i, logs[1:]))
    if width < 2:
        return list(groups.items())
    # each group's rows in the order of their second coordinate (a key's neighbours there are found by bisection)
    return [(g0, sorted(members, key=lambda m: m[1][0])) for g0, members in groups.items()]


def _nearest_pruned(rows: Sequence[tuple[tuple[float, ...], float]],
                    groups: list[tuple[float, list[tuple[int, tuple[float, ...]]]]], key: tuple[float, ...]) -> float:
    """:func:`_nearest`'s answer (see the proof above); keys it does not cover go to :func:`_nearest` itself."""
    width = len(rows[0][0])
    if len(key) != width or not all(type(a) in (float, int) and 0 < a < math.inf for a in key):
        return _nearest(rows, key)
    lk = [math.log(a) for a in key]
    k0, rest = lk[0], lk[1:]
    order = sorted(groups, key=lambda g: (g[0] - k0) ** 2)
    best = math.inf
    near: list[tuple[float, int]] = []  # (estimate, row index) of rows that may be the nearest
    for g0, members in order:
        d0 = (g0 - k0) ** 2
        if d0 > best + _NEAREST_SLACK:
            break
        if not rest:  # one coordinate: every row of the group
            for i, _ in members:
                if d0 <= best + _NEAREST_SLACK:
                    near.append((d0, i))
                    if d0 < best:
                        best = d0
            continue
        # The group's rows are in the order of their second coordinate: outwards from the key's place there, on each
        # side the square (a1 - k1)^2 only grows, so a side ends at its first row whose d0 + that square (the first
        # part of its estimate, which the rest only adds to) is beyond best + slack: that row and every later one of
        # that side would be neither kept nor the best (best only falls). The same rows kept as a pass over all.
        k1 = rest[0]
        j = bisect.bisect_left(members, k1, key=lambda m: m[1][0])
        for x, stop, step in ((j, len(members), 1), (j - 1, -1, -1)):
            while x != stop:
                i, logs = members[x]
                d = d0 + (logs[0] - k1) ** 2
                if d > best + _NEAREST_SLACK:
                    break
                for a, b in zip(logs[1:], rest[1:]):
                    d += (a - b) ** 2
                if d <= best + _NEAREST_SLACK:
                    near.append((d, i))
                    if d < best:
                        best = d
                x += step
    kept = sorted(i for d, i in near if d <= best + _NEAREST_SLACK)
    return _nearest([rows[i] for i in kept], key)


def machine_from_rates(data: Mapping[str, Any], name: str = "", memory_bytes_per_s: float | None = None,
                       fp32_matmul_flops_per_s: float = 0.0,
                       host: tuple[float, float, float] | None = None, sustained_fraction: float = 1.0) -> Machine:
    """A :class:`Machine` from the output of ``scripts/gpu/machine_rates.py`` (parsed JSON).

    Matmul and attention rates are looked up at the nearest measured shape (log distance); the
    memory bandwidth is the best element-wise rate measured (bytes read + written), unless given;
    fp32 products (not measured there) run at ``fp32_matmul_flops_per_s`` (e.g. the datasheet's
    fp32 peak; 0: the bf16 rate / 14.8). ``host`` = (s per forward op, s per backward op, s per
    checkpointed layer), e.g. from :func:`host_constants_from_floors`; without it the file's
    micro-benchmark of one op is used and checkpointing costs nothing extra on the host.
    ``sustained_fraction`` scales the matmul and attention rates, timed in short bursts, to what the
    card keeps up under continuous load (its sustained / burst matmul rate, e.g. from mlcalc.measured).
    """
    try:
        mm = [((float(r["m"]), float(r["n"]), float(r["k"])), float(r["tflops"]) * 1e12)
              for r in data["matmul"]]
        at = [((float(r["head_dim"]), float(r["seq_len"])), float(r["fwd_bwd_tflops"]) * 1e12)
              for r in data["attention"] if r["kv_heads"] == r["heads"]]
        ew = max(float(r["bytes_per_s"]) for r in data["elementwise"])
        disp = data["dispatch"]
        host_f, host_b = float(disp["fwd_s_per_op"]), float(disp["bwd_s_per_node"])
    except (KeyError, TypeError) as err:
        raise ValueError(f"data={type(data).__name__} is not allowed: not a machine_rates result ({err})") from None
    if not mm or not at:
        raise ValueError("data is not allowed: it has no matmul or no attention rates")
    keep = _check.fraction("sustained_fraction", sustained_fraction)
    mm = [(shape, r * keep) for shape, r in mm]
    at = [(shape, r * keep) for shape, r in at]
    bw = _check.positive("memory_bytes_per_s", memory_bytes_per_s) if memory_bytes_per_s else ew
    ckpt = 0.0
    if host is not None:
        host_f, host_b, ckpt = (_check.non_negative(n, v) for n, v in zip(
            ("host[0] (s per forward op)", "host[1] (s per backward op)", "host[2] (s per checkpoint)"), host))
    env = data.get("environment", {})
    date = str(env.get("date_utc", ""))[:10]
    label = name or f"{env.get('device_name', 'GPU')}, measured {date}"
    key, cap, peak, f8 = _card_facts(str(env.get("device_name", "")))
    return Machine(label, _nearest_lookup(mm), _nearest_lookup(at),
                   bw, host_f, host_b, _check.non_negative("fp32_matmul_flops_per_s", fp32_matmul_flops_per_s), ckpt,
                   key, cap, peak, f8)


def _card_facts(device_name: str) -> tuple[str, float, float, float]:
    """(catalogue key, capacity bytes, dense bf16 peak, fp8 speed-up) of a measured card, or blanks."""
    from mlcalc import compute, measured
    from mlcalc.accelerators import catalogue

    try:
        key = measured.accelerator_key(device_name)
    except ValueError:
        return "", 0.0, 0.0, 0.0
    if key not in catalogue():
        return "", 0.0, 0.0, 0.0
    acc = catalogue()[key]
    f8 = 0.0
    if compute.has_flops(key, "fp8", "achievable") and compute.has_flops(key, "bf16", "achievable"):
        f8 = compute.achievable_flops(key, "fp8", "achievable") / compute.achievable_flops(key, "bf16", "achievable")
    return key, acc.memory_bytes, acc.peak_flops("bf16") if acc.has("bf16") else 0.0, f8


def _tokens(batch: int, seq_len: int) -> tuple[int, int, int]:
    b = _check.positive_int("batch", batch)
    s = _check.positive_int("seq_len", seq_len)
    if b * s > MAX_TOKENS:
        raise ValueError(f"batch={b} x seq_len={s} is not allowed: at most {MAX_TOKENS} tokens per step")
    return b, s, b * s


# ---------------------------------------------------------------------------------------------
# FLOPs: every matrix product and attention
# ---------------------------------------------------------------------------------------------


# Megatron's tensor-parallel split (Shoeybi et al. 2019): column-parallel products split their output
# width n over the tp ranks, row-parallel ones their inner dimension k; the rest stay whole on every rank.
_COLUMN_PARALLEL = ("attention q", "attention k", "attention v", "attention qkv", "mla q up", "mla kv up", "mlp in",
                    "shared expert in", "expert in")
_ROW_PARALLEL = ("attention out", "mlp out", "shared expert out", "expert out")


# The largest parallel degree (tp, pp, ep, cp) a helper accepts: past the GPU count of any published run.
MAX_DEGREE = 2**20


def _degree(name: str, value: Any) -> int:
    return _check.positive_int(name, value, MAX_DEGREE)


def _stage_layers(model: ModelConfig, layers: Any) -> int:
    """The layers one GPU holds (a pipeline stage): default all, else 1..n_layers."""
    return model.n_layers if layers is None else _check.bounded_int("layers", layers, 1, model.n_layers)


def _split(n: int, ways: int) -> int:
    return max(1, -(-n // ways))  # ceil: a rank with a partial share pays for a whole one


def layer_products(model: ModelConfig, tokens: int, moe_layer: bool, tp: int = 1,
                   ep: int = 1, fused_qkv: bool = False) -> list[tuple[int, int, int, int, str]]:
    """Forward products of one layer on one GPU as (m, n, k, count, label), with HF's separate Q, K, V.

    Routed experts are labelled "expert ...": tokens spread evenly, ``tokens x top-k / experts`` rows each.
    ``tp`` splits each product as Megatron does (column- or row-parallel, :data:`_COLUMN_PARALLEL`);
    ``ep`` places ``experts / ep`` experts on each GPU, which then sees the routed tokens of ``ep`` GPUs;
    ``fused_qkv``: one product for Q, K and V together (GPT-2's ``c_attn``, the book's GPT program).
    """
    tokens = _check.positive_int("tokens", tokens, MAX_TOKENS)
    tp, ep = _degree("tp", tp), _degree("ep", ep)
    out = _layer_products(model, tokens, moe_layer, ep)
    if fused_qkv and model.attention != "mla":
        qkv = [r for r in out if r[4] in ("attention q", "attention k", "attention v")]
        out = [(tokens, sum(r[1] for r in qkv), model.hidden, 1, "attention qkv")] + \
            [r for r in out if r[4] not in ("attention q", "attention k", "attention v")]
    if tp == 1:
        return out
    res = []
    for mm, n, k, c, label in out:
        if label in _COLUMN_PARALLEL:
            n = _split(n, tp)
        elif label in _ROW_PARALLEL:
            k = _split(k, tp)
        res.append((mm, n, k, c, label))
    return res


def engine_products(model: ModelConfig, tokens: int, tp: int = 1) -> tuple[tuple[int, int, int, int, int, str], ...]:
    """Forward products of an inference iteration of ``tokens`` tokens on one GPU of ``tp``, as serving engines run
    them, as (layers, m, n, k, count, label): each layer kind's products (:func:`layer_products`, Q, K and V fused)
    with the layers of that kind, and the gate and up projections joined into one product twice as wide where the
    feed-forward block is gated. Routed experts keep their per-expert rows and count ("expert ..." labels)."""
    out: list[tuple[int, int, int, int, int, str]] = []
    for layers, moe in ((model.n_layers - model.n_moe_layers, False), (model.n_moe_layers, True)):
        if not layers:
            continue
        for m, n, k, count, label in layer_products(model, tokens, moe, tp, 1, fused_qkv=True):
            if label.endswith(" in") and model.gated_mlp:
                n, count = 2 * n, count // 2  # gate and up in one product
            out.append((layers, m, n, k, count, label))
    return tuple(out)


def _layer_products(model: ModelConfig, tokens: int, moe_layer: bool, ep: int) -> list[tuple[int, int, int, int, str]]:
    m, h, T = model, model.hidden, tokens
    out: list[tuple[int, int, int, int, str]] = []
    if m.attention == "mla":
        qd = m.n_heads * m.qk_head_dim
        if m.q_lora_rank:
            out += [(T, m.q_lora_rank, h, 1, "mla q down"), (T, qd, m.q_lora_rank, 1, "mla q up")]
        else:
            out.append((T, qd, h, 1, "attention q"))
        out += [(T, m.kv_lora_rank + m.qk_rope_head_dim, h, 1, "mla kv down"),
                (T, m.n_heads * (m.head_dim + m.v_dim), m.kv_lora_rank, 1, "mla kv up")]
    else:
        kv = m.n_kv_heads * m.head_dim
        out += [(T, m.q_width, h, 1, "attention q"), (T, kv, h, 1, "attention k"),
                (T, m.n_kv_heads * m.v_dim, h, 1, "attention v")]
    out.append((T, h, m.attn_out_width, 1, "attention out"))
    ins = 2 if m.gated_mlp else 1
    if moe_layer:
        f = m.expert_ffn
        rows = max(1, round(T * ep * m.experts_per_token / m.n_experts))  # tokens per expert, balanced routing
        here = _split(m.n_experts, ep)
        out.append((T, m.n_experts, h, 1, "router"))
        out += [(rows, f, h, ins * here, "expert in"), (rows, h, f, here, "expert out")]
        if m.n_shared_experts:
            out += [(T, f, h, ins * m.n_shared_experts, "shared expert in"),
                    (T, h, f, m.n_shared_experts, "shared expert out")]
    else:
        f = m.ffn_hidden
        out += [(T, f, h, ins, "mlp in"), (T, h, f, 1, "mlp out")]
    return out


# Hugging Face transformers 5.x runs routed experts as grouped products (torch._grouped_mm) on the
# experts' own weights; torch.autocast does not cover that op, so with fp32 weights they run in fp32
# (seen in this book's runs: a 2-layer Mixtral-shaped model took 232 ms a step, not ~55 ms).
HF_EXPERTS_IN_FP32 = True


def step_gemms(model: ModelConfig, batch: int, seq_len: int, recompute: bool = False,
               experts_in_fp32: bool = HF_EXPERTS_IN_FP32, tp: int = 1, ep: int = 1, cp: int = 1,
               layers: int | None = None, logits: bool = True, fused_qkv: bool = False) -> tuple[Gemm, ...]:
    """Every matrix product of one training step on one GPU: forward, backward (input and weight
    gradients), and with full recomputation each layer's forward again (counted in the backward phase).

    ``tp``/``ep``: the GPU's share (:func:`layer_products`); ``cp``: the sequence split over ``cp`` GPUs;
    ``layers``: the layers this GPU holds (a pipeline stage; default all), dense layers first and MoE
    layers after in the model's proportion; ``logits``: whether it holds the output layer (the last stage).
    """
    _, _, T = _tokens(batch, seq_len)
    T = _split(T, _degree("cp", cp))
    L = _stage_layers(model, layers)
    n_moe = round(model.n_moe_layers * L / model.n_layers)
    kinds = [(L - n_moe, False), (n_moe, True)]
    out: list[Gemm] = []
    for n_layers, moe in kinds:
        if not n_layers:
            continue
        for mm, n, k, c, label in layer_products(model, T, moe, tp, ep, fused_qkv):
            dt = "fp32" if experts_in_fp32 and label.startswith("expert") else "bf16"
            out.append(Gemm(mm, n, k, c * n_layers, f"{label} (fwd)", "forward", dt))
            if recompute:
                out.append(Gemm(mm, n, k, c * n_layers, f"{label} (recomputed fwd)", "backward", dt))
            out.append(Gemm(mm, k, n, c * n_layers, f"{label} (input grad)", "backward", dt))
            out.append(Gemm(n, k, mm, c * n_layers, f"{label} (weight grad)", "backward", dt))
    if logits:
        v, h = _split(model.vocab, tp), model.hidden
        out += [Gemm(T, v, h, 1, "logits (fwd)", "forward"), Gemm(T, h, v, 1, "logits (input grad)", "backward"),
                Gemm(v, h, T, 1, "logits (weight grad)", "backward")]
    return tuple(out)


def attention_flop(model: ModelConfig, batch: int, seq_len: int, recompute: bool = False) -> Mapping[str, float]:
    """FLOP of causal attention (scores and weighted values) in one step, by phase.

    Forward: ``b s^2 H (d_qk + d_v)`` per layer (half of the full ``2 b s^2 H (d_qk + d_v)``: the
    causal mask skips the upper triangle); backward 2.5 times the forward (five products instead of
    two, Dao 2023); recomputation runs the forward again in the backward phase.
    """
    b, s, _ = _tokens(batch, seq_len)
    fwd = float(b) * s * s * model.n_heads * (model.qk_head_dim + model.v_dim) * model.n_layers
    return MappingProxyType({"forward": fwd, "backward": 2.5 * fwd + (fwd if recompute else 0.0)})


class UnfusedAttention(NamedTuple):
    """One micro-batch's unfused attention on one GPU (:func:`unfused_attention`)."""

    flop: Mapping[str, float]  # by phase (forward, backward: the recomputed forward included)
    products: tuple[tuple[tuple[int, int, int], float], ...]  # ((m, n, k) of a batched product, its FLOP), all phases
    score_bytes: Mapping[str, float]  # bytes of the s x s scores through memory, by phase


SCORE_PASSES_FORWARD = 4  # baddbmm writes the scores, the fused softmax reads them and writes the probabilities,
#                           bmm with V reads them (Megatron-LM ParallelAttention, 2021: no attention dropout counted)
SCORE_PASSES_BACKWARD = 7  # bmm's backward writes the probabilities' gradient and reads the probabilities (for V's
#                            gradient); the softmax backward reads the gradient and the probabilities and writes the
#                            scores' gradient; baddbmm's backward reads it twice (for Q's and K's gradients)


def unfused_attention(model: ModelConfig, batch: int, seq_len: int, *, tp: int = 1, layers: int | None = None,
                      recomputed: bool = False) -> UnfusedAttention:
    """Attention as Megatron-LM's 2021 code ran it (ParallelAttention: torch.baddbmm for Q K^T over the whole
    s x s square, a fused scale-mask-softmax, torch.bmm with V), per micro-batch on one tensor-parallel rank.

    FLOP: forward ``2 b s^2 H (d_qk + d_v)`` a layer (both products over the full square: no causal skip; Narayanan
    et al. 2021 eq. 3's ``s / 6h`` term), backward twice the forward (four products), plus the forward again where
    the attention is ``recomputed`` (full or selective recomputation). Each batched product of ``B = b H / t`` heads
    is priced as one product of ``B s`` rows (the same tiles). The 2-byte scores go through memory
    :data:`SCORE_PASSES_FORWARD` times forward, :data:`SCORE_PASSES_BACKWARD` backward, and the forward's passes again
    where recomputed.
    """
    b, s, _ = _tokens(batch, seq_len)
    tp = _degree("tp", tp)
    L = _stage_layers(model, layers)
    heads = _split(model.n_heads, tp)
    rows, dq, dv = b * heads * s, model.qk_head_dim, model.v_dim
    qk, pv = 2.0 * b * heads * s * s * dq, 2.0 * b * heads * s * s * dv
    fwd = ((rows, s, dq), qk), ((rows, dv, s), pv)  # Q K^T, P V
    bwd = ((rows, s, dv), pv), ((rows, dv, s), pv), ((rows, dq, s), qk), ((rows, dq, s), qk)  # dP, dV, dQ, dK
    products = tuple((shape, f * L) for shape, f in fwd + bwd + (fwd if recomputed else ()))
    f_fwd = (qk + pv) * L
    elems = 2.0 * b * heads * s * s * L  # bytes of one pass over the scores
    return UnfusedAttention(
        MappingProxyType({"forward": f_fwd, "backward": 2 * f_fwd + (f_fwd if recomputed else 0.0)}), products,
        MappingProxyType({"forward": SCORE_PASSES_FORWARD * elems,
                          "backward": (SCORE_PASSES_BACKWARD + (SCORE_PASSES_FORWARD if recomputed else 0)) * elems}))


# ---------------------------------------------------------------------------------------------
# Bytes the element-wise kernels move (Hugging Face eager program, fp32 residual, bf16 autocast)
# ---------------------------------------------------------------------------------------------

# Forward bytes read + written per element, counted from the transformers 5.x modelling code:
RMSNORM_FP32_IN = 28.0  # pow (4+4), mean (4), x*rsqrt (4+4), weight * (4+4): input already fp32
RMSNORM_BF16_IN = 40.0  # the same after .float() of a bf16 input (2+4), then .to(bf16) (4+2)
LAYERNORM = 8.0  # one fused kernel: read 4, write 4
CAST_TO_BF16 = 6.0  # autocast's fp32 -> bf16 copy of an activation (read 4, write 2)
ROPE = 30.0  # q*cos (2+4), rotate_half (neg, cat: 2+2+2+2), *sin (4+4), add (8+4), per bf16 element
# A query/key norm of the Llama family (Qwen 3: transformers' Qwen3RMSNorm.forward, ``self.weight *
# hidden_states.to(input_dtype)``) multiplies its bf16 result by the fp32 weight: type promotion makes its output
# fp32, so the rotary embedding after it reads fp32 queries and keys. Gemma's norm (``(x * (1 + w)).type_as(x)``)
# casts back to bf16. Counted on the real modules (scripts/gpu/count_train_bytes.py, transformers 5.17):
QK_NORM_FP32_OUT = 38.0  # .float() (2+4), pow (4+4), mean (4), x*rsqrt (4+4), .to(bf16) (4+2), weight * (2+4)
ROPE_FP32_IN = 40.0  # q*cos (4+4), rotate_half (neg 4+4 and cat 4+4 over half and all), *sin (4+4), add (4+4+4)
# Their backward moves more than twice that forward (the rule every other kind follows, BACKWARD_OVER_FORWARD): per
# query/key element, the norm and the fp32 excess of the rotary embedding after it move 48.2 bytes forward and 120.3
# backward (mul 58.2, add 24.0, pow 8.1, sum 8.0, div 8.0, casts 6.0, slice_backward 6.0, neg 2.0), 2.5 times:
# counted on the real modules (scripts/gpu/count_qk_norm_bytes.py: Qwen3 0.6B less the same widths without its q/k
# norms, transformers 5.17, torch 2.13, CPU, bf16 autocast, T = 128; tests/core/test_qk_norm_bytes.py).
QK_NORM_FP32_BACKWARD = 120.3
RESIDUAL_ADD = 10.0  # fp32 stream + bf16 branch -> fp32 (4+2+4)
GATED_ACT = 10.0  # act(gate) (2+2) and act * up (4+2), per inner element
# GPT-2's "gelu_new" as 9 PyTorch ops (HF NewGELUActivation); autocast runs pow, so the tanh branch, in fp32:
GELU_PYTHON = 76.0
GELU_FUSED = 4.0  # one F.gelu kernel (2+2)
DROPOUT = 5.0  # read 2, write 2 and a 1-byte mask, per element
BACKWARD_OVER_FORWARD = 2.0  # backward kernels read inputs and output gradients and write input gradients
LOSS_BYTES_PER_LOGIT = 40.0  # .float() (2+4), log_softmax (4+4+4), its grad zeros + backward (4+4+4+4), to bf16 (4+2)
WEIGHT_CAST_BYTES = 6.0  # autocast's bf16 copy of each matrix weight per forward (read 4, write 2)
GRAD_CAST_BYTES = 6.0  # bf16 weight gradient cast to the fp32 .grad (read 2, write 4)
ADAMW_BYTES_PER_PARAM = 28.0  # fused AdamW: read weight, grad, 2 moments (16), write weight, 2 moments (12)


def elementwise_bytes_per_token_layer(model: ModelConfig, moe: bool | None = None) -> Mapping[str, float]:
    """Forward element-wise bytes one layer moves per token, by kind (see the constants above). ``moe``: which
    layer of a mixture of experts (None: the model's kind; False: one of its dense ``first_dense_layers``)."""
    m, h = model, model.hidden
    moe = _layer_kind(m, moe)
    norm_pre = LAYERNORM if m.norm == "layernorm" else RMSNORM_FP32_IN
    norm_post = LAYERNORM if m.norm == "layernorm" else RMSNORM_BF16_IN
    kv = (m.n_heads if m.attention == "mla" else m.n_kv_heads) * m.qk_head_dim
    fused_qkv = m.learned_positions > 0  # GPT-2 layout: one fused QKV projection
    reads_of_norm1 = 1 if (fused_qkv or m.attention == "mla") else 3
    f = m.expert_ffn * m.experts_per_token + m.expert_ffn * m.n_shared_experts if moe else m.ffn_hidden
    reads_of_norm2 = 1 if not m.gated_mlp else 2
    parts = {
        "norms": 2 * norm_pre * h + (m.norms_per_layer - 2) * norm_post * h,
        "casts of norm outputs to bf16": CAST_TO_BF16 * h * (reads_of_norm1 + reads_of_norm2),
        "residual adds": 2 * RESIDUAL_ADD * h,
    }
    fp32_heads = m.qk_norm and m.norms_per_layer != 4  # a Llama-family q/k norm's fp32 output (Gemma's: bf16)
    if not m.learned_positions:
        rot = m.n_heads * (m.qk_rope_head_dim or m.head_dim) + kv
        parts["rotary embeddings and casts"] = ((ROPE_FP32_IN if fp32_heads else ROPE) + CAST_TO_BF16) * rot
    if m.qk_norm:
        parts["query/key norms"] = (QK_NORM_FP32_OUT if fp32_heads else RMSNORM_BF16_IN) * (m.q_width + kv)
    if m.gated_mlp:
        parts["activation"] = GATED_ACT * f
    else:
        parts["activation"] = (GELU_PYTHON if m.learned_positions else GELU_FUSED) * f
    if moe:
        parts["routing (gather, weight, scatter of expert inputs and outputs)"] = 3 * 4.0 * h * m.experts_per_token
    if m.dropout > 0:
        parts["dropout"] = DROPOUT * 2 * h
    return MappingProxyType(parts)


# Megatron-LM / NeMo (the "megatron" engine): bf16 weights and activations, fused kernels. Forward bytes
# read + written per element of one layer (Korthikanti et al. 2022's fused kernels; TransformerEngine):
FUSED_NORM = 4.0  # fused LayerNorm / RMSNorm: read 2, write 2
FUSED_BIAS_DROPOUT_ADD = 6.0  # residual + branch (+ bias, dropout) in one kernel: read 2 + 2, write 2
FUSED_ROPE = 4.0  # fused rotary embedding of q and k: read 2, write 2
FUSED_GATED_ACT = 6.0  # fused SwiGLU: read gate and up (2 + 2), write 2, per inner element
FUSED_GELU = 4.0  # fused bias-GeLU: read 2, write 2
FUSED_LOSS_BYTES_PER_LOGIT = 16.0  # vocab-parallel cross-entropy in fp32: cast (2+4), max and sum-exp (4), gradient (4+2)
FUSED_PERMUTE = 8.0  # MoE token permute and unpermute, forward: read 2 + write 2, twice, per routed element
# Megatron's distributed optimizer on its shard: read the fp32 gradient, master weight and two moments
# (16), write master and moments (12) and the bf16 weight (2). Gradients accumulate in fp32 inside the
# weight-gradient product (gradient_accumulation_fusion): no separate cast kernel.
MEGATRON_ADAM_BYTES_PER_PARAM = 30.0

ENGINES = ("eager", "megatron")

# Kinds of per-layer element-wise work that stay whole on every tensor-parallel rank unless sequence
# parallelism splits them (Korthikanti et al. 2022, 4.2.2); the rest is split by tp.
_SEQUENCE_PARALLEL_KINDS = ("norms", "casts of norm outputs to bf16", "residual adds", "dropout")


def fused_bytes_per_token_layer(model: ModelConfig, moe: bool | None = None) -> Mapping[str, float]:
    """Forward element-wise bytes one layer moves per token in the "megatron" engine (fused kernels); ``moe`` as
    :func:`elementwise_bytes_per_token_layer`'s."""
    m, h = model, model.hidden
    moe = _layer_kind(m, moe)
    kv = (m.n_heads if m.attention == "mla" else m.n_kv_heads) * m.qk_head_dim
    f = m.expert_ffn * m.experts_per_token + m.expert_ffn * m.n_shared_experts if moe else m.ffn_hidden
    parts = {"norms": FUSED_NORM * h * m.norms_per_layer, "residual adds": 2 * FUSED_BIAS_DROPOUT_ADD * h}
    if not m.learned_positions:
        parts["rotary embeddings and casts"] = FUSED_ROPE * (m.n_heads * (m.qk_rope_head_dim or m.head_dim) + kv)
    if m.qk_norm:
        parts["query/key norms"] = FUSED_NORM * (m.q_width + kv)
    parts["activation"] = (FUSED_GATED_ACT if m.gated_mlp else FUSED_GELU) * f
    if moe:
        parts["routing (gather, weight, scatter of expert inputs and outputs)"] = FUSED_PERMUTE * h * m.experts_per_token
    if m.dropout > 0:
        parts["dropout"] = 2.0 * h  # the 1-byte masks of the two fused bias-dropout-adds, written and read
    return MappingProxyType(parts)


def qk_norm_backward_extra_per_token_layer(model: ModelConfig) -> float:
    """Backward element-wise bytes per token of one layer of the eager program beyond twice its forward bytes: a
    Llama-family query/key norm with its fp32 output and the fp32 rotary embedding after it
    (:data:`QK_NORM_FP32_BACKWARD` against twice their forward bytes); 0 for every other architecture."""
    m = model
    if not (m.qk_norm and m.norms_per_layer != 4) or m.learned_positions:
        return 0.0
    kv = (m.n_heads if m.attention == "mla" else m.n_kv_heads) * m.qk_head_dim
    forward = QK_NORM_FP32_OUT + ROPE_FP32_IN - ROPE  # the norm, and the rotary's fp32 input beyond a bf16 one
    return (QK_NORM_FP32_BACKWARD - BACKWARD_OVER_FORWARD * forward) * (m.q_width + kv)


# Measured RMSNorms (scripts/gpu/norm_rates.py, session 36, torch 2.11, transformers 5.17): transformers' own
# modules (LlamaRMSNorm of an fp32 input, Qwen3RMSNorm and Gemma3RMSNorm of a bf16 input) under bf16 autocast, each
# forward and autograd backward captured as a CUDA graph (device time only), by row width (64 to 8192) and elements
# (2^20 to 2^26), with the element-wise baseline (a*b, as scripts/gpu/machine_rates.py times it) in the same call.
# Rows narrower than 512 run slower per element, the backward most (its two reductions over each row): on the H100,
# at 2^24 elements, 1.17x the time per element of the fastest width at 128 wide and 1.08x at 256 (Qwen3RMSNorm; the
# H200 1.20x and 1.09x), 1.00-1.03x from 1024 to 8192 wide. The engine prices that loss (:func:`norm_slowdown`) on
# its counted bytes. Not priced: the backward of these modules moves 96 to 112 bytes per element (LlamaRMSNorm 96.3,
# Qwen3RMSNorm 112.3, Gemma3RMSNorm of bf16 108.3; forward 28.2, 38.2, 40.2; scripts/gpu/count_norm_bytes.py), 2.7
# to 3.4 times its forward where the engine charges BACKWARD_OVER_FORWARD, and the whole norm runs at 0.8 (forward)
# and 0.5 (backward, twice-forward bytes) of the a*b rate at any width: charging that on every norm moves Llama 3.2
# 1B and Mistral 7B steps up to 5 points (already over) and Gemma 3 1B up to 20 points (to +12%): other counts
# hold the difference, unresolved. A measured row is read as bandwidth-equivalent bytes per element (seconds x
# the same call's best a*b rate / elements).
NORM_RATE_RUNS = MappingProxyType({"H100-SXM": "h100-2026-11-27-norm13", "H200-SXM": "h200-2026-11-27-norm13"})
NORM_RATE_DEFAULT_CARD = "H100-SXM"  # a card not measured takes the H100's bytes (its times over its own a*b rate)
NORM_KINDS = ("llama_fp32_in", "qwen3_bf16_in", "gemma3_bf16_in", "gemma3_fp32_in")
NORM_PLATEAU_LOG2_WIDTH = 10  # rows of 1024 to 8192 elements: one rate within 3% (the median of them is the plateau)


@lru_cache(maxsize=None)
def _norm_table(card: str) -> Mapping[str, tuple[tuple[float, ...], ...]]:
    """kind -> ((log2 width, log2 elements, forward bytes, backward bytes, forward slowdown, backward slowdown), ...)
    of ``card``'s measured norms; a slowdown is the bytes over the plateau's (the median of the widths from 1024 up at
    the same elements), at least 1."""
    import json
    from importlib import resources

    run = NORM_RATE_RUNS.get(card, NORM_RATE_RUNS[NORM_RATE_DEFAULT_CARD])
    folder = resources.files("mlcalc.data").joinpath("measured").joinpath(run)
    data = json.loads(folder.joinpath("norm_rates.json").read_text())
    base = max(float(r["bytes_per_s"]) for r in data["baseline_before"] + data.get("baseline_after", [])
               if r["op"] == "a*b")
    # (a row count is elements // width: the grid is the nominal 2^k elements, the bytes per element the actual)
    out = {}
    for k, rows in data["norms"].items():
        pts = [(math.log2(r["width"]), float(round(math.log2(r["elements"]))),
                r["forward_s"] * base / r["elements"], r["backward_s"] * base / r["elements"]) for r in rows]
        wide = {n: [p for p in pts if p[1] == n and p[0] >= NORM_PLATEAU_LOG2_WIDTH] for _, n, _, _ in pts}
        ref = {n: (statistics.median(p[2] for p in ps), statistics.median(p[3] for p in ps)) for n, ps in wide.items()}
        out[k] = tuple((w, n, f, b, max(1.0, f / ref[n][0]), max(1.0, b / ref[n][1])) for w, n, f, b in pts)
    return MappingProxyType(out)


def norm_bytes(card: str, kind: str, width: int, elements: float) -> tuple[float, float]:
    """(forward, backward) bandwidth-equivalent bytes per element of one RMSNorm of rows ``width`` wide over
    ``elements`` elements in all, as measured on ``card`` (a catalogue key; a card not in :data:`NORM_RATE_RUNS`
    takes the H100's): the measured seconds times that call's a*b rate over the elements, interpolated in log width
    and log elements between the measured points and held at the ends (64 to 8192 wide, 2^20 to 2^26 elements)."""
    return _norm_lookup(card, kind, width, elements, 2)


def norm_slowdown(card: str, kind: str, width: int, elements: float) -> tuple[float, float]:
    """(forward, backward) time per element of one RMSNorm of rows ``width`` wide over that of the wide rows (the
    median of the measured widths from 1024 to 8192 at the same elements; at least 1), on ``card`` (as
    :func:`norm_bytes`): the rate a narrow row loses."""
    return _norm_lookup(card, kind, width, elements, 4)


def _norm_lookup(card: str, kind: str, width: int, elements: float, col: int) -> tuple[float, float]:
    _check.choice("kind", kind, NORM_KINDS)
    w = math.log2(_check.positive_int("width", width))
    n = math.log2(_check.positive("elements", elements))
    rows = _norm_table(str(card))[kind]
    ws = sorted({r[0] for r in rows})
    ns = sorted({r[1] for r in rows})
    pts = {(r[0], r[1]): (r[col], r[col + 1]) for r in rows}

    def bracket(grid: list[float], x: float) -> tuple[float, float, float]:
        x = min(max(x, grid[0]), grid[-1])
        i = min(bisect.bisect_right(grid, x), len(grid) - 1)
        lo, hi = grid[i - 1], grid[i]
        return lo, hi, (x - lo) / (hi - lo)

    w0, w1, fw = bracket(ws, w)
    n0, n1, fn = bracket(ns, n)
    return tuple(  # type: ignore[return-value]
        (1 - fw) * (1 - fn) * pts[w0, n0][j] + fw * (1 - fn) * pts[w1, n0][j]
        + (1 - fw) * fn * pts[w0, n1][j] + fw * fn * pts[w1, n1][j] for j in (0, 1))


def _measured_norms(model: ModelConfig, tokens: float, tp: int, sequence_parallel: bool,
                    card: str) -> tuple[float, float, float, float]:
    """An eager RMSNorm model's norms with the rate their row width loses on ``card`` (:func:`norm_slowdown`), per
    token and layer: (forward bytes of the layer norms, of the q/k norms, backward bytes beyond twice those of the
    layer norms, of the q/k norms): the counted bytes (and the twice-forward backward, and the q/k norm's counted
    backward excess, :func:`qk_norm_backward_extra_per_token_layer`) times the slowdown at the norm's width and
    elements. Only the loss to narrow rows is priced: the counted bytes stay what a norm of the fastest width moves
    (its measured backward, 2.7 to 3.4 times its counted forward bytes, is not: see NORM_RATE_RUNS)."""
    m, h = model, model.hidden
    gemma = m.norms_per_layer == 4
    rows_h = tokens * h / (tp if sequence_parallel else 1)
    pre = norm_slowdown(card, "gemma3_fp32_in" if gemma else "llama_fp32_in", h, rows_h)
    post = norm_slowdown(card, "gemma3_bf16_in", h, rows_h)
    n_post = m.norms_per_layer - 2
    f_norms = 2 * RMSNORM_FP32_IN * h * pre[0] + n_post * RMSNORM_BF16_IN * h * post[0]
    b_norms = BACKWARD_OVER_FORWARD * (2 * RMSNORM_FP32_IN * h * pre[1] + n_post * RMSNORM_BF16_IN * h * post[1])
    f_qk = b_qk = 0.0
    if m.qk_norm:
        kv = (m.n_heads if m.attention == "mla" else m.n_kv_heads) * m.qk_head_dim
        fp32_heads = not gemma
        per = QK_NORM_FP32_OUT if fp32_heads else RMSNORM_BF16_IN
        kind = "qwen3_bf16_in" if fp32_heads else "gemma3_bf16_in"
        d = m.qk_head_dim
        q, k = norm_slowdown(card, kind, d, tokens * m.q_width / tp), norm_slowdown(card, kind, d, tokens * kv / tp)
        f_qk = per * (q[0] * m.q_width + k[0] * kv)
        extra = qk_norm_backward_extra_per_token_layer(m) / (m.q_width + kv)
        b_qk = (BACKWARD_OVER_FORWARD * per + extra) * (q[1] * m.q_width + k[1] * kv)
    return f_norms, f_qk, b_norms - BACKWARD_OVER_FORWARD * f_norms, b_qk - BACKWARD_OVER_FORWARD * f_qk


def _layer_kind(model: ModelConfig, moe: bool | None) -> bool:
    """Whether a layer of ``model`` is a mixture of experts (``moe`` None: the model's kind)."""
    _check.choice("moe", moe, (None, True, False))
    if moe and not model.is_moe:
        raise ValueError(f"moe={moe!r} is not allowed: {model.name} has no experts")
    return model.is_moe if moe is None else moe


def _matrix_params_here(model: ModelConfig, tp: int, ep: int, layers: int) -> float:
    """Weight-matrix parameters of ``layers`` layers on one GPU (experts split over ep, all over tp)."""
    experts = model.n_moe_layers * model.n_experts * model.mlp_params_per_expert()
    dense = model.n_matrix_params() - experts
    return (dense + experts / ep) / tp * layers / model.n_layers


def params_per_gpu(model: ModelConfig, tp: int = 1, pp: int = 1, ep: int = 1) -> float:
    """Parameters one GPU holds before ZeRO sharding: the model over tp x pp, routed experts also over ep."""
    tp, pp, ep = _degree("tp", tp), _degree("pp", pp), _degree("ep", ep)
    return _params_here(model, tp, pp, ep)


def _params_here(model: ModelConfig, tp: int, pp: int, ep: int) -> float:
    """:func:`params_per_gpu` of checked degrees (a validated Layout's), remembered where the model can be a key."""
    try:
        return _params_per_gpu_of(model, tp, pp, ep)
    except TypeError:  # a model that cannot be a key
        return _params_per_gpu_of.__wrapped__(model, tp, pp, ep)


@lru_cache(maxsize=4096)  # bounded: 4,096 (model, tp, pp, ep) kept (a layout search asks twice per layout)
def _params_per_gpu_of(model: ModelConfig, tp: int, pp: int, ep: int) -> float:
    experts = model.n_moe_layers * model.n_experts * model.mlp_params_per_expert()
    return (model.n_params() - experts + experts / ep) / (tp * pp)


def elementwise_bytes(model: ModelConfig, batch: int, seq_len: int, recompute: bool = False, *, tp: int = 1,
                      cp: int = 1, ep: int = 1, sequence_parallel: bool = False, layers: int | None = None,
                      logits: bool = True, engine: str = "eager", optimizer_shard: float = 1.0,
                      pp: int = 1, card: str | None = None) -> Mapping[str, float]:
    """Bytes the memory-bound kernels of one step (one micro-batch) move on one GPU, by phase and kind.

    ``engine="eager"``: the Hugging Face program (fp32 weights, autocast; the constants above);
    ``"megatron"``: bf16 weights and fused kernels (:func:`fused_bytes_per_token_layer`). The layout
    arguments are those of :func:`step_gemms`; ``optimizer_shard`` is the share of this GPU's
    parameters its optimizer steps (1 / (dp cp) with ZeRO). ``card`` (a catalogue key, "" for a card not
    known): the eager program's RMSNorms as measured on that card (:func:`norm_bytes`, bandwidth-equivalent bytes
    by row width) in place of their counted bytes and the twice-forward backward; None: counted bytes.
    """
    _check.choice("engine", engine, ENGINES)
    _, _, T = _tokens(batch, seq_len)
    T = _split(T, _degree("cp", cp))
    tp = _degree("tp", tp)
    L = _stage_layers(model, layers)
    optimizer_shard = _check.fraction("optimizer_shard", optimizer_shard)
    per_tok_of = elementwise_bytes_per_token_layer if engine == "eager" else fused_bytes_per_token_layer

    measured = (_measured_norms(model, T, tp, sequence_parallel, card)
                if card is not None and engine == "eager" and model.norm != "layernorm" else None)

    def layer_bytes(moe: bool | None) -> float:
        parts = dict(per_tok_of(model, moe))
        if measured is not None:
            parts["norms"] = measured[0]
            if model.qk_norm:
                parts["query/key norms"] = measured[1]
        split = {k: (v if (k in _SEQUENCE_PARALLEL_KINDS and not sequence_parallel) else v / tp)
                 for k, v in parts.items()}
        return sum(split.values()) * T

    if model.is_moe and model.first_dense_layers:  # dense layers first, MoE after in the model's proportion
        n_moe = round(model.n_moe_layers * L / model.n_layers)  # (as step_gemms counts a stage's products)
        layer_fwd = layer_bytes(False) * (L - n_moe) + layer_bytes(True) * n_moe
    else:
        layer_fwd = layer_bytes(None) * L
    vh = model.vocab * model.hidden / tp
    embed = 3 * 8.0 * T * model.hidden / (tp if sequence_parallel else 1)  # gather, final norm, embedding grad
    opt_bytes = _optimizer_bytes(model, engine, tp, pp, ep, optimizer_shard)
    if engine == "megatron":
        return MappingProxyType({
            "forward: layers": layer_fwd,
            "forward: embedding and final norm": embed / 3 * 2,
            "backward: layers": BACKWARD_OVER_FORWARD * layer_fwd + (layer_fwd if recompute else 0.0),
            "backward: embedding and final norm": embed / 3,
            "loss: logits (fp32 copy, log-softmax, its gradient)": FUSED_LOSS_BYTES_PER_LOGIT * T * vh / model.hidden
            if logits else 0.0,
            "optimizer: fused AdamW": opt_bytes,
        })
    mats = _matrix_params_here(model, tp, ep, L)
    if measured is None:
        qk_back = qk_norm_backward_extra_per_token_layer(model) * T * L / tp  # heads split by tp
    else:  # the measured norms' backward beyond twice their forward (layer norms split by tp only with sequence par.)
        qk_back = (measured[2] / (tp if sequence_parallel else 1) + measured[3] / tp) * T * L
    out_layer = vh * (0 if model.tied_embeddings else 1) if logits else 0.0
    return MappingProxyType({
        "forward: layers": layer_fwd,
        "forward: weight casts to bf16": WEIGHT_CAST_BYTES * (mats + (vh if logits else 0.0)),
        "forward: embedding and final norm": embed / 3 * 2,
        "backward: layers": BACKWARD_OVER_FORWARD * layer_fwd + qk_back + (layer_fwd if recompute else 0.0),
        "backward: recomputed weight casts": WEIGHT_CAST_BYTES * mats if recompute else 0.0,
        "backward: gradient casts to fp32": GRAD_CAST_BYTES * (mats + out_layer),
        "backward: embedding and final norm": embed / 3,
        "loss: logits (fp32 copy, log-softmax, its gradient)": LOSS_BYTES_PER_LOGIT * T * vh / model.hidden
        if logits else 0.0,
        "optimizer: fused AdamW": opt_bytes,
    })


def _optimizer_bytes(model: ModelConfig, engine: str, tp: int, pp: int, ep: int, optimizer_shard: float) -> float:
    """Bytes the optimizer step moves on one GPU (its ``optimizer_shard`` of the parameters it holds): the
    "optimizer: fused AdamW" of :func:`elementwise_bytes`."""
    return _adam_bytes(engine, params_per_gpu(model, tp, pp, ep) * optimizer_shard)


def _adam_bytes(engine: str, params_opt: float) -> float:
    """Bytes the optimizer moves stepping ``params_opt`` parameters (:func:`_optimizer_bytes`' rule)."""
    return (MEGATRON_ADAM_BYTES_PER_PARAM if engine == "megatron" else ADAMW_BYTES_PER_PARAM) * params_opt


# ---------------------------------------------------------------------------------------------
# Host: operations an eager step dispatches
# ---------------------------------------------------------------------------------------------

# ATen operations dispatched per layer and outside the layers, forward and backward, counted with a
# TorchDispatchMode on transformers 5.24 / PyTorch 2.13 (CPU): a Llama layer runs 87 forward and 158
# backward; Q/K biases add 3 and 12; Q/K norms add 18 and 38; each norm beyond two adds 12 and 20;
# a GPT-2 layer (fused LayerNorm, fused QKV) runs 89 and 111; a Mixtral MoE layer (grouped
# products) 106 and 180. Full recomputation runs each layer's forward ops again inside the backward.
_OPS_LLAMA_LAYER = (87, 158)
_OPS_OUTSIDE = (48, 37)
_OPS_GPT2_LAYER = (89, 111)
_OPS_GPT2_OUTSIDE = (42, 27)
_OPS_MOE_EXTRA = (106 - 87, 180 - 158)
_OPS_QKV_BIAS = (3, 12)
_OPS_QK_NORM = (18, 38)
_OPS_EXTRA_NORM = (12, 20)


def op_counts(model: ModelConfig, recompute: bool = False) -> Mapping[str, float]:
    """Operations the host dispatches in one step, forward and backward (see the counts above)."""
    m = model
    if m.learned_positions:
        layer, outside = _OPS_GPT2_LAYER, _OPS_GPT2_OUTSIDE
    else:
        layer, outside = _OPS_LLAMA_LAYER, _OPS_OUTSIDE
        extras = [(_OPS_QKV_BIAS, m.qkv_bias or m.biases), (_OPS_QK_NORM, m.qk_norm)]
        for (df, db), on in extras:
            if on:
                layer = (layer[0] + df, layer[1] + db)
        n_extra = m.norms_per_layer - 2
        layer = (layer[0] + n_extra * _OPS_EXTRA_NORM[0], layer[1] + n_extra * _OPS_EXTRA_NORM[1])
    fwd = m.n_layers * layer[0] + m.n_moe_layers * _OPS_MOE_EXTRA[0] + outside[0]
    bwd = m.n_layers * layer[1] + m.n_moe_layers * _OPS_MOE_EXTRA[1] + outside[1]
    refwd = float(fwd - outside[0]) if recompute else 0.0
    return MappingProxyType({"forward": float(fwd), "backward": float(bwd), "recomputed forward": refwd})


# Operations the eager multi-GPU program (scripts/gpu/train_dist.py) dispatches per layer beyond the one-GPU
# program, counted with a TorchDispatchMode in its host floors on torch 2.11 / CUDA (the run
# h200x2-2026-11-26-train-dist-heldout, host_floors.per_rank[*].ops; differences over 4 layers): DTensor tensor
# parallel with sequence parallel runs 107 forward and 163 backward ops per layer (54 and 114 of them on DTensors)
# where the one-GPU program runs 80 and 145; full recomputation adds 159 backward ops per layer (100 on DTensors)
# against 137; outside the layers (embedding, output layer, loss_parallel) 13 and 8 more ops, 19 and 37 on DTensors.
# Counted again on 4 x H200 (h200x4-2026-11-28-host17, scripts/gpu/count_tp_host.py): the same at TP 2 and TP 4. The
# recomputed pass's 46 DTensor ops beyond the forward's 54 are detaches (the checkpoint's saved-tensor hook, 61 in a
# checkpointed backward against 11), each about a plain op there (0.6-1.1): the engine charges a recomputed pass as
# the forward (RULES["eager-recompute-host"]) plus the checkpoint's plain cost, and that host's checkpointed backward
# a layer measured 0.86 (TP 2) and 0.96 (TP 4) of that charge, 0.69 and 0.76 of one with the "recompute" row below.
TP_EXTRA_OPS_PER_LAYER = MappingProxyType({"forward": 27, "backward": 18, "recompute": 22})
TP_DTENSOR_OPS_PER_LAYER = MappingProxyType({"forward": 54, "backward": 114, "recompute": 100})
TP_EXTRA_OPS_OUTSIDE = MappingProxyType({"forward": 13, "backward": 8})
TP_DTENSOR_OPS_OUTSIDE = MappingProxyType({"forward": 19, "backward": 37})
# The one-GPU program's ops per layer in the same count (forward, backward): what the floors' per-op cost divides by.
PLAIN_OPS_PER_LAYER = MappingProxyType({"forward": 80, "backward": 145})
# The same program's tensor parallel without sequence parallel (activations replicated between the blocks, one
# all-reduce each way per block; norms unsharded), counted the same way on torch 2.11 / CUDA, TP 2 and TP 4 alike
# (h200x4-2026-11-28-host17, scripts/gpu/count_tp_host.py): 98 forward and 160 backward ops a layer (40 and 75 on
# DTensors), a checkpointed layer's backward 312 (141); outside the layers 7 and 3 ops more than the one-GPU program,
# 12 and 19 on DTensors. Its DTensor ops priced at the same multiples of a plain op as the sequence-parallel
# program's, the measured layer on that host was 0.99-1.11 (forward) and 1.00-1.04 (backward) of this count's charge,
# against 0.77-0.86 and 0.71-0.73 of the sequence-parallel count's.
TP_NO_SP_EXTRA_OPS_PER_LAYER = MappingProxyType({"forward": 18, "backward": 15, "recompute": 15})
TP_NO_SP_DTENSOR_OPS_PER_LAYER = MappingProxyType({"forward": 40, "backward": 75, "recompute": 66})
TP_NO_SP_EXTRA_OPS_OUTSIDE = MappingProxyType({"forward": 7, "backward": 3})
TP_NO_SP_DTENSOR_OPS_OUTSIDE = MappingProxyType({"forward": 12, "backward": 19})


def tp_host_ops(sequence_parallel: bool) -> tuple[Mapping[str, int], Mapping[str, int], Mapping[str, int],
                                                   Mapping[str, int]]:
    """The eager tensor-parallel program's host ops beyond the one-GPU program's, with or without sequence parallel:
    (extra plain ops a layer, DTensor ops a layer, extra plain ops outside the layers, DTensor ops outside)."""
    if _check.choice("sequence_parallel", sequence_parallel, (True, False)):
        return TP_EXTRA_OPS_PER_LAYER, TP_DTENSOR_OPS_PER_LAYER, TP_EXTRA_OPS_OUTSIDE, TP_DTENSOR_OPS_OUTSIDE
    return (TP_NO_SP_EXTRA_OPS_PER_LAYER, TP_NO_SP_DTENSOR_OPS_PER_LAYER, TP_NO_SP_EXTRA_OPS_OUTSIDE,
            TP_NO_SP_DTENSOR_OPS_OUTSIDE)


def dist_host_constants(floors: Iterable[Mapping[str, Any]]) -> tuple[float, float, float, float]:
    """Host cost of the eager multi-GPU programs from their host floors (``train_dist.py --floors``), in units of
    the floors' own plain operation: (extra per forward op on DTensors, extra per backward op on DTensors, FSDP2's
    extra per layer forward, per layer backward), forward ones in plain forward ops, backward ones in plain
    backward ops.

    ``floors``: the rows of every rank (program "plain", "tp" or "fsdp", recompute, n_layers, fwd_s, bwd_s, rank):
    one pass each of a model so narrow that the device idles, at two layer counts. Per rank, a program's time per
    layer is the difference over the layers; the median over ranks is taken. The plain program's time per op (per
    layer over :data:`PLAIN_OPS_PER_LAYER`) is the unit; tensor parallel's plain ops cost one unit each, and what
    is left of its time per layer, over its DTensor ops, is the DTensor extra; FSDP2's extra is its time per layer
    over the plain program's. As ratios measured on one host at one moment they carry to a machine whose plain op
    cost was measured on another day (:func:`with_dist_host`). One set per software stack, not per model or run.
    """
    t = _floor_per_layer(floors, ("plain", "tp", "fsdp"))
    dt, fs = [], []
    for ph in ("forward", "backward"):
        unit = t[("plain", ph)] / PLAIN_OPS_PER_LAYER[ph]
        if unit <= 0:
            raise ValueError(f"floors is not allowed: the plain program's {ph} time does not grow with layers")
        tp_ops = PLAIN_OPS_PER_LAYER[ph] + TP_EXTRA_OPS_PER_LAYER[ph]
        dt.append(max(0.0, (t[("tp", ph)] / unit - tp_ops) / TP_DTENSOR_OPS_PER_LAYER[ph]))
        fs.append(max(0.0, (t[("fsdp", ph)] - t[("plain", ph)]) / unit))
    return dt[0], dt[1], fs[0], fs[1]


def _floor_per_layer(floors: Iterable[Mapping[str, Any]], programs: Sequence[str]) -> dict[tuple[str, str], float]:
    """(program, phase) -> median over ranks of the program's host seconds per layer (no checkpointing)."""
    per: dict[tuple[str, str], list[float]] = {}
    ranks: dict[tuple[str, int], dict[int, Mapping[str, Any]]] = {}
    for r in floors:
        if r.get("recompute") or str(r["program"]) not in programs:
            continue
        ranks.setdefault((str(r["program"]), int(r.get("rank", 0))), {})[int(r["n_layers"])] = r
    for (prog, _), by_l in ranks.items():
        if len(by_l) < 2:
            continue
        lo, hi = min(by_l), max(by_l)
        for ph, key in (("forward", "fwd_s"), ("backward", "bwd_s")):
            per.setdefault((prog, ph), []).append((float(by_l[hi][key]) - float(by_l[lo][key])) / (hi - lo))
    missing = [(p, ph) for p in programs for ph in ("forward", "backward") if (p, ph) not in per]
    if missing:
        raise ValueError(f"floors is not allowed: no rows at two layer counts for {missing}")
    return {k: max(0.0, statistics.median(v)) for k, v in per.items()}


def fsdp_dtensor_host_constants(floors: Iterable[Mapping[str, Any]]) -> tuple[float, float]:
    """FSDP2's host cost per layer over tensor-parallel (DTensor) parameters, forward and backward, in units of the
    floors' own plain forward and backward op (as :func:`dist_host_constants`).

    ``floors``: rows of the programs "plain", "tp2d" (tensor parallel over 2 ranks of a 2-D mesh, no FSDP) and
    "fsdptp" (the same with ``fully_shard`` over the mesh's other dimension), at two layer counts
    (``train_dist.py --floor-set dist4b``). FSDP2's cost is the difference of the last two per layer: what a
    FSDP x TP layer costs the host beyond the same tensor-parallel layer. Measured on 4 x H200
    (h200x4-2026-11-26-train-dist4b): about 8 ms per layer (fwd + bwd) against 5.6 for FSDP2 over plain parameters
    on the same host and 3.4 for the plain layer itself.
    """
    t = _floor_per_layer(floors, ("plain", "tp2d", "fsdptp"))
    out = []
    for ph in ("forward", "backward"):
        unit = t[("plain", ph)] / PLAIN_OPS_PER_LAYER[ph]
        if unit <= 0:
            raise ValueError(f"floors is not allowed: the plain program's {ph} time does not grow with layers")
        out.append(max(0.0, (t[("fsdptp", ph)] - t[("tp2d", ph)]) / unit))
    return out[0], out[1]


def with_dist_host(machine: Machine, floors: Iterable[Mapping[str, Any]],
                   fsdp_tp_floors: Iterable[Mapping[str, Any]] = ()) -> Machine:
    """``machine`` with the DTensor and FSDP2 host constants of :func:`dist_host_constants` (and, where
    ``fsdp_tp_floors`` are given, FSDP2 over DTensor parameters, :func:`fsdp_dtensor_host_constants`), priced at its
    own host seconds per plain forward and backward op."""
    df, db, ff, fb = dist_host_constants(floors)
    tf, tb = fsdp_dtensor_host_constants(fsdp_tp_floors) if fsdp_tp_floors else (0.0, 0.0)
    return machine._replace(host_s_per_dtensor_op=df * machine.host_s_per_op,
                            host_s_per_dtensor_backward_op=db * machine.host_s_per_backward_op,
                            host_s_per_fsdp_layer=ff * machine.host_s_per_op,
                            host_s_per_fsdp_backward_layer=fb * machine.host_s_per_backward_op,
                            host_s_per_fsdp_dtensor_layer=tf * machine.host_s_per_op,
                            host_s_per_fsdp_dtensor_backward_layer=tb * machine.host_s_per_backward_op)


def _fsdp_dtensor_measured(machine: Machine) -> bool:
    """Whether ``machine`` carries FSDP2's own host cost over DTensor parameters (:func:`with_dist_host`)."""
    return bool(machine.host_s_per_fsdp_dtensor_layer or machine.host_s_per_fsdp_dtensor_backward_layer)


def _dist_host_extra(machine: Machine, tp: int, fsdp: bool, layers: int, recompute: bool,
                     outside: bool, sequence_parallel: bool) -> dict[str, float]:
    """Host seconds the eager multi-GPU program adds to one micro-batch's passes on one GPU (see the counts above:
    :func:`tp_host_ops` with or without sequence parallel)."""
    hf, hb = machine.host_s_per_op, machine.host_s_per_backward_op
    xf, xb = machine.host_s_per_dtensor_op, machine.host_s_per_dtensor_backward_op
    f = b = 0.0
    if tp > 1:
        extra, dtensor, extra_out, dtensor_out = tp_host_ops(sequence_parallel)
        f += layers * (extra["forward"] * hf + dtensor["forward"] * xf)
        b += layers * (extra["backward"] * hb + dtensor["backward"] * xb)
        if recompute:  # the recomputed forward costs the host what the forward does (RULES["eager-recompute-host"])
            b += layers * (extra["forward"] * hf + dtensor["forward"] * xf)
        if outside:
            f += extra_out["forward"] * hf + dtensor_out["forward"] * xf
            b += extra_out["backward"] * hb + dtensor_out["backward"] * xb
    if fsdp:  # over DTensor parameters (tp > 1) FSDP2's own measured cost where known (RULES["eager-fsdp-tp-host"])
        over_dt = tp > 1 and _fsdp_dtensor_measured(machine)
        f += layers * (machine.host_s_per_fsdp_dtensor_layer if over_dt else machine.host_s_per_fsdp_layer)
        b += layers * (machine.host_s_per_fsdp_dtensor_backward_layer if over_dt
                       else machine.host_s_per_fsdp_backward_layer)
    return {"forward": f, "backward": b}


def host_constants_from_floors(floors: Iterable[tuple[ModelConfig, bool, float, float]]) -> tuple[float, float, float]:
    """Host seconds per forward op, per backward op and per checkpointed layer, from host-bound runs.

    ``floors`` holds (model, recompute, forward_s, backward_s) of steps so small that the device idles
    (e.g. one sequence of 64 tokens): each is the median over models of time / operations
    (:func:`op_counts`); the checkpoint cost is the median extra forward time per layer with
    recomputation on. One constant per machine and software stack, not per model.
    """
    f_rates, b_rates, plain = [], [], {}
    rows = list(floors)
    for model, rc, f_s, b_s in rows:
        if not rc:
            ops = op_counts(model, False)
            f_rates.append(_check.positive("forward_s", f_s) / ops["forward"])
            b_rates.append(_check.positive("backward_s", b_s) / ops["backward"])
            plain[model.name] = f_s
    if not f_rates:
        raise ValueError("floors is not allowed: it needs at least one run without recomputation")
    ck = [(f_s - plain[m.name]) / m.n_layers for m, rc, f_s, _ in rows if rc and m.name in plain]
    return statistics.median(f_rates), statistics.median(b_rates), max(0.0, statistics.median(ck)) if ck else 0.0



def checkpoint_over_op(model: ModelConfig, plain: tuple[float, float], checkpointed: tuple[float, float]) -> float:
    """The host work ``torch.utils.checkpoint`` adds per checkpointed layer and pass, in forward ops of the same
    program at the same pace: what :attr:`Machine.host_s_per_checkpoint` is over :attr:`Machine.host_s_per_op`.

    ``plain`` and ``checkpointed``: the host work of one forward and one backward pass of ``model`` (floor-sized, the
    device idle) without and with checkpointing, each in the same unit of work (e.g. seconds times the pace of the
    vCPU the pass ran on: ``mlcalc.distruns.checkpoint_calibration``). The forward op's work is the plain forward's
    over its ops (:func:`op_counts`); the checkpointed forward's excess is the forward's share, the checkpointed
    backward's excess over the plain backward and the recomputed forward ops is the backward's; the result is their
    mean per layer (the engine charges one constant a layer in each pass).
    """
    f0, b0 = (_check.positive(f"plain[{i}]", v) for i, v in enumerate(plain))
    f1, b1 = (_check.positive(f"checkpointed[{i}]", v) for i, v in enumerate(checkpointed))
    ops = op_counts(model, True)
    op = f0 / ops["forward"]
    excess = (f1 - f0) + (b1 - b0 - ops["recomputed forward"] * op)
    return max(0.0, excess / (2 * model.n_layers) / op)

# ---------------------------------------------------------------------------------------------
# The step
# ---------------------------------------------------------------------------------------------


class StepTime(NamedTuple):
    """A predicted step time with its parts."""

    total_s: float  # the step, seconds
    parts_s: Mapping[str, float]  # by phase (forward, backward, optimizer); sums to total_s
    device_s: Mapping[str, float]  # device time of each class (matmuls, attention, element-wise, optimizer)
    host_s: Mapping[str, float]  # host dispatch time by phase
    flop: float  # matmul + attention FLOP executed (recomputation included)
    model_flop: float  # FLOP of the model without recomputation (what MFU counts)


# fp8 training as TransformerEngine runs it under Megatron-core (NeMo's recipes): FP8 computation "exclusively to the
# linear layers within the Transformer block" (NVIDIA NeMo Framework User Guide, Performance Tuning Guide, "Low
# Precision Training"), so the output layer's products stay bf16; attention (flash, bf16) runs at its own rate anyway.
FP8_BF16_LABELS = ("logits",)
# Each fp8 product's activation operand is quantized by a kernel of its own: it reads the bf16 tensor (2 bytes an
# element) and writes the fp8 copy (1 byte) and, on Hopper, whose fp8 GEMMs take only the TN layout, the transposed
# fp8 copy the other product of the backward pass needs (1 byte) (TransformerEngine, "Performance considerations":
# "for FP8 on Hopper architecture, some tensors need to be physically transposed in memory"; cublaslt_gemm.cu:
# "Hopper only supports TN GEMMs for FP8"): 4 bytes an element. Forward: the input of every fp8 product except those
# fed by a norm (QKV and FC1 in Megatron's TE layer spec, TELayerNormColumnParallelLinear: the norm writes the fp8
# copy in place of its bf16 output, no extra pass); backward: the output gradient of every fp8 product (its input
# gradient's operand). The weights are quantized once a step (Megatron passes is_first_microbatch to TE: the copy is
# kept over the micro-batches) and the amax reductions are one small all-reduce a step: both left out.
FP8_CAST_BYTES_PER_ELEMENT = 4.0
_FP8_NORM_FED = ("attention q (", "attention k (", "attention v (", "attention qkv (", "mla q down (", "mla kv down (",
                 "mlp in (", "shared expert in (")


def _fp8_cast_bytes(gemms: Iterable[Gemm]) -> float:
    """Bytes the fp8 quantization of the products' activation operands moves (:data:`FP8_CAST_BYTES_PER_ELEMENT`):
    the forward input of each bf16-autocast product not fed by a norm, and the output gradient of each (the operand of
    its input-gradient product); the output layer's products (bf16, :data:`FP8_BF16_LABELS`) and fp32 ones cast none."""
    total = 0.0
    for g in gemms:
        if g.dtype != "bf16" or g.label.startswith(FP8_BF16_LABELS):
            continue
        fwd = g.label.endswith("(fwd)") or g.label.endswith("(recomputed fwd)")
        if (fwd and not g.label.startswith(_FP8_NORM_FED)) or g.label.endswith("(input grad)"):
            total += FP8_CAST_BYTES_PER_ELEMENT * g.m * g.k * g.count
    return total


#: How a pass combines its host's dispatching with its device's kernels: "op-by-op" (each op the longer of the two
#: until the pass's host time reaches its device time, then the host time: mono14's defect) or "queue" (the launch
#: queue run ahead, :func:`_queue_pass`; what the queue15 curve measured, but not the default: see :func:`_passes`).
HOST_RULE = "op-by-op"
#: Device seconds a queued kernel occupies its stream beyond its own work (0: none; :func:`_queue_pass`). With the
#: queue rule the predictions used :func:`mlcalc.serving.null_kernel_s` (3 us a dispatched op); queue15's profiled
#: steps idle 2.1-2.8 us a kernel, at 0.67 kernels an op (2,452 kernels, 3,664 aten ops a step).
KERNEL_GAP_S = 0.0


def _queue_group(t: float, e: float, n: float, h: float, d: float) -> tuple[float, float]:
    """The launch queue after ``n`` alike ops, each dispatched in ``h`` host seconds and run in ``d`` device seconds,
    from host clock ``t`` and device free at ``e``: op i is issued at t + i h and ends at
    max(issue_i, end_(i-1)) + d, so the last ends at max(e + n d, t + h + n d, t + n h + d) (the first op's issue
    starts the device's run, or the last op's issue does; n >= 1; below 1 the terms shrink with n)."""
    one = min(n, 1.0)
    return t + n * h, max(e + n * d, t + one * h + n * d, t + n * h + one * d)


def _queue_pass(per_op: float, ckpt_per_layer: float, matmuls: Sequence[tuple[int, float]], att: tuple[float, float],
                ew: tuple[float, float], n_layers: int, backward: bool = False) -> float:
    """One pass through the launch queue: the host issues the pass's ops in order, ``per_op`` seconds each, and each
    kernel starts when it has been issued and the kernel before it on the stream has ended (end_i = max(issue_i,
    end_(i-1)) + device_i, device_i with :data:`KERNEL_GAP_S`); the pass ends when its last kernel does, or its host
    does. No op waits for the GPU inside a pass (train_dist.py's and Trainer's steps synchronise between steps, not
    inside a pass), so the queue never binds before the pass ends and the CUDA launch queue's bound (about 1,024
    launches) does not change the end.

    ``matmuls``: (kernels, device seconds each) per product of the pass; those whose count is a multiple of
    ``n_layers`` run in every layer, the rest (the output layer's) outside the layers (after them in the forward pass,
    before them in the backward). ``att``/``ew``: (kernels, device seconds each) of attention and of the element-wise
    kernels, spread evenly over the layers, the element-wise ones between the layer's products. Every layer is the
    same sequence, so the queue's lag behind the host after a layer is max(lag + D - H, k) (D, H the layer's device
    and host seconds, k its lag from an idle device): the n_layers layers are priced in closed form. Bounded: time
    linear in the products of one layer (a handful), not in the layers or the ops. Monotone: every end is a max of
    sums of non-negative host and device terms, so a slower host (larger ``per_op`` or ``ckpt_per_layer``) never
    ends a pass sooner.
    """
    gap = KERNEL_GAP_S
    L = max(1, n_layers)
    inside = [(c / L, d + gap) for c, d in matmuls if c % L == 0]
    outside = [(float(c), d + gap) for c, d in matmuls if c % L != 0]
    n_att, d_att = att
    n_ew, d_ew = ew
    big = inside[: (len(inside) + 1) // 2] + [(n_att / L, d_att + gap)] + inside[(len(inside) + 1) // 2:]
    if backward:
        big.reverse()
    ew_chunk = n_ew / L / len(big)

    def layer(e: float) -> tuple[float, float]:
        t = ckpt_per_layer  # torch.utils.checkpoint's own host work per layer, before the layer's ops
        for n, d in big:
            if ew_chunk > 0:
                t, e = _queue_group(t, e, ew_chunk, per_op, d_ew + gap)
            if n > 0:
                t, e = _queue_group(t, e, n, per_op, d)
        return t, e

    def outside_ops(t: float, e: float) -> tuple[float, float]:
        for n, d in outside:
            t, e = _queue_group(t, e, n, per_op, d)
        return t, e

    t, e = 0.0, 0.0
    if backward:
        t, e = outside_ops(t, e)
    h_layer, k_end = layer(-math.inf)
    d_layer = sum(n * d for n, d in big) + ew_chunk * len(big) * (d_ew + gap)
    k = k_end - h_layer  # a layer's lag from an idle device
    lag = max(e - t + L * (d_layer - h_layer), k + max(0.0, (L - 1) * (d_layer - h_layer)))
    t += L * h_layer
    e = t + lag
    if not backward:
        t, e = outside_ops(t, e)
    return max(t, e)


def _passes(model: ModelConfig, gemms: Sequence[Gemm], att: Mapping[str, float], att_rate: float,
            eb: Mapping[str, float], ops: Mapping[str, float], machine: Machine, n_layers: int, recompute: bool,
            fp8: bool = False, host_extra: Mapping[str, float] | None = None,
            slow: tuple[float, float] = (1.0, 1.0)) -> StepTime:
    """Forward, backward and optimizer time of one GPU's kernels (the rule of the module docstring); ``slow``: the
    factor on the forward and the backward pass's kernel times (:func:`beside_collective_factor`; 1: none)."""
    fp32_rate = machine.fp32_matmul_flops_per_s
    speedup = (machine.fp8_matmul_speedup or 1.0) if fp8 else 1.0

    def rate(g: Gemm) -> float:
        bf16 = machine.matmul_flops_per_s(g.m, g.n, g.k)
        if g.dtype != "bf16":
            return fp32_rate or bf16 / 14.8
        return bf16 if g.label.startswith(FP8_BF16_LABELS) else bf16 * speedup

    bw = machine.memory_bytes_per_s
    parts: dict[str, float] = {}
    dev: dict[str, float] = {}
    host: dict[str, float] = {}
    ckpt = machine.host_s_per_checkpoint * n_layers if recompute else 0.0
    host["forward"] = ops["forward"] * machine.host_s_per_op + ckpt
    host["backward"] = (ops["backward"] * machine.host_s_per_backward_op
                        + ops["recomputed forward"] * machine.host_s_per_op + ckpt)
    for ph, extra in (host_extra or {}).items():  # DTensor and FSDP2 host work, spread over the pass's ops
        host[ph] += extra
    for phase in ("forward", "backward"):
        gs = [g for g in gemms if g.phase == phase]
        ew = sum(v for k, v in eb.items() if k.startswith(phase))
        if phase == "backward":
            ew += eb["loss: logits (fp32 copy, log-softmax, its gradient)"]
        if fp8:
            ew += _fp8_cast_bytes(gs)
        f = slow[0] if phase == "forward" else slow[1]
        t_mm = [f * g.flop / rate(g) for g in gs]
        dev[f"{phase}: matmuls"] = sum(t_mm)
        dev[f"{phase}: attention"] = f * att[phase] / att_rate
        dev[f"{phase}: element-wise"] = f * ew / bw
        per_op = (host[phase] - ckpt) / max(1.0, ops[phase] + ops["recomputed forward"] * (phase == "backward"))
        n_att = max(1, n_layers * (2 if recompute and phase == "backward" else 1))
        n_mm = sum(g.count for g in gs)
        n_ew = max(1.0, ops[phase] + (ops["recomputed forward"] if phase == "backward" else 0.0) - n_mm - n_att)
        if HOST_RULE == "queue":
            parts[phase] = _queue_pass(per_op, machine.host_s_per_checkpoint if recompute else 0.0,
                                       [(g.count, t / g.count) for t, g in zip(t_mm, gs) if g.count > 0],
                                       (n_att, dev[f"{phase}: attention"] / n_att),
                                       (n_ew, dev[f"{phase}: element-wise"] / n_ew), n_layers,
                                       backward=phase == "backward")
            continue
        # Each operation takes the longer of dispatching it (host) and running it (device): a big
        # matmul hides the host's work, a small element-wise kernel leaves the device waiting.
        # (torch.utils.checkpoint's own host work per layer is not an op: it only counts where the host
        # as a whole is the slower side.)
        parts[phase] = (sum(max(t, g.count * per_op) for t, g in zip(t_mm, gs))
                        + n_att * max(dev[f"{phase}: attention"] / n_att, per_op)
                        + n_ew * max(dev[f"{phase}: element-wise"] / n_ew, per_op))
        parts[phase] = max(parts[phase], host[phase])
        # A host-bound pass (its host time over its device time) takes its host time: the host runs ahead while
        # a long kernel runs, so the kernel costs no time of its own (measured: h200x4-2026-11-26-train-dist4's
        # profiled tensor-parallel steps, the slower rank's device busy 255 of 670 ms, its kernels starting at their
        # launch (median lag 0), the step its host's issue time).
        # Known defect (mono14): the two rules do not meet. Where a slower host carries a pass's host time past its
        # device time the pass drops from the op-by-op sum (above both totals) to the host time, so the step FALLS as
        # the host slows: Llama 3 8B FSDP 2, 1 x 2,048 recomputed on H200 (distruns.predict_paced, launch-floor rule)
        # 502 ms at 54,000 runs/s of the meter, 383 ms at 53,000; 118 of 388 curves (every configuration
        # of the record on both cards, both metered rules, 40-180 thousand runs/s: 62 of 194 FSDP, TP and 1-GPU
        # configurations, no pipeline or FSDP x TP one) fall somewhere, by up to 358 ms (TP 2 3B 1 x 16,384 on H200:
        # 1,209 ms at 84,000, 851 at 83,000; scripts/host_monotone_scan.py lists them).
        # No monotone rule keeps both sides: with the host side at its host time the device side must be
        # max(host, device) (perfect run-ahead: 1-GPU step 84 -> 82 of 84, multi-GPU 160 -> 155 of 167), with the
        # op-by-op side kept the host side needs a floor (the op-by-op pass at the crossing: 84 of 84, median 5.2 ->
        # 5.7 %, multi-GPU 160 -> 159, and most metered block scores lower). Both sides are calibrated away from
        # the crossing; the data near it say the op-by-op side is too high there (blind10's TP 2 3B 1 x 16,384
        # checkpointed: with the floor its two passes op-by-op take 1,196 ms, the measured step 1,027 ms).
        # queue15 measured the crossing (h100-2026-11-27-queue15: Llama-3.2 1B on one H100, a host delay spun before every
        # op): the step stays at the device's time until the host's reaches it, then is the host's plus the last kernels
        # (13-20 ms); the op-by-op rule's rise below the crossing is not there (blind: 16 of 22 points within 15 %, +17 to
        # +26 % at 10-30 us; the launch queue, HOST_RULE = "queue", 19 of 22). The queue rule is monotone by construction
        # but is not the default: with KERNEL_GAP_S = null_kernel_s it takes the multi-GPU step record from 160 to 156 of
        # 167 (FSDP 4 Llama 3 8B 1 x 2,048 +0.3 -> -19.5 %, FSDP 2 Llama 2 7B checkpointed -7.0 -> -16.2 %, blind10's TP 2
        # 3B 1 x 16,384 +14.5 -> -15.6 %, host7c's one-GPU 3B checkpointed -12.2 -> -17.8 %): those steps are longer
        # than both their host and device totals, by something the op-by-op sum stands in for and the engine does not
        # model (not found; FSDP's collectives sharing the GPU with the kernels is one candidate, unmeasured). The
        # 1-GPU record would gain (84 of 84, median 5.2 -> 3.0 %). overlap15's rule for that candidate
        # (COLLECTIVE_INTERFERENCE, off: NCCL's 24 blocks leave 108 of 132 SMs to the kernels beside a collective)
        # brings the two FSDP cases back under the queue (-19.5 -> -11.7 %, -16.2 -> -11.7 %; 156 -> 158 of 167,
        # still monotone); the tensor-parallel and one-GPU cases have no overlapped collective and stay out. tests/core/test_steptime_host_monotone.py pins where
        # and by how much today's step falls.
        # sync16 ran the four again and profiled them (h200x4-2026-11-28-sync16, 4 x H200, predictions landed before):
        # no step waits for the device inside it (0-0.14 ms of synchronising CUDA calls a step, every rank), so no sync
        # point drains the queue; the steps ran 5-22 % faster than the record's (324 / 356 / 820 / 202 ms), and at the
        # engine's own host constants the queue rule gives -15.4 / -1.2 / +5.7 / +2.4 % (op-by-op +5.5 / +9.6 / +43.4 /
        # +5.1 %): the TP 2 16k and one-GPU misses are their hosts (blind10's slowest rank issued for 0.90-0.99 of each step; host7c's
        # issue time x pace 17.5 thousand runs, as on the five faster hosts of that configuration, 17.4-19.8), the
        # FSDP 4 8B one its device (compute kernels busy 291-306 ms against 250 priced; 60-73 % of them under an NCCL
        # kernel, against 28-39 % under FSDP 2, each operation slowed alike on both: wave16, at COLLECTIVE_INTERFERENCE).
        # Scored: scripts/gpu/score_sync16.py. Not pre-registered:
        # on that host the queue rule with COLLECTIVE_INTERFERENCE holds all four within 8 % (FSDP 4 8B -7.1 %), today's
        # default three (TP 2 16k +43.4 %); on the record the pair has 158 of 167, so the default stays.
        if host[phase] >= dev[f"{phase}: matmuls"] + dev[f"{phase}: attention"] + dev[f"{phase}: element-wise"]:
            parts[phase] = host[phase]
    dev["optimizer"] = eb["optimizer: fused AdamW"] / bw
    parts["optimizer (fused AdamW)"] = dev["optimizer"]
    flop = sum(g.flop for g in gemms) + att["forward"] + att["backward"]
    model_flop = flop - (sum(g.flop for g in gemms if "recomputed" in g.label) + (att["forward"] if recompute else 0))
    return StepTime(sum(parts.values()), MappingProxyType(parts), MappingProxyType(dev), MappingProxyType(host),
                    flop, model_flop)


def step_time(model: ModelConfig, batch: int, seq_len: int, recompute: bool, machine: Machine,
              experts_in_fp32: bool = HF_EXPERTS_IN_FP32) -> StepTime:
    """Predicted time of one training step of the eager program on one GPU (see the module docstring).

    The one-GPU case of :func:`predict_step` (``Layout()``, ``engine="eager"``), with its parts.
    """
    b, s, _ = _tokens(batch, seq_len)
    gemms = step_gemms(model, b, s, recompute, experts_in_fp32)
    eb = elementwise_bytes(model, b, s, recompute, card=machine.key)
    return _passes(model, gemms, attention_flop(model, b, s, recompute),
                   machine.attention_flops_per_s(model.qk_head_dim, s), eb,
                   op_counts(model, recompute), machine, model.n_layers, recompute)


# ---------------------------------------------------------------------------------------------
# Any layout: tensor, pipeline, data (ZeRO / FSDP), context and expert parallel
# ---------------------------------------------------------------------------------------------

SCHEDULES = ("1f1b", "interleaved", "gpipe", "dualpipe")
RECOMPUTE = ("none", "selective", "full")
ZERO_STAGES = (0, 1, 2, 3)
MAX_GPUS = 1_000_000  # layouts above a million GPUs are refused
MAX_MICRO_BATCHES = 1_000_000  # grad_accum above this is refused


@dataclass(frozen=True)
class Layout:
    """How one training step is spread over GPUs (``n_gpus = tp pp dp cp``; ``ep`` divides ``dp cp``)."""

    tp: int = 1  # tensor-parallel ranks (Megatron's split of every layer)
    pp: int = 1  # pipeline stages
    dp: int = 1  # data-parallel replicas
    cp: int = 1  # context-parallel ranks (the sequence split, ring attention)
    ep: int = 1  # expert-parallel ranks (routed experts spread over them, inside dp x cp)
    zero: int = 0  # ZeRO stage over the data-parallel ranks: 0 (DDP), 1, 2, 3 (= FSDP)
    sequence_parallel: bool = False  # norms, dropout and residuals split over tp too (Korthikanti et al. 2022)
    schedule: str = "1f1b"  # pipeline schedule: "1f1b", "interleaved", "gpipe" or "dualpipe" (DeepSeek-V3)
    virtual_stages: int = 1  # layer chunks per GPU with "interleaved"
    recompute: str = "none"  # "none", "selective" or "full" activation recomputation
    micro_batch: int = 1  # sequences per micro-batch per replica
    grad_accum: int = 1  # micro-batches per replica per optimizer step
    # Megatron-LM's pipeline "scatter/gather" (Narayanan et al. 2021, 4.1): each tensor-parallel rank sends 1/tp of
    # a stage's output between nodes and the next stage all-gathers it over NVLink; False: every rank sends the whole
    # activation (DeepSpeed's pipeline engine). With sequence parallelism the output is already split (no gather).
    scatter_gather: bool = False
    # Llama 3's balanced pipeline (Dubey et al. 2024, 3.3.2): the first and the last stage hold one layer fewer, so the
    # embedding and the output layer each take a layer's place ((L + 2) / pp places a stage); False: every stage holds
    # its L / pp layers and the last one the output layer too.
    balanced_stages: bool = False
    # DeepSpeed's pipeline engine (runtime/pipe/engine.py, schedule.py TrainSchedule, p2p.py; MT-NLG, BLOOM, GPT-NeoX):
    # with tp > 1 each rank sends 1/tp of a stage's output and of its input gradient (PartitionedTensor) and the
    # stage all-gathers them over its tensor-parallel group; every send and receive is a blocking call in the
    # stage's stream, one after another; the data-parallel reduction, ZeRO-1's parameter all-gather and the
    # tied-embedding all-reduce run after the pipeline flush (RULES["deepspeed-pipeline"]). False: Megatron's.
    deepspeed_pipeline: bool = False
    # Llama 3's context parallelism (Dubey et al. 2024, 3.3.2): each layer all-gathers K and V over the CP group
    # before its attention ("the all-gather communication latency is exposed in the critical path") and the backward
    # pass reduce-scatters their gradients; False: ring attention, its K/V exchange overlapping the attention.
    cp_allgather: bool = False
    # Megatron's --distribute-checkpointed-activations (OPT's metaseq recipe, launcher/opt_baselines.py): with full
    # recomputation each tensor-parallel rank keeps 1/t of a checkpointed layer's input and all-gathers it before the
    # layer's recomputation (CheckpointFunction.backward: gather_split_1d_tensor), one more collective a layer.
    distribute_checkpoints: bool = False
    # Attention as the code of 2021-22 ran it (Megatron-LM's ParallelAttention before flash attention, and the code
    # lines built on it: Megatron-DeepSpeed, GPT-NeoX, metaseq): the whole s x s scores by a batched product
    # (torch.baddbmm), a fused masked softmax, then the product with V (torch.bmm); the scores go through memory
    # (RULES["unfused-attention"], :func:`unfused_attention`). False: causal flash attention.
    unfused_attention: bool = False
    # Tensor-parallel communication overlapped with the GEMMs it feeds (Megatron-LM's --tp-comm-overlap, NeMo's
    # ub_tp_comm_overlap: TransformerEngine's userbuffers). Each sequence-parallel all-gather is split into tp chunks
    # sent round the ring while the GEMM works on the chunks already here, and each reduce-scatter is fed chunk by
    # chunk by the GEMM before it (RULES["tensor-overlap"]). It needs sequence parallelism (Megatron refuses it without).
    tp_comm_overlap: bool = False

    def __post_init__(self) -> None:
        if not self._plain():  # else each field as the checks below would find it
            for f in ("tp", "pp", "dp", "cp", "ep", "virtual_stages", "micro_batch"):
                _check.positive_int(f, getattr(self, f), MAX_GPUS)
            _check.positive_int("grad_accum", self.grad_accum, MAX_MICRO_BATCHES)
            _check.choice("zero", self.zero, ZERO_STAGES)
            _check.choice("schedule", self.schedule, SCHEDULES)
            _check.choice("recompute", self.recompute, RECOMPUTE)
            _check.choice("sequence_parallel", self.sequence_parallel, (True, False))
            _check.choice("scatter_gather", self.scatter_gather, (True, False))
            _check.choice("balanced_stages", self.balanced_stages, (True, False))
            _check.choice("deepspeed_pipeline", self.deepspeed_pipeline, (True, False))
            _check.choice("cp_allgather", self.cp_allgather, (True, False))
            _check.choice("distribute_checkpoints", self.distribute_checkpoints, (True, False))
            _check.choice("unfused_attention", self.unfused_attention, (True, False))
            _check.choice("tp_comm_overlap", self.tp_comm_overlap, (True, False))
        if self.n_gpus > MAX_GPUS:
            raise ValueError(f"tp x pp x dp x cp={self.n_gpus} is not allowed: at most {MAX_GPUS:,} GPUs")
        if (self.dp * self.cp) % self.ep:
            raise ValueError(f"ep={self.ep!r} is not allowed: it must divide dp x cp = {self.dp * self.cp}")
        if self.schedule == "dualpipe" and self.pp % 2:
            raise ValueError(f"pp={self.pp!r} is not allowed with schedule='dualpipe': it needs an even number of stages")
        if self.virtual_stages > 1 and self.schedule != "interleaved":
            raise ValueError(f"virtual_stages={self.virtual_stages!r} is not allowed: only with schedule='interleaved'")
        if self.virtual_stages > 1 and self.pp == 1:
            raise ValueError(f"virtual_stages={self.virtual_stages!r} is not allowed with pp=1: chunks interleave over "
                             "pipeline stages (pp >= 2), or use virtual_stages=1")
        if self.tp_comm_overlap and not (self.tp > 1 and self.sequence_parallel):
            raise ValueError(f"tp_comm_overlap=True is not allowed with tp={self.tp!r}, "
                             f"sequence_parallel={self.sequence_parallel!r}: the overlap splits sequence-parallel "
                             "all-gathers and reduce-scatters (it needs tp >= 2 and sequence_parallel=True)")
        if self.unfused_attention and self.cp > 1:
            raise ValueError(f"unfused_attention=True is not allowed with cp={self.cp!r}: the unfused attention of "
                             "2021-22 code has no context parallelism (use cp=1)")
        if self.deepspeed_pipeline and (self.schedule != "1f1b" or self.zero > 1):
            raise ValueError(f"deepspeed_pipeline=True is not allowed with schedule={self.schedule!r}, zero={self.zero!r}: "
                             "DeepSpeed's pipeline engine runs its 1F1B TrainSchedule ('1f1b') with ZeRO 0 or 1")

    def __hash__(self) -> int:
        # The dataclass's hash (of the fields' tuple), remembered on the instance (a frozen Layout never changes; the
        # planner looks its shared layouts up thousands of times); not carried by a copy or a pickle (__getstate__).
        known = self.__dict__.get("_hash_known")
        if known is None:
            known = self.__dict__["_hash_known"] = hash(tuple(getattr(self, f) for f in _LAYOUT_FIELDS))
        return int(known)

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "_hash_known"}

    def _plain(self) -> bool:
        """Every field of the kind and in the range its check allows, tested at once (a planner builds thousands of
        layouts): the same acceptance as the field checks of __post_init__ (ints that are ints, not bools)."""
        for x in (self.tp, self.pp, self.dp, self.cp, self.ep, self.virtual_stages, self.micro_batch):
            if type(x) is not int or not 1 <= x <= MAX_GPUS:
                return False
        return (type(self.grad_accum) is int and 1 <= self.grad_accum <= MAX_MICRO_BATCHES
                and type(self.zero) is int and self.zero in ZERO_STAGES
                and type(self.schedule) is str and self.schedule in SCHEDULES
                and type(self.recompute) is str and self.recompute in RECOMPUTE
                and type(self.sequence_parallel) is bool and type(self.scatter_gather) is bool
                and type(self.balanced_stages) is bool and type(self.deepspeed_pipeline) is bool
                and type(self.cp_allgather) is bool and type(self.distribute_checkpoints) is bool
                and type(self.unfused_attention) is bool and type(self.tp_comm_overlap) is bool)

    @property
    def n_gpus(self) -> int:
        """GPUs the layout uses: tp x pp x dp x cp."""
        return self.tp * self.pp * self.dp * self.cp

    @property
    def global_batch(self) -> int:
        """Sequences per optimizer step: micro_batch x grad_accum x dp."""
        return self.micro_batch * self.grad_accum * self.dp


# The fields a Layout's equality compares: what its hash is made of (as the dataclass's own).
_LAYOUT_FIELDS = tuple(f.name for f in fields(Layout) if (f.compare if f.hash is None else f.hash))


class StepPrediction(NamedTuple):
    """One optimizer step of a layout, predicted (per GPU unless said; seconds, bytes, FLOP)."""

    step_s: float  # wall time of one optimizer step
    compute_s: float  # this GPU's kernels over the step (matmuls, attention, element-wise), recomputation included
    host_s: float  # host dispatch time not hidden behind the device
    comm_s: float  # all communication of this GPU, hidden or not
    comm_exposed_s: float  # the part of comm_s on the critical path
    bubble_s: float  # pipeline bubble
    optimizer_s: float  # optimizer step (its kernels)
    parts_s: Mapping[str, float]  # sums to step_s
    comm_parts_s: Mapping[str, tuple[float, float]]  # parallelism -> (total_s, exposed_s)
    peak_bytes_per_gpu: float  # mlcalc.memory.training_memory of the layout, no reserve
    memory_parts: Mapping[str, float]  # its parts
    device_bytes: float | None  # capacity the fit uses (None: unknown)
    fits: bool  # peak plus the stated reserve within device_bytes
    tokens_per_s: float  # whole job
    model_flops: float  # whole job per step, PaLM convention (6 N + 12 L H Q T per token)
    hardware_flops: float  # whole job per step, recomputation included (same convention)
    mfu: float  # model_flops / (step_s n_gpus peak); nan if the peak is unknown
    hfu: float  # hardware_flops / (step_s n_gpus peak)
    notes: tuple[str, ...]  # the rules applied, in words


# Rules of the engine, stated once (they appear in StepPrediction.notes):
RULES = MappingProxyType({
    "tensor": "tensor-parallel collectives (2 per layer forward, 2 backward, 2 more with full recomputation) "
              "are on the critical path",
    "tensor-overlap": "tensor-parallel communication overlapped with the GEMMs (Megatron's --tp-comm-overlap, "
                      "TransformerEngine's userbuffers): each all-gather or reduce-scatter of c seconds runs in t "
                      "chunks beside the GEMM of g seconds it feeds or follows (forward: the QKV and FC1 GEMMs after "
                      "the gathers, the projection and FC2 GEMMs before the reduce-scatters; backward: the input "
                      "gradients of the projection and FC2 after the gathers, the weight gradients of QKV and FC1 "
                      "beside the reduce-scatters); the pair takes max(c, g (t-1)/t) + g/t, so max(0, c - g (t-1)/t) "
                      "of the collective stays exposed; a MoE layer's expert collectives are not overlapped",
    "distributed-checkpoints": "full recomputation with distributed checkpoints (Megatron's "
                               "--distribute-checkpointed-activations): each layer's checkpointed input, kept 1/t per "
                               "tensor-parallel rank, is all-gathered before its recomputation, on the critical path",
    "data": "data-parallel gradient reduction overlaps the backward pass of the last micro-batch; ZeRO-1/2's "
            "parameter all-gather after the optimizer overlaps the first forward pass; what does not fit is exposed",
    "fsdp": "ZeRO-3/FSDP gathers each layer's parameters ahead of its forward and backward and reduce-scatters "
            "its gradients, overlapped with that micro-batch's pass; only the excess is exposed",
    "pipeline": "the pipeline bubble is (p - 1) / (m v) of the micro-batches' time (Narayanan et al. 2021); "
                "each micro-batch's activation send forward and gradient send backward is exposed",
    "scatter-gather": "pipeline sends: each tensor-parallel rank sends 1/t of the activation between nodes and the "
                      "next stage all-gathers it inside its node (Megatron-LM's scatter/gather, Narayanan et al. 2021, "
                      "4.1)",
    "context": "ring attention's K/V exchange overlaps each layer's attention; only the excess is exposed",
    "context-allgather": "context parallelism by all-gather (Llama 3, Dubey et al. 2024, 3.3.2): each layer "
                         "all-gathers K and V before its attention and reduce-scatters their gradients in the "
                         "backward pass, both exposed",
    "expert": "expert all-to-all (dispatch and combine, forward and backward) is on the critical path",
    "unfused-attention": "attention unfused, as Megatron-LM's code ran it before flash attention (torch.baddbmm for "
                         "the whole s x s scores, a fused masked softmax, torch.bmm with V): both products over the "
                         "full square at the matmul rate of their batched shapes, the 2-byte scores through memory "
                         "4 times forward, 7 backward and 4 more where the attention is recomputed",
    "deepspeed-pipeline": "DeepSpeed's pipeline engine: each tensor-parallel rank sends 1/t of the activation and of "
                          "the gradient and the stage all-gathers them (3 gathers a micro-batch); a middle stage's 4 "
                          "blocking sends and receives a micro-batch run one after another (4 m + 2 (p - 4) on the "
                          "critical path); the data-parallel reduction, ZeRO-1's all-gather and the tied-embedding "
                          "all-reduce run after the pipeline flush, exposed (runtime/pipe/engine.py, schedule.py)",
    "dualpipe": "DualPipe (DeepSeek-AI 2024, 3.2.1) runs two micro-batches' chunks together: each one's expert "
                "all-to-all and pipeline sends hide behind the other's computation (only the excess is exposed), and "
                "the bubble is (p/2 - 1) / m of the micro-batches' time",
    "host": "eager: each operation takes the longer of dispatching it and running it, and a pass whose host time "
            "exceeds its device time takes its host time (the host never waits inside a pass: it issues on while "
            "long kernels run); megatron: the host runs ahead of the device (no host time)",
    "eager-pipeline": "eager pipeline: each stage is its own process, so per micro-batch it takes the longer of its "
                      "device and host time, and the bubble is the time of the other stages (without the output "
                      "layer), less the time its device idles behind a slower host (the host issues on through the "
                      "waits for the other stages)",
    "eager-dist-host": "eager: ops on DTensors (tensor parallel) and FSDP2's per-layer hooks, gathers and reduce-scatters "
                       "cost the host what the machine's host floors measured, in plain ops of the same host",
    "eager-recompute-host": "eager tensor parallel with full recomputation: the recomputed forward costs the host "
                            "what the forward does",
    "eager-fsdp-tp-host": "eager FSDP x tensor parallel: FSDP2 over DTensor parameters costs the host per layer what "
                          "its own floor measured (the FSDP x TP program less the same TP program), in plain ops",
    "flops": "MFU counts 6 N + 12 L H Q T FLOP per token (PaLM, Chowdhery et al. 2022, Appendix B) against the "
             "dense bf16 peak; HFU adds the recomputed forward",
})

# Memory held back from a fit for the CUDA context, NCCL buffers and fragmentation: the stated overhead of
# mlcalc.memory.training_memory (an assumption, not a measured constant).
MEMORY_RESERVE_FRACTION = 0.1
# Bytes per gradient value the data-parallel reduction moves: eager PyTorch reduces the fp32 .grad
# (DDP; FSDP2 with reduce_dtype fp32), Megatron-core reduces bf16 gradients (grad_reduce_in_fp32 off).
GRAD_BYTES = MappingProxyType({"eager": 4.0, "megatron": 2.0})
ACTIVATION_BYTES = 2.0  # bf16 activations cross the links


@lru_cache(maxsize=64)
def catalogue_machine(key: str, reference_run: str = "h200x2-2026-11-26-train-hf-run2") -> Machine:
    """A :class:`Machine` for a chip of the catalogue, carried over from the book's measured H200.

    The H200's measured per-shape matmul and attention rates (``reference_run``) are scaled by the chip's
    published maximum achievable matmul rate over the H200's (mlcalc/data/achievable_matmul.json; that of
    the chip named by its ``compute_as`` field where it has none, e.g. the H800 has the H100 SXM's silicon;
    the dense bf16 datasheet peaks where neither has a MAMF), its element-wise bandwidth by the two
    datasheet memory bandwidths; fp8 products run faster by the chip's published fp8 / bf16 MAMF ratio
    (none where the chip or the table has no fp8 figure). The host constants stay (same software).

    Where the table gives the chip's best shape, the shape curve is carried over relative to it: each chip
    reaches its published maximum at its own best shape (what the table measured), so the chip's rate at
    its best shape is set to the reference's rate at the reference's best shape, scaled as above, and other
    shapes follow the reference's measured curve relative to that point, capped at the chip's maximum (the
    reference's best measured rate, scaled: no shape beats the maximum the search found). Without this, a
    chip that saturates at smaller shapes than the H200 (the A100: its maximum at 1024 x 10240 x 5120,
    where the H200 reaches 64% of its own) would inherit the H200's shortfall there. A chip with the
    reference's own best shape and rate (the H100 SXM, the H800: the same silicon) keeps the measured
    curve as it is. A transfer by stated ratios, not a measurement of that chip.
    """
    from mlcalc import compute, hfruns
    from mlcalc.accelerators import spec

    acc = spec(key)
    if not acc.has("bf16"):
        raise ValueError(f"machine={key!r} is not allowed: the catalogue has no dense bf16 figure for it")
    base = hfruns.machine(reference_run)
    ref = spec("H200-SXM")

    def mamf(k: str, dt: str) -> float | None:
        return compute.achievable_flops(k, dt, "achievable") if compute.has_flops(k, dt, "achievable") else None

    twin = str(acc.extra.get("compute_as", key))  # same silicon and clocks (e.g. H800 -> H100 SXM)
    mine, theirs = mamf(twin, "bf16"), mamf("H200-SXM", "bf16")
    scale = mine / theirs if (mine and theirs) else acc.peak_flops("bf16") / ref.peak_flops("bf16")
    bw = acc.memory_bandwidth_bytes_per_s / ref.memory_bandwidth_bytes_per_s
    f8 = mamf(twin, "fp8") if acc.has("fp8") else None
    speed = f8 / mine if (f8 and mine) else 0.0
    mm, at = base.matmul_flops_per_s, base.attention_flops_per_s
    shape = _best_shape(twin) if mine else None
    ref_shape = _best_shape("H200-SXM")
    if shape and ref_shape and shape != ref_shape:
        # at its own best shape the chip reaches what the reference reaches at the reference's best shape, scaled
        lift = mm(*ref_shape) / mm(*shape)
        cap = _best_measured_rate(reference_run) * scale

        def matmul(m: int, n: int, k: int) -> float:
            return min(cap, mm(m, n, k) * scale * lift)
    else:
        def matmul(m: int, n: int, k: int) -> float:
            return mm(m, n, k) * scale

    return base._replace(
        name=f"{key} (carried over from the measured H200 by published rates)",
        matmul_flops_per_s=matmul,
        attention_flops_per_s=lambda d, s: at(d, s) * scale,
        memory_bytes_per_s=base.memory_bytes_per_s * bw,
        fp32_matmul_flops_per_s=acc.peak_flops("fp32") if acc.has("fp32") else 0.0,
        key=key, device_bytes=acc.memory_bytes, peak_flops_per_s=acc.peak_flops("bf16"), fp8_matmul_speedup=speed)


def _best_shape(key: str) -> tuple[int, int, int] | None:
    """The (m, n, k) at which the published maximum achievable bf16 matmul rate of ``key`` was found, or None."""
    from mlcalc import compute

    if not compute.has_flops(key, "bf16", "achievable"):
        return None
    text = str(compute.flops_entry(key, "bf16", "achievable").get("best_shape_mxnxk", ""))
    parts = text.split("x")
    if len(parts) != 3 or not all(p.isdigit() and int(p) > 0 for p in parts):
        return None
    return int(parts[0]), int(parts[1]), int(parts[2])


@lru_cache(maxsize=8)
def _best_measured_rate(run: str) -> float:
    """The best matmul rate of a measured run's machine over its measured shapes (sustained-scaled, as it runs)."""
    from mlcalc import hfruns

    mach = hfruns.machine(run)
    rows = hfruns.matmul_shapes(run)
    return max(mach.matmul_flops_per_s(m, n, k) for m, n, k in rows)


@lru_cache(maxsize=4096)  # pure (the links' data does not change); a Fabric is frozen: one object serves every caller
def _fabric_of(system_key: str, ranks: int, stride: int, gpus_per_node: int, efficiency: float = 1.0) -> Any:
    """The fabric of a group of ``ranks`` GPUs placed ``stride`` apart (Megatron's order tp, cp, ep/dp, pp)."""
    import mlcalc.network as network  # (not `from mlcalc import`: no importlib fromlist step, a search calls it often)

    sys_g = network.system(system_key).gpus_per_node
    gpn = min(gpus_per_node, sys_g)
    if stride * ranks <= gpn:  # the whole group inside one node
        return network.fabric(system_key, 1, gpus_per_node=ranks, efficiency=efficiency)
    per_node = max(1, gpn // stride) if stride < gpn else 1
    nodes = max(2, -(-ranks // per_node))
    return network.fabric(system_key, nodes, gpus_per_node=per_node, efficiency=efficiency)


def _collective_s(message_bytes: float, fab: Any, collective: str) -> float:
    """Seconds of one collective of ``message_bytes`` over every GPU of ``fab``, remembered (a search meets the same
    group and message at many layouts; a Fabric is frozen, so equal fabrics give equal times)."""
    try:
        return _collective_of(message_bytes, fab, collective)
    except TypeError:  # a fabric that cannot be a key
        return _collective_of.__wrapped__(message_bytes, fab, collective)


@lru_cache(maxsize=4096)  # bounded: 4,096 (message, fabric, collective) times
def _collective_of(message_bytes: float, fab: Any, collective: str) -> float:
    import mlcalc.network as network  # (not `from mlcalc import`: no importlib fromlist step, a search calls it often)

    if message_bytes <= 0 or fab.n_ranks < 2:
        return 0.0
    if collective == "all_reduce":
        return network.nccl_collective_seconds(message_bytes, fab, collective)
    return network.fabric_collective_seconds(message_bytes, fab, collective)


def _p2p_s(message_bytes: float, fab: Any) -> float:
    """One point-to-point send: over NVLink inside a node, through the GPU's NIC share across nodes."""
    if message_bytes <= 0:
        return 0.0
    if fab.n_nodes > 1:
        return fab.base_latency_s + fab.inter_step_latency_s + message_bytes / fab.inter_bytes_per_s_per_gpu
    return fab.base_latency_s + fab.intra_step_latency_s + message_bytes / fab.intra_bytes_per_s


def _all_to_all_s(message_bytes: float, fab: Any) -> float:
    """All-to-all of ``message_bytes`` per GPU: the share for other nodes through the GPU's NIC share,
    the rest over NVLink, both at once (the slower sets the time)."""
    n = fab.n_ranks
    if message_bytes <= 0 or n < 2:
        return 0.0
    g = fab.gpus_per_node
    inside = message_bytes * (g - 1) / n / fab.intra_bytes_per_s
    outside = message_bytes * (n - g) / n / fab.inter_bytes_per_s_per_gpu if fab.n_nodes > 1 else 0.0
    return fab.base_latency_s + (n - 1) * (fab.inter_step_latency_s if fab.n_nodes > 1 else fab.intra_step_latency_s) \
        + max(inside, outside)


#: Whether kernels that run beside an overlapped collective are slowed by the SMs its blocks hold
#: (:func:`beside_collective_factor`): off by default. overlap15 (issue 24) wrote the rule's predictions before a 2-GPU
#: call (scripts/gpu/overlap15_predictions.json: +22.2 % for every bf16 GEMM and flash-attention pass beside an
#: all-gather or reduce-scatter on an H100 or H200); the first call (2 x H200) hung before its first timing. Its rerun
#: (mlcalc/data/measured/h200x2-2026-11-27-overlap15b, 2 x H200, scripts/gpu/score_overlap15.py) refutes the uniform
#: share: kernels of 1 ms and more slowed 2.7-9.7 % while the collective beside them slowed 12.7-33.7 % (the two share
#: the SMs in time), and 2,048-row GEMMs of 2-3 waves slowed 46-72 %, past their wave-quantised bound; 7 of 22 cases
#: within 5 points of +22.2 %. So the rule stays off: where it brought two FSDP cases back (see :func:`_passes`) it
#: charged millisecond kernels four times what they measured. Published: Lee et al. 2025 ("Characterizing Compute-Communication Overlap in GPU-Accelerated
#: Distributed Deep Learning: Performance and Power Implications", arXiv 2507.03114) measured compute slowed 18.9 % on
#: average, at most 40.0 %, beside collectives on 4 A100, H100, MI250 and MI210. In training steps (sync16,
#: h200x4-2026-11-28-sync16, profiled, after the call) score_sync16 put each compute kernel beside an NCCL kernel against
#: the kernels of its name alone in the same step: +17-21 % under FSDP 2 Llama 2 7B and +42-92 % under FSDP 4 Llama 3 8B
#: (1 x 2048 tokens, 4 x H200). wave16 (scripts/gpu/wave16_beside.py, post hoc, labelled; no call) read both records
#: again for a rule from the hardware, SMs taken x waves x overlapped share, and it does not hold:
#: - NCCL ran 24 channels, one block each, on 4 ranks as on 2 (coll10b's INFO log; overlap15b's trace), so the SMs taken
#:   cannot tell 2 ranks from 4.
#: - overlap15b's collectives outlasted every timed window (1.36 x or more: overlapped share 1), yet the wave-quantised
#:   bound on 108 of 132 SMs is within 5 points of 0 of its 14 GEMM cases: 8 above it (2,048-row GEMMs +22-72 %
#:   against +17-50 %), 6 below (Llama 3 8B's up projection at 2,048 rows +18-19 % against +29 %, millisecond GEMMs
#:   +3-4 % against +19-21 %). The overlapped share cannot explain the long kernels' small slowdowns there: they were
#:   covered whole.
#: - sync16's +42-92 % compared different GEMMs (cuBLAS runs a layer's small and large backward GEMMs under one kernel
#:   name: 27 us alone, 560 us beside). Matched by their place in the layer (the 12 kernels either side), 4 ranks slow
#:   each operation as 2 do: per second under a collective GEMMs +35-71 % (4 ranks) / +49 % (2), attention +15-18 / +16-20
#:   %, element-wise +24-36 / +35-37 %. What differs is the share: 60-73 % of the FSDP 4 8B step's compute runs under an
#:   NCCL kernel, 28-39 % of FSDP 2 7B's (NCCL busy 207-277 ms against 121-143). The engine's schedule has about that
#:   share beside its collectives (priced collectives over device total: 148 / 250 = 0.59, 102 / 319 = 0.32).
#: - At those rates the step loses 0.24-0.36 s per second of compute under a collective (this rule: 24 / 132 = 0.18):
#:   50-76 ms on FSDP 4 8B against the 27 ms this rule charges (27-39 against 19 on FSDP 2 7B), partly because the
#:   collectives themselves ran 1.4-1.9 x the engine's price (148 ms) beside the kernels. Their compute, that excess
#:   taken off, is 243-262 ms: the 250 ms the engine prices. So the FSDP 4 8B miss under the queue rule is interference,
#:   but no rule from SMs and waves prices it; the loss per overlapped second and the collectives' stretch are not
#:   derived, and none is fitted. tests/scripts/test_wave16.py.
#: - hbm16 (h200x4-2026-11-28-hbm16, 4 x H200, blind: scripts/gpu/hbm16_predictions.json landed before the call) priced
#:   wave16's HBM candidate and refutes it. NCCL's ring (Ring/Simple, P2P write, unregistered buffers) touches HBM
#:   3 + 2 / (n - 1) times per byte a rank receives (FIFO write, FIFO read, output write or input read, own shard:
#:   src/device/all_gather.h, reduce_scatter.h), 1.17 TB/s at the book's 320 GB/s busbw on 4 ranks, 1.30 at 260 on 2;
#:   a memory-bound kernel left the rest of the measured 4.07 TB/s was predicted +40.6 / +47.0 %. A 1 GiB bf16 copy
#:   and add beside 436 MB all-gathers / reduce-scatters slowed +12.8 to +21.2 % (0 of 8 within 5 points) while the
#:   collectives beside them ran 1.8-2.7 x slower. After the call (labelled): the count holds, kernel + NCCL bytes per
#:   second beside each other are 0.975-0.994 of the kernel's own rate alone, but the split is the other way: the
#:   kernel keeps 82-89 % of HBM and NCCL yields. So lost HBM does not explain wave16's element-wise +24-37 % per second
#:   (a pure stream loses 13-21 %), and it is one cause of the collectives' 1.4-1.9 x stretch in the FSDP steps: the
#:   collective, not the compute, is what a rule must slow. No rule is derived here; the flat factor stays as it is,
#:   off. tests/scripts/test_hbm16.py.
COLLECTIVE_INTERFERENCE = False


def beside_collective_factor(comm_s: float, device_s: float, blocks: int, sms: int) -> float:
    """The factor on a pass's kernel times when a collective of ``comm_s`` runs beside them
    (:data:`COLLECTIVE_INTERFERENCE`).

    NCCL runs one thread block per channel (NCCL user guide, "Environment Variables": NCCL_NTHREADS is the threads of
    each block, one block a channel; lowering NCCL_MAX_NCHANNELS "reduces the number of CUDA blocks used for
    communication, hence the impact on GPU computing resources"), and a Hopper GEMM block takes a whole SM's registers,
    so while the collective runs the pass's kernels have ``sms - blocks`` of ``sms`` SMs. The work the device does in
    the collective's time runs at that share: its ``device_s`` grows by ``min(comm_s blocks / sms, device_s blocks /
    (sms - blocks))`` (the second when the whole pass fits inside the collective), spread over every kernel of the
    pass. The pass's kernels then go through the pass's host rule as before (a host-bound pass hides them), so the
    step stays monotone in the host's pace wherever the host rule is. Not counted: the collective's own HBM traffic
    (hbm16 measured a memory-bound kernel beside it losing 13-21 %, the collective 1.8-2.7 x: see
    :data:`COLLECTIVE_INTERFERENCE`), wave quantisation.
    """
    c = _check.non_negative("comm_s", comm_s)
    d = _check.non_negative("device_s", device_s)
    s_ = _check.positive_int("sms", sms, 100_000)
    k = _check.bounded_int("blocks", blocks, 0, s_ - 1)
    return 1.0 + min(c * k / s_, d * k / (s_ - k)) / d if d > 0 else 1.0


def tp_overlap_exposed_s(comm_s: float, gemm_s: float, chunks: int) -> float:
    """Seconds of a collective left exposed when it runs in ``chunks`` pieces beside a GEMM of ``gemm_s``.

    TransformerEngine's userbuffers overlap (Megatron's --tp-comm-overlap) splits a sequence-parallel all-gather into
    t chunks sent round the ring while the GEMM works on the chunk it already holds, and feeds a reduce-scatter chunk
    by chunk from the GEMM before it. With c the collective's time and g the GEMM's, the pair takes
    ``max(c, g (t - 1) / t) + g / t`` (one GEMM chunk has nothing to hide behind it: the last after the ring, or the
    first before the reduce-scatter starts), so ``max(0, c - g (t - 1) / t)`` of the collective is on the critical path.
    """
    c = _check.non_negative("comm_s", comm_s)
    g = _check.non_negative("gemm_s", gemm_s)
    t = _check.positive_int("chunks", chunks, MAX_DEGREE)
    return max(0.0, c - g * (t - 1) / t)


def _beside_blocks(fab: Any, mach: Machine) -> tuple[int, int]:
    """(NCCL's blocks, the card's SMs) for :func:`beside_collective_factor`; (0, 0) where the rule is off or either is not
    known (the fabric's ring channels: one block each; the catalogue's SM count)."""
    if not COLLECTIVE_INTERFERENCE or not mach.key:
        return 0, 0
    from mlcalc.accelerators import spec
    sms = spec(mach.key).sm_count or 0
    blocks = int(getattr(fab, "ring_channels", 0) or 0)
    return (blocks, sms) if 0 < blocks < sms else (0, 0)


def _tp_overlap_gemms(model: ModelConfig, run: Machine, *key: Any) -> tuple[float, ...]:
    """:func:`_tp_overlap_gemms_of`, remembered where its inputs can be a key."""
    try:
        return _tp_overlap_gemms_of(model, run, *key)
    except TypeError:  # a model or machine that cannot be a key
        return _tp_overlap_gemms_of.__wrapped__(model, run, *key)


@lru_cache(maxsize=1024)  # bounded: 1,024 (model, machine, shape) rows
def _tp_overlap_gemms_of(model: ModelConfig, run: Machine, tokens: int, tp: int, ep: int, moe: bool,
                         fp8: bool) -> tuple[float, ...]:
    """One layer's GEMM seconds each tensor-parallel collective pairs with under the overlap: (forward: QKV, attention
    out, FC1, FC2; backward: attention out's and FC2's input gradients, QKV's and FC1's weight gradients)."""
    speed = (run.fp8_matmul_speedup or 1.0) if fp8 else 1.0

    def sec(m: int, n: int, k: int, count: int) -> float:
        return 2.0 * m * n * k * count / (run.matmul_flops_per_s(m, n, k) * speed)

    rows = {label: (m, n, k, c) for m, n, k, c, label in layer_products(model, tokens, moe, tp, ep, fused_qkv=True)}
    qkv = rows.get("attention qkv") or next(rows[k] for k in ("attention q", "mla q up") if k in rows)
    out = rows["attention out"]
    f_in, f_out = rows.get("mlp in", (0, 0, 0, 0)), rows.get("mlp out", (0, 0, 0, 0))
    fwd = (sec(*qkv), sec(*out), sec(*f_in) if f_in[3] else 0.0, sec(*f_out) if f_out[3] else 0.0)
    bwd = (sec(out[0], out[2], out[1], out[3]), sec(f_out[0], f_out[2], f_out[1], f_out[3]) if f_out[3] else 0.0,
           sec(qkv[1], qkv[2], qkv[0], qkv[3]), sec(f_in[1], f_in[2], f_in[0], f_in[3]) if f_in[3] else 0.0)
    return fwd + bwd


def _tp_overlap_pass_s(model: ModelConfig, run: Machine, tokens: int, tp: int, ep: int, layers: int, fp8: bool,
                       ag: float, rs: float) -> tuple[float, float]:
    """Exposed tensor-parallel seconds of one forward and one backward pass of ``layers`` layers with the overlap
    (:func:`tp_overlap_exposed_s` per collective and its GEMM; a MoE layer's MLP collectives stay exposed)."""
    n_moe = round(model.n_moe_layers * layers / model.n_layers)
    fwd = bwd = 0.0
    for n, moe in ((layers - n_moe, False), (n_moe, True)):
        if not n:
            continue
        qkv, out, f_in, f_out, d_out, d_fout, w_qkv, w_fin = _tp_overlap_gemms(model, run, tokens, tp, ep, moe, fp8)
        f = tp_overlap_exposed_s(ag, qkv, tp) + tp_overlap_exposed_s(rs, out, tp)
        b = tp_overlap_exposed_s(ag, d_out, tp) + tp_overlap_exposed_s(rs, w_qkv, tp)
        if moe:
            f, b = f + ag + rs, b + ag + rs
        else:
            f += tp_overlap_exposed_s(ag, f_in, tp) + tp_overlap_exposed_s(rs, f_out, tp)
            b += tp_overlap_exposed_s(ag, d_fout, tp) + tp_overlap_exposed_s(rs, w_fin, tp)
        fwd, bwd = fwd + n * f, bwd + n * b
    return fwd, bwd


@lru_cache(maxsize=1024)
def _with_layers_of(model: ModelConfig, n_layers: int) -> ModelConfig:
    return model.replace(n_layers=n_layers)


def _with_layers(model: ModelConfig, n_layers: int) -> ModelConfig:
    """``model.replace(n_layers=n_layers)``, remembered (a ModelConfig is frozen, and validating one is slow)."""
    try:
        return _with_layers_of(model, n_layers)
    except TypeError:  # a model that cannot be a key
        return model.replace(n_layers=n_layers)


def training_fit(model: ModelConfig, layout: Layout, *, seq_len: int, device_bytes: float, engine: str = "eager",
                 reserve_fraction: float = MEMORY_RESERVE_FRACTION, dtype: str = "bf16",
                 steady_state: bool = False) -> Any:
    """Per-GPU memory of ``layout`` from the training-fit chapter's model (:func:`mlcalc.memory.training_memory`)
    with the arguments the engine's program implies, and whether it fits ``device_bytes``.

    eager: fp32 weights and AdamW with autocast (``"fp32-adam"``), Hugging Face's loss (12 bytes per
    logit); megatron: mixed-precision Adam (``"zero-mixed-adam"``), fp32 logits; both count each layer
    of the model in hand (``activations="architecture"``). Context parallelism splits the sequence and
    joins the ZeRO group (dp x cp); expert parallelism spreads the routed experts; uneven pipeline
    stages count the fullest one. ``reserve_fraction`` of the device is held back (CUDA context, NCCL
    buffers, fragmentation: a stated assumption). The pipeline ranks hold the micro-batches the layout's
    schedule keeps in flight (:func:`mlcalc.memory.pipeline_in_flight`) for its ``grad_accum`` micro-batches,
    or for as many as its steady state needs with ``steady_state`` (a layout whose accumulation is not chosen
    yet). megatron counts Megatron-core's kernels (``program="megatron"``), and with ``dtype="fp8"`` linear
    layers' inputs kept in FP8.
    """
    import mlcalc.memory as memory  # (not `from mlcalc import`: no importlib fromlist step, a search calls it often)

    _check.choice("engine", engine, ENGINES)
    if not isinstance(layout, Layout):
        raise ValueError(f"layout={layout!r} is not allowed: it must be a steptime.Layout")
    s = _check.positive_int("seq_len", seq_len)
    L, pp = model.n_layers, layout.pp
    if pp > L:
        raise ValueError(f"pp={pp!r} is not allowed: at most n_layers={L} stages")
    _check.choice("dtype", dtype, ("bf16", "fp8"))
    dev = _check.positive("device_bytes", device_bytes)  # (memory.training_memory's first check)
    held = _training_held(model, layout, s, engine, steady_state, reserve_fraction, dtype)
    return memory._fit_on(held, dev, layout.zero)  # memory.training_memory's answer on this device


def _training_held(model: ModelConfig, layout: Layout, s: int, engine: str, steady_state: bool,
                   reserve_fraction: float = MEMORY_RESERVE_FRACTION, dtype: str = "bf16") -> Any:
    """:func:`training_fit`'s memory but the device's share, of arguments its checks have passed (a planner checks
    its layouts once, then fits each on several devices: ``memory._fit_on(held, device_bytes, layout.zero)``)."""
    key = (model, layout, s, engine, reserve_fraction, dtype, steady_state)
    try:
        return _fit_held(*key)
    except TypeError:  # an input that cannot be a key
        return _fit_held.__wrapped__(*key)


# training_fit's memory on any device: memory.training_memory's device-independent parts of the arguments the engine's
# program implies (the device's own share is added per call, as training_memory adds it). Remembered (typed),
# 4,096 kept: a search fits each layout on every chip.
@lru_cache(maxsize=4096, typed=True)
def _fit_held(model: ModelConfig, layout: Layout, s: int, engine: str, reserve_fraction: float, dtype: str,
              steady_state: bool) -> Any:
    import mlcalc.memory as memory  # (not `from mlcalc import`: no importlib fromlist step)

    L, pp = model.n_layers, layout.pp
    chunked = layout.schedule in ("interleaved", "dualpipe") or layout.balanced_stages
    # the plain stages of an uneven split: each counted as the fullest (its layers rounded up); interleaved, DualPipe
    # and balanced stages: pipeline_in_flight counts each chunk's own layers
    staged = model if (L % pp == 0 or chunked) else _with_layers(model, -(-L // pp) * pp)
    tp = layout.tp
    # memory.training_memory's arguments but the device, in its order (model, micro_batch, seq_len, dp, tp, pp,
    # zero_stage, convention, recompute, sequence_parallel, flash_attention, overhead_fraction, offload_optimizer,
    # activations, loss, ep, schedule, virtual_stages, n_micro, balanced_stages, program, fp8_activations)
    return memory._held_of(staged, layout.micro_batch, _split(s, layout.cp), layout.dp * layout.cp, tp, pp, layout.zero,
                           "fp32-adam" if engine == "eager" else "zero-mixed-adam", layout.recompute,
                           layout.sequence_parallel and tp > 1, True, reserve_fraction, False, "architecture",
                           "hf" if engine == "eager" else "fp32-logits", layout.ep,
                           layout.schedule if pp > 1 else "1f1b", layout.virtual_stages,
                           0 if (steady_state and layout.schedule != "gpipe") else layout.grad_accum,
                           layout.balanced_stages and pp > 1, "megatron" if engine == "megatron" else "hf",
                           engine == "megatron" and dtype == "fp8")


def eager_memory(model: ModelConfig, layout: Layout, *, seq_len: int) -> Any:
    """Peak memory of the eager program in ``layout`` phase by phase (:func:`mlcalc.memory.eager_layout_peak`:
    one GPU, FSDP2 = ZeRO-3, FSDP's SHARD_GRAD_OP = ZeRO-2 without pipelining, DTensor tensor parallel, GPipe /
    1F1B pipelines, and their mixes), or None for a layout that model does not cover (DDP or ZeRO-1 over several
    replicas, context or expert parallel, interleaved or DualPipe schedules, selective recomputation): those take
    :func:`training_fit`."""
    from mlcalc import memory

    lay = layout
    grad_op = lay.dp > 1 and lay.zero == 2 and lay.pp == 1  # PyTorch's ZeRO-2: FSDP without reshard after forward
    if (lay.dp > 1 and lay.zero != 3 and not grad_op) or lay.cp > 1 or lay.ep > 1 or lay.recompute == "selective" or (
            lay.pp > 1 and lay.schedule not in memory.PIPELINE_SCHEDULES) or model.n_heads % lay.tp \
            or lay.pp > model.n_layers:
        return None
    return memory.eager_layout_peak(model, lay.micro_batch, seq_len, tp=lay.tp, pp=lay.pp, dp=lay.dp,
                                    fsdp=lay.dp > 1, sequence_parallel=lay.sequence_parallel, recompute=lay.recompute,
                                    schedule=lay.schedule if lay.pp > 1 else "1f1b",
                                    n_micro=lay.grad_accum, reshard_after_forward=not grad_op)


def default_system(chip: str) -> str | None:
    """The network system (mlcalc/data/links.json) a chip trains in by default, from the catalogue."""
    from mlcalc.accelerators import spec

    sys_key = spec(chip).extra.get("training_system")
    return None if sys_key is None else str(sys_key)


class _Stage(NamedTuple):
    """One micro-batch's kernels on one pipeline stage (:func:`_stage_kernels`): what :func:`predict_step` reads."""

    att: Mapping[str, float]  # attention FLOP by phase
    ops: Mapping[str, float]  # host operations by phase
    forward_s: float  # the forward pass (kernels and host)
    backward_s: float  # the backward pass
    device_s: Mapping[str, float]  # device time of each class of the passes (the optimizer apart: not a stage's)
    host_s: Mapping[str, float]  # host time by phase


# One stage's kernels depend on the shapes one GPU runs (the model, the machine, the micro-batch, tp, ep, cp, the
# stage's layers, whether it holds the output layer, recomputation, the engine) and not on dp, pp or the number of
# micro-batches: a search over layouts computes each once. The optimizer, the one part that depends on dp and pp
# (the GPU's share of the parameters), is computed per layout (:func:`_optimizer_bytes`). Bounded: 1,024 stages.
@lru_cache(maxsize=1024)
def _stage_kernels_of(model: ModelConfig, run: Machine, b: int, s: int, full: bool, fp32_experts: bool, tp: int, ep: int,
                      cp: int, layers: int, logits: bool, seq_par: bool, engine: str, fp8: bool, fsdp: bool,
                      unfused: bool = False, core_recomputed: bool = False,
                      slow: tuple[float, float] = (1.0, 1.0)) -> _Stage:
    L = model.n_layers
    att_rate = run.attention_flops_per_s(model.qk_head_dim, _split(s, cp))
    heads_share = _split(model.n_heads, tp) / model.n_heads
    g = step_gemms(model, b, s, full, fp32_experts, tp, ep, cp, layers, logits)
    a = MappingProxyType({k: val * layers / L * heads_share / cp for k, val in attention_flop(model, b, s, full).items()})
    e = elementwise_bytes(model, b, s, full, tp=tp, cp=cp, ep=ep, sequence_parallel=seq_par, layers=layers,
                          logits=logits, engine=engine, card=run.key)
    if unfused:  # the products over the whole square at their batched shapes' rates, the scores through memory
        u = unfused_attention(model, b, s, tp=tp, layers=layers, recomputed=core_recomputed)
        a = MappingProxyType({ph: u.flop[ph] for ph in ("forward", "backward")})
        att_rate = (a["forward"] + a["backward"]) / sum(f / run.matmul_flops_per_s(*shape) for shape, f in u.products)
        e = MappingProxyType({**e, "forward: layers": e["forward: layers"] + u.score_bytes["forward"],
                              "backward: layers": e["backward: layers"] + u.score_bytes["backward"]})
    o = MappingProxyType({k: (0.0 if engine == "megatron" else val * layers / L)
                          for k, val in op_counts(model, full).items()})
    x = _dist_host_extra(run, tp, fsdp, layers, full, True, seq_par) if engine == "eager" else None
    st = _passes(model, g, a, att_rate, e, o, run, layers, full, fp8, x, slow)
    return _Stage(a, o, st.parts_s["forward"], st.parts_s["backward"],
                  MappingProxyType({k: v for k, v in st.device_s.items() if k != "optimizer"}), st.host_s)


def _megatron_machine(mach: Machine) -> Machine:
    """The machine as the megatron engine runs it: the host runs ahead of the device (no host time)."""
    try:
        return _megatron_machine_of(mach)
    except TypeError:  # a machine that cannot be a key
        return _megatron_machine_of.__wrapped__(mach)


@lru_cache(maxsize=64)  # bounded: 64 machines
def _megatron_machine_of(mach: Machine) -> Machine:
    return mach._replace(host_s_per_op=0.0, host_s_per_backward_op=0.0, host_s_per_checkpoint=0.0)


@lru_cache(maxsize=4096)  # bounded: 4,096 (p, m, v)
def _bubble_fraction(pp: int, m: int, v: int) -> float:
    from mlcalc import parallel

    return parallel.bubble_fraction(pp, m, v)


def _stage_kernels(model: ModelConfig, run: Machine, *key: Any) -> _Stage:
    """:func:`_stage_kernels_of`, remembered where its inputs can be a key."""
    try:
        return _stage_kernels_of(model, run, *key)
    except TypeError:  # a model or machine that cannot be a key
        return _stage_kernels_of.__wrapped__(model, run, *key)


class _Timing(NamedTuple):
    """The time of one optimizer step (:func:`_timing`): the time fields of :class:`StepPrediction` and what its
    notes need."""

    step_s: float
    compute_s: float
    host_s: float
    comm_s: float
    comm_exposed_s: float
    bubble_s: float
    optimizer_s: float
    parts_s: Mapping[str, float]
    comm_parts_s: Mapping[str, tuple[float, float]]
    machine: Machine
    seq_len: int
    eager_pipe: bool
    dual: bool
    dpg: int


class StepTiming(NamedTuple):
    """The time of one optimizer step of a layout, as :func:`predict_step` predicts it (per GPU, seconds)."""

    step_s: float  # wall time of one optimizer step
    bubble_s: float  # pipeline bubble
    comm_exposed_s: float  # communication on the critical path
    parts_s: Mapping[str, float]  # sums to step_s


def predict_step_time(model: ModelConfig, layout: Layout, *, seq_len: int, machine: Machine | str,
                      gpus_per_node: int = 8, dtype: str = "bf16", engine: str = "eager", system: str | None = None,
                      fabric: Any = None) -> StepTiming:
    """:func:`predict_step`'s step time, bubble, exposed communication and parts, without its memory and FLOP
    counts (one computation: the same numbers; what a layout search needs)."""
    t = _timing(model, layout, seq_len, machine, gpus_per_node, dtype, engine, system, fabric)
    return StepTiming(_check.result("step_s", t.step_s), t.bubble_s, t.comm_exposed_s, t.parts_s)


def _timing(model: ModelConfig, layout: Layout, seq_len: int, machine: Machine | str, gpus_per_node: int,
            dtype: str, engine: str, system: str | None, fabric: Any) -> _Timing:
    """The time of one optimizer step of :func:`predict_step` (its arguments checked, in its order)."""
    if not isinstance(layout, Layout):
        raise ValueError(f"layout={layout!r} is not allowed: it must be a steptime.Layout")
    _check.choice("engine", engine, ENGINES)
    _check.choice("dtype", dtype, ("bf16", "fp8"))
    mach = catalogue_machine(machine) if isinstance(machine, str) else machine
    if not isinstance(mach, Machine):
        raise ValueError(f"machine={machine!r} is not allowed: a steptime.Machine or a catalogue key")
    if dtype == "fp8" and not mach.fp8_matmul_speedup:
        raise ValueError(f"dtype='fp8' is not allowed on {mach.name}: no published fp8 matmul rate for it")
    gpn = _check.positive_int("gpus_per_node", gpus_per_node, 1024)
    lay = layout
    b, s, _ = _tokens(lay.micro_batch, seq_len)
    tp, pp, dp, cp, ep = lay.tp, lay.pp, lay.dp, lay.cp, lay.ep
    if ep > 1 and not model.is_moe:
        raise ValueError(f"ep={ep!r} is not allowed: {model.name} has no experts")
    L = model.n_layers
    if pp > L:
        raise ValueError(f"pp={pp!r} is not allowed: at most n_layers={L} stages")
    v = lay.virtual_stages
    if lay.unfused_attention and engine == "eager":
        raise ValueError("unfused_attention=True is not allowed with engine='eager': the eager program runs "
                         "SDPA (flash) attention; unfused attention is a rule of the megatron engine")
    full = lay.recompute == "full"
    m = lay.grad_accum
    fp32_experts = engine == "eager" and HF_EXPERTS_IN_FP32
    shard = 1.0 / (dp * cp) if lay.zero >= 1 else 1.0
    run = _megatron_machine(mach) if engine == "megatron" else mach

    fsdp = dp * cp > 1 and lay.zero == 3
    seq_par = lay.sequence_parallel and tp > 1

    def stage(layers: int, logits: bool, slow: tuple[float, float] = (1.0, 1.0)) -> _Stage:
        """One micro-batch's kernels on a stage of ``layers`` layers (with the output layer if ``logits``)."""
        return _stage_kernels(model, run, b, s, full, fp32_experts, tp, ep, cp, layers, logits, seq_par, engine,
                              dtype == "fp8", fsdp, lay.unfused_attention, lay.recompute != "none", slow)

    def _beside_stage(st_: _Stage, comm_f: float, comm_b: float, blocks_: int, sms_: int) -> _Stage:
        """The fullest stage again, its passes' kernels slowed beside ``comm_f`` and ``comm_b`` seconds of
        collectives (:func:`beside_collective_factor`)."""
        d_f = sum(val for k_, val in st_.device_s.items() if k_.startswith("forward"))
        d_b = sum(val for k_, val in st_.device_s.items() if k_.startswith("backward"))
        return stage(L_here, logits_here, (beside_collective_factor(comm_f, d_f, blocks_, sms_),
                                           beside_collective_factor(comm_b, d_b, blocks_, sms_)))

    if lay.balanced_stages and pp > 1:  # (L + 2) / pp places a stage: a middle one, or the last with the output layer
        places = -(-(L + 2) // pp)
        mid = stage(places, False)
        last = stage(places - 1, True)

        def busy(c: _Stage) -> float:
            return float(c.forward_s + c.backward_s)

        L_here, st = max(((places, mid), (places - 1, last)), key=lambda c: busy(c[1]))
        logits_here = st is last
    else:
        L_here = -(-L // pp)  # the fullest stage: its layers and the output layer
        st = stage(L_here, True)
        logits_here = True
    att, ops = st.att, st.ops
    fwd, bwd = st.forward_s, st.backward_s
    # the optimizer on its share (_optimizer_bytes of the layout's degrees, checked by the Layout)
    opt = _adam_bytes(engine, _params_here(model, tp, pp, ep) * shard) / run.memory_bytes_per_s
    device_mb = sum(st.device_s.values())
    other_mb = fwd + bwd  # a pipeline stage without the output layer (what the other stages take per micro-batch)
    eager_pipe = pp > 1 and engine == "eager" and lay.schedule in ("1f1b", "gpipe")
    if eager_pipe:
        # Each stage is its own process: its host issues a micro-batch's work while its device still runs the
        # previous one or waits for the neighbouring stage, so per micro-batch a stage takes the longer of its
        # device time and its host time (not operation by operation, as one GPU's step does).
        dev_f = sum(val for k, val in st.device_s.items() if k.startswith("forward"))
        dev_b = sum(val for k, val in st.device_s.items() if k.startswith("backward"))
        fwd, bwd = max(dev_f, st.host_s["forward"]), max(dev_b, st.host_s["backward"])
        att_rate = mach.attention_flops_per_s(model.qk_head_dim, _split(s, cp))
        g_o = step_gemms(model, b, s, full, fp32_experts, tp, ep, cp, L_here, False)
        eb_o = elementwise_bytes(model, b, s, full, tp=tp, cp=cp, ep=ep,
                                 sequence_parallel=lay.sequence_parallel and tp > 1, layers=L_here, logits=False,
                                 engine=engine, optimizer_shard=shard, pp=pp, card=run.key)
        eb_o = MappingProxyType({**eb_o, "loss: logits (fp32 copy, log-softmax, its gradient)": 0.0})
        extra_o = _dist_host_extra(run, tp, dp * cp > 1 and lay.zero == 3, L_here, full, False, seq_par)
        so = _passes(model, g_o, att, att_rate, eb_o, ops, run, L_here, full, dtype == "fp8", extra_o)
        other_mb = sum(max(sum(val for k, val in so.device_s.items() if k.startswith(ph)), so.host_s[ph])
                       for ph in ("forward", "backward"))

    # ---- communication
    comm: dict[str, tuple[float, float]] = {}
    sys_key = system or (default_system(mach.key) if mach.key else None)
    needs_net = lay.n_gpus > 1
    if needs_net and fabric is None and sys_key is None:
        raise ValueError(f"system=None is not allowed for {lay.n_gpus} GPUs on {mach.name}: name a network "
                         "system of mlcalc/data/links.json or pass a fabric")

    def fab(ranks: int, stride: int) -> Any:
        return fabric if fabric is not None else _fabric_of(sys_key, ranks, stride, gpn)

    tokens_gpu = b * _split(s, cp)
    act = tokens_gpu * model.hidden * ACTIVATION_BYTES
    tp_f = tp_b = 0.0
    if tp > 1:
        f_tp = fab(tp, 1)
        # Two blocks per layer (attention, MLP), each with one collective pair a pass: two all-reduces without
        # sequence parallelism, two all-gathers and two reduce-scatters with it (Korthikanti et al. 2022, 4.2.2:
        # "the communication bandwidth used is the same"), as mlcalc.parallel.tensor_parallel_ops counts them.
        if lay.sequence_parallel:
            one = 2 * (_collective_s(act, f_tp, "all_gather") + _collective_s(act, f_tp, "reduce_scatter"))
        else:
            one = 2 * _collective_s(act, f_tp, "all_reduce")
        tp_f, tp_b = one * L_here, one * L_here * (2 if full else 1)
        if full and lay.distribute_checkpoints:  # each checkpointed input gathered before its layer's recomputation
            tp_b += _collective_s(act, f_tp, "all_gather") * L_here
        total_tp = m * (tp_f + tp_b)
        if lay.tp_comm_overlap:  # (sequence parallel: the Layout checks it) each collective beside its GEMM
            ag, rs = _collective_s(act, f_tp, "all_gather"), _collective_s(act, f_tp, "reduce_scatter")
            tp_f, tp_b = _tp_overlap_pass_s(model, run, tokens_gpu, tp, ep, L_here, dtype == "fp8", ag, rs)
            if full:  # the recomputed forward's collectives, beside its GEMMs again
                tp_b += tp_f
        comm["tensor"] = (total_tp, m * (tp_f + tp_b))
    cp_f = cp_b = 0.0
    if cp > 1:
        f_cp = fab(cp, tp)
        kv = 2 * tokens_gpu * _split(model.n_kv_heads, tp) * model.qk_head_dim * ACTIVATION_BYTES
        if lay.cp_allgather:  # the whole sequence's K and V gathered, their gradients reduce-scattered: exposed
            cp_f = _collective_s(kv * cp, f_cp, "all_gather") * L_here
            cp_b = _collective_s(kv * cp, f_cp, "reduce_scatter") * L_here
            comm["context"] = (m * (cp_f + cp_b), m * (cp_f + cp_b))
        else:
            ring = (cp - 1) * _p2p_s(kv, f_cp) * L_here
            cp_f = max(0.0, ring - st.device_s["forward: attention"])
            cp_b = max(0.0, 2 * ring - st.device_s["backward: attention"])
            comm["context"] = (m * 3 * ring, m * (cp_f + cp_b))
    ep_f = ep_b = 0.0
    if ep > 1:
        f_ep = fab(ep, tp)
        n_moe = round(model.n_moe_layers * L_here / L)
        routed = tokens_gpu / (tp if lay.sequence_parallel else 1) * model.experts_per_token * model.hidden
        a2a = 2 * _all_to_all_s(routed * ACTIVATION_BYTES, f_ep) * n_moe  # dispatch and combine
        ep_f, ep_b = a2a, a2a * (2 if full else 1)
        comm["expert"] = (m * (ep_f + ep_b), m * (ep_f + ep_b))
    pp_f = pp_b = 0.0
    ds_pipe = pp > 1 and lay.deepspeed_pipeline
    ds_send, ways = 0.0, 1
    if ds_pipe:
        # DeepSpeed's PipelineEngine (runtime/pipe/engine.py): with tp > 1 the first output tensor and the input
        # gradient go as PartitionedTensors, 1/t from each rank; a middle stage all-gathers its received input in
        # the forward pass and, in the backward pass, its own output (restored from its part) and the received
        # gradient. Its four transfers a micro-batch (receive activation, send gradient; send activation, receive
        # gradient: schedule.py) are blocking calls in its stream, none beside another.
        f_pp = fab(2, tp * cp * dp)
        ds_send = _p2p_s(act / tp, f_pp)
        gather = _collective_s(act, fab(tp, 1), "all_gather") if tp > 1 else 0.0
        ways = 2 if pp > 2 else 1  # a middle stage both receives and sends each; two stages: one of each a pass
        pp_f, pp_b = ways * ds_send + gather, ways * ds_send + 2 * gather
        comm["pipeline"] = (m * (pp_f + pp_b), m * (pp_f + pp_b))
    elif pp > 1:
        f_pp = fab(2, tp * cp * dp)
        split = tp > 1 and (lay.sequence_parallel or lay.scatter_gather)
        send = _p2p_s(act / (tp if split else 1), f_pp)
        if split and not lay.sequence_parallel:  # scatter/gather: the next stage all-gathers the pieces over NVLink
            send += _collective_s(act, fab(tp, 1), "all_gather")
        send *= v
        pp_f = pp_b = send
        comm["pipeline"] = (m * 2 * send, m * 2 * send)
    z3_f = z3_b = 0.0
    dp_exposed = 0.0
    dpg = dp * cp
    if dpg > 1:
        f_dp = fab(dpg, tp)
        n_here = _params_here(model, tp, pp, ep)  # (params_per_gpu of the layout's checked degrees)
        grads = n_here * GRAD_BYTES[engine]
        blocks, sms = _beside_blocks(f_dp, mach)
        if lay.zero == 3:
            ag = _collective_s(n_here * ACTIVATION_BYTES, f_dp, "all_gather")
            rs = _collective_s(grads, f_dp, "reduce_scatter")
            if blocks and not eager_pipe:  # (COLLECTIVE_INTERFERENCE) each micro-batch's passes beside the collectives
                sl = _beside_stage(st, ag, ag + rs, blocks, sms)
                fwd, bwd = sl.forward_s, sl.backward_s
            z3_f = max(0.0, ag - fwd)
            z3_b = max(0.0, ag + rs - bwd)
            comm["data"] = (m * (2 * ag + rs), m * (z3_f + z3_b))
        else:
            red = _collective_s(grads, f_dp, "all_reduce" if lay.zero == 0 else "reduce_scatter")
            ag = _collective_s(n_here * ACTIVATION_BYTES, f_dp, "all_gather") if lay.zero in (1, 2) else 0.0
            # DeepSpeed's pipeline reduces after the flush (schedule.py: ReduceTiedGrads, ReduceGrads, OptimizerStep
            # follow the last backward pass) and gathers the updated parameters after the step: nothing hides them
            if blocks and not ds_pipe and not eager_pipe:  # (COLLECTIVE_INTERFERENCE) the last backward pass beside
                # the reduction, the first forward one beside ZeRO-1/2's gather: their growth counted here, once
                sl = _beside_stage(st, ag, red, blocks, sms)
                grow = sl.forward_s - fwd + sl.backward_s - bwd
                dp_exposed = max(0.0, red - sl.backward_s) + max(0.0, ag - sl.forward_s) + grow
            else:
                dp_exposed = red + ag if ds_pipe else max(0.0, red - bwd) + max(0.0, ag - fwd)
            comm["data"] = (red + ag, dp_exposed)
    tied = 0.0
    if ds_pipe and model.tied_embeddings:
        # the tied embedding's gradient, all-reduced between the first and the last stage after the flush
        # (PipelineModule.allreduce_tied_weight_gradients)
        tied = _collective_s(model.vocab * model.hidden / tp * GRAD_BYTES[engine], fab(2, tp * cp * dp * (pp - 1)),
                             "all_reduce")
        comm["pipeline"] = (comm["pipeline"][0] + tied, comm["pipeline"][1] + tied)

    dual = lay.schedule == "dualpipe"
    if dual:  # the paired micro-batch's computation hides the all-to-all and the sends
        ep_f, ep_b = max(0.0, ep_f + pp_f - fwd), max(0.0, ep_b + pp_b - bwd)
        pp_f = pp_b = 0.0
        if "expert" in comm:
            comm["expert"] = (comm["expert"][0], m * (ep_f + ep_b))
        if "pipeline" in comm:
            comm["pipeline"] = (comm["pipeline"][0], 0.0)
    per_mb = fwd + bwd + tp_f + tp_b + cp_f + cp_b + ep_f + ep_b + pp_f + pp_b + z3_f + z3_b
    frac = 0.0
    if pp > 1:
        if dual:
            frac = (pp // 2 - 1) / m
        else:
            frac = _bubble_fraction(pp, m, v if lay.schedule == "interleaved" else 1)
    # the bubble: the other stages' time of the micro-batches that fill and drain the pipeline (with the output
    # layer on the last stage, the other stages are the faster ones)
    bubble = frac * m * (per_mb - fwd - bwd + other_mb if eager_pipe else per_mb)
    if ds_pipe:
        # DeepSpeed's blocking transfers: the step's critical path holds 4 m + 2 (p - 4) of them with a middle stage,
        # 2 m with two stages (a max-plus run of TrainSchedule, tests/core/test_deepspeed_pipeline.py), not the
        # micro-batch's share of them again for each of the fill and drain slots
        bubble = frac * m * (per_mb - 2 * ways * ds_send) + (2 * (pp - 4) * ds_send if pp > 2 else 0.0)
    if eager_pipe:  # a host-bound stage's host issues on through the waits: its device's idle time absorbs the bubble
        dev_mb = sum(st.device_s.values())
        bubble = max(0.0, bubble - m * max(0.0, fwd + bwd - dev_mb))
    step = m * per_mb + bubble + dp_exposed + tied + opt
    parts = {
        "forward (kernels and host)": m * fwd, "backward (kernels and host)": m * bwd,
        "tensor-parallel collectives": m * (tp_f + tp_b), "context-parallel exchange (exposed)": m * (cp_f + cp_b),
        "expert all-to-all": m * (ep_f + ep_b), "pipeline sends": m * (pp_f + pp_b) + tied,
        "ZeRO-3 gathers (exposed)": m * (z3_f + z3_b), "pipeline bubble": bubble,
        "data-parallel reduction (exposed)": dp_exposed, "optimizer step": opt,
    }
    host_hidden_not = m * max(0.0, fwd + bwd - device_mb)
    total_comm = sum(t for t, _ in comm.values())
    exposed = sum(e for _, e in comm.values())
    return _Timing(step, m * device_mb, host_hidden_not, total_comm, exposed, bubble, opt,
                   MappingProxyType(parts), MappingProxyType(comm), mach, s, eager_pipe, dual, dpg)


def predict_step(model: ModelConfig, layout: Layout, *, seq_len: int, machine: Machine | str,
                 gpus_per_node: int = 8, dtype: str = "bf16", engine: str = "eager", system: str | None = None,
                 fabric: Any = None) -> StepPrediction:
    """One optimizer step of ``model`` trained in ``layout`` on ``machine`` (see :data:`RULES`).

    Per GPU: the products at their sharded shapes (:func:`step_gemms`) at the machine's rate for each
    shape, attention, element-wise and host work (:func:`_passes`) of one micro-batch on the fullest
    pipeline stage (its layers and the output layer), the optimizer on the GPU's share; communication from
    :mod:`mlcalc.network` on the fabric of each group; memory from :func:`mlcalc.memory.training_memory`.
    ``machine``: a :class:`Machine` or a catalogue key (:func:`catalogue_machine`); ``fabric``: one
    :class:`mlcalc.network.Fabric` used for every group (e.g. a measured node), else ``system``'s links.

    Narayanan et al. 2021, Table 1: GPT 1008B on 3,072 A100s ran at 163 TFLOP/s per GPU; this function's
    step for that layout (:func:`mlcalc.training_runs.check`) gives the same within 5 %:

    >>> from mlcalc import training_runs
    >>> round(training_runs.check("Megatron-LM GPT 1008B (3072 A100)").predicted / 163, 1)
    1.0
    """
    from mlcalc import compute

    t = _timing(model, layout, seq_len, machine, gpus_per_node, dtype, engine, system, fabric)
    mach, lay, s, step = t.machine, layout, t.seq_len, t.step_s
    tp, pp, cp, ep, full = lay.tp, lay.pp, lay.cp, lay.ep, lay.recompute == "full"
    dpg, eager_pipe, dual = t.dpg, t.eager_pipe, t.dual
    ds_pipe = pp > 1 and lay.deepspeed_pipeline

    # ---- memory: the eager program phase by phase where it is modelled (memory.eager_layout_peak), else the
    # training-fit chapter's model
    cap = mach.device_bytes or None
    eager_peak = eager_memory(model, lay, seq_len=s) if engine == "eager" else None
    if eager_peak is not None:
        mem_parts = dict(eager_peak.parts_bytes)
        peak = eager_peak.total_bytes
        fits = peak + MEMORY_RESERVE_FRACTION * cap <= cap if cap else True
    else:
        fit = training_fit(model, lay, seq_len=s, device_bytes=cap or 1e18, engine=engine,
                           reserve_fraction=MEMORY_RESERVE_FRACTION if cap else 0.0, dtype=dtype)
        mem_parts = {k: val for k, val in fit.parts_bytes.items() if k != "overhead (stated)"}
        peak = sum(mem_parts.values())
        fits = fit.fits if cap else True

    # ---- FLOPs (one convention: compute.palm_flops_per_token)
    tokens = lay.global_batch * s
    mf = compute.palm_flops_per_token(model, s) * tokens
    hf = compute.palm_hardware_flops_per_token(model, s, lay.recompute) * tokens
    peak_f = mach.peak_flops_per_s
    n = lay.n_gpus
    mfu = mf / (step * n * peak_f) if peak_f else math.nan
    hfu = hf / (step * n * peak_f) if peak_f else math.nan
    notes = [RULES["flops"], RULES["host"]]
    dist_host = engine == "eager" and (
        (tp > 1 and (mach.host_s_per_dtensor_op or mach.host_s_per_dtensor_backward_op))
        or (dpg > 1 and lay.zero == 3 and (mach.host_s_per_fsdp_layer or mach.host_s_per_fsdp_backward_layer)))
    notes += [RULES[k] for k, on in (("eager-pipeline", eager_pipe), ("eager-dist-host", bool(dist_host)),
                                     ("eager-recompute-host", bool(dist_host) and tp > 1 and full),
                                     ("eager-fsdp-tp-host", bool(dist_host) and tp > 1 and dpg > 1 and lay.zero == 3
                                      and _fsdp_dtensor_measured(mach))) if on]
    notes += [RULES[k] for k, on in (("tensor", tp > 1 and not lay.tp_comm_overlap),
                                     ("tensor-overlap", tp > 1 and lay.tp_comm_overlap),
                                     ("distributed-checkpoints", tp > 1 and full and lay.distribute_checkpoints),
                                     ("pipeline", pp > 1),
                                     ("scatter-gather", pp > 1 and tp > 1 and lay.scatter_gather
                                      and not lay.sequence_parallel and not ds_pipe),
                                     ("context", cp > 1 and not lay.cp_allgather),
                                     ("context-allgather", cp > 1 and lay.cp_allgather),
                                     ("expert", ep > 1), ("unfused-attention", lay.unfused_attention),
                                     ("fsdp", dpg > 1 and lay.zero == 3),
                                     ("data", dpg > 1 and lay.zero < 3 and not ds_pipe),
                                     ("deepspeed-pipeline", ds_pipe), ("dualpipe", dual)) if on]
    return StepPrediction(
        _check.result("step_s", step), _check.result("compute_s", t.compute_s), t.host_s, t.comm_s, t.comm_exposed_s, t.bubble_s,
        t.optimizer_s, t.parts_s, t.comm_parts_s, peak, MappingProxyType(mem_parts), cap, fits, tokens / step, mf, hf,
        mfu, hfu, tuple(notes))


def textbook_step_time(model: ModelConfig, batch: int, seq_len: int, flops_per_s: float, mfu: float = 1.0) -> float:
    """``6 N T / (flops_per_s x mfu)``: N active parameters, T = batch x seq_len tokens (Kaplan et al. 2020)."""
    _, _, T = _tokens(batch, seq_len)
    rate = _check.positive("flops_per_s", flops_per_s)
    u = _check.fraction("mfu", mfu)
    from mlcalc import compute  # the 6N convention's home (imported here, as elsewhere in this module)
    return compute.FLOPS_PER_PARAM_TOKEN * model.n_active_params() * T / (rate * u)


def implied_mfu(model: ModelConfig, batch: int, seq_len: int, step_s: float, peak_flops_per_s: float) -> float:
    """The MFU a step time means under the 6ND convention: ``6 N T / (step_s x peak)``."""
    _, _, T = _tokens(batch, seq_len)
    t = _check.positive("step_s", step_s)
    peak = _check.positive("peak_flops_per_s", peak_flops_per_s)
    from mlcalc import compute
    return compute.FLOPS_PER_PARAM_TOKEN * model.n_active_params() * T / (t * peak)



# Object parameters (a ModelConfig, a Fabric, a list of offers...) are checked by type before each call.
_check.guard(globals())
