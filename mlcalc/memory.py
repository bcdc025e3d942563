"""Memory a model needs, and how many accelerators that makes."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from types import MappingProxyType
from typing import Any, Mapping, NamedTuple

from mlcalc import _check, models, units

# Bytes per parameter, by what they hold, in the convention of Bekman's chapter
# ("The AI Battlefield", section "Impress others with your ML instant math"):
# training in mixed precision keeps fp32 master weights and a bf16 copy (4 + 2),
# fp32 gradients (4) and AdamW's two fp32 states (8): 18 bytes per parameter.
BEKMAN_TRAINING_BYTES: Mapping[str, float] = MappingProxyType(
    {
        "weights (fp32 master + bf16 copy)": 6.0,
        "gradients (fp32)": 4.0,
        "AdamW states (2 x fp32)": 8.0,
    }
)
# Inference in half precision keeps only the bf16 weights: 2 bytes per parameter.
BEKMAN_INFERENCE_BYTES: Mapping[str, float] = MappingProxyType({"weights (bf16)": 2.0})
# Bekman's "1.25 is 25% for activations (very very approximate)".
BEKMAN_HEADROOM = 1.25

MODES = ("train", "inference")


class GpuEstimate(NamedTuple):
    """How many accelerators a model needs, and what fills their memory."""

    n_gpus: int  # accelerators needed: total_bytes / memory per accelerator, rounded up
    exact: float  # the same ratio before rounding up
    parts_bytes: Mapping[str, float]  # model-state bytes by what they hold, plus "activations (headroom)"
    total_bytes: float  # sum of parts_bytes
    gpu_memory_bytes: float  # memory of one accelerator, bytes


def default_bytes_per_param(mode: str) -> Mapping[str, float]:
    """Bekman's bytes per parameter, by component, for ``mode`` ("train" or "inference")."""
    _check.choice("mode", mode, MODES)
    return BEKMAN_TRAINING_BYTES if mode == "train" else BEKMAN_INFERENCE_BYTES


def gpus_needed(
    n_params: float,
    gpu_memory_bytes: float,
    mode: str = "train",
    bytes_per_param: float | Mapping[str, float] | None = None,
    headroom: float = BEKMAN_HEADROOM,
) -> GpuEstimate:
    """Fewest accelerators whose memory holds a model, by Bekman's instant math.

    ``n_gpus = ceil(n_params * bytes_per_param * headroom / gpu_memory_bytes)``

    Parameters
    ----------
    n_params : number of model parameters (e.g. 80e9).
    gpu_memory_bytes : memory of one accelerator in bytes (80 GB = 80e9).
    mode : "train" (mixed precision with AdamW) or "inference" (half precision).
    bytes_per_param : bytes each parameter costs, as one number or by component;
        ``None`` takes Bekman's convention for ``mode`` (18 to train, 2 to serve).
    headroom : multiplier for activations and everything else (>= 1; Bekman uses 1.25).

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
    total = _check.result("total bytes", model_bytes * headroom)
    exact = _check.result("GPUs needed", total / gpu_memory_bytes)
    # Round up, but do not let float noise (22.0000000001) add a whole GPU.
    n_gpus = max(1, math.ceil(round(exact, 9)))
    return GpuEstimate(n_gpus, exact, MappingProxyType(parts), total, gpu_memory_bytes)


# ---------------------------------------------------------------------------
# Models: one description for the whole book (mlcalc.models); these names stay for old callers
# ---------------------------------------------------------------------------

ModelConfig = models.ModelConfig
NORMS = models.NORMS


def model_presets() -> Mapping[str, ModelConfig]:
    """All model presets (``mlcalc.models.presets()``)."""
    return models.presets()


def model_preset(name: str) -> ModelConfig:
    """The preset called ``name`` (``mlcalc.models.preset``)."""
    return models.preset(name)


# ---------------------------------------------------------------------------
# Bytes per parameter for training: the field's conventions, each named and sourced
# ---------------------------------------------------------------------------

# What a component is, for ZeRO: the working copy of the weights, the gradients,
# the optimizer's states (the fp32 master copy counts here: ZeRO-1 shards it), or
# memory that is not a model state at all.
CATEGORIES = ("parameters", "gradients", "optimizer states", "other")


@dataclass(frozen=True)
class Convention:
    """One way of counting training bytes per parameter, with its source."""

    key: str  # short name, e.g. "zero-mixed-adam"
    title: str  # one-line description
    components: tuple[tuple[str, float, str], ...]  # (label, bytes per parameter, category)
    source: str  # citation (bib key and where in the document)
    note: str = ""  # caveats: what the source leaves out, where it disagrees

    @property
    def total(self) -> float:
        """Bytes per parameter, all components."""
        return sum(b for _, b, _ in self.components)

    def by_category(self) -> Mapping[str, float]:
        """Bytes per parameter by category (see ``CATEGORIES``)."""
        out = {c: 0.0 for c in CATEGORIES}
        for _, b, cat in self.components:
            out[cat] += b
        return MappingProxyType(out)


CONVENTIONS: Mapping[str, Convention] = MappingProxyType({c.key: c for c in (
    Convention(
        "zero-mixed-adam", "Mixed-precision Adam, as the ZeRO paper counts it (2 + 2 + 12 = 16)",
        (("fp16 parameters", 2.0, "parameters"), ("fp16 gradients", 2.0, "gradients"),
         ("fp32 master parameters", 4.0, "optimizer states"), ("fp32 momentum", 4.0, "optimizer states"),
         ("fp32 variance", 4.0, "optimizer states")),
        "rajbhandari2020zero, section 3.1 (K = 12 bytes of optimizer states)",
    ),
    Convention(
        "bekman", "Bekman's instant math: fp32 + bf16 weights, fp32 gradients, AdamW (6 + 4 + 8 = 18)",
        (("bf16 weights", 2.0, "parameters"), ("fp32 master weights", 4.0, "optimizer states"),
         ("fp32 gradients", 4.0, "gradients"), ("AdamW momentum (fp32)", 4.0, "optimizer states"),
         ("AdamW variance (fp32)", 4.0, "optimizer states")),
        "bekman2024battlefield: 8 bytes AdamW states, 4 grads, 4+2 weights",
        "Differs from ZeRO's 16 only in keeping the gradients in fp32.",
    ),
    Convention(
        "fp32-adam", "Plain fp32 training with AdamW (4 + 4 + 8 = 16)",
        (("fp32 weights", 4.0, "parameters"), ("fp32 gradients", 4.0, "gradients"),
         ("AdamW momentum (fp32)", 4.0, "optimizer states"), ("AdamW variance (fp32)", 4.0, "optimizer states")),
        "hf2024anatomy, 'Anatomy of Model's Memory': 4 bytes weights (fp32), 4 gradients, 8 AdamW",
    ),
    Convention(
        "frontier", "The Frontier trillion-parameter paper: 24 stated, 14 itemized",
        (("16-bit weights", 2.0, "parameters"), ("32-bit gradients", 4.0, "gradients"),
         ("32-bit weight copy", 4.0, "optimizer states"), ("32-bit momentum", 4.0, "optimizer states"),
         ("stated but not itemized", 10.0, "other")),
        "dash2023frontier (24 bytes per parameter), itemized as read in lockwood2024notes",
        "The paper's 24 bytes are not fully itemized: the listed parts add to 14, and Adam's variance "
        "(4 more) is not among them; the remaining 10 bytes are shown as 'stated but not itemized'.",
    ),
    Convention(
        "deepspeed-residual", "DeepSpeed's observed ~32: 16 of model states + residual memory",
        (("fp16 parameters", 2.0, "parameters"), ("fp16 gradients", 2.0, "gradients"),
         ("fp32 master parameters", 4.0, "optimizer states"), ("fp32 momentum", 4.0, "optimizer states"),
         ("fp32 variance", 4.0, "optimizer states"),
         ("residual: activations, buffers, fragmentation", 16.0, "other")),
        "lockwood2024notes, reading the DeepSpeed introduction (a 40 GB GPU holds a 1.2B model); "
        "rajbhandari2020zero, section 3.2 (residual memory)",
        "40 GB / 1.2B is 33 bytes per parameter; the notes round it to 32. The residual part depends "
        "on batch and sequence length, not on the parameter count: it is a rule of thumb only.",
    ),
    Convention(
        "bf16-adam-states", "Adam moments kept in bf16, master weights and gradients in fp32 (14)",
        (("bf16 weights", 2.0, "parameters"), ("fp32 gradients", 4.0, "gradients"),
         ("fp32 master weights", 4.0, "optimizer states"), ("bf16 momentum", 2.0, "optimizer states"),
         ("bf16 variance", 2.0, "optimizer states")),
        "deepseekai2024v3, section 3.3.2 (AdamW moments in BF16; master weights and gradients in FP32)",
    ),
    Convention(
        "adam-8bit", "8-bit Adam: states quantized to one byte each (6 + 4 + 2 = 12)",
        (("bf16 weights", 2.0, "parameters"), ("fp32 master weights", 4.0, "optimizer states"),
         ("fp32 gradients", 4.0, "gradients"), ("8-bit momentum", 1.0, "optimizer states"),
         ("8-bit variance", 1.0, "optimizer states")),
        "dettmers2022optimizers; hf2024anatomy (2 bytes of optimizer states for 8-bit AdamW)",
        "Block-wise quantization also keeps one fp32 scale per block of 2048 values (negligible).",
    ),
    Convention(
        "sgd-momentum", "SGD with momentum: one optimizer state (6 + 4 + 4 = 14)",
        (("bf16 weights", 2.0, "parameters"), ("fp32 master weights", 4.0, "optimizer states"),
         ("fp32 gradients", 4.0, "gradients"), ("fp32 momentum", 4.0, "optimizer states")),
        "hf2024anatomy (4 bytes of optimizer states for SGD with momentum, 6 bytes of mixed-precision weights)",
    ),
)})


def training_bytes_per_param(convention: str = "zero-mixed-adam") -> Mapping[str, float]:
    """Training bytes per parameter by component, for one of ``CONVENTIONS`` (by key)."""
    _check.choice("convention", convention, CONVENTIONS)
    return MappingProxyType({label: b for label, b, _ in CONVENTIONS[convention].components})


# ---------------------------------------------------------------------------
# ZeRO stages 0-3 (FSDP: NO_SHARD = 0, SHARD_GRAD_OP = 2, FULL_SHARD = 3)
# ---------------------------------------------------------------------------

ZERO_STAGES = (0, 1, 2, 3)
# Which categories each ZeRO stage partitions over the data-parallel ranks.
_SHARDED = {0: (), 1: ("optimizer states",), 2: ("optimizer states", "gradients"),
            3: ("optimizer states", "gradients", "parameters")}


class ZeroMemory(NamedTuple):
    """Model-state memory of one data-parallel rank under ZeRO, and what it offloads."""

    device_bytes: float  # model states left in the accelerator's memory
    cpu_bytes: float  # model states this rank keeps in host (CPU) memory
    device_parts: Mapping[str, float]  # device bytes by category
    cpu_parts: Mapping[str, float]  # host bytes by category


@lru_cache(maxsize=64)
def _by_category(convention: str) -> Mapping[str, float]:
    """``CONVENTIONS[convention].by_category()``, remembered (a frozen convention: the same bytes every time)."""
    return CONVENTIONS[convention].by_category()


@lru_cache(maxsize=8192, typed=True)  # pure: bounded, 8,192 kept (a layout's fit asks per pipeline rank)
def zero_model_state_bytes(
    n_params: float,
    dp_degree: int,
    stage: int,
    convention: str = "zero-mixed-adam",
    offload_optimizer: bool = False,
    offload_params: bool = False,
) -> ZeroMemory:
    """Per-rank model-state memory with ZeRO stage ``stage`` over ``dp_degree`` ranks.

    Stage 1 divides the optimizer states by ``dp_degree``, stage 2 also the gradients,
    stage 3 also the parameters (ZeRO paper, Figure 1 and section 5.1):
    ``(2 + 2 + K) psi`` -> ``(2 + 2) psi + K psi / Nd`` -> ``2 psi + (2 + K) psi / Nd``
    -> ``(2 + 2 + K) psi / Nd``. PyTorch FSDP's NO_SHARD, SHARD_GRAD_OP and FULL_SHARD
    correspond to stages 0, 2 and 3.

    Parameters
    ----------
    n_params : parameters held by this data-parallel group (the model, or one
        tensor/pipeline shard of it).
    dp_degree : data-parallel ranks the states are sharded over (Nd).
    stage : ZeRO stage 0, 1, 2 or 3.
    convention : key of ``CONVENTIONS`` giving bytes per parameter by category;
        its "other" bytes (not model states) are left out here.
    offload_optimizer : keep optimizer states and gradients in host memory and run
        the optimizer step on the CPU (ZeRO-Offload; needs stage >= 1).
    offload_params : keep the parameters in host memory too (ZeRO-Infinity; needs stage 3).

    References
    ----------
    Rajbhandari et al. 2020 (ZeRO), Figure 1: 7.5B parameters, Nd = 64, K = 12:
    120 GB, 31.4 GB, 16.6 GB, 1.9 GB. Ren et al. 2021 (ZeRO-Offload).

    A 7.5B-parameter model over 64 GPUs (ZeRO paper, Figure 1: 120 GB per GPU without ZeRO, 1.9 GB with
    P_os+g+p, stage 3):

    >>> zero_model_state_bytes(7.5e9, 64, 3).device_bytes / 1e9
    1.875
    """
    n_params = _check.positive("n_params", n_params)
    dp_degree = _check.positive_int("dp_degree", dp_degree)
    if stage not in ZERO_STAGES or isinstance(stage, bool):
        raise ValueError(f"stage={stage!r} is not allowed: choose one of 0, 1, 2, 3")
    _check.choice("convention", convention, CONVENTIONS)
    if offload_optimizer and stage < 1:
        raise ValueError("offload_optimizer=True is not allowed with stage=0: "
                         "offloading optimizer states needs ZeRO stage 1, 2 or 3")
    if offload_params and stage < 3:
        raise ValueError(f"offload_params=True is not allowed with stage={stage}: "
                         "offloading parameters needs ZeRO stage 3")
    per_cat = _by_category(convention)
    device: dict[str, float] = {}
    cpu: dict[str, float] = {}
    for cat in CATEGORIES[:3]:
        nbytes = n_params * per_cat[cat] / (dp_degree if cat in _SHARDED[stage] else 1)
        on_cpu = (offload_optimizer and cat in ("optimizer states", "gradients")) or (
            offload_params and cat == "parameters")
        (cpu if on_cpu else device)[cat] = nbytes
        (device if on_cpu else cpu)[cat] = 0.0
    return ZeroMemory(sum(device.values()), sum(cpu.values()), MappingProxyType(device), MappingProxyType(cpu))


class DeepSpeedEstimate(NamedTuple):
    """DeepSpeed's own estimate of model-state memory (its documented formulas)."""

    cpu_bytes: float  # host memory per node
    gpu_bytes: float  # memory per GPU


