"""Fine-tuning calculator: memory and step time of full fine-tuning, LoRA and QLoRA of a released model."""

from __future__ import annotations

from typing import Any, Mapping

from mlcalc import _check, charts, compute, finetune, memory, steptime
from mlcalc.accelerators import catalogue, spec
from mlcalc.calc import Calc, Control, Table, View, choice, register
from mlcalc.calculators._common import duration, finite, fixed
from mlcalc.units import GB


def _rate(chip: str, model: memory.ModelConfig | None = None, batch: int = 1, seq_len: int = 2048,
          recompute: bool = False) -> float:
    """The FLOP/s a full training step of ``model`` reaches on one ``chip``, by the book's step-time engine
    (:func:`mlcalc.steptime.predict_step`, the eager Hugging Face program on the chip's machine): the
    step's FLOPs (:func:`mlcalc.finetune.finetune_flops_per_token`, full) over its predicted time."""
    m = model if model is not None else memory.model_preset("Llama-3 8B")
    lay = steptime.Layout(micro_batch=batch, recompute="full" if recompute else "none")
    p = steptime.predict_step(m, lay, seq_len=seq_len, machine=chip, engine="eager")
    return finite("achieved FLOP/s", finetune.finetune_flops_per_token(m, "full", recompute) * batch * seq_len
                  / p.step_s)


def _chips() -> list[tuple[str, str]]:
    """Accelerators with an achievable bf16 matmul figure (the engine carries its machine over by it)."""
    return [(f"{a.key} ({a.memory_gb:g} GB)", a.key) for a in catalogue().values()
            if a.has("bf16") and compute.has_flops(a.key, "bf16", "achievable")]


def _dense_models() -> list[str]:
    return [k for k, m in memory.model_presets().items() if m.gated_mlp and not m.is_moe and m.attention != "mla"]


def _compute(v: Mapping[str, Any]) -> dict[str, Any]:
    m = memory.model_preset(v["model"])
    batch = _check.positive_int("batch", v["batch"], 1 << 16)
    seq = _check.positive_int("sequence length", v["seq_len"], 1 << 20)
    mem = finetune.finetune_memory(m, v["method"], _check.positive_int("rank", v["rank"], 65536),
                                   finetune.TARGET_PRESETS[v["targets"]], batch, seq, bool(v["recompute"]),
                                   adapter_dtype=v["adapter_dtype"])
    rate = _rate(v["accelerator"], m, batch, seq, bool(v["recompute"]))
    step = finetune.finetune_step_s(m, batch * seq, rate, v["method"], bool(v["recompute"]))
    return {"mem": mem, "step_s": step, "tokens_per_s": finite("tokens per second", batch * seq / step),
            "device_bytes": spec(v["accelerator"]).memory_bytes, "rate": rate}


def _view(r: Mapping[str, Any], v: Mapping[str, Any]) -> View:
    mem, dev = r["mem"], r["device_bytes"]
    fits = "fits" if mem.total_bytes <= dev else "does NOT fit"
    text = (f"{v['method']}: peak {fixed(mem.total_bytes / GB)} GB ({fixed(mem.total_bytes / 2**30)} GiB) at the {mem.phase}; "
            f"{fits} one {v['accelerator']}: {spec(v['accelerator']).capacity_text()}\n"
            f"{mem.trainable_params / 1e6:,.1f} M trainable parameters; a step of {int(v['batch']) * int(v['seq_len']):,} "
            f"tokens ~{duration(r['step_s'])} ({r['tokens_per_s']:,.0f} tokens/s at {r['rate'] / 1e12:,.0f} TFLOP/s achieved)"
            + ("\nthe adapters' own work (casts, small products) adds time that FLOPs do not count"
               if v["method"] != "full" else ""))
    parts = sorted(mem.parts_bytes.items(), key=lambda kv: -kv[1])
    table = Table(("held at the peak", "GB (1e9 bytes)"), tuple((k, b / GB) for k, b in parts))
    rows = [{"bar": "peak", "part": k, "gb": b / GB, "order": i} for i, (k, b) in enumerate(parts)]
    chart = charts.parts(rows, title=f"{mem.total_bytes / GB:,.1f} GB against {dev / GB:,.0f} GB (black line)",
                         value="gb", value_title="GB (1e9 bytes)", capacity={"gb": dev / GB}, tip_title="GB")
    return View(text=text, table=table, chart=chart)


MEMORY = register(Calc(
    key="finetune.memory",
    widget="FineTuneWidget",
    title="Fine-tuning on one GPU: memory and step time of full fine-tuning, LoRA and QLoRA.",
    controls=(
        choice("model", "Model", _dense_models(), "Llama-3.1 8B"),
        choice("method", "Method", list(finetune.METHODS), "lora", kind="toggle"),
        Control("rank", "Rank r", "int", 16),
        choice("targets", "Targets", list(finetune.TARGET_PRESETS), "q, v (Hu et al. 2021)"),
        choice("adapter_dtype", "Adapters", list(finetune.ADAPTER_DTYPES), "fp32", kind="toggle",
               help="peft keeps adapters in fp32 by default; QLoRA's recipe uses bf16"),
        Control("batch", "Batch", "int", 1),
        Control("seq_len", "Sequence length", "int", 2048),
        Control("recompute", "Gradient checkpointing", "check", False),
        choice("accelerator", "Accelerator", _chips(), "H100-SXM"),
    ),
    compute=_compute,
    view=_view,
    notes="Checked on 8 LoRA runs measured on an H100 (within 2%); full fine-tuning is the training-memory model.",
))
