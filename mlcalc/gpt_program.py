"""Predictions for the book's own GPT training program (``mlcalc.bench.train``): peak memory and step time.

Pure, no PyTorch: the model is a :class:`mlcalc.models.ModelConfig` in GPT-2's layout (learned
positions, LayerNorm, biases, a 4h GELU MLP, output tied to the embedding); :func:`gpt2` builds one and
:data:`PRESETS` holds GPT-2's four sizes with the vocabulary padded to 50,304 as the program trains them.
For Hugging Face models and any other architecture, see :func:`mlcalc.memory.training_peak` and
:func:`mlcalc.steptime.step_time`.

Two levels, so the book can show what each one leaves out:

* **textbook**: the formulas of the memory and compute chapters as they stand
  (:func:`mlcalc.memory.training_memory`: 16 bytes per parameter, Korthikanti et al.'s activations
  with flash attention, fp32 logits; :func:`mlcalc.compute.megatron_flops_per_iteration` over one
  matmul rate);
* **program**: the same program as :mod:`mlcalc.bench.train` runs it, counted tensor by tensor:
  what PyTorch's autocast keeps (bf16 copies of the weights, fp32 LayerNorm inputs), the
  cross-entropy's fp32 copies of the logits, which phase of the step holds the peak; and for time,
  every matmul at its own shape, causal flash attention, and the bytes that the element-wise
  kernels and the fused AdamW step move, over a measured memory bandwidth.

All sizes in bytes, times in seconds, rates in FLOP/s or bytes/s.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Callable, Mapping, NamedTuple, Sequence

from mlcalc import _check, models, steptime
from mlcalc.models import ModelConfig

GPT2_PADDED_VOCAB = 50304  # GPT-2's 50,257 tokens padded up to a multiple of 64, as the program trains them


def gpt2(n_layer: int, n_head: int, d_model: int, vocab_size: int = GPT2_PADDED_VOCAB, mlp_ratio: int = 4,
         name: str = "GPT", positions: int = 1024) -> ModelConfig:
    """A GPT-2-layout ModelConfig (``positions`` rows of learned positions; the program uses seq_len)."""
    for field, v in (("n_layer", n_layer), ("n_head", n_head), ("d_model", d_model), ("mlp_ratio", mlp_ratio)):
        _check.positive_int(field, v)
    if d_model % n_head:
        raise ValueError(f"n_head={n_head!r} is not allowed: it must divide d_model={d_model}")
    return ModelConfig(name=name, n_layers=n_layer, hidden=d_model, n_heads=n_head, n_kv_heads=n_head,
                       head_dim=d_model // n_head, ffn_hidden=mlp_ratio * d_model, vocab=vocab_size,
                       gated_mlp=False, activation="gelu_tanh", tied_embeddings=True, biases=True,
                       norm="layernorm", learned_positions=positions)


def from_bench_config(config: Mapping[str, int], name: str = "GPT") -> ModelConfig:
    """The ModelConfig of a measured case's ``config`` ({n_layer, n_head, d_model, vocab_size, mlp_ratio})."""
    return gpt2(int(config["n_layer"]), int(config["n_head"]), int(config["d_model"]),
                int(config.get("vocab_size", GPT2_PADDED_VOCAB)), int(config.get("mlp_ratio", 4)), name)


# GPT-2's four sizes (mlcalc.models presets, Radford et al. 2019) with the padded vocabulary.
PRESETS: Mapping[str, ModelConfig] = MappingProxyType({
    key: models.preset(name).replace(name=key, vocab=GPT2_PADDED_VOCAB, dropout=0.0, published_params=0.0)
    for key, name in (("gpt2-124M", "GPT-2 124M"), ("gpt2-350M", "GPT-2 355M"), ("gpt2-774M", "GPT-2 774M"),
                      ("gpt2-1.5B", "GPT-2 1.5B"))})


def preset(name: str) -> ModelConfig:
    """The named GPT-2 size (ValueError listing the names otherwise)."""
    _check.choice("model", name, PRESETS)
    return PRESETS[name]


def _at(cfg: ModelConfig, seq_len: int) -> ModelConfig:
    """The model with a position table of ``seq_len`` rows (what the program allocates)."""
    return cfg if cfg.learned_positions == seq_len else cfg.replace(learned_positions=seq_len)


Gemm = steptime.Gemm  # one matrix product of a step: the step-time engine's


class Prediction(NamedTuple):
    """A predicted quantity with its parts."""

    total: float  # bytes (memory) or seconds (time)
    parts: Mapping[str, float]  # what it is made of, same unit; sums to total (memory: at the peak phase)
    note: str  # which phase sets the peak, or which rates were used