def deepspeed_zero2_estimate(
    total_params: float, gpus_per_node: int = 8, nodes: int = 1, offload_optimizer: bool = False,
    buffer_factor: float = 1.5,
) -> DeepSpeedEstimate:
    """DeepSpeed's ZeRO-2 estimator (``estimate_zero2_model_states_mem_needs``).

    GPU: ``2 psi`` with the optimizer offloaded, else ``4 psi + 16 psi / total_gpus``.
    CPU per node: ``psi * max(4 * gpus_per_node, 16) * buffer`` offloaded, else
    ``psi * 4 * gpus_per_node * buffer`` (each process first builds the model in fp32).

    References
    ----------
    DeepSpeed documentation, "Memory Requirements" (t5-3b, 2851M parameters, 8 GPUs:
    127.45 GB CPU; 5.31 GB per GPU offloaded, 15.93 GB not; GB there means 2**30 bytes).
    """
    psi = _check.positive("total_params", total_params)
    g = _check.positive_int("gpus_per_node", gpus_per_node)
    n = _check.positive_int("nodes", nodes)
    buf = _check.at_least("buffer_factor", buffer_factor, 1.0)
    if offload_optimizer:
        return DeepSpeedEstimate(psi * max(4 * g, 16) * buf, 2 * psi)
    return DeepSpeedEstimate(psi * 4 * g * buf, 4 * psi + 16 * psi / (g * n))


def deepspeed_zero3_estimate(
    total_params: float, largest_layer_params: float, gpus_per_node: int = 8, nodes: int = 1,
    offload_optimizer: bool = False, offload_params: bool = False, zero_init: bool = True,
    buffer_factor: float = 1.5,
) -> DeepSpeedEstimate:
    """DeepSpeed's ZeRO-3 estimator (``estimate_zero3_model_states_mem_needs``).

    GPU: ``4 * largest_layer`` to gather one layer, plus ``18 psi / total_gpus``
    (nothing offloaded) or ``2 psi / total_gpus`` (optimizer offloaded) or nothing
    (parameters offloaded too). CPU per node with ``f = 1 / nodes``: ``18 psi f``
    (both offloaded) or ``16 psi f`` (optimizer offloaded), times the buffer factor;
    without ``zero.Init`` at least ``4 psi * gpus_per_node * buffer``; with neither
    offloaded and ``zero.Init``, ``4 * largest_layer * gpus_per_node * buffer``.

    References
    ----------
    DeepSpeed documentation, "Memory Requirements" (t5-3b: 2851M parameters, 32M in
    the largest layer, 8 GPUs; GB there means 2**30 bytes).
    """
    psi = _check.positive("total_params", total_params)
    largest = _check.positive("largest_layer_params", largest_layer_params)
    g = _check.positive_int("gpus_per_node", gpus_per_node)
    n = _check.positive_int("nodes", nodes)
    buf = _check.at_least("buffer_factor", buffer_factor, 1.0)
    if offload_params and not offload_optimizer:
        raise ValueError("offload_params=True is not allowed with offload_optimizer=False: "
                         "DeepSpeed's estimator covers parameter offload only with the optimizer offloaded")
    f = 1.0 / n
    layer = 4 * largest
    if offload_optimizer and offload_params:
        gpu, states = layer, 18 * f
    elif offload_optimizer:
        gpu, states = layer + 2 * psi / (g * n), 16 * f
    else:
        gpu = layer + 18 * psi / (g * n)
        cpu = (largest * 4 * g if zero_init else psi * 4 * g) * buf
        return DeepSpeedEstimate(cpu, gpu)
    cpu = psi * (states if zero_init else max(4 * g, states)) * buf
    return DeepSpeedEstimate(cpu, gpu)


# ---------------------------------------------------------------------------
# Activation memory (Korthikanti et al. 2022)
# ---------------------------------------------------------------------------

RECOMPUTE = ("none", "selective", "full")


def activation_parts_per_layer(
    seq_len: int,
    micro_batch: int,
    hidden: int,
    n_heads: int,
    tensor_parallel: int = 1,
    sequence_parallel: bool = False,
    recompute: str = "none",
    flash_attention: bool = False,
) -> Mapping[str, float]:
    """Activation bytes one transformer layer stores for the backward pass, by kind.

    Follows Korthikanti et al. 2022, section 4 (16-bit activations, 1-byte dropout
    masks, a GPT layer with a 4h MLP and GeLU). With ``s`` sequence length, ``b``
    micro-batch, ``h`` hidden size, ``a`` heads and ``t`` tensor-parallel ranks:

    - "not split by TP" ``10 s b h``: the two LayerNorm inputs (4sbh), the QKV and
      MLP inputs (2sbh each) and the two dropout masks (sbh each); divided by ``t``
      only with sequence parallelism.
    - "split by TP" ``24 s b h / t``: Q and K (4sbh), V (2sbh), the attention output
      projection's input (2sbh), the MLP's GeLU input and output (8sbh each).
    - "attention scores (s^2)" ``5 a s^2 b / t``: softmax output (2as^2b), its
      dropout mask (as^2b) and dropout output (2as^2b).

    Recomputation: "selective" drops the s^2 term (it is recomputed); "full" keeps
    only each layer's input, ``2 s b h`` (divided by ``t`` with sequence parallelism).
    Flash attention never materializes the scores: the s^2 term is replaced by the
    fp32 log-sum-exp per query row, ``4 a s b / t`` (Dao et al. 2022).
    """
    s = _check.positive_int("seq_len", seq_len)
    b = _check.positive_int("micro_batch", micro_batch)
    h = _check.positive_int("hidden", hidden)
    a = _check.positive_int("n_heads", n_heads)
    t = _check.positive_int("tensor_parallel", tensor_parallel)
    _check.choice("recompute", recompute, RECOMPUTE)
    if a % t:
        raise ValueError(f"tensor_parallel={t!r} is not allowed: it must divide n_heads={a}")
    if recompute == "full":
        return MappingProxyType({"layer input (full recomputation)": 2.0 * s * b * h / (t if sequence_parallel else 1)})
    sbh = float(s) * b * h
    parts = {
        "not split by TP (norms, inputs, dropout masks)": 10.0 * sbh / (t if sequence_parallel else 1),
        "split by TP (Q, K, V, projections, MLP)": 24.0 * sbh / t,
    }
    if recompute == "none":
        if flash_attention:
            parts["softmax statistics (flash attention)"] = 4.0 * a * s * b / t
        else:
            parts["attention scores (s^2)"] = 5.0 * a * s * s * b / t
    return MappingProxyType(parts)


def activation_bytes_per_layer(
    seq_len: int,
    micro_batch: int,
    hidden: int,
    n_heads: int,
    tensor_parallel: int = 1,
    sequence_parallel: bool = False,
    recompute: str = "none",
    flash_attention: bool = False,
) -> float:
    """Activation bytes of one transformer layer (Korthikanti et al. 2022, Table 2).

    ``sbh(34 + 5as/h)`` with no parallelism; ``sbh(10 + 24/t + 5as/(ht))`` with
    tensor parallelism; ``sbh(34/t + 5as/(ht))`` with tensor and sequence
    parallelism; selective recomputation drops the ``5as/h`` term; full
    recomputation stores ``2sbh``. See ``activation_parts_per_layer`` for the terms.
    """
    return sum(activation_parts_per_layer(seq_len, micro_batch, hidden, n_heads, tensor_parallel,
                                          sequence_parallel, recompute, flash_attention).values())


# ---------------------------------------------------------------------------
# Training memory of the architecture in hand: tensor by tensor, phase by phase
# ---------------------------------------------------------------------------

# How a framework computes the loss over the logits, in bytes per token per vocabulary entry held at
# the peak of the forward pass and at the start of the backward pass.
# "hf": Hugging Face transformers' ForCausalLMLoss as Trainer calls it: the lm_head's bf16 logits (2),
#   logits.float() (4) and log_softmax's fp32 output (4) at the forward's peak: 10; in the backward the
#   bf16 logits are gone (Trainer drops the outputs), log_softmax's output (4), nll_loss's dense fp32
#   gradient (4) and log_softmax's input gradient (4): 12. Read off transformers' loss_utils.py and
#   confirmed in this book's runs (mlcalc/data/measured/h200x2-2026-11-26-train-hf: the step from the
#   end of the forward to the backward's peak is 8 bytes per logit).
# "hf-keep-outputs": the same, with the model's output object (and its bf16 logits) alive during backward.
# "fp32-logits": one fp32 copy of the logits (4), what Korthikanti et al. 2022 count for the output layer.
# "fused": a fused / chunked cross-entropy (e.g. Liger kernel) that never materializes the logits (0).
LOSS_CONVENTIONS: Mapping[str, tuple[float, float]] = MappingProxyType({
    "hf": (10.0, 12.0), "hf-keep-outputs": (10.0, 14.0), "fp32-logits": (4.0, 4.0), "fused": (0.0, 0.0)})

