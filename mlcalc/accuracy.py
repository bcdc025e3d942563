"""How accurate is each calculator? Every checked case, from the same data and functions the tests use.

A *family* is one model of the book (a function in ``mlcalc``) and the cases that check it: runs measured for this
book (``mlcalc/data/measured``) and figures published by others (``mlcalc/data/plan.json``). Each case is the
model's prediction next to what was observed, with the error ``predicted / observed - 1``. :func:`record` gives a
calculator's one-line record (what its widget shows); the accuracy page lists every case.

Nothing here predicts anything new: each family calls the function its tests call, on the same data.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Callable, Mapping

from mlcalc import _check, units

if TYPE_CHECKING:  # for the annotations only: steptime is imported where it is used
    from mlcalc.steptime import Machine


@dataclass(frozen=True)
class Case:
    """One checked case: a prediction next to an observation."""

    family: str  # key of its family
    label: str  # what was run or published, in a few words
    source: str  # "measured" (this book's runs) or "published" (a paper or report)
    where: str  # run folder or source name
    predicted: float  # the model's value
    observed: float  # what was measured or published
    cause: str = ""  # stated cause where the case misses the family's target ("" if within or none stated)
    note: str = ""  # a value the case derives that its source does not state, and how ("" if none)

    @property
    def error(self) -> float:
        """predicted / observed - 1 (positive: the model says more than was observed)."""
        return self.predicted / self.observed - 1.0


@dataclass(frozen=True)
class Family:
    """One model of the book and the cases that check it."""

    key: str
    title: str  # what is predicted
    model: str  # the function that predicts it
    quantity: str  # e.g. "peak memory", "step time"
    unit: str  # what one case is: "run" or "point"
    target: float  # the tolerance the tests hold it to (fraction), 0 where none is set
    page: str  # the book page that shows the cases (path without suffix)
    cases: Callable[[], tuple[Case, ...]]


def _hf_memory() -> tuple[Case, ...]:
    from mlcalc import hfruns, memory

    return tuple(Case("train-memory-1gpu", f"{c.model.name}, {c.batch} x {c.seq_len}"
                      + (", recomputed" if c.recompute else ""), "measured", c.run,
                      memory.training_peak(c.model, c.batch, c.seq_len, c.recompute).total_bytes, c.peak_bytes)
                 for run in hfruns.runs() for c in hfruns.cases(run))


def _hf_machine(run: str) -> Machine:
    """The machine a run is predicted on: its own measured rates, else those of the H200 run that measured them."""
    from mlcalc import hfruns

    try:
        return hfruns.machine(run)
    except ValueError:  # no rates.json in this run: the H200 machine of run 2 (as the tests do)
        return hfruns.machine("h200x2-2026-11-26-train-hf-run2")


def _hf_step() -> tuple[Case, ...]:
    from mlcalc import hfruns, steptime

    out = []
    for run in hfruns.runs():
        mach = _hf_machine(run)
        for c in hfruns.cases(run):
            t = steptime.step_time(c.model, c.batch, c.seq_len, c.recompute, mach).total_s
            out.append(Case("train-step-1gpu", f"{c.model.name}, {c.batch} x {c.seq_len}"
                            + (", recomputed" if c.recompute else ""), "measured", run, t, c.step_s))
    return tuple(out)


def _dist(quantity: str) -> tuple[Case, ...]:
    from mlcalc import distruns

    fam = f"train-multigpu-{quantity}"
    out = []
    for run in distruns.runs():
        for chk in distruns.checks(run):
            c = chk.case
            if quantity == "step" and not distruns.in_step_record(c):
                continue  # history: an unmetered run of a configuration that has metered runs (distruns.step_history)
            label = (f"{c.model.name.replace(' (untied)', '')}, {c.layout_name}, "
                     f"{c.n_micro * c.micro_batch} x {c.seq_len}" + (", recomputed" if c.recompute else ""))
            if quantity == "step":
                out.append(Case(fam, label, "measured", run, chk.step_pred_s, c.step_s, chk.step_cause))
            else:
                out.append(Case(fam, label, "measured", run, chk.memory_pred_bytes, c.peak_bytes, chk.memory_cause))
    return tuple(out)


def _decode() -> tuple[Case, ...]:
    from mlcalc import serving_record as rec

    return tuple(Case("decode", f"Llama-shaped {c.model.upper()}, batch {c.batch}, {c.context} tokens in cache",
                      "measured", run, c.predicted_tokens_per_s, c.measured_tokens_per_s,
                      rec.decode_miss_cause(c, run))
                 for run in (rec.DECODE_RECORD,) for c in rec.check_decode(run))


def _serve(kind: str) -> tuple[Case, ...]:
    """The serving run measured for this book (mlcalc.servemeasured), one family per path: "graph" (a decode step
    replayed from a CUDA graph: transformers and the plain-PyTorch engine, 1-4 GPUs, every run), "eager", "prefill"
    (the eager record: :data:`mlcalc.servemeasured.EAGER_RUN`'s points)."""
    from mlcalc import servemeasured as sm

    out = []
    # the eager records are one run's points, every one measured in one protocol (sm.EAGER_RUN); the earlier runs'
    # eager points are history with their own scores (sm.eager_scores), their graph points stay in the graph record
    for run in (sm.RUNS if kind == "graph" else (sm.EAGER_RUN,)):
        for c in sm.all_checks(run):
            if (c.what == "prefill") != (kind == "prefill") or (kind != "prefill" and c.path != kind):
                continue
            label = (f"{c.arch} ({'transformers' if c.engine == 'transformers' else 'plain PyTorch'}), batch "
                     f"{c.batch}, {c.context} tokens" + (f", TP {c.tp}" if c.tp > 1 else ""))
            out.append(Case(f"serve-{kind}", label, "measured", run, c.predicted_s, c.measured_s,
                            sm.miss_cause(c, run)))
    if kind == "graph":
        for c in sm.check_run5_decode():
            label = (f"{c.arch} (plain PyTorch), batch {c.batch}, {c.context} tokens"
                     + (f", one GPU of TP {c.tp} (no all-reduce)" if c.tp > 1 else ""))
            out.append(Case("serve-graph", label, "measured", sm.RUN5, c.predicted_s, c.measured_s,
                            sm.miss_cause(c, sm.RUN4)))
    return tuple(out)


def _serve_published() -> tuple[Case, ...]:
    """TensorRT-LLM's published tables (H100 and H200, FP8): v0.9.0's static-batch throughput and first-token latency,
    v0.17's and v1.0's in-flight-batching throughput at full load."""
    from mlcalc import servemeasured as sm

    out = [Case("serve-published", f"{c.model}, {c.chip}, TP {c.gpus}, batch {c.batch}, {c.input} in / {c.output} out",
                "published", c.source, c.predicted, c.published, c.cause) for c in sm.check_published()]
    out += [Case("serve-published", f"{c.model}, {c.chip}, TP {c.gpus}, first token of {c.input}", "published",
                 c.source, c.predicted_s, c.published_s, c.cause) for c in sm.check_first_token()]
    out += [Case("serve-published", f"{c.model}, {c.chip}, TP {c.gpus}{' + attention DP' if c.attention_dp else ''}, "
                 f"in-flight at full load, {c.input} in / "
                 f"{c.output} out", "published", c.source, c.predicted, c.published, c.cause) for c in sm.check_inflight()]
    return tuple(out)


def _serve_concurrency() -> tuple[Case, ...]:
    """Published serving benchmarks at a client concurrency (SGLang's cookbook) against their mean time per output
    token."""
    from mlcalc import servemeasured as sm

    return tuple(Case("serve-concurrency", f"{c.model}, {c.chip}, TP {c.gpus}, {c.engine}, concurrency "
                      f"{c.concurrency} ({c.batch} in flight), {c.input} in / {c.output} out", "published", c.source,
                      c.predicted_s, c.published_s, c.cause) for c in sm.check_concurrency())


def _serve_latency() -> tuple[Case, ...]:
    """Published end-to-end latencies of one static batch (vLLM's nightly benchmark) against the GPU's prefill and
    decode steps."""
    from mlcalc import servemeasured as sm

    return tuple(Case("serve-latency", f"{c.model}, {c.chip}, TP {c.gpus}, {c.engine.split(' (')[0]}, batch {c.batch}, "
                      f"{c.input} in / {c.output} out", "published", c.source, c.predicted_s, c.published_s, c.cause)
                 for c in sm.check_latency())


def _serve_mlperf() -> tuple[Case, ...]:
    """MLPerf Inference's published LLM results (MLCommons, closed division) against the in-flight model
    (mlcalc.mlperf): each result's output tokens per second, and each Server result's mean time per output token."""
    from mlcalc import mlperf

    return tuple(Case("serve-mlperf", f"{c.model}, {c.gpus} x {c.chip} (TP {c.tp}), {c.precision}, MLPerf {c.round} "
                      f"{c.submitter}, {c.scenario}, " + ("output tokens/s" if c.quantity == "throughput" else
                                                          "mean time per output token"),
                      "published", c.where, c.predicted, c.published, c.cause, c.note) for c in mlperf.check())


#: The collective runs the network model is checked on: (run folder, GPUs in it).
COLLECTIVE_RUNS = (("h200x4-2026-11-26-net5", 4), ("h200x4-2026-11-26-net5-2of4", 2))
_GIB = units.GiB
#: The collectives family's tolerance on bus bandwidth (a case outside it carries its run's stated cause, if any).
_COLLECTIVES_TARGET = 0.15


def _collectives() -> tuple[Case, ...]:
    from mlcalc import measured
    from mlcalc import network as net

    out = []
    for run, n in COLLECTIVE_RUNS:
        for curve in measured.run(run):
            if not isinstance(curve, measured.BusbwCurve):
                continue
            fab = net.fabric("DGX-H100", 1, gpus_per_node=n)
            model = net.fabric_collective_time(_GIB, fab, curve.op).busbw_bytes_per_s
            observed = curve.busbw_bytes_per_s_at(_GIB)
            cause = measured.misses(run).get(curve.op, "") if abs(model / observed - 1) > _COLLECTIVES_TARGET else ""
            out.append(Case("collectives", f"{curve.op.replace('_', '-')} over {n} GPUs, 1 GiB", "measured", run,
                            model, observed, cause))
    return tuple(out)


#: The sizes of the small-message collective cases, fixed before the call (scripts/gpu/lat16_predictions.json
#: "case_sizes_bytes"): 8 KiB, 64 KiB, 512 KiB, 4 MiB, 32 MiB.
SMALL_COLLECTIVE_SIZES = (2**13, 2**16, 2**19, 2**22, 2**25)
#: The small-message collectives family's tolerance on time (fixed before the call, as its sizes).
_SMALL_COLLECTIVES_TARGET = 0.20


def _small_collective_cause(p: Any, law: Any, points: Mapping[tuple[str, str, int, int], float],
                            fab: Any) -> str:
    """Why a small-message case misses, from the same call's other points (no constant of its own)."""
    from mlcalc import network as net

    key = (p.collective, p.n_ranks)
    ran = ", ".join(p.logged) or "not logged"
    us = 1e6
    smallest = min(s for (proto, c, n, s) in points if proto == law.protocol and (c, n) == key)
    at_smallest = net.nccl_protocol_time(smallest, fab, p.collective, floor_s=0.0)
    here = points[(law.protocol,) + key + (smallest,)] - at_smallest.time_s  # this host's floor for that protocol
    with_here = law.time_s - law.floor_s + here
    return (f"NCCL ran {ran} here (its INFO log), the protocol the law prices ({law.algorithm}/{law.protocol}: "
            f"NCCL 2.28.9's tuning model, mlcalc.network.nccl_tuned_pick), {p.time_s * us:.1f} us in the graph against "
            f"the law's {law.time_s * us:.1f} ({law.floor_s * us:.2f} floor + {law.latency_s * us:.1f} latency + "
            f"{law.bandwidth_s * us:.1f} bytes). The floor, the fixed time per call in a CUDA graph that NCCL's model "
            f"does not carry, is calibrated on another host (the serve run, 2 x H200: links.json nccl_latency "
            f"graph_call_floor); under NCCL_PROTO={law.protocol} this call's graph took "
            f"{points[(law.protocol,) + key + (smallest,)] * us:.1f} us at {smallest // 1024} KiB, "
            f"{here * us:.1f} us over the law without its floor, and with that floor the law is "
            f"{with_here / p.time_s - 1:+.0%} here against {law.time_s / p.time_s - 1:+.0%}: the floor moves between "
            "hosts and protocols (lat16: about 1 us over NCCL's model for LL128, 4-6 for LL, 7-9 for Simple, "
            "chunk16), and one calibrated floor is charged for all")


def _collectives_small() -> tuple[Case, ...]:
    from mlcalc import measured
    from mlcalc import network as net

    run = measured.SMALL_COLLECTIVES_RUN
    rows = measured.small_collectives(run)
    points = {(p.nccl_proto, p.collective, p.n_ranks, p.size_bytes): p.time_s for p in rows
              if p.engine == "nccl" and p.mode == "graph" and p.nccl_log}  # each protocol forced, NCCL's log on
    logged = {(p.collective, p.n_ranks, p.size_bytes): p.logged for p in rows
              if p.engine == "nccl" and p.mode == "graph" and p.nccl_proto == "unset" and p.nccl_log}
    out = []
    for p in rows:
        if not (p.engine == "nccl" and p.mode == "graph" and p.nccl_proto == "unset" and not p.nccl_log
                and p.size_bytes in SMALL_COLLECTIVE_SIZES):
            continue
        p = p._replace(logged=logged[(p.collective, p.n_ranks, p.size_bytes)])
        fab = net.fabric("DGX-H100", 1, gpus_per_node=p.n_ranks)
        law = net.nccl_protocol_time(p.size_bytes, fab, p.collective)
        miss = abs(law.time_s / p.time_s - 1) > _SMALL_COLLECTIVES_TARGET
        size = f"{p.size_bytes // 2**20} MiB" if p.size_bytes >= 2**20 else f"{p.size_bytes // 1024} KiB"
        out.append(Case("collectives-small", f"{p.collective.replace('_', '-')} over {p.n_ranks} GPUs, {size}, "
                        "CUDA graph", "measured", run, law.time_s, p.time_s,
                        _small_collective_cause(p, law, points, fab) if miss else ""))
    return tuple(out)


def _published_runs() -> tuple[Case, ...]:
    from mlcalc import plan

    out = []
    for name in plan.published_runs():
        r = plan.check_run(name)
        if r.published_gpu_hours:
            pred, obs, what = r.predicted_gpu_hours, r.published_gpu_hours, "GPU-hours"
        else:
            pred, obs, what = r.predicted_days, float(r.published_days or 0.0), "days"
        e = plan.published_runs()[name]
        out.append(Case("published-runs", f"{name}: {what} on {r.gpus:,} x {r.chip}", "published",
                        str(e.get("source", name)), pred, obs, str(e.get("known_miss", ""))))
    return tuple(out)


def _large_runs() -> tuple[Case, ...]:
    from mlcalc import training_runs

    out = []
    for c in training_runs.checks():
        e = training_runs.runs()[c.name]
        where = str(e.get("where") or e.get("source", c.name))
        if c.metric == "step_s":  # as throughput (steps per second), the way the engine's tests count a miss
            what, pred, obs = "steps per second", 1.0 / c.predicted, 1.0 / c.published
        else:
            what, pred, obs = c.metric.replace("_", " "), c.predicted, c.published
        out.append(Case("published-large-runs", f"{c.name}: {what}", "published", where, pred, obs, c.cause,
                        str(e.get("inferred", ""))))
    return tuple(out)



FAMILIES: Mapping[str, Family] = MappingProxyType({f.key: f for f in (
    Family("train-memory-1gpu", "Peak memory of a training step on one GPU (Hugging Face transformers)",
           "mlcalc.memory.training_peak", "peak memory", "run", 0.10, "notebooks/memory/training-fit", _hf_memory),
    Family("train-step-1gpu", "Step time of training on one GPU (Hugging Face transformers)",
           "mlcalc.steptime.step_time", "step time", "run", 0.20, "notebooks/hardware/predictions", _hf_step),
    Family("train-multigpu-step", "Step time of FSDP2, tensor- and pipeline-parallel training",
           "mlcalc.steptime.predict_step (a metered run at its vCPU pace: mlcalc.distruns.record_step_s; a "
           "configuration with metered runs held to them: mlcalc.distruns.in_step_record)",
           "step time", "run", 0.15, "notebooks/hardware/accuracy", lambda: _dist("step")),
    Family("train-multigpu-memory", "Peak memory per GPU of FSDP2, tensor- and pipeline-parallel training",
           "mlcalc.steptime.predict_step (mlcalc.memory.eager_layout_peak)", "peak memory", "run", 0.10,
           "notebooks/hardware/accuracy", lambda: _dist("memory")),
    Family("decode", "Decode tokens per second of Llama-shaped models (eager transformers)",
           "mlcalc.serving.decode_step", "tokens per second", "point", 0.25, "notebooks/memory/serving", _decode),
    Family("serve-graph", "Decode step time replayed from a CUDA graph (transformers, a plain-PyTorch engine; 1-4 GPUs)",
           "mlcalc.serving.decode_step (mlcalc.servemeasured)", "step time", "point", 0.20, "notebooks/memory/serving",
           lambda: _serve("graph")),
    Family("serve-eager", "Decode step time of five architectures in eager transformers",
           "mlcalc.serving.decode_step (mlcalc.servemeasured)", "step time", "point", 0.25, "notebooks/memory/serving",
           lambda: _serve("eager")),
    Family("serve-prefill", "Prefill time of five architectures in eager transformers",
           "mlcalc.servemeasured.predict_hf_prefill", "prefill time", "point", 0.25,
           "notebooks/memory/serving", lambda: _serve("prefill")),
    Family("serve-published", "TensorRT-LLM's published throughput (v0.9.0 static batches, v0.17 and v1.0 in-flight "
           "batching) and first-token latency (v0.9.0), FP8",
           "mlcalc.serving.predict_decode / predict_prefill, mlcalc.servemeasured.inflight", "throughput or latency", "point",
           0.25, "notebooks/memory/serving", _serve_published),
    Family("serve-concurrency", "SGLang's published time per output token at a client concurrency (v0.5.6, "
           "8 x B200, Qwen3 235B-A22B, bf16)",
           "mlcalc.servemeasured.concurrent_tpot_s (mlcalc.servemeasured.sglang_decode_step / mlcalc.serving.predict_prefill)",
           "time per output token", "point", 0.25, "notebooks/plan/serving-plan", _serve_concurrency),
    Family("serve-latency", "vLLM's published end-to-end latency of one static batch (nightly benchmark, H200 and "
           "A100, bf16, 8 x 32 in / 128 out; 8B, 70B and Mixtral on 1, 4 and 2 GPUs)",
           "mlcalc.servemeasured.static_batch_latency_s (mlcalc.serving.predict_decode / predict_prefill)",
           "latency", "point", 0.25, "notebooks/plan/serving-plan", _serve_latency),
    Family("serve-mlperf", "MLPerf Inference's published LLM results (v4.1, v5.1; closed division; Llama 2 70B, "
           "Mixtral 8x7B, Llama 3.1 8B and 405B on 8 x H100 and 8 x H200, FP8): throughput in Offline, Server and Interactive, mean time per "
           "output token in Server and Interactive; each dataset's input lengths measured on MLCommons' dataset "
           "file (openshift-psap/performance-dashboard's per-sample summaries); Server and Interactive as LoadGen "
           "scores them, the largest Poisson rate that passes its early stopping (TTFT and TPOT) for the run's query count",
           "mlcalc.servemeasured.inflight; Server and Interactive: a rate search over "
           "mlcalc.serving.simulate_replica (mlcalc.mlperf)", "throughput or time per output token", "point", 0.25,
           "notebooks/plan/serving-plan", _serve_mlperf),
    Family("collectives", "NCCL bus bandwidth of the five collectives at 1 GiB on one node",
           "mlcalc.network.fabric_collective_time", "bus bandwidth", "point", _COLLECTIVES_TARGET, "notebooks/network/collectives",
           _collectives),
    Family("collectives-small", "NCCL time per all-reduce, all-gather and reduce-scatter of 8 KiB-32 MiB inside a CUDA "
           "graph on one node (2 and 4 GPUs, bf16)", "mlcalc.network.nccl_protocol_time", "time per collective",
           "point", _SMALL_COLLECTIVES_TARGET, "notebooks/network/collectives", _collectives_small),
    Family("published-runs", "GPU-hours (or days) of published large training runs",
           "mlcalc.plan.check_run", "GPU-hours or days", "run", 0.20, "notebooks/plan/training-plan", _published_runs),
    Family("published-large-runs", "Throughput or MFU of published large training runs (the step-time engine)",
           "mlcalc.steptime.predict_step (mlcalc.training_runs)", "throughput or MFU", "run", 0.15,
           "notebooks/hardware/accuracy", _large_runs),
)})

#: Which families check each calculator's numbers (the model its compute calls).
_PLAN = ("published-runs", "published-large-runs")
CALCULATORS: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "plan.train": _PLAN,
    "plan.compare": _PLAN,
    "plan.serve": ("serve-graph", "serve-published"),
    "network.collective": ("collectives",),
    "measured.collective": ("collectives",),
})


