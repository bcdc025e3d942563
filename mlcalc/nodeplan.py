"""From one measured node to a plan for many: the step-time engine on a reader's own ``mlcalc.bench`` results.

A reader runs ``python -m mlcalc.bench matmul``, ``bandwidth``, ``collectives`` and ``train`` on one node
(:mod:`mlcalc.measured` loads the files). Then:

1. :func:`node_machine` builds the engine's :class:`mlcalc.steptime.Machine` from those files: the matmul rate at
   each shape from the node's sweep (the nearest shape timed), the element-wise bandwidth from its device-to-device copy, attention from its
   attention cases (else the matmul rate), the host constants of the book's own measured H200 (same PyTorch);
2. :func:`calibrate` predicts the node's own ``train`` cases with it (the model of that GPT-2 program,
   :func:`mlcalc.gpt_program.program_step_time`) and finds **one** factor for the node (the median of measured /
   predicted step time over the cases, not one per case): the machine's device rates divided by it;
3. :func:`project` plans a model on N such nodes: every layout of a stated, bounded set through
   :func:`mlcalc.steptime.predict_step`, inside the node at the node's measured all-reduce bus bandwidth and
   between nodes at the catalogued network of the system named, and keeps the fastest that fits.

Every assumption is returned with the result, in words (:attr:`Projection.assumptions`).
"""

from __future__ import annotations

import dataclasses
import statistics
from typing import Any, Iterable, NamedTuple, Sequence

from mlcalc import _check, measured, steptime
from mlcalc.models import ModelConfig

#: The book's measured machine whose host constants a reader's node takes (same PyTorch, eager).
HOST_RUN = "h200x2-2026-11-26-train-hf-run2"
#: Most nodes :func:`project` plans for, and the layouts it tries: tensor-parallel sizes inside a node, pipeline
#: sizes, ZeRO stages and recomputation (a bounded search: at most 4 x 4 x 2 x 2 = 64 layouts).
MAX_NODES = 100_000
TP_SIZES = (1, 2, 4, 8)
PP_SIZES = (1, 2, 4, 8)
ZERO_STAGES = (1, 3)
RECOMPUTE = ("none", "full")


def _pick(results: Iterable[measured.Result], cls: type) -> list[Any]:
    return [r for r in results if isinstance(r, cls)]


def node_machine(results: Sequence[measured.Result], name: str = "") -> steptime.Machine:
    """The engine's machine from one node's ``mlcalc.bench`` results (see the module docstring)."""
    from mlcalc import hfruns

    mm = [r for r in _pick(results, measured.MatmulResult) if r.dtype == "bf16"]
    if not mm:
        raise ValueError("results is not allowed: it needs a bf16 matmul sweep (python -m mlcalc.bench matmul)")
    copies = [r for r in _pick(results, measured.CopyResult) if r.kind == "d2d"]
    if not copies:
        raise ValueError("results is not allowed: it needs a device-to-device copy (python -m mlcalc.bench bandwidth)")
    sweep = mm[0]
    att = _pick(results, measured.AttentionCase)
    host = hfruns.machine(HOST_RUN)
    if att:
        rows = [((float(a.head_dim), float(a.seq_len)), a.fwd_bwd_flops_per_s) for a in att]
        attention = steptime._nearest_lookup(rows)
    else:  # no attention measured: the matmul rate of the node at its best shape
        best = sweep.best_flops_per_s

        def attention(d: float, s: float) -> float:
            return best
    key = sweep.info.accelerator
    facts = steptime._card_facts(sweep.info.device_name)
    return steptime.Machine(
        name or f"{sweep.info.device_name} node ({sweep.info.label.split('/')[0]})",
        lambda m, n, k: measured.matmul_rate_near(mm, m, n, k), attention, copies[0].memory_bytes_per_s,
        host.host_s_per_op, host.host_s_per_backward_op, 0.0, host.host_s_per_checkpoint,
        key or facts[0], facts[1], facts[2], facts[3])


class NodeCheck(NamedTuple):
    """One of the node's own training cases against the engine."""

    model: str  # the bench preset, e.g. "gpt2-350M"
    batch: int
    seq_len: int
    recompute: bool
    measured_s: float
    predicted_s: float

    @property
    def error(self) -> float:
        return self.predicted_s / self.measured_s - 1.0


class Calibration(NamedTuple):
    """The node's machine, scaled by one factor found on its own training cases."""

    machine: steptime.Machine  # the calibrated machine (rates divided by ``factor``)
    factor: float  # median of measured / predicted step time over the node's cases (1: the engine was right)
    before: tuple[NodeCheck, ...]  # the cases with the uncalibrated machine
    after: tuple[NodeCheck, ...]  # the same cases with the calibrated machine


def _checks(cases: Sequence[measured.TrainCase], mach: steptime.Machine) -> tuple[NodeCheck, ...]:
    """The node's ``bench train`` cases (GPT-2-shaped, fp32 weights, bf16 autocast) predicted on ``mach`` by the
    model of that program (:func:`mlcalc.gpt_program.program_step_time`, the one the predictions chapter checks)."""
    from mlcalc import gpt_program

    out = []
    for c in cases:
        model = gpt_program.from_bench_config(c.config, c.model)
        t = gpt_program.program_step_time(model, c.batch, c.seq_len, c.recompute, mach.matmul_flops_per_s,
                                          mach.memory_bytes_per_s,
                                          mach.attention_flops_per_s(model.qk_head_dim, c.seq_len)).total
        out.append(NodeCheck(c.model, c.batch, c.seq_len, c.recompute, float(c.step_s or 0.0), t))
    return tuple(out)


