"""Memory calculators: how many GPUs, bytes per parameter, ZeRO, activations, serving, the whole fit."""

from __future__ import annotations

from typing import Any, Mapping

from mlcalc import _check, memory, vl
from mlcalc.accelerators import spec
from mlcalc.calc import Calc, Control, View, choice, register
from mlcalc.calculators._common import accelerator_control

# --------------------------------------------------------------------------- how many GPUs


def _gpu_count_compute(v: Mapping[str, Any]) -> memory.GpuEstimate:
    acc = spec(v["accelerator"])
    params = _check.positive("params (billions)", v["params"])
    return memory.gpus_needed(params * 1e9, acc.memory_bytes, mode=v["mode"], headroom=v["headroom"])


def _gpu_count_view(r: memory.GpuEstimate, v: Mapping[str, Any]) -> View:
    verb = "train" if v["mode"] == "train" else "serve"
    text = (f"At least {r.n_gpus:,} x {v['accelerator']} to {verb} "
            f"({r.total_bytes / 1e9:,.0f} GB / {r.gpu_memory_bytes / 1e9:,.0f} GB = {r.exact:,.2f})")
    parts = [{"part": name, "gb": nbytes / 1e9, "order": i} for i, (name, nbytes) in enumerate(r.parts_bytes.items())]
    capacity = r.n_gpus * r.gpu_memory_bytes / 1e9
    chart = vl.chart(
        title=f"{r.n_gpus:,} x {v['accelerator']} = {capacity:,.0f} GB for {r.total_bytes / 1e9:,.0f} GB needed",
        height=60,
        layer=[
            {"data": {"values": vl.rows(parts)}, "mark": "bar",
             "encoding": {"x": vl.field("gb", title="GB (1e9 bytes)", stack="zero"),
                          "color": vl.field("part", "nominal", title="", sort=None),
                          "order": vl.field("order"),
                          "tooltip": [vl.field("part", "nominal"), vl.field("gb", format=",.0f")]}},
            {"data": {"values": vl.rows([{"gb": capacity, "what": "memory of the accelerators"}])},
             "mark": {"type": "rule", "color": "black", "strokeWidth": 2},
             "encoding": {"x": vl.field("gb"), "tooltip": [vl.field("what", "nominal"), vl.field("gb", format=",.0f")]}},
        ],
    )
    return View(text=text, chart=chart)


GPU_COUNT = register(Calc(
    key="memory.gpu_count",
    title="How many GPUs do you need? Model size, accelerator, training or serving.",
    controls=(
        Control("params", "Params (B)", "number", 80.0, step=1.0, help="parameters, billions"),
        accelerator_control(),
        choice("mode", "Mode", [("Train", "train"), ("Serve", "inference")], "train", kind="toggle"),
        Control("headroom", "Headroom", "slider", memory.SEED_HEADROOM, min=1.0, max=2.0, step=0.05,
                help="multiplier for activations and the rest (the seed's 1.25)"),
    ),
    compute=_gpu_count_compute,
    view=_gpu_count_view,
))