@lru_cache(maxsize=None)
def cases(family: str) -> tuple[Case, ...]:
    """Every checked case of a family."""
    _check.choice("family", family, FAMILIES)
    return FAMILIES[family].cases()


@dataclass(frozen=True)
class Summary:
    """A family's record: how many cases, of which kind, median and worst error, how many within target."""

    family: str
    n_measured: int
    n_published: int
    median_abs_error: float
    worst_error: float  # the largest in size, sign kept
    within: int  # cases within the family's target


@lru_cache(maxsize=None)
def summary(family: str) -> Summary:
    cs = cases(family)
    if not cs:
        raise ValueError(f"family={family!r} is not allowed: it has no cases")
    errs = [c.error for c in cs]
    t = FAMILIES[family].target
    return Summary(family, sum(c.source == "measured" for c in cs), sum(c.source == "published" for c in cs),
                   statistics.median(abs(e) for e in errs), max(errs, key=abs), sum(abs(e) <= t for e in errs))


def _count(s: Summary, unit: str) -> str:
    parts = [f"{s.n_measured} measured {unit}{'s' * (s.n_measured != 1)}" if s.n_measured else "",
             f"{s.n_published} published {unit}{'s' * (s.n_published != 1)}" if s.n_published else ""]
    return " and ".join(p for p in parts if p)