# Mixed-precision conventions: bytes per parameter of weights, gradients, optimizer states, the
# bytes of the residual stream, and whether autocast keeps bf16 copies of the weights and activations.
# "fp32-autocast": fp32 weights, gradients and AdamW moments, torch.autocast(bf16) (Hugging Face
#   Trainer with bf16=True on an fp32 model; PyTorch AMP): 4 + 4 + 8 = 16 bytes per parameter, plus
#   the bf16 weight copies autocast makes for each forward.
# "bf16-master": bf16 weights and gradients, fp32 master weights and AdamW moments (Megatron-LM,
#   DeepSpeed bf16): 2 + 2 + 12 = 16 (Rajbhandari et al. 2020's K = 12).
# "bf16-pure": everything in bf16, AdamW moments too: 2 + 2 + 4 = 8.
# "fp32-autocast-adam8bit": fp32 weights and gradients with 8-bit AdamW moments (bitsandbytes,
#   Dettmers et al. 2022): 4 + 4 + 2 = 10.
PRECISIONS: Mapping[str, Mapping[str, float]] = MappingProxyType({
    "fp32-autocast": MappingProxyType({"weights": 4.0, "gradients": 4.0, "optimizer": 8.0, "stream": 4.0,
                                       "autocast": 1.0}),
    "bf16-master": MappingProxyType({"weights": 2.0, "gradients": 2.0, "optimizer": 12.0, "stream": 2.0,
                                     "autocast": 0.0}),
    "bf16-pure": MappingProxyType({"weights": 2.0, "gradients": 2.0, "optimizer": 4.0, "stream": 2.0,
                                   "autocast": 0.0}),
    "fp32-autocast-adam8bit": MappingProxyType({"weights": 4.0, "gradients": 4.0, "optimizer": 2.0, "stream": 4.0,
                                                "autocast": 1.0}),
})
ATTENTION_KERNELS = ("flash", "eager")
# Hugging Face transformers 5.x runs routed experts as grouped products that autocast does not cover:
# with fp32 weights their activations stay fp32 and no bf16 weight copies are made.
HF_EXPERTS_IN_FP32 = True


def layer_activation_parts(
    model: models.ModelConfig,
    precision: str = "fp32-autocast",
    attention: str = "flash",
    recompute: str = "none",
    seq_len: int = 2048,
    experts_in_fp32: bool = HF_EXPERTS_IN_FP32,
    fused_swiglu: bool = False,
    fp8_linear_inputs: bool = False,
    moe: bool | None = None,
) -> Mapping[str, float]:
    """Bytes one layer keeps for the backward pass, per token, by kind (eager PyTorch, Hugging Face layout).

    ``moe``: which layer of a mixture of experts (None: the model's kind; False: one of its
    ``first_dense_layers``, a dense feed-forward block of width ``ffn_hidden``, as DeepSeek-V3's first three).

    Counted tensor by tensor from the modelling code (``s`` residual-stream bytes: 4 with fp32 weights
    under autocast, 2 with bf16 weights; ``c`` = 1 where autocast makes bf16 copies):

    - each norm over the residual stream: RMSNorm (written as PyTorch ops) keeps its input and the
      normalized tensor, ``2 s h`` (4 bytes each for a bf16 input it upcasts); LayerNorm (one fused
      kernel) keeps its input, ``s h``;
    - autocast's bf16 copy of the norm output, one per projection that reads it (Q, K, V separately;
      gate and up), ``2h`` each;
    - attention: Q, K, V and the output in bf16 (``2 (q + 2 kv + o)``) and flash attention's fp32
      log-sum-exp per head (``4 H``); Q/K norms keep an fp32 copy and the normalized heads
      (``6 (q + kv)``, or ``8 (q + kv)`` where the weight is applied in fp32, as in Gemma); without
      flash (eager) also the fp32 softmax and its bf16 copy, ``6 H s``;
    - MLP: gated, the gate and up outputs, the activation's output and the product, ``8 f`` (bf16);
      GPT-2's tanh GELU written as PyTorch ops keeps ``16 f`` under autocast (``pow`` runs in fp32,
      so the tanh branch is fp32: its fp32 input, tanh output, 1 + tanh, the bf16 half input and the
      bf16 copy for the next product), ``10 f`` without autocast; a fused GELU ``4 f``; routed experts
      (fp32, see ``HF_EXPERTS_IN_FP32``) ``k (16 f + 8 h)`` per token;
    - dropout masks, 1 byte per element of each residual branch, ``2 h``.

    ``recompute``: "none"; "selective" (Korthikanti et al. 2022: the attention core is recomputed, so
    only the eager s^2 terms go; with flash attention nothing changes; for multi-head latent attention
    (MLA) selective recomputation is DeepSeek-V3's, DeepSeek-AI 2024, 3.2.3: "We recompute all RMSNorm
    operations and MLA up-projections during back-propagation", so each norm keeps only its input and the
    attention only the compressed latents, its output and the log-sum-exp); "full" (only the layer input,
    ``s h``, is kept; the layer's working set comes back during its backward, see :func:`training_peak`).

    Megatron-core's kernels (what :func:`training_memory` counts for ``program="megatron"``):
    ``fused_swiglu``: the fused SwiGLU (megatron/core/fusions/fused_bias_swiglu.py, ``SwiGLUFunction``)
    saves only its input, the first projection's gate and up outputs, and recomputes the activation in the
    backward pass: a gated MLP keeps ``6 f`` (its ``2 f`` input and the ``f`` product the second projection
    reads), not ``8 f``; ``fp8_linear_inputs``: FP8 training (``dtype="fp8"``) keeps what only a linear
    layer's weight gradient reads in FP8, one byte a value (DeepSeek-AI 2024, 3.3.1: "the FP8 Wgrad GEMM
    allows activations to be stored in FP8 for use in the backward pass"): the norms' outputs, the MLA
    latents, the input of the second MLP projection and the dispatched expert inputs; what attention, the
    norms and the activation functions read stays in 16 bits.
    """
    args = (model, precision, attention, recompute, seq_len, experts_in_fp32, fused_swiglu, fp8_linear_inputs, moe)
    try:
        return _layer_activation_parts_of(*args)
    except TypeError:  # an input that cannot be a key
        return _layer_activation_parts_of.__wrapped__(*args)


# A layer's activations per token depend on the model and these few choices only: a planner asks for the same ones
# at every layout it fits. Remembered (typed: 2 and 2.0 are different keys), 256 kept.
@lru_cache(maxsize=256, typed=True)
def _layer_activation_parts_of(model: models.ModelConfig, precision: str, attention: str, recompute: str, seq_len: int,
                               experts_in_fp32: bool, fused_swiglu: bool, fp8_linear_inputs: bool,
                               moe: bool | None) -> Mapping[str, float]:
    _check.choice("precision", precision, PRECISIONS)
    _check.choice("attention", attention, ATTENTION_KERNELS)
    _check.choice("recompute", recompute, RECOMPUTE)
    s_len = _check.positive_int("seq_len", seq_len)
    _check.choice("moe", moe, (None, True, False))
    if moe and not model.is_moe:
        raise ValueError(f"moe={moe!r} is not allowed: {model.name} has no experts")
    p = PRECISIONS[precision]
    m, h, sb, c = model, model.hidden, p["stream"], p["autocast"]
    if recompute == "full":
        return MappingProxyType({"layer input (full recomputation)": sb * h})
    up = 4.0 if sb == 2 else sb  # a bf16 input to RMSNorm is upcast: its fp32 copy is kept
    kv = (m.n_heads if m.attention == "mla" else m.n_kv_heads) * m.qk_head_dim
    vd = (m.n_heads if m.attention == "mla" else m.n_kv_heads) * m.v_dim
    mla_recompute = m.attention == "mla" and recompute == "selective"  # DeepSeek-V3's selective recomputation
    lin = 1.0 if fp8_linear_inputs else 2.0  # bytes of a value only a linear layer's weight gradient reads
    if mla_recompute:  # the norms are recomputed: each keeps its input
        norms = m.norms_per_layer * sb * h
    elif m.norm == "layernorm":
        norms = m.norms_per_layer * sb * h
    else:  # each keeps its input and the normalized output (the projections' input)
        norms = 2 * (sb + (1.0 if fp8_linear_inputs else sb)) * h + (m.norms_per_layer - 2) * 2 * up * h
    reads1 = 1 if (m.learned_positions or m.attention == "mla") else 3
    reads2 = 2 if m.gated_mlp else 1
    moe = m.is_moe if moe is None else moe
    if moe and experts_in_fp32:
        reads2 = 0  # the routed experts read the fp32 norm output directly
    parts = {"norms": float(norms),
             "bf16 copies of norm outputs (autocast)": 0.0 if mla_recompute else 2.0 * h * (reads1 + reads2) * c}
    latents = lin * (m.q_lora_rank + m.kv_lora_rank) + 2.0 * m.qk_rope_head_dim if m.attention == "mla" else 0.0
    if mla_recompute:  # the up-projections (Q, K, V) are recomputed from the latents
        parts["attention (latents, output, log-sum-exp)"] = latents + 2.0 * m.attn_out_width + 4.0 * m.n_heads
    else:
        parts["attention (Q, K, V, output, log-sum-exp)"] = 2.0 * (m.q_width + kv + vd + m.attn_out_width) + \
            4.0 * m.n_heads + latents
    if m.qk_norm:  # fp32 copy (4) + the normalized heads: cast back to bf16 before the weight (Llama
        # family, 2) or weighted in fp32 (Gemma family, with four norms per layer, 4)
        parts["query/key norms"] = (8.0 if m.norms_per_layer == 4 else 6.0) * (m.q_width + kv)
    if attention == "eager" and recompute != "selective":
        parts["attention scores (fp32 softmax + bf16 copy)"] = 6.0 * m.n_heads * s_len
    # a gated MLP of width f: its projections' outputs (2 f values, what the activation reads) and the product
    # the second projection reads (f); unfused, also the activation's output (f)
    def gated(f: float, eb: float, second: float) -> float:
        return (2 * eb + second) * f + (0.0 if fused_swiglu else eb * f)

    if moe:
        f, k = m.expert_ffn, m.experts_per_token
        eb = 4.0 if experts_in_fp32 else 2.0
        if fused_swiglu:
            # Megatron-core's grouped experts (megatron/core/transformer/moe/experts.py): each routed copy keeps
            # its dispatched input, the first projection's output and the activation's output weighted by the
            # router's probability (activation_func_with_probs, the second projection's input); the combine is
            # a plain sum, so no expert output is kept. FP8: the input and the weighted output in FP8, and the
            # activation's input too (DeepSeek-AI 2024, 3.3.3: "we cache the inputs of the SwiGLU operator ...
            # stored in FP8"; Megatron-core's activation_func_fp8_input_store)
            parts["routed experts"] = k * (lin * h + 2 * lin * f + lin * f)
        else:  # Hugging Face: the input, the gated MLP, and the output the combine weights by the probability
            parts["routed experts"] = k * (gated(f, eb, eb) + 2 * eb * h)
        parts["router"] = 6.0 * m.n_experts
        if m.n_shared_experts:
            parts["shared experts"] = m.n_shared_experts * gated(f, 2.0, lin)
    elif m.gated_mlp:
        parts["MLP (gate, up, activation, product)"] = gated(m.ffn_hidden, 2.0, lin)
    else:
        python_gelu = m.activation == "gelu_tanh" and m.learned_positions > 0
        gelu = (16.0 if c else 10.0) if python_gelu else 4.0
        parts["MLP (input, GELU, output)"] = gelu * m.ffn_hidden
    if m.dropout > 0:
        parts["dropout masks"] = 2.0 * h
    return MappingProxyType(parts)


class TrainingPeak(NamedTuple):
    """Peak memory of one training step on one device, with the parts that make it."""

    total_bytes: float  # the peak
    parts_bytes: Mapping[str, float]  # what is allocated at that moment; sums to total_bytes
    phase: str  # where the peak falls
    candidates: Mapping[str, float]  # the peak candidates considered, bytes


