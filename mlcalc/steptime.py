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

import math
import statistics
from types import MappingProxyType
from typing import Callable, Iterable, Mapping, NamedTuple, Sequence

from mlcalc import _check
from mlcalc.models import ModelConfig

MAX_TOKENS = 10**9  # batch x seq_len above this is refused (nothing real trains a step of a billion tokens)


class Gemm(NamedTuple):
    """One matrix product of a training step: (m x k) @ (k x n), run ``count`` times."""

    m: int  # rows of the output
    n: int  # columns of the output
    k: int  # inner dimension
    count: int  # how many times per step
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


def machine_from_rates(data: Mapping[str, object], name: str = "", memory_bytes_per_s: float | None = None,
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
              for r in data["matmul"]]  # type: ignore[index, union-attr]
        at = [((float(r["head_dim"]), float(r["seq_len"])), float(r["fwd_bwd_tflops"]) * 1e12)
              for r in data["attention"] if r["kv_heads"] == r["heads"]]  # type: ignore[index, union-attr]
        ew = max(float(r["bytes_per_s"]) for r in data["elementwise"])  # type: ignore[index, union-attr]
        disp = data["dispatch"]  # type: ignore[index]
        host_f, host_b = float(disp["fwd_s_per_op"]), float(disp["bwd_s_per_node"])  # type: ignore[index]
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
    env = data.get("environment", {})  # type: ignore[union-attr]
    date = str(env.get("date_utc", ""))[:10]  # type: ignore[union-attr]
    label = name or f"{env.get('device_name', 'GPU')}, measured {date}"  # type: ignore[union-attr]
    return Machine(label, lambda m, n, k: _nearest(mm, (m, n, k)), lambda d, s: _nearest(at, (d, s)),
                   bw, host_f, host_b, _check.non_negative("fp32_matmul_flops_per_s", fp32_matmul_flops_per_s), ckpt)


def _tokens(batch: int, seq_len: int) -> tuple[int, int, int]:
    b = _check.positive_int("batch", batch)
    s = _check.positive_int("seq_len", seq_len)
    if b * s > MAX_TOKENS:
        raise ValueError(f"batch={b} x seq_len={s} is not allowed: at most {MAX_TOKENS} tokens per step")
    return b, s, b * s


# ---------------------------------------------------------------------------------------------
# FLOPs: every matrix product and attention
# ---------------------------------------------------------------------------------------------


def layer_products(model: ModelConfig, tokens: int, moe_layer: bool) -> list[tuple[int, int, int, int, str]]:
    """Forward products of one layer as (m, n, k, count, label), with HF's separate Q, K, V projections.

    Routed experts are labelled "expert ...": tokens spread evenly, ``tokens x top-k / experts`` rows each.
    """
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
        rows = max(1, round(T * m.experts_per_token / m.n_experts))  # tokens per expert, balanced routing
        out.append((T, m.n_experts, h, 1, "router"))
        out += [(rows, f, h, ins * m.n_experts, "expert in"), (rows, h, f, m.n_experts, "expert out")]
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
               experts_in_fp32: bool = HF_EXPERTS_IN_FP32) -> tuple[Gemm, ...]:
    """Every matrix product of one training step: forward, backward (input and weight gradients),
    and with full recomputation each layer's forward again (counted in the backward phase)."""
    _, _, T = _tokens(batch, seq_len)
    kinds = [(model.n_layers - model.n_moe_layers, False), (model.n_moe_layers, True)]
    out: list[Gemm] = []
    for n_layers, moe in kinds:
        if not n_layers:
            continue
        for mm, n, k, c, label in layer_products(model, T, moe):
            dt = "fp32" if experts_in_fp32 and label.startswith("expert") else "bf16"
            out.append(Gemm(mm, n, k, c * n_layers, f"{label} (fwd)", "forward", dt))
            if recompute:
                out.append(Gemm(mm, n, k, c * n_layers, f"{label} (recomputed fwd)", "backward", dt))
            out.append(Gemm(mm, k, n, c * n_layers, f"{label} (input grad)", "backward", dt))
            out.append(Gemm(n, k, mm, c * n_layers, f"{label} (weight grad)", "backward", dt))
    v, h = model.vocab, model.hidden
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


# ---------------------------------------------------------------------------------------------
# Bytes the element-wise kernels move (Hugging Face eager program, fp32 residual, bf16 autocast)
# ---------------------------------------------------------------------------------------------

