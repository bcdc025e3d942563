"""The book's training runs of Hugging Face models (``scripts/gpu/train_hf.py``) and the machine they ran on.

Each run folder ``mlcalc/data/measured/<run>/train_hf/`` holds ``train_hf_part*.json`` (training
cases), optionally ``floor_part*.json`` (the same models at 1 x 64 tokens, where the host sets the
pace), ``rates.json`` (``scripts/gpu/machine_rates.py``: matmul, attention, element-wise rates) and
``fp32_rates.json`` (``scripts/gpu/fp32_rates.py``: fp32 products, which routed experts run).
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from types import MappingProxyType
from typing import Any, Mapping

from mlcalc import _check, measured, models, steptime
from mlcalc.models import ModelConfig


@dataclass(frozen=True)
class HFCase:
    """One measured training case."""

    run: str  # run folder
    model: ModelConfig  # the model trained
    batch: int  # sequences per step
    seq_len: int  # tokens per sequence
    recompute: bool  # gradient checkpointing of every layer
    peak_bytes: float  # torch.cuda.max_memory_allocated over the timed steps
    step_s: float  # median step time
    n_params: int  # parameters as PyTorch counted them
    phases: Mapping[str, float]  # one instrumented step: forward_s, backward_s, optimizer_s, ..._peak_bytes
    device: str  # card name as PyTorch reported it
    software: str  # torch / transformers versions


def _folder(run: str) -> Any:
    return resources.files("mlcalc.data").joinpath("measured").joinpath(run).joinpath("train_hf")


def runs() -> tuple[str, ...]:
    """Run folders that hold Hugging Face training cases."""
    root = resources.files("mlcalc.data").joinpath("measured")
    return tuple(sorted(p.name for p in root.iterdir() if p.is_dir() and p.joinpath("train_hf").is_dir()))


@lru_cache(maxsize=None)
def cases(run: str, kind: str = "train_hf") -> tuple[HFCase, ...]:
    """Measured cases of one run: ``kind`` "train_hf" (the sweep) or "floor" (1 x 64 tokens)."""
    _check.choice("run", run, runs())
    _check.choice("kind", kind, ("train_hf", "floor"))
    out: list[HFCase] = []
    for f in sorted(_folder(run).iterdir(), key=lambda p: p.name):
        if not (f.name.startswith(kind + "_part") and f.name.endswith(".json")):
            continue
        data = json.loads(f.read_text())
        env = data["environment"]
        for c in data["cases"]:
            if "step_s" not in c or "peak_bytes" not in c:
                continue
            out.append(HFCase(run, models.from_dict(c["model"]), int(c["batch"]), int(c["seq_len"]),
                              bool(c["recompute"]), float(c["peak_bytes"]), float(c["step_s"]), int(c["n_params"]),
                              MappingProxyType(dict(c.get("phases", {}))), str(env.get("device_name", "")),
                              f"torch {env.get('torch')}, transformers {env.get('transformers')}"))
    return tuple(out)


@lru_cache(maxsize=None)
def machine(run: str, fp32_matmul_flops_per_s: float = 0.0) -> steptime.Machine:
    """The machine of a run: its measured rates (scaled to the card's sustained matmul rate), and host
    constants from its floor cases: seconds per forward and per backward op; checkpointing's host cost per layer as
    :func:`mlcalc.distruns.checkpoint_calibration`'s forward ops at this machine's own forward op (its floors' own
    difference with and without checkpointing mixed two paces: two single steps, each at its vCPU's pace)."""
    _check.choice("run", run, runs())
    f = _folder(run).joinpath("rates.json")
    if not f.is_file():
        raise ValueError(f"run={run!r} is not allowed: it has no rates.json")
    floors = [(c.model, c.recompute, c.phases["forward_s"], c.phases["backward_s"]) for c in cases(run, "floor")]
    host = steptime.host_constants_from_floors(floors) if floors else None
    if host is not None:  # checkpointing's host work at the pace of the floors' own forward op: one pace for all
        from mlcalc import distruns

        host = (host[0], host[1], distruns.checkpoint_calibration() * host[0])
    data = json.loads(f.read_text())
    keep = 1.0
    try:  # the card's own sustained / burst matmul rate, measured by mlcalc.bench on the same kind of card
        card = measured.matmul(measured.accelerator_key(str(data["environment"]["device_name"])), "bf16")
        if card.sustained_tflops:
            keep = min(1.0, card.sustained_tflops / card.best_tflops)
    except (KeyError, ValueError):
        pass
    f32 = _folder(run).joinpath("fp32_rates.json")
    if not fp32_matmul_flops_per_s and f32.is_file():  # grouped fp32 products, as the experts run them
        rows = [r["tflops"] for r in json.loads(f32.read_text()).get("grouped_mm_fp32", []) if "tflops" in r]
        fp32_matmul_flops_per_s = statistics.median(rows) * 1e12 if rows else 0.0
    return steptime.machine_from_rates(data, fp32_matmul_flops_per_s=fp32_matmul_flops_per_s, host=host,
                                       sustained_fraction=keep)


def matmul_shapes(run: str) -> tuple[tuple[int, int, int], ...]:
    """The (m, n, k) shapes whose matmul rate ``run`` measured (its rates.json), in the file's order."""
    _check.choice("run", run, runs())
    f = _folder(run).joinpath("rates.json")
    if not f.is_file():
        raise ValueError(f"run={run!r} is not allowed: it has no rates.json")
    return tuple((int(r["m"]), int(r["n"]), int(r["k"])) for r in json.loads(f.read_text())["matmul"])


def machine_like(run: str, accelerator: str) -> steptime.Machine:
    """The machine of ``run`` carried over to another card measured by ``mlcalc.bench``: matmul and
    attention rates scaled by the two cards' best measured matmul rates, element-wise bandwidth by their
    measured device-to-device copy bandwidths; the host constants stay (same software, similar host).

    A roofline-style transfer, not a measurement: e.g. from the H200 runs to an H100 SXM (same chip and
    clocks, 70% of the memory bandwidth).
    """
    base = machine(run)
    data = json.loads(_folder(run).joinpath("rates.json").read_text())
    here = measured.accelerator_key(str(data["environment"]["device_name"]))
    mm = measured.matmul(accelerator, "bf16").best_tflops / measured.matmul(here, "bf16").best_tflops
    bw = (measured.copy_bandwidth(accelerator, "d2d").peak_bytes_per_s
          / measured.copy_bandwidth(here, "d2d").peak_bytes_per_s)
    return steptime.Machine(f"{accelerator}, carried over from {base.name}",
                            lambda m, n, k: base.matmul_flops_per_s(m, n, k) * mm,
                            lambda d, s_len: base.attention_flops_per_s(d, s_len) * mm,
                            base.memory_bytes_per_s * bw, base.host_s_per_op, base.host_s_per_backward_op,
                            base.fp32_matmul_flops_per_s * mm, base.host_s_per_checkpoint)