def training_peak(
    model: models.ModelConfig,
    batch: int,
    seq_len: int,
    recompute: str | bool = "none",
    precision: str = "fp32-autocast",
    attention: str = "flash",
    loss: str = "hf",
    experts_in_fp32: bool = HF_EXPERTS_IN_FP32,
) -> TrainingPeak:
    """Peak ``torch.cuda.max_memory_allocated`` of a training step (one device, no parallelism).

    Candidates, the largest is the prediction:

    * **loss, forward**: weights and optimizer states (gradients were freed by
      ``zero_grad(set_to_none=True)``), autocast's bf16 weight copies (its cache holds every copy
      until the forward leaves ``torch.autocast``), every layer's saved activations
      (:func:`layer_activation_parts`), the final norm and its bf16 copy, and the loss's logits at
      the forward's peak (``LOSS_CONVENTIONS``);
    * **loss, backward**: the same with the logits at the backward's start, and only the bf16 copies
      the backward needs (all of them, or only the output layer's with full recomputation);
    * **recomputed layer** (full recomputation): states, the gradients of everything but the first
      layer and the input embedding, the first layer's input, and its recomputed working set with its
      bf16 weights and the gradient flowing into it;
    * **end of backward**: weights, gradients and optimizer states, plus the last layer's input gradient.
    """
    b = _check.positive_int("batch", batch)
    s = _check.positive_int("seq_len", seq_len)
    rc = ("full" if recompute else "none") if isinstance(recompute, bool) else recompute
    _check.choice("recompute", rc, RECOMPUTE)
    _check.choice("loss", loss, LOSS_CONVENTIONS)
    p = PRECISIONS[_check.choice("precision", precision, PRECISIONS)]
    m, h, T = model, model.hidden, float(b) * s
    P = float(m.n_params())
    expert_params = m.n_moe_layers * m.n_experts * m.mlp_params_per_expert() if m.is_moe else 0
    cast_params = (m.n_matrix_params() - (expert_params if experts_in_fp32 else 0)
                   + m.vocab * h) * p["autocast"]  # the output layer is cast too (tied or not)
    states = {"weights": p["weights"] * P, "optimizer states": p["optimizer"] * P}
    per_layer = sum(layer_activation_parts(m, precision, attention, rc, s, experts_in_fp32).values())
    full_layer = sum(layer_activation_parts(m, precision, attention, "none", s, experts_in_fp32).values())
    # every layer's activations: a mixture of experts' dense first layers (DeepSeek-V3's three) kept as dense
    layers_kept = m.n_layers * per_layer
    if m.is_moe and m.first_dense_layers:
        layers_kept = (m.first_dense_layers * sum(layer_activation_parts(m, precision, attention, rc, s,
                                                                         experts_in_fp32, moe=False).values())
                       + m.n_moe_layers * per_layer)
    head = (2 * p["stream"] if m.norm == "rmsnorm" else p["stream"]) * h + 2.0 * h  # final norm + bf16 copy
    fwd_logit, bwd_logit = LOSS_CONVENTIONS[loss]
    w16_bwd = 2.0 * cast_params if rc != "full" else 2.0 * m.vocab * h * p["autocast"]
    common = {**states, "activations": layers_kept * T, "final norm": head * T}
    cands: dict[str, dict[str, float]] = {
        "loss, forward": {**common, "bf16 weight copies (autocast cache)": 2.0 * cast_params,
                          "logits (loss)": fwd_logit * T * m.vocab},
        "loss, backward": {**common, "bf16 weight copies (autocast)": w16_bwd,
                           "logits (loss)": bwd_logit * T * m.vocab},
    }
    grads = p["gradients"] * P
    if rc == "full":
        layer_params = (P - m.n_embedding_params() - m.hidden * (2 if m.norm == "layernorm" else 1)) / m.n_layers
        first_in = m.vocab * h + m.learned_positions * h
        layer_w = 2.0 * p["autocast"] * (m.n_matrix_params() - (expert_params if experts_in_fp32 else 0)) / m.n_layers
        cands["recomputed layer"] = {**states, "gradients": p["gradients"] * (P - layer_params - first_in),
                                     "activations": per_layer * T,
                                     "recomputed layer (activations, bf16 weights)": full_layer * T + layer_w,
                                     "gradient flowing in": p["stream"] * h * T}
    cands["end of backward"] = {**states, "gradients": grads, "input gradient": p["stream"] * h * T}
    totals = {k: sum(v.values()) for k, v in cands.items()}
    phase = max(totals, key=lambda k: totals[k])
    return TrainingPeak(totals[phase], MappingProxyType(cands[phase]), phase, MappingProxyType(totals))


# ---------------------------------------------------------------------------
# Serving: weights by dtype plus the KV cache
# ---------------------------------------------------------------------------

# The dtypes weights and the KV cache are stored in when serving; their sizes are mlcalc.units' (the one
# home: int4 counts the packed nibbles only, group-wise scales come on top).
DTYPE_BYTES: Mapping[str, float] = units.dtype_table(("fp32", "bf16", "fp16", "fp8", "int8", "int4"))
# vLLM lets the engine use this fraction of device memory by default
# (its gpu_memory_utilization=0.9); the rest is left for the CUDA context and buffers.
VLLM_MEMORY_UTILIZATION = 0.9


def dtype_bytes(dtype: str) -> float:
    """Bytes per value of ``dtype`` (one of ``DTYPE_BYTES``)."""
    _check.choice("dtype", dtype, DTYPE_BYTES)
    return DTYPE_BYTES[dtype]


def kv_cache_bytes_per_token(n_layers: int, n_kv_heads: int, head_dim: int, bytes_per_value: float = 2.0) -> float:
    """KV-cache bytes one token occupies: ``2 (K and V) x layers x kv_heads x head_dim x bytes``.

    Grouped-query attention (GQA) and multi-query attention (MQA) shrink it through
    ``n_kv_heads``; ``head_dim`` is explicit because not every model has
    ``head_dim = hidden / n_heads``.

    References
    ----------
    Kwon et al. 2023 (vLLM), section 3: OPT-13B needs 2 x 5120 x 40 x 2 bytes = 800 KB per token.
    """
    layers = _check.positive_int("n_layers", n_layers)
    kv = _check.positive_int("n_kv_heads", n_kv_heads)
    hd = _check.positive_int("head_dim", head_dim)
    b = _check.positive("bytes_per_value", bytes_per_value)
    return 2.0 * layers * kv * hd * b


KV_KINDS = ("MHA", "GQA", "MQA", "MLA")
#: vLLM's default KV-cache block: 16 tokens (``--block-size``; Kwon et al. 2023 use 16 in their evaluation).
VLLM_BLOCK_TOKENS = 16


class KvLayout(NamedTuple):
    """How a model caches keys and values: per layer, per token, and which layers hold the whole context."""

    kind: str  # "MHA" (a KV head per query head), "GQA", "MQA" (one KV head) or "MLA" (a compressed latent)
    bytes_per_token_per_layer: float  # one token in one layer: 2 x kv_heads x head_dim x b; MLA (rank + rope) x b
    global_layers: int  # layers that keep every token of the context
    local_layers: int  # sliding-window layers: they keep at most ``window`` tokens
    window: int  # tokens a local layer keeps (0: no local layers)
    bytes_per_token: float  # one token in every layer (the headline figure; windows not applied)


def kv_layout(model: ModelConfig, kv_dtype: str = "bf16") -> KvLayout:
    """The KV-cache layout of ``model`` with values stored as ``kv_dtype``.

    Standard attention keeps a key and a value vector per KV head: ``2 x n_kv_heads x head_dim``
    values per token and layer (MHA when ``n_kv_heads = n_heads``, MQA at 1, GQA between). MLA
    (DeepSeek-V2/V3) keeps one compressed latent of ``kv_lora_rank`` values plus the shared rotary
    key of ``qk_rope_head_dim`` values: ``(d_c + d_h^R)`` per token and layer (DeepSeek-V2 paper,
    Table 1). Sliding-window layers (Mistral, Gemma 2/3 local layers) keep at most ``window`` tokens.
    """
    b = dtype_bytes(kv_dtype)
    if model.attention == "mla":
        kind, per = "MLA", (model.kv_lora_rank + model.qk_rope_head_dim) * b
    else:
        kind = ("MHA" if model.n_kv_heads == model.n_heads else "MQA" if model.n_kv_heads == 1 else "GQA")
        per = 2.0 * model.n_kv_heads * model.head_dim * b
    return KvLayout(kind, per, model.n_global_layers, model.n_local_layers,
                    model.sliding_window if model.n_local_layers else 0, per * model.n_layers)


def model_kv_bytes_per_token(model: ModelConfig, kv_dtype: str = "bf16") -> float:
    """KV-cache bytes of one token when every layer keeps it (MLA aware; windows not applied).

    >>> round(model_kv_bytes_per_token(model_preset("DeepSeek-V3")))  # 61 x (512 + 64) x 2 bytes
    70272
    """
    return kv_layout(model, kv_dtype).bytes_per_token