def _pct(x: float, signed: bool = False) -> str:
    """A relative error as a percentage: one decimal under 10%, none above."""
    return f"{x:{'+' if signed else ''}.{1 if abs(x) < 0.1 else 0}%}"


def family_line(family: str) -> str:
    """One line: "step time checked on 24 measured runs: median error 14%, worst -76%; 13 within ±15%"."""
    f, s = FAMILIES[family], summary(family)
    n = s.n_measured + s.n_published
    return (f"{f.quantity} checked on {_count(s, f.unit)}: median error {_pct(s.median_abs_error)}, worst "
            f"{_pct(s.worst_error, True)}; {s.within} of {n} within ±{f.target:.0%}")


NOT_CHECKED = "Accuracy: no measured or published case checks this calculator's numbers yet."


def record(calc_key: str) -> str:
    """A calculator's record in one line (what its widget shows under the results)."""
    fams = CALCULATORS.get(str(calc_key), ())
    if not fams:
        return NOT_CHECKED
    return "Accuracy: " + "; ".join(family_line(f) for f in fams) + " (see the accuracy page)."


@lru_cache(maxsize=1)
def peers() -> tuple[Mapping[str, str], ...]:
    """What peer tools state about their own accuracy (``mlcalc/data/peer_accuracy.json``), with sources."""
    text = resources.files("mlcalc.data").joinpath("peer_accuracy.json").read_text()
    return tuple(MappingProxyType(p) for p in json.loads(text)["peers"])