# Forward bytes read + written per element, counted from the transformers 5.x modelling code:
RMSNORM_FP32_IN = 28.0  # pow (4+4), mean (4), x*rsqrt (4+4), weight * (4+4): input already fp32
RMSNORM_BF16_IN = 40.0  # the same after .float() of a bf16 input (2+4), then .to(bf16) (4+2)
LAYERNORM = 8.0  # one fused kernel: read 4, write 4
CAST_TO_BF16 = 6.0  # autocast's fp32 -> bf16 copy of an activation (read 4, write 2)
ROPE = 30.0  # q*cos (2+4), rotate_half (neg, cat: 2+2+2+2), *sin (4+4), add (8+4), per bf16 element
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


def elementwise_bytes_per_token_layer(model: ModelConfig) -> Mapping[str, float]:
    """Forward element-wise bytes one layer moves per token, by kind (see the constants above)."""
    m, h = model, model.hidden
    norm_pre = LAYERNORM if m.norm == "layernorm" else RMSNORM_FP32_IN
    norm_post = LAYERNORM if m.norm == "layernorm" else RMSNORM_BF16_IN
    kv = (m.n_heads if m.attention == "mla" else m.n_kv_heads) * m.qk_head_dim
    fused_qkv = m.learned_positions > 0  # GPT-2 layout: one fused QKV projection
    reads_of_norm1 = 1 if (fused_qkv or m.attention == "mla") else 3
    f = m.expert_ffn * m.experts_per_token + m.expert_ffn * m.n_shared_experts if m.is_moe else m.ffn_hidden
    reads_of_norm2 = 1 if not m.gated_mlp else 2
    parts = {
        "norms": 2 * norm_pre * h + (m.norms_per_layer - 2) * norm_post * h,
        "casts of norm outputs to bf16": CAST_TO_BF16 * h * (reads_of_norm1 + reads_of_norm2),
        "residual adds": 2 * RESIDUAL_ADD * h,
    }
    if not m.learned_positions:
        rot = m.n_heads * (m.qk_rope_head_dim or m.head_dim) + kv
        parts["rotary embeddings and casts"] = (ROPE + CAST_TO_BF16) * rot
    if m.qk_norm:
        parts["query/key norms"] = RMSNORM_BF16_IN * (m.q_width + kv)
    if m.gated_mlp:
        parts["activation"] = GATED_ACT * f
    else:
        parts["activation"] = (GELU_PYTHON if m.learned_positions else GELU_FUSED) * f
    if m.is_moe:
        parts["routing (gather, weight, scatter of expert inputs and outputs)"] = 3 * 4.0 * h * m.experts_per_token
    if m.dropout > 0:
        parts["dropout"] = DROPOUT * 2 * h
    return MappingProxyType(parts)


def elementwise_bytes(model: ModelConfig, batch: int, seq_len: int, recompute: bool = False) -> Mapping[str, float]:
    """Bytes the memory-bound kernels of one step move, by phase and kind."""
    _, _, T = _tokens(batch, seq_len)
    layer_fwd = sum(elementwise_bytes_per_token_layer(model).values()) * T * model.n_layers
    mats = model.n_matrix_params() + model.vocab * model.hidden * (0 if model.tied_embeddings else 1)
    mats_tied = model.n_matrix_params() + model.vocab * model.hidden
    embed = 3 * 8.0 * T * model.hidden  # gather (4), final norm in and out, embedding gradient
    return MappingProxyType({
        "forward: layers": layer_fwd,
        "forward: weight casts to bf16": WEIGHT_CAST_BYTES * mats_tied,
        "forward: embedding and final norm": embed / 3 * 2,
        "backward: layers": BACKWARD_OVER_FORWARD * layer_fwd + (layer_fwd if recompute else 0.0),
        "backward: recomputed weight casts": WEIGHT_CAST_BYTES * model.n_matrix_params() if recompute else 0.0,
        "backward: gradient casts to fp32": GRAD_CAST_BYTES * mats,
        "backward: embedding and final norm": embed / 3,
        "loss: logits (fp32 copy, log-softmax, its gradient)": LOSS_BYTES_PER_LOGIT * T * model.vocab,
        "optimizer: fused AdamW": ADAMW_BYTES_PER_PARAM * model.n_params(),
    })


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