def _args(cfg: ModelConfig, batch: int, seq_len: int) -> tuple[int, int, int, int, int, int]:
    b = _check.positive_int("batch", batch)
    s = _check.positive_int("seq_len", seq_len)
    if cfg.learned_positions == 0 or cfg.gated_mlp or not cfg.tied_embeddings:
        raise ValueError(f"model={cfg.name!r} is not allowed: the program is GPT-2's layout "
                         "(learned positions, plain MLP, tied output); use memory.training_peak / steptime")
    return b, s, cfg.hidden, cfg.n_layers, cfg.vocab, cfg.n_heads


# ---------------------------------------------------------------------------------------------
# Memory
# ---------------------------------------------------------------------------------------------


def textbook_memory(cfg: ModelConfig, batch: int, seq_len: int, recompute: bool) -> Prediction:
    """Peak memory by the memory chapter's formula (``mlcalc.memory.training_memory``).

    16 bytes per parameter (fp32 weights, gradients and two AdamW moments: the "fp32-adam"
    convention, which is what this program keeps), Korthikanti et al.'s activations with flash
    attention (``34 s b h`` per layer, or ``2 s b h`` with full recomputation) and fp32 logits,
    no overhead.
    """
    from mlcalc import memory

    b, s, *_ = _args(cfg, batch, seq_len)
    fit = memory.training_memory(_at(cfg, s), device_bytes=1e15, micro_batch=b, seq_len=s,
                                 convention="fp32-adam", recompute="full" if recompute else "none",
                                 sequence_parallel=False, flash_attention=True, overhead_fraction=0.0)
    parts = {k: v for k, v in fit.parts_bytes.items() if v}
    return Prediction(fit.total_bytes, MappingProxyType(parts), "all parts held at once")


# Bytes each layer keeps for the backward pass, per token and per unit of hidden size, in this
# program (bf16 autocast, fp32 residual stream, flash attention, no dropout):
LAYER_SAVED = MappingProxyType({
    "LayerNorm inputs (fp32 residual stream, 2 x 4)": 8.0,
    "QKV and MLP-in inputs (bf16 casts, 2 x 2)": 4.0,
    "Q, K, V (bf16, one 3h buffer)": 6.0,
    "attention output (bf16)": 2.0,
    "GELU input and output (bf16, 2 x 8)": 16.0,
})
LAYER_SAVED_RECOMPUTE = 4.0  # the block's input, fp32 residual stream


def program_memory(cfg: ModelConfig, batch: int, seq_len: int, recompute: bool) -> Prediction:
    """Peak ``torch.cuda.max_memory_allocated`` of one step of :mod:`mlcalc.bench.train`'s program.

    Two candidate peaks; the larger is the prediction:

    * **at the loss** (end of forward, start of backward): fp32 weights and AdamW moments
      (12 bytes/parameter; gradients were freed by ``zero_grad(set_to_none=True)``); the bf16
      copies autocast made of every weight matrix (its cache holds them until the forward pass
      leaves ``torch.autocast``, and without recomputation the backward pass keeps them); the saved activations
      (:data:`LAYER_SAVED` per layer, or the fp32 block input with recomputation); the final
      LayerNorm's input and bf16 output (6 bytes per token and unit of h); and the logits: bf16
      (2), the fp32 log-softmax output (4), and in the backward of the loss the fp32 gradient
      (4): 10 bytes per token per vocabulary entry;
    * **at the end of backward**: weights, moments and gradients (16 bytes/parameter), plus the
      tied embedding's second gradient (4 V h) before it is added in; with recomputation also
      one block's recomputed activations and bf16 weight copies.
    """
    b, s, h, L, V, _ = _args(cfg, batch, seq_len)
    P = _at(cfg, s).n_params()
    T = b * s
    per_layer = sum(LAYER_SAVED.values())
    w16_blocks = 2.0 * cfg.n_matrix_params()
    w16_out = 2.0 * V * h
    loss: dict[str, float] = {
        "fp32 weights + AdamW moments (12 B/param)": 12.0 * P,
        "bf16 weight copies (autocast cache)": w16_out + w16_blocks,
        "saved activations": L * T * h * (LAYER_SAVED_RECOMPUTE if recompute else per_layer),
        "final norm input and output": 6.0 * T * h,
        "logits: bf16 + fp32 log-softmax + fp32 gradient": 10.0 * T * V,
    }
    end: dict[str, float] = {
        "fp32 weights + gradients + AdamW moments (16 B/param)": 16.0 * P,
        "tied embedding's second gradient": 4.0 * V * h,
    }
    if recompute:
        end["one recomputed block (activations + bf16 weights)"] = per_layer * T * h + w16_blocks / L
    a, e = sum(loss.values()), sum(end.values())
    if a >= e:
        return Prediction(a, MappingProxyType(loss), "peak at the loss (end of forward)")
    return Prediction(e, MappingProxyType(end), "peak at the end of backward")