# --------------------------------------------------------------------------- fits as it ran (a one-sided check)


@dataclass(frozen=True)
class FitCase:
    """A published run against the memory its GPUs had: it ran, so the model must say it fits. One-sided: no
    source states a run's peak memory, so there is no error to take, only the margin the model leaves."""

    label: str  # the run
    where: str  # its source
    peak_bytes: float  # the model's peak memory per GPU of the run's layout (no reserve held back)
    device_bytes: float  # the card's memory (what torch reports where measured, else the datasheet)

    @property
    def margin(self) -> float:
        """1 - peak / device: the share of the card the model leaves free (negative: it says the run did not fit)."""
        return 1.0 - self.peak_bytes / self.device_bytes

    @property
    def fits(self) -> bool:
        return self.peak_bytes <= self.device_bytes


#: The record of whether the published large runs fit the memory they ran in (what, which model, which page).
FITS_AS_RAN = MappingProxyType({
    "title": "Whether published large runs fit the memory each GPU had (peak per GPU vs the card's memory)",
    "model": "mlcalc.steptime.predict_step (its peak memory per GPU)",
    "page": "notebooks/hardware/accuracy",
})


@lru_cache(maxsize=1)
def fit_cases() -> tuple[FitCase, ...]:
    """Every published large run (:mod:`mlcalc.training_runs`) with the model's peak memory per GPU of the layout
    it ran, against its card's memory."""
    from mlcalc import training_runs

    out = []
    for c in training_runs.checks():
        e = training_runs.runs()[c.name]
        p = c.prediction
        if p.device_bytes is None:
            raise ValueError(f"run={c.name!r}: its chip has no memory size to check the fit against")
        out.append(FitCase(c.name, str(e.get("where") or e.get("source", c.name)), p.peak_bytes_per_gpu,
                           float(p.device_bytes)))
    return tuple(out)