def step_time(model: ModelConfig, batch: int, seq_len: int, recompute: bool, machine: Machine,
              experts_in_fp32: bool = HF_EXPERTS_IN_FP32) -> StepTime:
    """Predicted time of one training step on ``machine`` (see the module docstring)."""
    b, s, T = _tokens(batch, seq_len)
    gemms = step_gemms(model, b, s, recompute, experts_in_fp32)
    fp32_rate = machine.fp32_matmul_flops_per_s

    def rate(g: Gemm) -> float:
        bf16 = machine.matmul_flops_per_s(g.m, g.n, g.k)
        return bf16 if g.dtype == "bf16" else (fp32_rate or bf16 / 14.8)

    att = attention_flop(model, b, s, recompute)
    eb = elementwise_bytes(model, b, s, recompute)
    ops = op_counts(model, recompute)
    bw = machine.memory_bytes_per_s
    att_rate = machine.attention_flops_per_s(model.qk_head_dim, s)
    parts: dict[str, float] = {}
    dev: dict[str, float] = {}
    host: dict[str, float] = {}
    ckpt = machine.host_s_per_checkpoint * model.n_layers if recompute else 0.0
    host["forward"] = ops["forward"] * machine.host_s_per_op + ckpt
    host["backward"] = (ops["backward"] * machine.host_s_per_backward_op
                        + ops["recomputed forward"] * machine.host_s_per_op + ckpt)
    for phase in ("forward", "backward"):
        gs = [g for g in gemms if g.phase == phase]
        ew = sum(v for k, v in eb.items() if k.startswith(phase))
        if phase == "backward":
            ew += eb["loss: logits (fp32 copy, log-softmax, its gradient)"]
        t_mm = [g.flop / rate(g) for g in gs]
        dev[f"{phase}: matmuls"] = sum(t_mm)
        dev[f"{phase}: attention"] = att[phase] / att_rate
        dev[f"{phase}: element-wise"] = ew / bw
        # Each operation takes the longer of dispatching it (host) and running it (device): a big
        # matmul hides the host's work, a small element-wise kernel leaves the device waiting.
        # (torch.utils.checkpoint's own host work per layer is not an op: it only counts where the host
        # as a whole is the slower side.)
        per_op = (host[phase] - ckpt) / max(1.0, ops[phase] + ops["recomputed forward"] * (phase == "backward"))
        n_att = model.n_layers * (2 if recompute and phase == "backward" else 1)
        n_mm = sum(g.count for g in gs)
        n_ew = max(1.0, ops[phase] + (ops["recomputed forward"] if phase == "backward" else 0.0) - n_mm - n_att)
        parts[phase] = (sum(max(t, g.count * per_op) for t, g in zip(t_mm, gs))
                        + n_att * max(dev[f"{phase}: attention"] / n_att, per_op)
                        + n_ew * max(dev[f"{phase}: element-wise"] / n_ew, per_op))
        parts[phase] = max(parts[phase], host[phase])
    dev["optimizer"] = eb["optimizer: fused AdamW"] / bw
    parts["optimizer (fused AdamW)"] = dev["optimizer"]
    flop = sum(g.flop for g in gemms) + att["forward"] + att["backward"]
    model_flop = flop - (sum(g.flop for g in gemms if "recomputed" in g.label) + (att["forward"] if recompute else 0))
    return StepTime(sum(parts.values()), MappingProxyType(parts), MappingProxyType(dev), MappingProxyType(host),
                    flop, model_flop)


def textbook_step_time(model: ModelConfig, batch: int, seq_len: int, flops_per_s: float, mfu: float = 1.0) -> float:
    """``6 N T / (flops_per_s x mfu)``: N active parameters, T = batch x seq_len tokens (Kaplan et al. 2020)."""
    _, _, T = _tokens(batch, seq_len)
    rate = _check.positive("flops_per_s", flops_per_s)
    u = _check.fraction("mfu", mfu)
    return 6.0 * model.n_active_params() * T / (rate * u)


def implied_mfu(model: ModelConfig, batch: int, seq_len: int, step_s: float, peak_flops_per_s: float) -> float:
    """The MFU a step time means under the 6ND convention: ``6 N T / (step_s x peak)``."""
    _, _, T = _tokens(batch, seq_len)
    t = _check.positive("step_s", step_s)
    peak = _check.positive("peak_flops_per_s", peak_flops_per_s)
    return 6.0 * model.n_active_params() * T / (t * peak)