def kv_cache_bytes(model: ModelConfig, context: int, kv_dtype: str = "bf16", block_tokens: int = 0) -> float:
    """KV-cache bytes of ONE sequence holding ``context`` tokens.

    Global layers keep ``context`` tokens, sliding-window layers ``min(context, window)`` (Mistral's
    rolling buffer). ``block_tokens > 0``: a paged cache (vLLM's PagedAttention) allocates whole
    blocks, so each layer's tokens round up to a multiple of ``block_tokens``.
    """
    c = _check.positive_int("context", context)
    blk = _check.non_negative("block_tokens", block_tokens)
    if blk != int(blk):
        raise ValueError(f"block_tokens={block_tokens!r} is not allowed: it must be a whole number of tokens")
    lay = kv_layout(model, kv_dtype)

    def held(tokens: int) -> int:
        return -(-tokens // int(blk)) * int(blk) if blk else tokens

    local = min(c, lay.window) if lay.local_layers else 0
    return lay.bytes_per_token_per_layer * (lay.global_layers * held(c) + lay.local_layers * held(local))


def paged_waste_fraction(context: int, block_tokens: int = VLLM_BLOCK_TOKENS) -> float:
    """Share of a paged cache's allocation left empty by a sequence of ``context`` tokens (its last block).

    At most ``block_tokens - 1`` slots per sequence (Kwon et al. 2023, section 4.2: waste is confined to a
    sequence's last block).
    """
    c = _check.positive_int("context", context)
    blk = _check.positive_int("block_tokens", block_tokens)
    alloc = -(-c // blk) * blk
    return (alloc - c) / alloc


class ServingEstimate(NamedTuple):
    """Memory to serve a model at a batch and context length, and the devices that makes."""

    weights_bytes: float  # all parameters at the weight dtype
    kv_cache_bytes: float  # batch x one sequence's cache at the context (windows and MLA applied)
    total_bytes: float  # weights + KV cache
    kv_bytes_per_token: float  # KV cache of one token in every layer (windows not applied)
    n_devices: int  # fewest devices whose usable memory holds total_bytes
    usable_bytes_per_device: float  # device memory x usable fraction


def serving_memory(
    model: ModelConfig,
    batch: int,
    context_len: int,
    device_bytes: float,
    weight_dtype: str = "bf16",
    kv_dtype: str = "bf16",
    usable_fraction: float = VLLM_MEMORY_UTILIZATION,
    block_tokens: int = 0,
) -> ServingEstimate:
    """Weights plus KV cache for ``batch`` sequences of ``context_len`` tokens.

    ``n_devices = ceil((weights + batch x kv_cache_bytes(context)) / (device x usable))``,
    assuming the model is split evenly (tensor or pipeline parallel) over the devices. The cache
    follows the model's layout (:func:`kv_layout`: GQA/MQA/MLA, sliding windows) and, with
    ``block_tokens``, whole paged blocks.
    """
    b = _check.positive_int("batch", batch)
    ctx = _check.positive_int("context_len", context_len)
    dev = _check.positive("device_bytes", device_bytes)
    frac = _check.fraction("usable_fraction", usable_fraction)
    weights = model.n_params() * dtype_bytes(weight_dtype)
    kv = kv_cache_bytes(model, ctx, kv_dtype, block_tokens) * b
    total = weights + kv
    usable = dev * frac
    n = max(1, math.ceil(round(total / usable, 9)))
    return ServingEstimate(weights, kv, total, model_kv_bytes_per_token(model, kv_dtype), n, usable)


def max_kv_tokens(
    model: ModelConfig,
    device_bytes: float,
    n_devices: int = 1,
    weight_dtype: str = "bf16",
    kv_dtype: str = "bf16",
    usable_fraction: float = VLLM_MEMORY_UTILIZATION,
) -> int:
    """Tokens of KV cache (in every layer) that fit beside the weights on ``n_devices`` (0 if the weights don't fit).

    Batch x context must stay below this for a model without sliding windows: at context ``c``
    the largest batch is ``max_kv_tokens // c``; with windows use :func:`max_sequences`.
    """
    dev = _check.positive("device_bytes", device_bytes)
    n = _check.positive_int("n_devices", n_devices)
    frac = _check.fraction("usable_fraction", usable_fraction)
    free = n * dev * frac - model.n_params() * dtype_bytes(weight_dtype)
    return max(0, int(free // model_kv_bytes_per_token(model, kv_dtype)))


def max_sequences(
    model: ModelConfig,
    device_bytes: float,
    context: int,
    n_devices: int = 1,
    weight_dtype: str = "bf16",
    kv_dtype: str = "bf16",
    usable_fraction: float = VLLM_MEMORY_UTILIZATION,
    block_tokens: int = 0,
) -> int:
    """Sequences of ``context`` tokens whose caches fit beside the weights on ``n_devices`` (windows applied)."""
    dev = _check.positive("device_bytes", device_bytes)
    n = _check.positive_int("n_devices", n_devices)
    frac = _check.fraction("usable_fraction", usable_fraction)
    free = n * dev * frac - model.n_params() * dtype_bytes(weight_dtype)
    return max(0, int(free // kv_cache_bytes(model, context, kv_dtype, block_tokens)))


# ---------------------------------------------------------------------------
# Mixture of experts: memory follows the total, compute the active parameters
# ---------------------------------------------------------------------------


class MoeSummary(NamedTuple):
    """What a mixture-of-experts model costs in memory and in compute."""

    total_params: int  # all experts: what must sit in memory
    active_params: int  # parameters one token passes through
    weights_bytes: float  # total_params x bytes of the weight dtype
    forward_flops_per_token: float  # 2 x active_params (one multiply-add per active weight)
    dense_equivalent_bytes: float  # memory a dense model with active_params would need


def moe_summary(model: ModelConfig, weight_dtype: str = "bf16") -> MoeSummary:
    """Memory (total parameters) against compute (active parameters) of ``model``.

    The forward pass costs about 2 FLOP per active parameter per token (Kaplan et al.
    2020, C_forward ~ 2N; attention over the context is left out).
    """
    b = dtype_bytes(weight_dtype)
    total, active = model.n_params(), model.n_active_params()
    return MoeSummary(total, active, total * b, 2.0 * active, active * b)


def moe_experts_touched(n_experts: int, experts_per_token: int, batch: int) -> float:
    """Expected distinct experts that ``batch`` tokens choose when each picks ``experts_per_token`` of ``n_experts``.

    With uniform, independent routing an expert escapes one token with probability ``1 - k/E``
    (C(E-1, k) / C(E, k)), so ``E (1 - (1 - k/E)^B)`` experts are touched: ``k`` at batch 1, all ``E``
    as B grows. Real routers are not uniform; a skewed router touches fewer (this is the upper end).

    >>> moe_experts_touched(8, 2, 1)
    2.0
    """
    e = _check.positive_int("n_experts", n_experts)
    k = _check.positive_int("experts_per_token", experts_per_token)
    b = _check.positive_int("batch", batch)
    if k > e:
        raise ValueError(f"experts_per_token={k!r} is not allowed: it must be at most n_experts={e}")
    return e * (1.0 - (1.0 - k / e) ** b)


def decode_weight_params(model: ModelConfig, batch: int) -> float:
    """Parameters one decode step of ``batch`` tokens reads (see :func:`moe_decode_weight_bytes`)."""
    b = _check.positive_int("batch", batch)
    parts = model.params_breakdown()
    head = 0 if not model.tied_embeddings else model.vocab * model.hidden
    non_expert = model.n_params() - parts["embeddings"] - parts["feed-forward (all experts)"] + head
    if not model.is_moe:
        return float(non_expert)
    touched = moe_experts_touched(model.n_experts, model.experts_per_token, b) + model.n_shared_experts
    return non_expert + model.n_moe_layers * touched * model.mlp_params_per_expert()


def moe_decode_weight_bytes(model: ModelConfig, batch: int, weight_dtype: str = "bf16") -> float:
    """Weight bytes one decode step of ``batch`` tokens reads: every non-expert weight (the output
    projection included, the embedding table not: a lookup reads rows) and, per MoE layer, the shared
    experts plus the routed experts the batch touches (:func:`moe_experts_touched`). Memory holds the
    total (:func:`moe_summary`); the traffic grows from the active towards the total with the batch.
    """
    return decode_weight_params(model, batch) * dtype_bytes(weight_dtype)


# ---------------------------------------------------------------------------
# The whole training picture: model states + activations + overhead per device
# ---------------------------------------------------------------------------


# ---------------------------------------------------------------------------
# Pipeline schedules: how many micro-batches' activations each rank holds at once
# ---------------------------------------------------------------------------

PIPELINE_MEMORY_SCHEDULES = ("1f1b", "interleaved", "gpipe", "dualpipe")


def pipeline_stage_layers(n_layers: int, pp: int, virtual_stages: int = 1, balanced: bool = False) -> tuple[int, ...]:
    """Transformer layers of each pipeline stage, in model order (``pp x virtual_stages`` stages).

    Stage ``g`` runs on rank ``g % pp`` (Narayanan et al. 2021, 2.2.2: rank ``r`` holds model chunks
    ``r, r + p, r + 2p, ...``). The layers are spread as evenly as the count allows, the first stages taking
    the spare ones. ``balanced`` (Llama 3, Dubey et al. 2024, 3.3.2: "we reduce one Transformer layer each from
    the first and the last stages ... the first model chunk on the first stage has only the embedding, and the
    last model chunk on the last stage has only output projection and loss calculation"): the embedding and
    the output layer each take one layer's place, ``L + 2`` places in all. More stages than places leave the
    last ones empty.

    >>> pipeline_stage_layers(126, 16, 8, balanced=True)[:3], sum(pipeline_stage_layers(126, 16, 8, balanced=True))
    ((0, 1, 1), 126)
    """
    L = _check.positive_int("n_layers", n_layers)
    p = _check.positive_int("pp", pp, L)
    v = _check.positive_int("virtual_stages", virtual_stages, L)
    _check.choice("balanced", balanced, (True, False))
    n = p * v
    places = L + (2 if balanced and n > 1 else 0)
    q, rem = divmod(places, n)
    layers = [q + (1 if g < rem else 0) for g in range(n)]
    if balanced and n > 1:
        layers[0] = max(0, layers[0] - 1)
        layers[-1] = max(0, layers[-1] - 1)
    return tuple(layers)


@lru_cache(maxsize=4096, typed=True)  # pure, of small whole numbers: bounded, 4,096 kept (a planner asks per layout)
def pipeline_in_flight(n_layers: int, pp: int, schedule: str = "1f1b", virtual_stages: int = 1, n_micro: int = 0,
                       balanced: bool = False) -> tuple[int, ...]:
    """Activations each pipeline rank holds at its fullest moment, in layer x micro-batches (one unit: one
    layer's activations of one micro-batch). ``n_micro``: micro-batches per step (0: enough for the schedule's
    steady state).

    - "gpipe" (Huang et al. 2019): every micro-batch's forward pass before any backward pass: ``m`` per layer.
    - "1f1b" (PipeDream-Flush, Narayanan et al. 2021, 2.2.1: it "limits the number of in-flight microbatches
      to the pipeline depth"): rank ``r`` of ``p`` holds ``min(p - r, m)`` micro-batches of its layers, so the
      first rank holds ``L`` layers' worth whatever ``p`` is (Korthikanti et al. 2022, 4.2.3).
    - "interleaved" (Narayanan et al. 2021, 2.2.2, as Megatron-LM schedules it): rank ``r`` runs
      ``(p - r - 1) 2 + (v - 1) p`` forward chunks before its first backward one (all ``m v`` when ``m = p``)
      and one more in the steady state; forward ``k`` runs chunk ``(k // p) % v``, the backward passes take the
      chunks in the reverse order. With equal chunks the first rank holds ``L (1 + (p - 1) / (p v))`` layers'
      worth (Korthikanti et al. 2022, 4.2.3); counted here chunk by chunk, so the emptier chunks of
      ``balanced`` stages count what they hold.
    - "dualpipe" (DeepSeek-AI 2024, 3.2.1 and Table 2): each rank holds two stages (``2 L / p`` layers, two
      copies of the parameters) and at most ``p + 1`` micro-batches of one stage's layers: "only increasing the
      peak activation memory by 1/PP times" over 1F1B.

    >>> pipeline_in_flight(32, 4, "interleaved", 2)  # Korthikanti et al.: L (1 + (p - 1) / (p v)) = 32 x 1.375
    (44, 36, 28, 20)
    """
    L = _check.positive_int("n_layers", n_layers)
    p = _check.positive_int("pp", pp, L)
    _check.choice("schedule", schedule, PIPELINE_MEMORY_SCHEDULES)
    v = _check.positive_int("virtual_stages", virtual_stages, L)
    m = _check.non_negative_int("n_micro", n_micro)
    if v > 1 and schedule != "interleaved":
        raise ValueError(f"virtual_stages={v!r} is not allowed: only with schedule='interleaved'")
    if p == 1:  # one stage: micro-batches run one after the other (gradient accumulation)
        return (L,)
    if schedule == "gpipe" and not m:
        raise ValueError("n_micro=0 is not allowed with schedule='gpipe': it holds every micro-batch of the step")
    if schedule == "dualpipe" and p % 2:
        raise ValueError(f"pp={p!r} is not allowed with schedule='dualpipe': it needs an even number of stages")
    return _in_flight_of(pipeline_stage_layers(L, p, 1 if schedule == "dualpipe" else v, balanced), p, schedule, v, m)


def _pipeline_held(layer_weights: tuple[float, ...], pp: int, schedule: str, virtual_stages: int, n_micro: int,
                   balanced: bool) -> tuple[float, ...]:
    """What each rank holds at its fullest moment, as :func:`pipeline_in_flight` (whose checks the arguments
    have passed), each layer counted by its weight (the bytes of its kind): the layers in model order, stage
    ``g`` holding the next ``pipeline_stage_layers(...)[g]`` of them."""
    p, v = pp, virtual_stages
    if p == 1:
        return (sum(layer_weights),)
    counts = pipeline_stage_layers(len(layer_weights), p, 1 if schedule == "dualpipe" else v, balanced)
    chunks, at = [], 0
    for c in counts:
        chunks.append(sum(layer_weights[at:at + c]))
        at += c
    return _in_flight_of(tuple(chunks), p, schedule, v, n_micro)


def _in_flight_of(stages: tuple[Any, ...], p: int, schedule: str, v: int, m: int) -> tuple[Any, ...]:
    """The fullest moment of each of ``p`` ranks whose chunks (stage ``g`` on rank ``g % p``) hold ``stages``
    (layers, or bytes) per micro-batch: :func:`pipeline_in_flight`'s schedules."""
    if schedule == "dualpipe":
        n_in = min(p + 1, m) if m else p + 1
        return tuple(n_in * max(stages[r], stages[p - 1 - r]) for r in range(p))
    if schedule == "gpipe":
        return tuple(m * stages[r] for r in range(p))
    if v == 1:  # 1F1B
        return tuple((min(p - r, m) if m else p - r) * stages[r] for r in range(p))
    out = []
    for r in range(p):
        chunk = [stages[c * p + r] for c in range(v)]
        total = m * v if m else 0
        warm = (p - r - 1) * 2 + (v - 1) * p
        if m == p:
            warm = total
        held_max = 0
        held = 0
        # forward k runs chunk (k // p) % v; backward j frees chunk v - 1 - (j // p) % v. The warm-up's forwards,
        # then one forward and one backward at a time; the steady state repeats every p v steps, so two periods
        # past the warm-up find its fullest moment (a bounded loop).
        n_fwd = min(warm + 1, total) if total else warm + 1
        for k in range(n_fwd):
            held += chunk[(k // p) % v]
        held_max = held
        steps = (total - n_fwd) if total else 2 * p * v
        for j in range(min(steps, 2 * p * v)):
            held -= chunk[v - 1 - (j // p) % v]
            held += chunk[((n_fwd + j) // p) % v]
            held_max = max(held_max, held)
        out.append(held_max)
    return tuple(out)


def in_flight_micro_batches(pp: int, schedule: str = "1f1b", virtual_stages: int = 1, n_micro: int = 0) -> int:
    """The fewest micro-batches a step for which :func:`pipeline_in_flight` holds what it holds with ``n_micro``
    (0: the steady state, the same as any ``n_micro`` past the schedule's warm-up), whatever the layers.

    What a pipeline rank holds depends on the micro-batch count only until the schedule reaches its steady state:
    1F1B holds ``min(p - r, m)`` (steady from ``m = p``); interleaved (``v > 1``) runs ``(p - r - 1) 2 + (v - 1) p + 1``
    forward chunks before its first backward one (all of them when ``m = p``) and then two periods of ``p v``
    one-forward-one-backward steps, the same for every ``m v`` at least ``2 p v + (v + 1) p - 1``; DualPipe holds
    ``min(p + 1, m)``; GPipe holds every micro-batch. Memory is a function of this number, not of ``n_micro``:
    the planner's memory shortcut keys on it.

    >>> in_flight_micro_batches(4, "1f1b", 1, 16), in_flight_micro_batches(4, "1f1b", 1, 3)
    (0, 3)
    >>> in_flight_micro_batches(4, "interleaved", 2, 4), in_flight_micro_batches(4, "interleaved", 2, 16)
    (4, 0)
    """
    p = _check.positive_int("pp", pp)
    _check.choice("schedule", schedule, PIPELINE_MEMORY_SCHEDULES)
    v = _check.positive_int("virtual_stages", virtual_stages)
    m = _check.non_negative_int("n_micro", n_micro)
    if p == 1 or m == 0:
        return 0
    if schedule == "gpipe":
        return m
    if schedule == "dualpipe":
        return 0 if m >= p + 1 else m
    if v == 1:  # 1F1B
        return 0 if m >= p else m
    return 0 if (m != p and m * v >= 2 * p * v + (v + 1) * p - 1) else m


class TrainingFit(NamedTuple):
    """Memory one device needs to train, for one parallel layout, against its capacity."""

    parts_bytes: Mapping[str, float]  # per device: model states by category, activations, logits, overhead
    total_bytes: float  # sum of parts_bytes
    device_bytes: float  # memory of one device
    fits: bool  # total_bytes <= device_bytes
    dp: int  # data-parallel degree
    tp: int  # tensor-parallel degree
    pp: int  # pipeline-parallel degree
    zero_stage: int  # ZeRO stage over the data-parallel ranks

    @property
    def n_devices(self) -> int:
        """Devices in the layout: dp x tp x pp."""
        return self.dp * self.tp * self.pp


def training_memory(
    model: ModelConfig,
    device_bytes: float,
    micro_batch: int = 1,
    seq_len: int = 2048,
    dp: int = 1,
    tp: int = 1,
    pp: int = 1,
    zero_stage: int = 0,
    convention: str = "zero-mixed-adam",
    recompute: str = "selective",
    sequence_parallel: bool = True,
    flash_attention: bool = True,
    overhead_fraction: float = 0.1,
    offload_optimizer: bool = False,
    activations: str = "korthikanti",
    loss: str = "fp32-logits",
    ep: int = 1,
    schedule: str = "1f1b",
    virtual_stages: int = 1,
    n_micro: int = 0,
    balanced_stages: bool = False,
    program: str = "hf",
    fp8_activations: bool = False,
) -> TrainingFit:
    """Per-device training memory of ``model`` in a dp x tp x pp layout, and whether it fits.

    ``ep`` spreads a mixture of experts' routed experts over ``ep`` of the data-parallel ranks
    (expert parallelism): each device keeps ``1 / ep`` of them.

    - Model states: ``n_params / (tp pp)`` per model shard, sharded further over ``dp``
      by ZeRO stage ``zero_stage`` (``zero_model_state_bytes``).
    - Activations: each pipeline rank keeps the micro-batches its ``schedule`` has in flight
      (:func:`pipeline_in_flight`: ``n_micro`` micro-batches a step, 0 for the steady state; with 1F1B the
      first stage keeps ``pp`` micro-batches of ``L / pp`` layers, ``L`` layers' worth whatever ``pp`` is,
      Korthikanti et al. 2022, 4.2.3; interleaved with ``virtual_stages`` chunks a rank a little more;
      ``balanced_stages`` as Llama 3's); the rank with the output layer also keeps one micro-batch's fp32
      logits for the loss, ``4 s b v / tp``. The fullest rank is counted. "dualpipe" keeps two copies of
      the parameters (DeepSeek-AI 2024, 3.2.1): the model states of ``2 / pp`` of the model a rank.
      The per-layer term is Korthikanti's GPT layer (4h MLP, multi-head attention): for SwiGLU/GQA models
      it is an approximation.
    - ``activations="architecture"`` counts each layer of the model in hand instead
      (:func:`layer_activation_parts`: gated MLPs, GQA, RMSNorm as PyTorch keeps it...),
      with bf16 activations (fp32 residual stream and autocast's bf16 weight copies for the
      "fp32-adam" convention); norms and their outputs are split by ``tp`` only with sequence
      parallelism, the rest always. ``loss`` picks how many bytes per logit the loss holds
      (``LOSS_CONVENTIONS``; "fp32-logits" is Korthikanti's 4, "hf" Hugging Face's 12). ``program``:
      "hf", Hugging Face's modelling code as :func:`layer_activation_parts` counts it (routed experts in
      fp32); "megatron", Megatron-core's kernels: the fused SwiGLU, experts in the training precision, and
      with ``fp8_activations`` the inputs of linear layers kept in FP8.
    - Overhead: a stated fraction of the device held back for the CUDA context,
      communication buffers and allocator fragmentation (an assumption, not a
      published constant: 10% by default).
    """
    dev = _check.positive("device_bytes", device_bytes)
    args = (model, micro_batch, seq_len, dp, tp, pp, zero_stage, convention, recompute, sequence_parallel,
            flash_attention, overhead_fraction, offload_optimizer, activations, loss, ep, schedule, virtual_stages,
            n_micro, balanced_stages, program, fp8_activations)
    return _fit_on(_held_of(*args), dev, zero_stage)


def _held_of(*args: Any) -> _Held:
    """:func:`_held_bytes` of training_memory's arguments but the device, in its order; computed each time where an
    input cannot be a key. The micro-batch count (args[18]) is taken as :func:`in_flight_micro_batches` of it where
    every input it reads is plain: what a pipeline holds depends on the count only through that number (the
    schedules of _in_flight_of: 1F1B's min(p - r, m) is p - r from m = p; interleaved runs the same warm-up and
    the same two periods once m v >= 2 p v + (v + 1) p - 1, m != p; DualPipe's min(p + 1, m) is p + 1 from
    m = p + 1: each the m = 0 steady state), and nothing else of the memory reads it. A planner's layouts at many
    counts then share one answer."""
    pp, schedule, v, m = args[5], args[16], args[17], args[18]
    if (type(m) is int and m > 0 and type(pp) is int and pp >= 1 and type(v) is int and v >= 1
            and type(schedule) is str and schedule in PIPELINE_MEMORY_SCHEDULES):
        held_m = in_flight_micro_batches(pp, schedule if pp > 1 else "1f1b", v, m)
        if held_m != m:
            args = args[:18] + (held_m,) + args[19:]
    try:
        return _held_bytes(*args)
    except TypeError:  # an input that cannot be a key
        return _held_bytes.__wrapped__(*args)


def _fit_on(held: _Held, dev: float, zero_stage: int) -> TrainingFit:
    """training_memory's answer on a device of ``dev`` bytes (checked) from its device-independent parts."""
    parts = dict(held.parts)
    parts["overhead (stated)"] = held.overhead_fraction * dev
    total = _total_on(held, dev)
    return TrainingFit(MappingProxyType(parts), total, dev, _fits_on(total, dev), held.dp, held.tp, held.pp, zero_stage)


def _total_on(held: _Held, dev: float) -> float:
    """:func:`_fit_on`'s total: the parts, then the overhead (one sum, in that order: the same float)."""
    return sum((*held.parts.values(), held.overhead_fraction * dev))


def _fits_on(total: float, dev: float) -> bool:
    """Whether ``total`` bytes fit a device of ``dev`` bytes."""
    return total <= dev


class _Held(NamedTuple):
    """What :func:`training_memory` counts whatever the device: its parts but the overhead, its inputs checked."""

    parts: Mapping[str, float]  # model states by category, activations, logits (and autocast's weight copies)
    overhead_fraction: float
    dp: int
    tp: int
    pp: int


# training_memory's parts but the overhead do not depend on the device: a planner that tries one layout on several
# chips counts them once. Remembered by every other input (typed: 2 and 2.0 are different keys), 2,048 kept.
# Computed in three steps, the checks in training_memory's order: the layout's shape (_held_shape: its checks and the
# pipeline's in-flight counts), the model states (the one part that depends on dp: ZeRO's shards) and the activations
# and logits each pipeline rank holds (_held_acts). The shape and the activations are remembered without dp: a
# planner meets the same (tp, pp, schedule, recomputation) at many data-parallel degrees, one per GPU count.
@lru_cache(maxsize=2048, typed=True)
def _held_bytes(model: ModelConfig, micro_batch: int, seq_len: int, dp: int, tp: int, pp: int, zero_stage: int,
                convention: str, recompute: str, sequence_parallel: bool, flash_attention: bool,
                overhead_fraction: float, offload_optimizer: bool, activations: str, loss: str, ep: int,
                schedule: str, virtual_stages: int, n_micro: int, balanced_stages: bool, program: str,
                fp8_activations: bool) -> _Held:
    dp = _check.positive_int("dp", dp)
    shape_args = (model, micro_batch, seq_len, tp, pp, overhead_fraction, ep, schedule, virtual_stages, n_micro,
                  balanced_stages, program, fp8_activations)
    try:
        shape = _held_shape(*shape_args)
    except TypeError:  # an input that cannot be a key
        shape = _held_shape.__wrapped__(*shape_args)
    tp, pp, b, s, over, ep, in_flight, routed, copies = shape
    if dp % ep:
        raise ValueError(f"ep={ep!r} is not allowed: it must divide dp={dp}")
    # the routed experts' states are sharded over the ranks that hold the same experts: dp / ep of them
    # (Megatron-core's expert data-parallel group, expt_dp)
    dense = zero_model_state_bytes(copies * (model.n_params() - routed) / (tp * pp), dp, zero_stage, convention,
                                   offload_optimizer=offload_optimizer)
    experts = zero_model_state_bytes(copies * routed / ep / (tp * pp), dp // ep, zero_stage, convention,
                                     offload_optimizer=offload_optimizer) if routed else None
    states_parts = {k: v + (experts.device_parts[k] if experts else 0.0) for k, v in dense.device_parts.items()}
    acts_args = (model, b, s, tp, pp, convention, recompute, sequence_parallel, flash_attention, activations, loss,
                 schedule, virtual_stages, n_micro, balanced_stages, program, fp8_activations, in_flight, copies)
    try:
        acts = _held_acts(*acts_args)
    except TypeError:  # an input that cannot be a key
        acts = _held_acts.__wrapped__(*acts_args)
    held, with_logits, extra, moe_here, fullest = acts
    if moe_here is not None:  # a mixture of experts whose first layers are dense: each rank its routed experts' states
        per_moe_layer = routed / model.n_moe_layers
        by_count: dict[int, tuple[dict[str, float], float]] = {}  # MoE layers -> (a rank's states, their sum)
        weights = []
        for r, n in enumerate(moe_here):
            known = by_count.get(n)
            if known is None:
                here = zero_model_state_bytes(per_moe_layer * n / ep / tp, dp // ep, zero_stage, convention,
                                              offload_optimizer=offload_optimizer).device_parts if n else {}
                states = {k: v + here.get(k, 0.0) for k, v in dense.device_parts.items()}
                known = by_count[n] = (states, sum(states.values()))
            weights.append(with_logits[r] + known[1])
        fullest = weights.index(max(weights))  # the first of the fullest ranks (as max over the ranks takes it)
        parts = dict(by_count[moe_here[fullest]][0])
    else:
        parts = dict(states_parts)
    parts["activations"] = held[fullest]
    parts["logits (fp32, for the loss)"] = with_logits[fullest] - parts["activations"]
    parts.update(extra)
    return _Held(MappingProxyType(parts), over, dp, tp, pp)


@lru_cache(maxsize=4096, typed=True)
def _held_shape(model: ModelConfig, micro_batch: int, seq_len: int, tp: int, pp: int, overhead_fraction: float,
                ep: int, schedule: str, virtual_stages: int, n_micro: int, balanced_stages: bool, program: str,
                fp8_activations: bool) -> tuple:
    """_held_bytes's checks that come before the model states and what they give: (tp, pp, micro-batch, sequence,
    overhead fraction, ep, the pipeline's in-flight counts, the routed experts' parameters, parameter copies)."""
    tp = _check.positive_int("tp", tp)
    pp = _check.positive_int("pp", pp)
    b = _check.positive_int("micro_batch", micro_batch)
    s = _check.positive_int("seq_len", seq_len)
    over = _check.non_negative("overhead_fraction", overhead_fraction)
    if over >= 1:
        raise ValueError(f"overhead_fraction={overhead_fraction!r} is not allowed: it must be below 1")
    chunked = schedule in ("interleaved", "dualpipe") or balanced_stages  # each chunk's own layers are counted
    if model.n_layers % pp and not chunked:
        raise ValueError(f"pp={pp!r} is not allowed: it must divide n_layers={model.n_layers}")
    ep = _check.positive_int("ep", ep)
    _check.choice("schedule", schedule, PIPELINE_MEMORY_SCHEDULES)
    _check.choice("program", program, ("hf", "megatron"))
    _check.choice("fp8_activations", fp8_activations, (True, False))
    if fp8_activations and program != "megatron":
        raise ValueError("fp8_activations=True is not allowed with program='hf': FP8 training is Megatron-core's here")
    in_flight = pipeline_in_flight(model.n_layers, pp, schedule if pp > 1 else "1f1b", virtual_stages, n_micro,
                                   balanced_stages)
    copies = 2 if (schedule == "dualpipe" and pp > 1) else 1  # DualPipe: two copies of the parameters
    routed = model.n_moe_layers * model.n_experts * model.mlp_params_per_expert()
    return tp, pp, b, s, over, ep, in_flight, routed, copies


@lru_cache(maxsize=2048, typed=True)
def _held_acts(model: ModelConfig, b: int, s: int, tp: int, pp: int, convention: str, recompute: str,
               sequence_parallel: bool, flash_attention: bool, activations: str, loss: str, schedule: str,
               virtual_stages: int, n_micro: int, balanced_stages: bool, program: str, fp8_activations: bool,
               in_flight: tuple[int, ...], copies: int) -> tuple:
    """What each pipeline rank holds besides its model states (whatever dp): (activations per rank, activations
    and logits per rank, the extra parts, the MoE layers per rank of a model with dense first layers (else None),
    the fullest rank of a model without (else 0))."""
    # a mixture of experts whose first layers are dense (DeepSeek-V3's three): each rank counts the kinds of layer
    # it holds, their activations and its routed experts' states
    mixed = model.is_moe and model.first_dense_layers > 0
    _check.choice("activations", activations, ("korthikanti", "architecture"))
    _check.choice("loss", loss, LOSS_CONVENTIONS)
    extra: dict[str, float] = {}
    if activations == "korthikanti":
        per_layer = activation_bytes_per_layer(s, b, model.hidden, model.n_heads, tp, sequence_parallel and tp > 1,
                                               recompute, flash_attention)
        per_dense = per_layer
    else:
        if model.n_heads % tp:
            raise ValueError(f"tp={tp!r} is not allowed: it must divide n_heads={model.n_heads}")
        prec = "fp32-autocast" if convention == "fp32-adam" else "bf16-master"
        mega = program == "megatron"
        unsplit = ("norms", "bf16 copies of norm outputs (autocast)", "layer input (full recomputation)")
        sp = sequence_parallel and tp > 1

        def layer_bytes(moe: bool | None) -> float:
            parts = layer_activation_parts(model, prec, "flash" if flash_attention else "eager", recompute, s,
                                           experts_in_fp32=HF_EXPERTS_IN_FP32 and not mega, fused_swiglu=mega,
                                           fp8_linear_inputs=fp8_activations, moe=moe)
            return s * b * sum(v / (tp if (k not in unsplit or sp) else 1) for k, v in parts.items())

        per_layer = layer_bytes(None)
        per_dense = layer_bytes(False) if mixed else per_layer
        if prec == "fp32-autocast":
            extra["bf16 weight copies (autocast)"] = 2.0 * (model.n_matrix_params() + model.vocab * model.hidden) / (tp * pp)
    logits = max(LOSS_CONVENTIONS[loss]) * s * b * model.vocab / tp
    sched = schedule if pp > 1 else "1f1b"
    moe_here = None
    if mixed:
        L, fd = model.n_layers, model.first_dense_layers
        held = _pipeline_held((per_dense,) * fd + (per_layer,) * (L - fd), pp, sched, virtual_stages, n_micro,
                              balanced_stages)
        moe_here = _moe_layers_per_rank(model, pp, sched, virtual_stages, balanced_stages)
    else:
        held = tuple(v * per_layer for v in in_flight)
    # the rank with the output layer: the last one (DualPipe: every rank holds a last stage)
    with_logits = tuple(v + (logits if (r == pp - 1 or copies == 2) else 0.0) for r, v in enumerate(held))
    fullest = 0 if mixed else max(range(pp), key=lambda r: with_logits[r] + 0.0)
    return held, with_logits, MappingProxyType(extra), moe_here, fullest


@lru_cache(maxsize=1024, typed=True)  # pure, of a model and small whole numbers: bounded, 1,024 kept
def _moe_layers_per_rank(model: ModelConfig, pp: int, schedule: str, virtual_stages: int,
                         balanced: bool) -> tuple[int, ...]:
    """Mixture-of-experts layers each pipeline rank holds (the layers in model order over the stages of
    :func:`pipeline_stage_layers`, stage ``g`` on rank ``g % pp``; DualPipe: rank ``r`` holds stages ``r`` and
    ``pp - 1 - r``), the model's ``first_dense_layers`` being dense."""
    dual = schedule == "dualpipe" and pp > 1
    counts = pipeline_stage_layers(model.n_layers, pp, 1 if dual else virtual_stages, balanced)
    per_stage, at = [], 0
    for c in counts:
        per_stage.append(max(0, at + c - max(at, model.first_dense_layers)))
        at += c
    if dual:
        return tuple(per_stage[r] + per_stage[pp - 1 - r] for r in range(pp))
    return tuple(sum(per_stage[g] for g in range(r, len(per_stage), pp)) for r in range(pp))


def fewest_devices(
    model: ModelConfig,
    device_bytes: float,
    micro_batch: int = 1,
    seq_len: int = 2048,
    zero_stage: int = 3,
    max_tp: int = 8,
    max_devices: int = 16384,
    **kwargs: Any,  # more keywords of training_memory
) -> TrainingFit | None:
    """The smallest dp x tp x pp layout whose per-device memory fits (None if none does).

    Searches tp in powers of two up to ``max_tp`` (dividing the head count), pp over the
    divisors of the layer count, dp in powers of two; among layouts with the fewest
    devices it prefers the smallest tp, then the smallest pp (less communication).
    Other keyword arguments go to ``training_memory``.
    """
    max_tp = _check.positive_int("max_tp", max_tp)
    max_devices = _check.positive_int("max_devices", max_devices)
    tps = [t for t in (1, 2, 4, 8, 16, 32, 64) if t <= max_tp and model.n_heads % t == 0]
    pps = [p for p in range(1, model.n_layers + 1) if model.n_layers % p == 0]
    best: TrainingFit | None = None
    for t in tps:
        for p in pps:
            d = 1
            while t * p * d <= max_devices:
                if best is not None and (t * p * d, t, p) >= (best.n_devices, best.tp, best.pp):
                    break
                fit = training_memory(model, device_bytes, micro_batch, seq_len, d, t, p, zero_stage, **kwargs)
                if fit.fits:
                    best = fit
                    break
                if zero_stage == 0:
                    break  # without ZeRO, more data parallelism does not shrink a device's memory
                d *= 2
    return best


def training_fit_grid(
    model: ModelConfig,
    device_bytes: float,
    zero_stages: tuple[int, ...] = ZERO_STAGES,
    micro_batches: tuple[int, ...] = (1, 2, 4, 8, 16),
    **kwargs: Any,  # more keywords of training_memory
) -> tuple[tuple[float, ...], ...]:
    """Per-device bytes for each ZeRO stage (rows) and micro-batch size (columns).

    Other keyword arguments (``seq_len``, ``dp``, ``tp``, ``pp``, ``recompute``, ...) go
    to ``training_memory``; compare each cell with ``device_bytes`` to see what fits.
    """
    return tuple(
        tuple(training_memory(model, device_bytes, micro_batch=mb, zero_stage=z, **kwargs).total_bytes
              for mb in micro_batches)
        for z in zero_stages
    )


# ---------------------------------------------------------------------------
# The CPU side: dataloader workers, cores, host RAM
# ---------------------------------------------------------------------------


class CpuNeeds(NamedTuple):
    """What one node's CPUs and host memory must provide."""

    dataloader_workers: int  # workers_per_accelerator x accelerators
    processes: int  # workers plus one main (training) process per accelerator
    cores: int  # one core per process
    ram_parts_bytes: Mapping[str, float]  # host memory by use
    ram_bytes: float  # the peak: max(loading the model, offloaded states) + worker memory


def cpu_needs(
    accelerators_per_node: int = 8,
    workers_per_accelerator: int = 2,
    n_params: float = 0.0,
    load_bytes_per_param: float = 4.0,
    buffer_factor: float = 1.5,
    offloaded_bytes_per_node: float = 0.0,
    ram_per_worker_bytes: float = 0.0,
) -> CpuNeeds:
    """Cores and host RAM for one training node.

    Cores: ``accelerators x (workers + 1)``: 2-3 dataloader workers per accelerator plus
    the main process (Bekman, "The AI Battlefield", CPU section).
    RAM: every process first builds the model on the CPU (DeepSpeed's memory docs:
    ``params x 4 x n_gpus x buffer`` for an fp32 model, buffer 1.5); offloaded
    optimizer states or parameters live there during training; the workers need their own.
    """
    g = _check.positive_int("accelerators_per_node", accelerators_per_node)
    w = _check.positive_int("workers_per_accelerator", workers_per_accelerator)
    n = _check.non_negative("n_params", n_params)
    lb = _check.positive("load_bytes_per_param", load_bytes_per_param)
    buf = _check.at_least("buffer_factor", buffer_factor, 1.0)
    off = _check.non_negative("offloaded_bytes_per_node", offloaded_bytes_per_node)
    per_worker = _check.non_negative("ram_per_worker_bytes", ram_per_worker_bytes)
    load = n * lb * g * buf
    workers_ram = per_worker * g * w
    parts = {"loading the model (all processes)": load, "offloaded model states": off,
             "dataloader workers": workers_ram}
    return _check.fields("cpu_needs", CpuNeeds(g * w, g * (w + 1), g * (w + 1), MappingProxyType(parts),
                                             max(load, off) + workers_ram))



# ---------------------------------------------------------------------------
# Eager PyTorch on several GPUs: FSDP2, DTensor tensor parallel, torch.distributed.pipelining
# ---------------------------------------------------------------------------

# What the eager multi-GPU program (scripts/gpu/train_dist.py: PyTorch 2.11) allocates beyond
# :func:`training_peak`'s one-GPU program, read off the PyTorch source:
# - FSDP2 (torch/distributed/fsdp/_fully_shard): fp32 sharded parameters, gradients and AdamW states
#   (16 bytes per parameter / dp); MixedPrecisionPolicy(param_dtype=bf16) runs without autocast, so the
#   residual stream and every activation are bf16 and no bf16 weight copies are cached. A layer's bf16
#   parameters are unsharded only while it runs. At a layer's post-backward (FSDPParamGroup.post_backward:
#   reshard, then foreach_reduce) the backward pass holds the prefetched layer's unsharded bf16
#   parameters (2) and its all-gather buffer (2), this layer's bf16 gradients (2) and the fp32
#   reduce-scatter input they are copied into (4; one such buffer in flight, reduce_scatter_max_input_buffers
#   = 1): FSDP2_BACKWARD_BYTES_PER_LAYER_PARAM = 10. The root group (embedding, final norm, output layer)
#   is all-gathered when the backward pass reaches the output layer and stays unsharded, with its bf16
#   gradients, until the root's post-backward at the end of the backward pass, which reshards it and copies
#   its bf16 gradients (2) into an fp32 reduce-scatter input (4): 6 bytes per root parameter.
# - DTensor tensor parallel with sequence parallel (torch/distributed/tensor/parallel): the norms run on
#   the sequence shard; PrepareModuleInput all-gathers their output, so the bf16 copies that autocast
#   makes for Q, K, V, gate and up (and the bf16 norm outputs under FSDP) are of the whole sequence;
#   everything inside attention and the MLP is split over the heads / the inner width.
# - torch.distributed.pipelining: GPipe runs every micro-batch's forward before any backward, 1F1B keeps
#   at most pp - stage micro-batches in flight (Schedule1F1B's warm-up); the last stage keeps each
#   micro-batch's output (the bf16 logits) until the step returns, and the loss of each micro-batch in
#   flight keeps its fp32 log-softmax; gradients accumulate over micro-batches, so they exist from the
#   first backward on; torch.autocast around the schedule keeps its bf16 weight cache for the whole step.
FSDP2_BACKWARD_BYTES_PER_LAYER_PARAM = 10.0
FSDP2_ROOT_END_BYTES_PER_PARAM = 6.0
PIPELINE_SCHEDULES = ("1f1b", "gpipe")
# The loss over tensor-parallel (vocabulary-sharded) logits under loss_parallel
# (torch/distributed/tensor/parallel/loss.py), bytes per local logit: forward, the bf16 logits (2), their
# fp32 copy (4), ``shifted = x - max`` (4) and ``exp(shifted)`` (4), then the log-softmax result in its
# place: 14; backward (``_nll_loss_and_log_softmax_backward``), the saved log-softmax (4), ``grad_input =
# zeros_like(x)`` (4), ``grad_input + exp(x)`` (4) and its product with the output gradient (4): 16.
LOSS_PARALLEL_BYTES = (14.0, 16.0)


def eager_layout_peak(
    model: models.ModelConfig,
    micro_batch: int,
    seq_len: int,
    *,
    tp: int = 1,
    pp: int = 1,
    dp: int = 1,
    fsdp: bool = False,
    sequence_parallel: bool = True,
    recompute: str = "none",
    schedule: str = "1f1b",
    n_micro: int = 1,
    reshard_after_forward: bool = True,
) -> TrainingPeak:
    """Peak ``torch.cuda.max_memory_allocated`` of the fullest GPU of an eager multi-GPU training step.

    The program is this book's (``scripts/gpu/train_dist.py``, see the notes above): ``tp`` DTensor
    tensor-parallel ranks (``sequence_parallel``: norms on the sequence shard), ``pp`` pipeline stages
    (``schedule`` "1f1b" or "gpipe", ``n_micro`` micro-batches of ``micro_batch`` sequences), ``dp`` FSDP2
    shards when ``fsdp`` (else no data parallelism: ``dp`` must be 1), full activation checkpointing when
    ``recompute`` is "full"; without pipelining ``n_micro`` > 1 is gradient accumulation. Without FSDP: fp32 weights, torch.autocast(bf16), as :func:`training_peak`.
    ``reshard_after_forward=False`` (FSDP's SHARD_GRAD_OP, ZeRO-2; FSDP2's ``fully_shard(reshard_after_forward=False)``):
    each layer's bf16 parameters, once gathered for its forward, stay unsharded until its backward has run, so the
    forward, the loss and the backward hold them for the whole stage (2 bytes per parameter / tp) on top of the
    sharded states; after the backward they are sharded again.
    Each stage is counted phase by phase (end of forward, the loss, the first and last layer of the
    backward pass, the end of the step); the largest over phases and stages is the peak.
    """
    b = _check.positive_int("micro_batch", micro_batch)
    s = _check.positive_int("seq_len", seq_len)
    tp = _check.positive_int("tp", tp)
    pp = _check.positive_int("pp", pp)
    dp = _check.positive_int("dp", dp)
    m_mb = _check.positive_int("n_micro", n_micro)
    _check.choice("recompute", recompute, RECOMPUTE)
    _check.choice("schedule", schedule, PIPELINE_SCHEDULES)
    _check.choice("fsdp", fsdp, (True, False))
    _check.choice("sequence_parallel", sequence_parallel, (True, False))
    _check.choice("reshard_after_forward", reshard_after_forward, (True, False))
    m, h = model, model.hidden
    if dp > 1 and not fsdp:
        raise ValueError(f"dp={dp!r} is not allowed without fsdp: the program shards data-parallel ranks with FSDP2")
    if pp > m.n_layers:
        raise ValueError(f"pp={pp!r} is not allowed: at most n_layers={m.n_layers} stages")
    if m.n_heads % tp:
        raise ValueError(f"tp={tp!r} is not allowed: it must divide n_heads={m.n_heads}")
    sp = sequence_parallel and tp > 1
    T = float(b) * s
    prec = "bf16-master" if fsdp else "fp32-autocast"
    stream = 2.0 if fsdp else 4.0
    cast = 0.0 if fsdp else 1.0
    shard = float(tp * (dp if fsdp else 1))
    L = m.n_layers
    emb = float(m.vocab * h + m.learned_positions * h)
    out = float(m.vocab * h)  # the output layer (a tied one is a copy on the last stage of a pipeline)
    fnorm = float(m._norm_params(h))
    P_layer = (float(m.n_params()) - float(m.n_embedding_params()) - fnorm) / L
    mats_layer = float(m.n_matrix_params()) / L

    def divided(parts: Mapping[str, float]) -> float:
        """Per token bytes of one layer on this GPU: what tensor parallelism splits and what it does not."""
        tot = 0.0
        for k, v in parts.items():
            if k == "bf16 copies of norm outputs (autocast)" or k == "norm outputs (read by the projections)":
                tot += v  # made from the all-gathered (or replicated) input: the whole sequence
            elif k in ("norms", "layer input (full recomputation)"):
                tot += v / (tp if sp else 1)
            else:
                tot += v / tp
        return tot

    def layer_parts(rc: str, moe: bool | None = None) -> dict[str, float]:
        parts = dict(layer_activation_parts(m, prec, "flash", rc, s, moe=moe))
        if fsdp and m.norm == "rmsnorm" and rc != "full":
            # bf16 stream: each RMSNorm keeps x.float() (4) and its normalized bf16 output (2); its output
            # (weight x normalized, bf16) is what the projections read and keep (2)
            parts["norms"] = m.norms_per_layer * 6.0 * h
            parts["norm outputs (read by the projections)"] = 2.0 * h * 2
        return parts

    A = divided(layer_parts(recompute)) * T  # one layer, one micro-batch
    # a mixture of experts' dense first layers (DeepSeek-V3's three), on the first stages: their own activations
    fd = m.first_dense_layers if m.is_moe else 0
    A_dense = divided(layer_parts(recompute, False)) * T if fd else A
    A_full = divided(layer_parts("none")) * T  # a layer's working set while it is recomputed
    head = ((2 * stream if m.norm == "rmsnorm" else stream) * h / (tp if sp else 1) + 2.0 * h) * T
    flowing = stream * h * T / (tp if sp else 1)
    TV = T * m.vocab / tp
    loss_f, loss_b = LOSS_PARALLEL_BYTES if tp > 1 else LOSS_CONVENTIONS["hf"]
    full = recompute == "full"
    per, extra = divmod(L, pp)
    stages: dict[str, dict[str, dict[str, float]]] = {}
    for st in range(pp):
        first, last = st == 0, st == pp - 1
        n_layers = per + (1 if st < extra else 0)
        P_s = n_layers * P_layer + (emb if first else 0.0) + ((fnorm + (out if (pp > 1 or not m.tied_embeddings)
                                                                        else 0.0)) if last else 0.0)
        states = {"weights (fp32)": 4.0 * P_s / shard, "AdamW states (fp32)": 8.0 * P_s / shard}
        grads_all = 4.0 * P_s / shard
        mats_here = n_layers * mats_layer + (out if last else 0.0)
        w16_all = 2.0 * cast * mats_here / tp  # autocast's bf16 copies of every matrix of the stage
        w16_out = 2.0 * cast * (out if last else 0.0) / tp
        w16_layer = 2.0 * cast * mats_layer / tp
        start = st * per + min(st, extra)
        dense_here = max(0, min(fd, start + n_layers) - start)
        acts = (n_layers * A if not dense_here else dense_here * A_dense + (n_layers - dense_here) * A) + \
            (head if last else 0.0)
        root = (emb if first else 0.0) + ((fnorm + out) if last else 0.0)  # FSDP2's root group on this stage
        ws_fsdp = FSDP2_BACKWARD_BYTES_PER_LAYER_PARAM * P_layer / tp if fsdp else 0.0
        ws = (A_full + (0.0 if pp > 1 else w16_layer) if full else 0.0) + ws_fsdp + flowing
        cands: dict[str, dict[str, float]] = {}
        if pp == 1:  # n_micro > 1: gradient accumulation, the gradients of earlier micro-batches are kept
            end_states = states
            if m_mb > 1:
                states = end_states = {**states, "gradients (accumulated)": grads_all}
            if fsdp and not reshard_after_forward:  # SHARD_GRAD_OP: gathered in the forward, kept to the backward
                states = {**states, "unsharded bf16 parameters (no reshard after forward)": 2.0 * P_s / tp}
            w16_saved = w16_out if full else w16_all
            root_bwd = {"root group unsharded (bf16) and the output layer's bf16 gradient":
                        (2.0 * root + 2.0 * out) / tp} if fsdp else {}
            if not fsdp:
                cands["end of forward (autocast cache)"] = {**states, "bf16 weight copies (autocast cache)": w16_all,
                                                            "activations": acts, "logits (bf16)": 2.0 * TV}
            cands["loss, forward"] = {**states, "bf16 weight copies (autocast)": w16_saved, "activations": acts,
                                      "logits (loss)": loss_f * TV}
            cands["loss, backward"] = {**states, "bf16 weight copies (autocast)": w16_saved, "activations": acts,
                                       "logits (loss)": loss_b * TV}
            g_out = 0.0 if (fsdp or m_mb > 1) else 4.0 * (fnorm + out) / shard
            cands["backward, last layer"] = {**states, "bf16 weight copies (autocast)": w16_saved, **root_bwd,
                                             "gradients (output layer)": g_out,
                                             "activations": acts - head, "layer working set": ws}
            g_most = 0.0 if m_mb > 1 else grads_all - 4.0 * (P_layer + emb) / shard
            cands["backward, first layer"] = {**states, "bf16 weight copies (autocast)": w16_out + (
                0.0 if full else w16_layer), **root_bwd, "gradients (all but the first layer)": g_most,
                "activations": A, "layer working set": ws}
            end = {**end_states, "gradients": 0.0 if m_mb > 1 else grads_all, "input gradient": flowing}
            if fsdp:
                end["root group: bf16 gradients and their fp32 reduce-scatter input"] = \
                    FSDP2_ROOT_END_BYTES_PER_PARAM * root / tp
            cands["end of backward"] = end
        else:
            held = {**states, "bf16 weight copies (autocast cache, whole step)": w16_all}
            if fsdp:  # under pipelining FSDP2 keeps every layer unsharded after the forward (no reshard)
                held["unsharded bf16 parameters (no reshard after forward)"] = 2.0 * P_s / tp
                # and the stage's backward runs without gradient sync until the last micro-batch
                # (pipelining/stage.py: set_requires_gradient_sync(False)): FSDP2 accumulates each gradient
                # unsharded in the reduce dtype (FSDPParam.unsharded_accumulated_grad, fp32)
                grads_all = 4.0 * P_s / tp
            if schedule == "gpipe":
                for k in (0, 1):  # the first and the second micro-batch's backward
                    if k >= m_mb:
                        break
                    c = {**held, "gradients": grads_all if k else 0.0, "activations": (m_mb - k) * acts,
                         "layer working set": ws}
                    if last:
                        c["logits: kept outputs (bf16), log-softmax (fp32) in flight, the loss's gradients"] = \
                            TV * (6.0 * (m_mb - k) + 2.0 * k + loss_b - 4.0)
                    cands[f"stage {st}, backward of micro-batch {k + 1}"] = c
            else:
                n_in = min(m_mb, pp - st)
                lg = {}
                if last:
                    lg = {"logits: kept outputs (bf16), the loss in flight": TV * (2.0 * m_mb + loss_b)}
                cands[f"stage {st}, warm-up ({n_in} in flight)"] = {
                    **held, "activations": n_in * acts, "layer working set": ws,
                    **({"logits: the loss in flight": (2.0 + loss_b) * TV} if last else {})}
                if m_mb > n_in:
                    cands[f"stage {st}, steady 1F1B ({n_in} in flight)"] = {
                        **held, "gradients": grads_all, "activations": n_in * acts, "layer working set": ws, **lg}
        stages[f"stage {st}" if pp > 1 else "one stage"] = cands
    totals = {k: sum(v.values()) for cs in stages.values() for k, v in cs.items()}
    flat = {k: v for cs in stages.values() for k, v in cs.items()}
    phase = max(totals, key=lambda k: totals[k])
    return TrainingPeak(totals[phase], MappingProxyType({k: v for k, v in flat[phase].items() if v}), phase,
                        MappingProxyType(totals))


# Object parameters (a ModelConfig, a Fabric, a list of offers...) are checked by type before each call.
_check.guard(globals())