def fit_line() -> str:
    """One line: "fits as it ran on 43 of 43 published runs; margin to the card's memory 3.3% (...) to 79%, median 53%"."""
    cs = fit_cases()
    tight = min(cs, key=lambda c: c.margin)
    margins = [c.margin for c in cs]
    return (f"fits as it ran on {sum(c.fits for c in cs)} of {len(cs)} published runs; margin to the card's memory "
            f"{_pct(tight.margin)} ({tight.label}) to {_pct(max(margins))}, median {_pct(statistics.median(margins))}")


def markdown_table() -> str:
    """Every model's record as a Markdown table (the README's Accuracy section; a test keeps them equal); last, the
    one-sided record of whether the published runs fit their memory (its columns say what they hold)."""
    rows = ["| what is predicted | model | checked on | median error | worst | within target |",
            "|---|---|---|---|---|---|"]
    for key, fam in FAMILIES.items():
        s = summary(key)
        rows.append(f"| {fam.title} | `{fam.model}` | {_count(s, fam.unit)} | {_pct(s.median_abs_error)} | "
                    f"{_pct(s.worst_error, True)} | {s.within} of {s.n_measured + s.n_published} "
                    f"(±{fam.target:.0%}) |")
    cs = fit_cases()
    tight = min(cs, key=lambda c: c.margin)
    rows.append(f"| {FITS_AS_RAN['title']} | `{FITS_AS_RAN['model']}` | {len(cs)} published runs | "
                f"no error: one-sided (median margin {_pct(statistics.median(c.margin for c in cs))}) | "
                f"least margin {_pct(tight.margin)} ({tight.label}) | {sum(c.fits for c in cs)} of {len(cs)} fit |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    """``python -m mlcalc.accuracy``: every model's record, one line each (``--markdown``: as a table)."""
    import sys

    if "--markdown" in (sys.argv[1:] if argv is None else argv):
        print(markdown_table())
        return 0
    for key, fam in FAMILIES.items():
        print(f"{fam.title} ({fam.model}): {family_line(key)}")
    print(f"{FITS_AS_RAN['title']} ({FITS_AS_RAN['model']}): {fit_line()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


__all__ = ["CALCULATORS", "COLLECTIVE_RUNS", "Case", "FAMILIES", "FITS_AS_RAN", "Family", "FitCase", "NOT_CHECKED",
           "Summary", "cases", "family_line", "fit_cases", "fit_line", "main", "markdown_table", "peers", "record",
           "summary"]