def calibrate(results: Sequence[measured.Result], machine: steptime.Machine | None = None) -> Calibration:
    """One factor for the node from its ``train`` cases (python -m mlcalc.bench train): the engine's device rates
    (matmul, attention, element-wise bandwidth) divided by the median of measured / predicted step time."""
    mach = machine or node_machine(results)
    cases = [c for c in _pick(results, measured.TrainCase) if c.step_s and not c.oom]
    if not cases:
        raise ValueError("results is not allowed: it needs training cases (python -m mlcalc.bench train)")
    before = _checks(cases, mach)
    f = statistics.median(c.measured_s / c.predicted_s for c in before)
    mm, at = mach.matmul_flops_per_s, mach.attention_flops_per_s
    cal = mach._replace(name=f"{mach.name}, calibrated x{1 / f:.3g}",
                        matmul_flops_per_s=lambda m, n, k: mm(m, n, k) / f,
                        attention_flops_per_s=lambda d, s: at(d, s) / f,
                        memory_bytes_per_s=mach.memory_bytes_per_s / f)
    return Calibration(cal, f, before, _checks(cases, cal))


class Projection(NamedTuple):
    """The fastest layout that fits on N nodes, as the engine predicts it on the node's machine."""

    n_nodes: int
    gpus: int
    layout: steptime.Layout
    prediction: steptime.StepPrediction
    tried: int  # layouts predicted
    assumptions: tuple[str, ...]  # what the projection assumes, in words


def _node_busbw(results: Sequence[measured.Result]) -> tuple[float, int] | None:
    curves = [c for c in _pick(results, measured.BusbwCurve) if c.op == "all_reduce"]
    if not curves:
        return None
    c = max(curves, key=lambda c: c.n_ranks)
    return c.peak_busbw_bytes_per_s, c.n_ranks


def project(model: ModelConfig, n_nodes: int, *, results: Sequence[measured.Result], seq_len: int,
            global_batch: int, system: str, gpus_per_node: int = 8, calibrated: bool = True) -> Projection:
    """Plan ``model`` on ``n_nodes`` nodes like the measured one (see the module docstring).

    ``global_batch`` sequences per step are split over the data-parallel replicas as micro-batches of one sequence;
    ``system`` (mlcalc/data/links.json) gives the network between nodes and the node's size.
    """
    from mlcalc import network

    n = _check.positive_int("n_nodes", n_nodes, MAX_NODES)
    gpn = _check.positive_int("gpus_per_node", gpus_per_node, 1024)
    b = _check.positive_int("global_batch", global_batch)
    mach = calibrate(results).machine if calibrated else node_machine(results)
    fab = network.fabric(system, n, gpus_per_node=gpn)
    assumptions = [f"the node's rates: {mach.name}",
                   f"host time per operation from the book's measured H200 ({HOST_RUN}, PyTorch eager)",
                   f"between nodes: the catalogued network of {system} ({fab.inter_bytes_per_s_per_gpu / 1e9:.1f} GB/s "
                   "per GPU, one direction), not measured",
                   "micro-batches of one sequence; layouts tried: tensor parallel "
                   f"{TP_SIZES}, pipeline {PP_SIZES} (1F1B), ZeRO {ZERO_STAGES}, recomputation {RECOMPUTE}"]
    measured_bw = _node_busbw(results)
    if measured_bw is not None:
        fab = dataclasses.replace(fab, intra_bytes_per_s=measured_bw[0])
        assumptions.append(f"inside a node: the measured all-reduce bus bandwidth over {measured_bw[1]} GPUs "
                           f"({measured_bw[0] / 1e9:.0f} GB/s) for every group size")
    else:
        assumptions.append(f"inside a node: the catalogued NVLink of {system} (no collectives measured)")
    from mlcalc import accuracy

    assumptions.append("the engine's own record on measured multi-GPU runs: "
                       + accuracy.family_line("train-multigpu-step") + " (see the accuracy page)")
    best: tuple[float, steptime.Layout, steptime.StepPrediction] | None = None
    tried = 0
    g = n * gpn
    for tp in TP_SIZES:
        for pp in PP_SIZES:
            if tp > gpn or g % (tp * pp) or pp > model.n_layers:
                continue
            dp = g // (tp * pp)
            if b % dp:
                continue
            for zero in ZERO_STAGES:
                for rc in RECOMPUTE:
                    lay = steptime.Layout(tp=tp, pp=pp, dp=dp, zero=zero if dp > 1 else 0,
                                          sequence_parallel=tp > 1, recompute=rc, micro_batch=1, grad_accum=b // dp)
                    p = steptime.predict_step(model, lay, seq_len=seq_len, machine=mach, gpus_per_node=gpn,
                                              fabric=fab)
                    tried += 1
                    if p.fits and (best is None or p.step_s < best[0]):
                        best = (p.step_s, lay, p)
    if best is None:
        raise ValueError(f"n_nodes={n} is not allowed: no layout of {g} GPUs fits {model.name} with global_batch={b}")
    return Projection(n, g, best[1], best[2], tried, tuple(assumptions))


__all__ = ["Calibration", "HOST_RUN", "NodeCheck", "Projection", "calibrate", "node_machine", "project"]
