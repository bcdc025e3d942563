"""Fine-tuning a released model on one GPU: memory and time of full fine-tuning, LoRA and QLoRA.

LoRA (Hu et al. 2021) freezes the model and trains, beside each targeted projection ``W`` (``d_in x d_out``),
two small matrices ``A`` (``d_in x r``) and ``B`` (``r x d_out``): ``r (d_in + d_out)`` parameters each.
QLoRA (Dettmers et al. 2023) also stores the frozen projections in 4-bit NormalFloat (NF4) with double
quantization: 4 bits per weight plus 0.127 bits of quantization constants.

Memory is counted tensor by tensor as Hugging Face ``transformers`` + ``peft`` hold it, on the
architecture in hand (:func:`mlcalc.memory.layer_activation_parts`), and checked on LoRA runs measured in
this book on an H100 (``data/measured/h100-2026-11-26-finetune-lora``). Full fine-tuning is
:func:`mlcalc.memory.training_peak` (checked on 21 measured runs). Units: bytes, seconds, FLOP, FLOP/s.
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from types import MappingProxyType
from typing import Any, Mapping, NamedTuple

from mlcalc import _check, memory, units
from mlcalc.models import ModelConfig

METHODS = ("full", "lora", "qlora")
#: The projections of a decoder layer LoRA can target (Hugging Face Llama names).
MODULES = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
TARGET_PRESETS: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "q, v (Hu et al. 2021)": ("q_proj", "v_proj"),
    "attention (q, k, v, o)": ("q_proj", "k_proj", "v_proj", "o_proj"),
    "all linear (QLoRA)": MODULES,
})
#: Bits per weight of NF4 with double quantization: 4 + 8/64 + 32/(64 x 256) = 4.127 (Dettmers et al. 2023,
#: section 3: "reduces the memory footprint from 0.5 bits per parameter to 0.127").
NF4_DQ_BITS = 4.0 + 8.0 / 64 + 32.0 / (64 * 256)
#: Bytes per adapter weight by the dtype it is kept in: peft keeps adapters in fp32 by default (its
#: autocast_adapter_dtype); QLoRA's recipe casts them to bf16. AdamW's two moments are fp32 either way (8
#: bytes); the gradient, in the adapter's dtype, exists from the backward pass to the optimizer step
#: (zero_grad(set_to_none=True) frees it).
ADAPTER_DTYPES: Mapping[str, float] = units.dtype_table(("fp32", "bf16"))
ADAM_BYTES = 8.0


def module_shapes(model: ModelConfig) -> Mapping[str, tuple[int, int]]:
    """(d_in, d_out) of each projection of one decoder layer (dense models; a non-gated MLP has no gate)."""
    h, f = model.hidden, model.ffn_hidden
    vw = (model.n_heads if model.attention == "mla" else model.n_kv_heads) * model.v_dim
    shapes = {"q_proj": (h, model.q_width), "k_proj": (h, model.kv_width), "v_proj": (h, vw),
              "o_proj": (model.attn_out_width, h), "gate_proj": (h, f), "up_proj": (h, f), "down_proj": (f, h)}
    if not model.gated_mlp:
        del shapes["gate_proj"]
    return MappingProxyType(shapes)


ATTENTION_MODULES = MODULES[:4]


def _targets(model: ModelConfig, targets: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    if model.is_moe or model.attention == "mla":
        raise ValueError(f"model={model.name!r} is not allowed: the fine-tuning model covers dense models with "
                         "GQA/MHA attention (Llama, Mistral, Qwen, Gemma, GPT)")
    out = tuple(targets)
    if not out:
        raise ValueError("targets=() is not allowed: name at least one of " + ", ".join(MODULES))
    for t in out:
        _check.choice("targets", t, MODULES if model.gated_mlp else ATTENTION_MODULES)
    return out


def lora_params(model: ModelConfig, rank: int, targets: tuple[str, ...] | list[str]) -> int:
    """Trainable parameters of LoRA: ``layers x sum over targets of r (d_in + d_out)``.

    >>> from mlcalc import models
    >>> lora_params(models.preset("Llama-3.1 8B"), 16, ("q_proj", "v_proj"))
    6815744
    """
    r = _check.positive_int("rank", rank, 65536)
    shapes = module_shapes(model)
    return model.n_layers * sum(r * sum(shapes[t]) for t in _targets(model, targets))


class FineTuneMemory(NamedTuple):
    """Peak memory of one fine-tuning step on one GPU, with the parts held at the peak."""

    total_bytes: float  # the peak (torch.cuda.max_memory_allocated)
    parts_bytes: Mapping[str, float]  # what is allocated at that moment; sums to total_bytes
    phase: str  # where the peak falls
    trainable_params: int  # parameters with gradients
    static_bytes: float  # held between steps: weights and adapter states


def _frozen_layer_bytes(model: ModelConfig, targets: tuple[str, ...], rank: int, seq_len: int,
                        adapter_dtype: str = "fp32") -> float:
    """Bytes per token one frozen layer with adapters keeps for the backward pass (no recomputation).

    The trainable layer of :func:`mlcalc.memory.layer_activation_parts` (bf16 weights, flash attention),
    less what only a weight gradient needs: the down projection's input (the gated product, ``2f``), which
    nothing else saves once its weight is frozen (the other projections' inputs are saved anyway, by the
    norms and by attention). Each adapted projection's lora_A saves its input and its own output (``r``
    values): with fp32 adapters peft casts the input to fp32 first, a new ``4 d_in`` bytes; with bf16
    adapters it saves the bf16 input itself, which only for the down projection was not kept already.
    """
    base = sum(memory.layer_activation_parts(model, "bf16-master", "flash", "none", seq_len).values())
    shapes = module_shapes(model)
    a = ADAPTER_DTYPES[adapter_dtype]
    if adapter_dtype == "fp32":
        adapters = sum(4.0 * shapes[t][0] for t in targets)
    else:
        adapters = 2.0 * model.ffn_hidden if "down_proj" in targets else 0.0
    return base - 2.0 * model.ffn_hidden + adapters + a * rank * len(targets)


def finetune_memory(model: ModelConfig, method: str = "lora", rank: int = 16,
                    targets: tuple[str, ...] | list[str] = ("q_proj", "v_proj"), batch: int = 1,
                    seq_len: int = 2048, recompute: bool = False, loss: str = "hf",
                    adapter_dtype: str = "fp32") -> FineTuneMemory:
    """Peak memory of fine-tuning ``model`` on one GPU (Hugging Face transformers + peft, as Trainer calls it).

    - **full**: :func:`mlcalc.memory.training_peak` (fp32 weights, bf16 autocast, AdamW: 16 bytes/param).
    - **lora**: frozen bf16 weights (2 bytes/param); adapters in ``adapter_dtype`` (fp32, peft's default, or
      bf16, QLoRA's recipe) with fp32 AdamW moments and a gradient;
      activations of frozen layers with adapters (``_frozen_layer_bytes``); the loss's logits
      (:data:`mlcalc.memory.LOSS_CONVENTIONS`).
    - **qlora**: the same with the decoder's projections in NF4 with double quantization
      (:data:`NF4_DQ_BITS`); embeddings, the output layer and norms stay bf16.

    With ``recompute`` (gradient checkpointing of every layer) each layer keeps only its input (``2 h`` bytes
    per token) and the peak is the larger of the loss (all layer inputs and the logits) and one layer
    recomputed during the backward pass.

    LoRA r = 16 on q_proj and v_proj of Llama 3.1 8B trains 6,815,744 parameters, as peft counted them in
    this book's H100 run (mlcalc/data/measured/h100-2026-11-26-finetune-lora):

    >>> from mlcalc import models
    >>> finetune_memory(models.preset("Llama-3.1 8B")).trainable_params
    6815744
    """
    _check.choice("method", method, METHODS)
    b = _check.positive_int("batch", batch, 1 << 20)
    s = _check.positive_int("seq_len", seq_len, 1 << 22)
    _check.choice("loss", loss, memory.LOSS_CONVENTIONS)
    _check.choice("adapter_dtype", adapter_dtype, ADAPTER_DTYPES)
    if method == "full":
        p = memory.training_peak(model, b, s, "full" if recompute else "none", "fp32-autocast", "flash", loss)
        n = model.n_params()
        prec = memory.PRECISIONS["fp32-autocast"]
        held = prec["weights"] + prec["optimizer"]  # between steps: no gradients (freed by zero_grad)
        return _check.fields("finetune_memory", FineTuneMemory(p.total_bytes, p.parts_bytes, p.phase, n, held * n))
    tg = _targets(model, targets)
    if not model.gated_mlp:
        raise ValueError(f"model={model.name!r} is not allowed for method={method!r}: LoRA memory is counted for "
                         "gated-MLP models (Llama, Mistral, Qwen, Gemma), the ones it is checked on")
    n_lora = lora_params(model, rank, tg)
    P = float(model.n_params())
    if method == "lora":
        weights = {"weights (bf16, frozen)": 2.0 * P}
    else:
        proj = float(model.n_layers * sum(i * o for i, o in module_shapes(model).values()))
        weights = {"projections (NF4 + double quantization)": proj * NF4_DQ_BITS / 8.0,
                   "embeddings, output layer, norms (bf16)": 2.0 * (P - proj)}
    a = ADAPTER_DTYPES[adapter_dtype]
    states = {**weights, f"adapters ({adapter_dtype} weights, fp32 AdamW moments)": (a + ADAM_BYTES) * n_lora}
    T, h = float(b) * s, model.hidden
    fwd_logit, bwd_logit = memory.LOSS_CONVENTIONS[loss]
    logits = max(fwd_logit, bwd_logit) * T * model.vocab
    per_layer = _frozen_layer_bytes(model, tg, int(rank), s, adapter_dtype)
    if not recompute:
        parts = {**states, "activations": model.n_layers * per_layer * T, "logits (loss)": logits}
        phase = "loss"
    else:
        at_loss = {**states, "layer inputs (checkpointing)": model.n_layers * 2.0 * h * T, "logits (loss)": logits}
        recomputed = {**states, "layer inputs (checkpointing)": (model.n_layers - 1) * 2.0 * h * T,
                      "one layer recomputed": per_layer * T, "gradient flowing in": 2.0 * h * T}
        recomputed[f"adapter gradients ({adapter_dtype})"] = a * n_lora
        parts, phase = max(((at_loss, "loss"), (recomputed, "recomputed layer")), key=lambda x: sum(x[0].values()))
    total = sum(parts.values())
    return _check.fields("finetune_memory", FineTuneMemory(total, MappingProxyType(parts), phase, n_lora,
                                                          sum(states.values())))


def finetune_flops_per_token(model: ModelConfig, method: str = "lora", recompute: bool = False) -> float:
    """FLOPs one token costs, counted as multiply-adds of the weight matrices (``2N`` per pass).

    Full fine-tuning: forward 2N + backward 4N (input and weight gradients) = 6N, 8N with recomputation.
    LoRA and QLoRA: forward 2N + the input gradients 2N (they must flow back through every frozen layer to
    reach the adapters below) = 4N, 6N with recomputation; the adapters' own products (``r / d`` of these)
    and attention are left out, as in the ``6N`` rule.
    """
    _check.choice("method", method, METHODS)
    N = float(model.n_params())
    passes = (6.0 if method == "full" else 4.0) + (2.0 if recompute else 0.0)
    return _check.positive_result("flops per token", passes * N)


def finetune_step_s(model: ModelConfig, tokens: int, flops_per_s: float, method: str = "lora",
                    recompute: bool = False) -> float:
    """Step time of ``tokens`` tokens at an achieved rate: ``tokens x FLOPs per token / flops_per_s``."""
    t = _check.positive_int("tokens", tokens, 1 << 40)
    rate = _check.positive("flops_per_s", flops_per_s)
    return _check.positive_result("step time", t * finetune_flops_per_token(model, method, recompute) / rate)


# --------------------------------------------------------------------------- measured runs


@lru_cache(maxsize=None)
def measured() -> tuple[Mapping[str, Any], ...]:
    """The LoRA runs measured in this book (one H100, transformers 5.17, peft 0.21), as recorded."""
    raw = json.loads(resources.files("mlcalc.data").joinpath(
        "measured/h100-2026-11-26-finetune-lora/lora.json").read_text())
    return tuple(MappingProxyType({**c, "device": raw["environment"]["device_name"]}) for c in raw["cases"]
                 if "peak_bytes" in c)


__all__ = ["ADAM_BYTES", "ADAPTER_DTYPES", "ATTENTION_MODULES", "FineTuneMemory", "METHODS", "MODULES", "NF4_DQ_BITS", "TARGET_PRESETS",
           "finetune_flops_per_token", "finetune_memory", "finetune_step_s", "lora_params", "measured",
           "module_shapes"]


_check.guard(globals())