# ---------------------------------------------------------------------------------------------
# Time
# ---------------------------------------------------------------------------------------------


def step_gemms(cfg: ModelConfig, batch: int, seq_len: int, recompute: bool) -> tuple[Gemm, ...]:
    """Every matrix product of one training step of the program: the step-time engine's
    (:func:`mlcalc.steptime.step_gemms`) with GPT-2's fused Q, K, V product; with recomputation each
    layer's forward products run twice."""
    b, s, *_ = _args(cfg, batch, seq_len)
    return steptime.step_gemms(cfg, b, s, recompute, experts_in_fp32=False, fused_qkv=True)


def attention_flop(cfg: ModelConfig, batch: int, seq_len: int, recompute: bool) -> float:
    """FLOP of causal flash attention in one step, all phases: the step-time engine's
    (:func:`mlcalc.steptime.attention_flop`, forward ``2 b s^2 h`` per layer, backward 2.5 times that,
    the forward again with recomputation)."""
    b, s, *_ = _args(cfg, batch, seq_len)
    return sum(steptime.attention_flop(cfg, b, s, recompute).values())


# Element-wise bytes read + written per token and unit of h by one layer, forward, in this
# program: LayerNorm (4 in, 4 out) x2, bf16 casts (4 in, 2 out) x2, residual adds
# (4 + 2 in, 4 out) x2, GELU (8 in, 8 out).
LAYER_ELEMENTWISE_FWD = 2 * 8 + 2 * 6 + 2 * 10 + 16
BACKWARD_OVER_FORWARD = steptime.BACKWARD_OVER_FORWARD  # the engine's: backward kernels read and write twice
LOSS_BYTES_PER_LOGIT = 34.0  # fp32 cast (6), log-softmax (12), its backward (12), cast back (6), less reuse
ADAMW_BYTES_PER_PARAM = steptime.ADAMW_BYTES_PER_PARAM  # the engine's fused AdamW (28 bytes per parameter)
GRAD_CAST_BYTES_PER_PARAM = steptime.GRAD_CAST_BYTES  # bf16 weight gradient (2) read, into fp32 .grad (4)


def elementwise_bytes(cfg: ModelConfig, batch: int, seq_len: int, recompute: bool) -> Mapping[str, float]:
    """Bytes the memory-bound kernels of one step move, by kind (see the constants above)."""
    b, s, h, L, V, _ = _args(cfg, batch, seq_len)
    T, P = b * s, _at(cfg, s).n_params()
    passes = 1 + BACKWARD_OVER_FORWARD + (1 if recompute else 0)
    return MappingProxyType({
        "layer element-wise (norms, casts, adds, GELU)": passes * LAYER_ELEMENTWISE_FWD * T * h * L,
        "embedding and final norm": 3 * 20.0 * T * h,
        "loss (fp32 logits)": LOSS_BYTES_PER_LOGIT * T * V,
        "gradient casts": GRAD_CAST_BYTES_PER_PARAM * cfg.n_matrix_params(),
        "AdamW step": ADAMW_BYTES_PER_PARAM * P,
    })


def textbook_step_time(cfg: ModelConfig, batch: int, seq_len: int, recompute: bool,
                       matmul_flops_per_s: float) -> Prediction:
    """Megatron's FLOP count (Narayanan et al. 2021 eq. 3; 72 instead of 96 without recomputation)
    over one matmul rate: what a "FLOPs / achievable FLOP/s" estimate gives."""
    from mlcalc import compute

    b, s, h, L, V, _ = _args(cfg, batch, seq_len)
    rate = _check.positive("matmul_flops_per_s", matmul_flops_per_s)
    flop = compute.megatron_flops_per_iteration(b, s, L, h, V, recompute=recompute)
    return Prediction(flop / rate, MappingProxyType({"all FLOP at the matmul rate": flop / rate}),
                      f"{flop:.3e} FLOP at {rate / 1e12:.0f} TFLOP/s")


def program_step_time(
    cfg: ModelConfig,
    batch: int,
    seq_len: int,
    recompute: bool,
    matmul_flops_per_s: float | Callable[[int, int, int], float],
    memory_bytes_per_s: float,
    attention_flops_per_s: float | None = None,
) -> Prediction:
    """Step time as a sum: matmuls at their rate + attention at its rate + element-wise bytes over
    memory bandwidth (kernels run one after another, nothing overlaps).

    ``matmul_flops_per_s`` is one rate, or a function of (m, n, k) giving the rate measured for
    that shape; ``attention_flops_per_s`` defaults to the matmul rate of a large square product.
    """
    bw = _check.positive("memory_bytes_per_s", memory_bytes_per_s)
    rate_of: Callable[[int, int, int], float]
    if callable(matmul_flops_per_s):
        rate_of = matmul_flops_per_s
    else:
        single = _check.positive("matmul_flops_per_s", matmul_flops_per_s)
        rate_of = lambda m, n, k: single  # noqa: E731
    attn_rate = attention_flops_per_s if attention_flops_per_s is not None else rate_of(8192, 8192, 8192)
    _check.positive("attention_flops_per_s", attn_rate)
    t_mm = sum(g.flop / rate_of(g.m, g.n, g.k) for g in step_gemms(cfg, batch, seq_len, recompute))
    t_attn = attention_flop(cfg, batch, seq_len, recompute) / attn_rate
    eb = elementwise_bytes(cfg, batch, seq_len, recompute)
    parts = {"matmuls": t_mm, "attention": t_attn,
             "element-wise (norms, casts, adds, GELU, loss)": sum(
                 v for k, v in eb.items() if k not in ("AdamW step", "gradient casts")) / bw,
             "gradient casts + AdamW step": (eb["AdamW step"] + eb["gradient casts"]) / bw}
    return Prediction(sum(parts.values()), MappingProxyType(parts),
                      f"memory bandwidth {bw / 1e9:.0f} GB/s")


# ---------------------------------------------------------------------------------------------
# Predictions against measurements
# ---------------------------------------------------------------------------------------------


class Comparison(NamedTuple):
    """One training case: what was measured and what each model predicted."""

    model: str  # preset name, e.g. "gpt2-124M"
    batch: int  # sequences per step
    seq_len: int  # tokens per sequence
    recompute: bool  # activation checkpointing of every block
    measured_peak_bytes: float  # torch.cuda.max_memory_allocated
    textbook_peak_bytes: float  # textbook_memory
    program_peak_bytes: float  # program_memory
    measured_step_s: float  # measured step time (see compare's ``step_s_of``)
    textbook_step_s: float | None  # textbook_step_time at the single matmul rate (None: no rate given)
    program_step_s: float  # program_step_time at the measured per-shape rates

    @property
    def textbook_memory_error(self) -> float:
        """(predicted - measured) / measured."""
        return self.textbook_peak_bytes / self.measured_peak_bytes - 1

    @property
    def program_memory_error(self) -> float:
        """(predicted - measured) / measured."""
        return self.program_peak_bytes / self.measured_peak_bytes - 1

    @property
    def textbook_time_error(self) -> float | None:
        """(predicted - measured) / measured, or None."""
        return None if self.textbook_step_s is None else self.textbook_step_s / self.measured_step_s - 1

    @property
    def program_time_error(self) -> float:
        """(predicted - measured) / measured."""
        return self.program_step_s / self.measured_step_s - 1


def compare(
    cases: Sequence[object],
    matmul_flops_per_s: float | Callable[[int, int, int], float],
    memory_bytes_per_s: float,
    attention_flops_per_s: Callable[[int, int, int], float] | None = None,
    textbook_matmul_flops_per_s: float | None = None,
    step_s_of: Callable[[object], float] | None = None,
) -> list[Comparison]:
    """Predict every measured case (``mlcalc.measured.TrainCase``; out-of-memory cases skipped).

    ``attention_flops_per_s(batch, heads, seq_len)`` gives a measured attention rate;
    ``step_s_of(case)`` the measured step time to compare with (default: the case's own).
    """
    rows = []
    for c in cases:
        if getattr(c, "oom", False) or getattr(c, "step_s", None) is None or getattr(c, "peak_bytes", None) is None:
            continue
        cfg = from_bench_config(dict(c.config), str(c.model))  # type: ignore[attr-defined]
        b, s, rc = c.batch, c.seq_len, c.recompute  # type: ignore[attr-defined]
        attn = attention_flops_per_s(b, cfg.n_heads, s) if attention_flops_per_s else None
        tb = (textbook_step_time(cfg, b, s, rc, textbook_matmul_flops_per_s).total
              if textbook_matmul_flops_per_s else None)
        rows.append(Comparison(
            c.model, b, s, rc, float(c.peak_bytes),  # type: ignore[attr-defined]
            textbook_memory(cfg, b, s, rc).total, program_memory(cfg, b, s, rc).total,
            step_s_of(c) if step_s_of else float(c.step_s),  # type: ignore[attr-defined]
            tb, program_step_time(cfg, b, s, rc, matmul_flops_per_s, memory_bytes_per_s, attn).total))
    return rows
