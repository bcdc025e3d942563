"""The book's multi-GPU training runs (``scripts/gpu/train_dist.py``) and the engine's prediction of each.

Each run folder ``mlcalc/data/measured/<run>/`` holds ``train_dist_w<N>.json`` (one per GPU count: the cases of
one ``torchrun`` launch and its baseline: bf16 matmul rates, collectives, send/recv, host time per op) and
``misses.json`` (the cause of each known miss of the engine, by layout and quantity: data, not code).

A case is FSDP2 (``fully_shard``), tensor parallel (``parallelize_module``, sequence parallel) or pipeline
(``torch.distributed.pipelining``) training of a Llama-shaped model; :func:`layout` turns it into the engine's
:class:`mlcalc.steptime.Layout` and :func:`predict` into its :class:`mlcalc.steptime.StepPrediction` on the card's
own measured machine (:func:`mlcalc.hfruns.machine` of a single-GPU run on the same kind of card): nothing of a
case is fitted.
"""

from __future__ import annotations

import bisect
import json
import statistics
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from types import MappingProxyType
from typing import Any, Mapping

from mlcalc import _check, models
from mlcalc.models import ModelConfig

#: The issue's targets: peak memory per GPU within 10%, step time within 15% of the prediction.
MEMORY_TARGET = 0.10
STEP_TARGET = 0.15

#: The measured single-GPU machine (matmul, attention, element-wise rates, host constants) of each card kind.
MACHINE_RUN = MappingProxyType({"NVIDIA H200": "h200x2-2026-11-26-train-hf-run2",
                                "NVIDIA H100 80GB HBM3": "h100-2026-11-26-train-hf"})


@dataclass(frozen=True)
class DistCase:
    """One measured multi-GPU (or one-GPU) training run."""

    run: str  # run folder
    id: str  # e.g. "w2-fsdp2-1B-s2048-mb4"
    model: ModelConfig
    world: int  # GPUs
    dp: int  # FSDP shards (data-parallel ranks)
    tp: int  # tensor-parallel ranks
    pp: int  # pipeline stages
    schedule: str  # "gpipe", "1f1b" or "" (no pipeline)
    n_micro: int  # micro-batches per data-parallel rank per step
    micro_batch: int  # sequences per micro-batch
    seq_len: int
    recompute: bool  # every block checkpointed
    step_s: float  # median step (each step: the slowest rank)
    tokens_per_s: float
    peak_bytes: float  # max over ranks of torch.cuda.max_memory_allocated
    peak_bytes_per_rank: tuple[float, ...]
    after_step_bytes_per_rank: tuple[float, ...]  # allocated after a step: parameters + optimizer states
    params_local_per_rank: tuple[int, ...]  # parameter elements each rank holds
    total_memory_bytes: float  # torch's total memory of the card
    issue_over_step: float  # host time to issue a step over the step time (near 1: host-bound)
    device: str
    software: str

    @property
    def layout_name(self) -> str:
        parts = [f"FSDP {self.dp}" if self.dp > 1 else "", f"TP {self.tp}" if self.tp > 1 else "",
                 f"PP {self.pp} ({self.schedule})" if self.pp > 1 else ""]
        return " x ".join(p for p in parts if p) or "one GPU"

    @property
    def family(self) -> str:
        """"fsdp", "tp", "pp" or "single": the parallelism of the run (mixed layouts join with "x")."""
        parts = [k for k, n in (("fsdp", self.dp), ("tp", self.tp), ("pp", self.pp)) if n > 1]
        return "x".join(parts) or "single"


def _root() -> Any:
    return resources.files("mlcalc.data").joinpath("measured")


@lru_cache(maxsize=None)  # package data: listed once (the record asks per case)
def runs() -> tuple[str, ...]:
    """Run folders that hold train_dist results."""
    return tuple(sorted(p.name for p in _root().iterdir()
                        if p.is_dir() and any(f.name.startswith("train_dist_w") for f in p.iterdir())))


@lru_cache(maxsize=None)
def _files(run: str) -> tuple[Mapping[str, Any], ...]:
    _check.choice("run", run, runs())
    folder = _root().joinpath(run)
    return tuple(json.loads(f.read_text()) for f in sorted(folder.iterdir(), key=lambda p: p.name)
                 if f.name.startswith("train_dist_w") and f.name.endswith(".json"))


@lru_cache(maxsize=None)
def cases(run: str) -> tuple[DistCase, ...]:
    """The measured cases of a run (cases that failed or were skipped are left out: see :func:`failed`)."""
    out = []
    for data in _files(run):
        env = data["environment"]
        soft = f"torch {env.get('torch')}, NCCL {env.get('nccl')}, CUDA {env.get('cuda')}"
        for c in data["cases"]:
            if "error" in c:
                continue
            ranks = c["ranks"]
            out.append(DistCase(
                run, c["id"], models.from_dict(c["model"]), int(c["world"]), int(c["dp"]), int(c["tp"]), int(c["pp"]),
                str(c["schedule"]), int(c["n_micro"]), int(c["micro_batch"]), int(c["seq_len"]), bool(c["recompute"]),
                float(c["step_s"]), float(c["tokens_per_s"]), float(c["peak_allocated_max_bytes"]),
                tuple(float(x) for x in c["peak_allocated_bytes"]),
                tuple(float(x) for x in c["after_step_allocated_bytes"]),
                tuple(int(r["n_params_local"]) for r in ranks), float(c["total_memory_max_bytes"]),
                float(c["issue_over_step"]), str(env.get("device_name", "")), soft))
    return tuple(out)


def failed(run: str) -> Mapping[str, str]:
    """Cases of a run that did not produce a result: id -> why (e.g. skipped on a smaller card)."""
    return MappingProxyType({c["id"]: c["error"] for d in _files(run) for c in d["cases"] if "error" in c})


def baseline(run: str, world: int) -> Mapping[str, Any]:
    """The baseline measured at the start of the ``world``-GPU launch (matmul, collectives, host per op)."""
    for d in _files(run):
        if d["environment"].get("world_size") == world and "baseline" in d:
            return MappingProxyType(d["baseline"])
    raise ValueError(f"world={world!r} is not allowed: run {run!r} has no baseline on {world} GPUs")


@lru_cache(maxsize=None)
def misses(run: str) -> Mapping[str, str]:
    """Stated causes of the engine's known misses: "<family>:<step|memory>" -> cause (``misses.json``)."""
    _check.choice("run", run, runs())
    f = _root().joinpath(run).joinpath("misses.json")
    if not f.is_file():
        return MappingProxyType({})
    return MappingProxyType({k: v for k, v in json.loads(f.read_text()).items() if not k.startswith("_")})


def layout(case: Any) -> Any:
    """The engine's layout of a case (a :class:`DistCase` or a planned case of ``train_dist.py``, read by attribute
    or key): FSDP is ZeRO-3, tensor parallel with sequence parallel, checkpointing full."""
    from mlcalc import steptime

    def get(k: str) -> Any:
        return case[k] if isinstance(case, Mapping) else getattr(case, k)

    return steptime.Layout(tp=int(get("tp")), pp=int(get("pp")), dp=int(get("dp")), zero=3 if get("dp") > 1 else 0,
                           sequence_parallel=get("tp") > 1, schedule=get("schedule") or "1f1b",
                           recompute="full" if get("recompute") else "none", micro_batch=int(get("micro_batch")),
                           grad_accum=int(get("n_micro")))


#: The run whose host floors (``train_dist.py --floors``) give each card's DTensor and FSDP2 host constants: measured
#: once, held for every run on that kind of card. They are ratios to the same host's plain op (one software stack:
#: torch 2.11, the same program), so the H100 takes the H200's, priced at its own measured plain op.
FLOORS_RUN = MappingProxyType({"NVIDIA H200": "h200x2-2026-11-26-train-dist-heldout",
                               "NVIDIA H100 80GB HBM3": "h200x2-2026-11-26-train-dist-heldout"})


#: The run whose host floors hold FSDP2 over DTensor parameters (programs "tp2d" and "fsdptp" on 4 GPUs: FSDP 2 x
#: TP 2 against the same TP 2 without FSDP): :func:`mlcalc.steptime.fsdp_dtensor_host_constants`, priced as above.
FSDP_TP_FLOORS_RUN = MappingProxyType({"NVIDIA H200": "h200x4-2026-11-26-train-dist4b",
                                       "NVIDIA H100 80GB HBM3": "h200x4-2026-11-26-train-dist4b"})

#: The run whose floors measured FSDP2 over DTensor parameters beside the pace meter (host8: 24 passes of each
#: program at 2 and 6 layers, every pass priced at its slowest rank's pace, :func:`metered_fsdp_dtensor`): its median
#: replaces :data:`FSDP_TP_FLOORS_RUN`'s (7 unmetered passes of each program, each program at whatever pace it then
#: had: 33 forward and 535 backward plain ops a layer) in the engine's machine (:func:`machine`), as the rule
#: committed before the call said (scripts/gpu/host8_predictions.json). host7b's metered floors, on another host,
#: agree (135 and 294 against 115 and 309).
FSDP_TP_METERED_RUN = "h200x4-2026-11-27-train-host8"


def host_floors(run: str) -> tuple[Mapping[str, Any], ...]:
    """The host floors of a run (every rank's rows, each with its ``rank``), or () where it measured none."""
    out = []
    for d in _files(run):
        fl = d.get("host_floors", {})
        for rank, rows in enumerate(fl.get("per_rank", ()) or ()):
            out += [MappingProxyType({**r, "rank": rank}) for r in rows]
    return tuple(out)


def host_meter(run: str) -> tuple[Mapping[str, Any], ...]:
    """Every metered step of a run (``train_dist.py``'s ``variants`` cases, dist5 on): one row per step and rank with
    the case id, launch condition (``variant``), rank, step (its index in the case), wall and issue seconds, the rank's main and autograd threads'
    CPU and run-queue seconds, the VM's steal seconds and the garbage collector's seconds and gen-2 collections
    (``gc_s``, ``gc2``); () where the run metered none."""
    out = []
    for d in _files(run):
        for c in d["cases"]:
            for rank, r in enumerate(c.get("ranks", ())):
                for i, m in enumerate(r.get("meter", ())):
                    out.append(MappingProxyType({
                        "case": c["id"], "variant": c.get("variant", ""), "rank": rank, "step": i, "wall_s": m["wall_s"],
                        "issue_s": m["issue_s"], "cpu_s": m.get("cpu_main_s", 0.0) + m.get("cpu_autograd_s", 0.0),
                        "runq_s": m.get("runq_main_s", 0.0) + m.get("runq_autograd_s", 0.0),
                        "steal_s": m.get("vm_steal_s", 0.0), "gc_s": sum(m["gc_s"]), "gc2": m["gc_n"][2]}))
    return tuple(out)


def host_pace(run: str) -> tuple[float, ...]:
    """The speedometer of a run (``scripts/gpu/speedometer.py``, ``speed.txt``): how many times a fixed piece of
    Python ran in each window of about 10 ms on one vCPU, over the run's median window (1 = the usual pace); () where
    the run has none."""
    f = _root().joinpath(run).joinpath("speed.txt")
    if not f.is_file():
        return ()
    n = [float(line.split()[1]) for line in f.read_text().splitlines() if line and not line.startswith("#")]
    med = statistics.median(n) if n else 0.0
    return tuple(x / med for x in n) if med > 0 else ()


def pace_blocks(run: str) -> tuple[Mapping[str, Any], ...]:
    """The blocks of a run whose ranks' busy threads were put on a vCPU timed just before (``train_dist.py``'s
    "fastcpu" and "slowcpu" conditions, dist5c): per block its condition, its median step (each step the slowest
    rank's) and the slower rank's vCPU pace (runs per second of a fixed piece of Python) just before and just after
    the block; () where the run has none."""
    out = []
    for d in _files(run):
        for c in d["cases"]:
            ranks = c.get("ranks", ())
            paces = [r.get("paces", ()) for r in ranks]
            if not ranks or not all(paces):
                continue
            k = int(ranks[0]["block_steps"])
            steps = [max(r["step_s_rank"][i] for r in ranks) for i in range(min(len(r["step_s_rank"]) for r in ranks))]
            for b in range(min(len(p) for p in paces)):
                out.append(MappingProxyType({
                    "case": c["id"], "variant": c.get("variant", ""), "block": b,
                    "step_s": statistics.median(steps[b * k:(b + 1) * k]),
                    "pace_before": min(float(p[b]["before"]) for p in paces),
                    "pace_after": min(float(p[b]["after"]) for p in paces)}))
    return tuple(out)


def vcpu_pace(run: str) -> Mapping[str, Any]:
    """The run's vCPU test (``scripts/gpu/smt_map.py``, ``smt_map.json``): the fixed piece of Python timed on each
    vCPU alone, one after another (``alone``: runs per second by vCPU), and with a second busy vCPU (``pairs``:
    (vCPU, partner) -> rate over alone); {} where the run has none."""
    f = _root().joinpath(run).joinpath("smt_map.json")
    if not f.is_file():
        return MappingProxyType({})
    d = json.loads(f.read_text())
    return MappingProxyType({"alone": MappingProxyType({int(k): float(v) for k, v in d["alone_runs_per_s"].items()}),
                             "pairs": MappingProxyType({(int(t["cpu"]), int(t["partner"])): float(t["ratio"])
                                                        for t in d["tests"]})})


@lru_cache(maxsize=None)
def _machine(device: str) -> Any:
    from mlcalc import hfruns, steptime

    if device not in MACHINE_RUN:
        raise ValueError(f"device={device!r} is not allowed: no measured machine for it ({sorted(MACHINE_RUN)})")
    base = hfruns.machine(MACHINE_RUN[device])
    if device in FLOORS_RUN:
        base = steptime.with_dist_host(base, host_floors(FLOORS_RUN[device]),
                                       host_floors(FSDP_TP_FLOORS_RUN[device]) if device in FSDP_TP_FLOORS_RUN else ())
        tf, tb = fsdp_dtensor_constants()
        base = base._replace(host_s_per_fsdp_dtensor_layer=tf * base.host_s_per_op,
                             host_s_per_fsdp_dtensor_backward_layer=tb * base.host_s_per_backward_op)
    return base


@lru_cache(maxsize=None)
def fsdp_dtensor_constants(run: str = FSDP_TP_METERED_RUN) -> tuple[float, float]:
    """FSDP2's host cost per layer over DTensor parameters, forward and backward, in plain forward and backward ops:
    the medians of a run's metered floors (:func:`metered_fsdp_dtensor`)."""
    m = metered_fsdp_dtensor(run)
    return max(0.0, m["forward"][1]), max(0.0, m["backward"][1])


def machine(case: DistCase) -> Any:
    """The card's measured machine: a single-GPU run of the book on the same kind of card (matmul, attention and
    element-wise rates, host constants per op) and, where measured, the DTensor and FSDP2 host costs of the card's
    host floors (:data:`FLOORS_RUN`; FSDP2 over DTensor parameters: the metered floors of :data:`FSDP_TP_METERED_RUN`,
    :func:`fsdp_dtensor_constants`) in units of its plain op (:func:`mlcalc.steptime.with_dist_host`)."""
    return _machine(case.device)


@lru_cache(maxsize=None)
def predict(case: DistCase) -> Any:
    """The engine's prediction of a case (:func:`mlcalc.steptime.predict_step`, eager, the chip's own system)."""
    from mlcalc import steptime

    return steptime.predict_step(case.model, layout(case), seq_len=case.seq_len, machine=machine(case),
                                 gpus_per_node=8, engine="eager")


def predict_planned(case: Mapping[str, Any], device: str) -> Any:
    """The engine's prediction of a planned case (one dict of ``train_dist.py``'s sweeps: model, dp, tp, pp,
    schedule, n_micro, micro_batch, seq_len, recompute) on a card named as torch names it: what a run's
    ``predictions.json`` holds, made before the run."""
    from mlcalc import steptime

    return steptime.predict_step(models.from_dict(case["model"]), layout(case), seq_len=int(case["seq_len"]),
                                 machine=_machine(device), gpus_per_node=8, engine="eager")


@lru_cache(maxsize=None)
def predictions(run: str) -> Mapping[str, Any]:
    """The predictions a run committed before its call (``predictions.json``: per card, case id -> step_s and
    peak_bytes), or {} where it has none."""
    _check.choice("run", run, runs())
    f = _root().joinpath(run).joinpath("predictions.json")
    return MappingProxyType(json.loads(f.read_text())) if f.is_file() else MappingProxyType({})


def blind_errors(run: str) -> Mapping[str, tuple[float, float]]:
    """Case id -> (step, memory) error of the predictions the run committed before its call (``predictions.json``,
    for the card that ran it): what the engine said of runs it had never seen. {} where the run committed none."""
    pred = predictions(run).get("cards", {})
    out: dict[str, tuple[float, float]] = {}
    for c in cases(run):
        p = pred.get(c.device, {}).get(c.id)
        if p:
            out[c.id] = (float(p["step_s"]) / c.step_s - 1.0, float(p["peak_bytes"]) / c.peak_bytes - 1.0)
    return MappingProxyType(out)


@dataclass(frozen=True)
class Check:
    """A case against the engine: relative errors (predicted / measured - 1) and the stated cause of a miss."""

    case: DistCase
    step_pred_s: float
    step_error: float
    memory_pred_bytes: float
    memory_error: float
    step_cause: str  # "" when within STEP_TARGET
    memory_cause: str  # "" when within MEMORY_TARGET


def check(case: DistCase) -> Check:
    """One case against :func:`predict` (its step: :func:`record_step_s`), with the cause of each miss from
    :func:`misses`."""
    p = predict(case)
    step = record_step_s(case)
    se = step / case.step_s - 1.0
    me = p.peak_bytes_per_gpu / case.peak_bytes - 1.0
    why = misses(case.run)
    sc = why.get(f"{case.family}:step", "(no cause stated)") if abs(se) > STEP_TARGET else ""
    mc = why.get(f"{case.family}:memory", "(no cause stated)") if abs(me) > MEMORY_TARGET else ""
    return Check(case, step, se, p.peak_bytes_per_gpu, me, sc, mc)


def checks(run: str) -> tuple[Check, ...]:
    """Every case of a run against the engine."""
    return tuple(check(c) for c in cases(run))


def summary(run: str) -> Mapping[str, float]:
    """Median and worst (largest in size, sign kept) errors of a run, and how many cases hit each target."""
    cs = checks(run)
    if not cs:
        raise ValueError(f"run={run!r} is not allowed: it has no measured cases")
    out: dict[str, float] = {"cases": float(len(cs))}
    for q, target in (("step", STEP_TARGET), ("memory", MEMORY_TARGET)):
        errs = [getattr(c, f"{q}_error") for c in cs]
        out[f"{q}_median_abs"] = statistics.median(abs(e) for e in errs)
        out[f"{q}_worst"] = max(errs, key=abs)
        out[f"{q}_within"] = float(sum(abs(e) <= target for e in errs))
    return MappingProxyType(out)


# ---------------------------------------------------------------------------------------------
# Metered runs (dist6): every step timed beside its own vCPU's pace
# ---------------------------------------------------------------------------------------------


@lru_cache(maxsize=None)
def pace_samples(run: str) -> Mapping[int, tuple[tuple[float, int, float], ...]]:
    """The pace meters of a run (``scripts/gpu/pacemeter.py``, ``pace_c<vCPU>.txt``): vCPU -> samples (epoch seconds
    at the sample's end, runs of the fixed piece of Python, CPU seconds they took); {} where the run has none."""
    _check.choice("run", run, runs_with_meters())
    return MappingProxyType({cpu: _pace_file(run, name) for cpu, name in _pace_files(run)})


def _pace_files(run: str) -> list[tuple[int, str]]:
    """(vCPU, file name) of a run's pace meters, in its folder's order."""
    return [(int(f.name[6:-4]), f.name) for f in _root().joinpath(run).iterdir()
            if f.name.startswith("pace_c") and f.name.endswith(".txt")]


@lru_cache(maxsize=None)
def _pace_file(run: str, name: str) -> tuple[tuple[float, int, float], ...]:
    """One pace meter's samples (:func:`pace_samples`' rows of one file)."""
    rows = []
    for line in _root().joinpath(run).joinpath(name).read_text().splitlines():
        if line and not line.startswith("#"):
            e, r, c = line.split()[:3]
            rows.append((float(e), int(r), float(c)))
    return tuple(rows)


@lru_cache(maxsize=None)  # package data: listed once (case_pace asks per case)
def runs_with_meters() -> tuple[str, ...]:
    """Run folders that hold pace meters (``pace_c*.txt``)."""
    return tuple(sorted(p.name for p in _root().iterdir()
                        if p.is_dir() and any(f.name.startswith("pace_c") for f in p.iterdir())))


def pace_over(samples: tuple[tuple[float, int, float], ...], start: float, end: float) -> float:
    """A vCPU's pace over (start, end] (epoch seconds): runs over CPU seconds of the samples that ended inside it;
    0 where none did."""
    runs_, cpu = 0, 0.0
    ends = _sample_ends(samples)
    if ends is not None and start == start and end == end:  # (NaN bounds take the loop below)
        # samples in time order: those ending inside the window are one slice of them, in the same order (the same
        # sums); found by bisection instead of a pass over every sample (a calibration asks 600 windows of 5,000)
        for _, r, c in samples[bisect.bisect_right(ends, start):bisect.bisect_right(ends, end)]:
            runs_ += r
            cpu += c
        return runs_ / cpu if cpu > 0 else 0.0
    for e, r, c in samples:
        if start < e <= end:
            runs_ += r
            cpu += c
    return runs_ / cpu if cpu > 0 else 0.0


_ENDS: dict[int, tuple[Any, list[float] | None]] = {}  # id(samples) -> (samples, their end times if in order)


def _sample_ends(samples: Any) -> list[float] | None:
    """The samples' end times where they are a tuple in non-decreasing time order (remembered per tuple), else None."""
    if type(samples) is not tuple:
        return None
    known = _ENDS.get(id(samples))
    if known is None or known[0] is not samples:
        try:
            ends: list[float] | None = [float(s[0]) for s in samples]
        except (TypeError, ValueError, IndexError):
            ends = None
        if ends is not None and not all(type(s[0]) is float for s in samples):
            ends = None
        if ends is not None and not all(a <= b for a, b in zip(ends, ends[1:])):
            ends = None  # (out of order, or a NaN: the loop)
        if len(_ENDS) >= 64:
            _ENDS.clear()
        known = _ENDS[id(samples)] = (samples, ends)
    return known[1]


@dataclass(frozen=True)
class MeteredStep:
    """One timed step of a metered case: its wall time (the slowest rank's) and the slowest rank's vCPU pace."""

    case: DistCase
    block: int
    step: int
    step_s: float
    pace: float  # runs per CPU second of the fixed piece of Python on the slowest rank's busy vCPU over the step


@lru_cache(maxsize=None)
def metered_steps(run: str) -> tuple[MeteredStep, ...]:
    """Every timed step of a run's metered cases (``train_dist.py``'s "meter" conditions, dist6 on) with the pace of
    each rank's busy vCPU over the step's own window (:func:`pace_over`); a step's pace is its slowest rank's (the
    smallest). () where the run has none."""
    if run not in runs_with_meters() or run not in runs():
        return ()
    samples = pace_samples(run)
    by_id = {c.id: c for c in cases(run)}
    out = []
    for d in _files(run):
        for c in d["cases"]:
            ranks = c.get("ranks", ())
            if "error" in c or c["id"] not in by_id or not ranks or not all(r.get("meter") for r in ranks):
                continue
            busy = [int((r.get("pinned") or {}).get("busy", [-1])[0]) for r in ranks]
            if not all(b in samples for b in busy):
                continue
            k = int(ranks[0]["block_steps"])
            for i in range(min(len(r["meter"]) for r in ranks)):
                ms = [r["meter"][i] for r in ranks]
                pace = min(pace_over(samples[b], m["epoch_s"], m["epoch_s"] + m["wall_s"]) for b, m in zip(busy, ms))
                out.append(MeteredStep(by_id[c["id"]], i // k, i, max(m["wall_s"] for m in ms), pace))
    return tuple(out)


@dataclass(frozen=True)
class HostWork:
    """A metered case's host work per step, in runs of the meter's fixed Python, beside the engine's."""

    case: DistCase
    measured_runs: float  # median over steps of the slowest rank's issue seconds x its busy vCPU's pace
    engine_runs: float  # the engine's host-bound passes (step less exposed communication and optimizer) x STATED_PACE

    @property
    def ratio(self) -> float:
        return self.measured_runs / self.engine_runs

    def per_layer(self) -> tuple[float, float]:
        """(measured, engine) runs a layer of the fullest stage."""
        n = -(-self.case.model.n_layers // self.case.pp)
        return self.measured_runs / n, self.engine_runs / n


def host_work(case: DistCase) -> HostWork:
    """How much host work a metered case's steps took against what the engine charges it (meter12): for each timed
    step the slowest rank (the smallest pace over the step's window, :func:`pace_over`) and its host issue time; the
    median over steps of issue seconds x pace, in runs of the meter's fixed Python. The engine's: its default
    prediction's passes (:func:`predict`'s step less exposed communication and the optimizer: a host-bound pass takes
    its host time) x :data:`STATED_PACE`, the pace its host constants hold at. Their ratio is about 1.1 on a case the
    record prices right (the issue time also holds the waits the pace does not scale). ValueError for an unmetered
    case."""
    if case_pace(case) <= 0:
        raise ValueError(f"case={case.id!r} is not allowed: it was not metered")
    s = pace_samples(case.run)
    work = []
    for d in _files(case.run):
        for c in d["cases"]:
            if c["id"] != case.id:
                continue
            ranks = c["ranks"]
            busy = [int(r["pinned"]["busy"][0]) for r in ranks]
            for i in range(min(len(r["meter"]) for r in ranks)):
                ms = [r["meter"][i] for r in ranks]
                per = [(pace_over(s[b], m["epoch_s"], m["epoch_s"] + m["wall_s"]), m["issue_s"]) for b, m in zip(busy, ms)]
                pace, issue = min(per)
                if pace > 0:
                    work.append(pace * float(issue))
    p = predict(case)
    return HostWork(case, statistics.median(work), (p.step_s - p.comm_exposed_s - p.optimizer_s) * STATED_PACE)


#: The calibration floors a metered run may hold: at its start (or the only one), and at its end (meter12 on).
FLOOR_FILES = ("floor.json", "floor_end.json")


def _floor_data(run: str, name: str = "floor.json") -> tuple[Mapping[str, Any], tuple[tuple[float, int, float], ...]]:
    """A metered run's ``floor.json`` (or ``name``, one of :data:`FLOOR_FILES`) and the samples of the vCPU its process
    ran on (the run's highest metered vCPU: ``run_train_dist6b.sh`` / ``run_train_dist6c.sh`` put it there); ({}, ())
    where it has none."""
    _check.choice("run", run, runs_with_meters())
    _check.choice("name", name, FLOOR_FILES)
    f = _root().joinpath(run).joinpath(name)
    if not f.is_file():
        return MappingProxyType({}), ()
    cpu, name = max(_pace_files(run))  # (pace_samples(run)[its highest vCPU], that one file read)
    return MappingProxyType(json.loads(f.read_text())), _pace_file(run, name)


def floor_paces(run: str) -> tuple[tuple[ModelConfig, bool, float, float, float], ...]:
    """The calibration floors of a metered run (``floor.json``: ``scripts/gpu/train_hf.py --floor``, the program
    whose floors give the engine's host constants, its whole process on one metered vCPU): (model, recompute,
    forward_s, backward_s of the instrumented step, the vCPU's pace over the case's timed window); () where the run
    has none."""
    data, s = _floor_data(run)
    out = []
    for c in data.get("cases", ()):
        if "phases" in c:
            w = c["timed_epoch_s"]
            out.append((models.from_dict(c["model"]), bool(c["recompute"]), float(c["phases"]["forward_s"]),
                        float(c["phases"]["backward_s"]), pace_over(s, w[0], w[1])))
    return tuple(out)


def floor_repeats(run: str) -> tuple[tuple[ModelConfig, float, float, float], ...]:
    """The calibration program's repeated floor passes (``train_hf.py --repeat``, without checkpointing): (model,
    host seconds per forward op, per backward op (:func:`mlcalc.steptime.op_counts`), the vCPU's pace over the
    pair of passes); () where the run has none. How the calibration program's host time follows its vCPU's pace."""
    from mlcalc import steptime

    data, s = _floor_data(run)
    out = []
    for c in data.get("cases", ()):
        if c.get("recompute") or not c.get("phase_repeats"):
            continue
        m = models.from_dict(c["model"])
        ops = steptime.op_counts(m, False)
        for r in c["phase_repeats"]:
            p = pace_over(s, r["forward_epoch_s"][0], r["backward_epoch_s"][1])
            if p > 0:
                out.append((m, r["forward_s"] / ops["forward"], r["backward_s"] / ops["backward"], p))
    return tuple(out)


#: The calls whose floors calibrate the metered rules: the 14 floor cases of the second dist6 call (one
#: instrumented step each, at their own pace) and the repeated Llama-3.2 1B floor of the third (150 pairs of passes
#: over paces of 75-144 thousand runs a second).
CALIBRATION_RUN = "h200x4-2026-11-27-train-dist6b"
SLOWDOWN_RUN = "h200x4-2026-11-27-train-dist6c"
METER_RULES = ("probe", "calibrated")

#: The call whose calibration program ran Llama-3.2 1B's floor 150 times without and 150 times with checkpointing on
#: one metered vCPU (``floor.json``): the host work checkpointing adds, in forward ops of the same program at the same
#: pace (:func:`checkpoint_calibration`), which every measured machine prices at its own forward op
#: (:func:`mlcalc.hfruns.machine`): one pace for all of a machine's host constants.
CHECKPOINT_RUN = "h200x4-2026-11-27-train-dist6c"


@lru_cache(maxsize=None)
def checkpoint_calibration(run: str = CHECKPOINT_RUN) -> float:
    """Checkpointing's host work per layer and pass in forward ops (:func:`mlcalc.steptime.checkpoint_over_op`) from a
    metered run's repeated calibration passes (``train_hf.py --repeat``, with and without checkpointing): each pass's
    work is its seconds times its vCPU's pace over its own window (:func:`pace_over`; passes with no sample inside
    are left out), the median over the repeats is taken."""
    from mlcalc import steptime

    data, s = _floor_data(run)
    work: dict[bool, tuple[float, float]] = {}
    model = None
    for c in data.get("cases", ()):
        rows = []
        for r in c.get("phase_repeats") or ():
            pf, pb = pace_over(s, *r["forward_epoch_s"]), pace_over(s, *r["backward_epoch_s"])
            if pf > 0 and pb > 0:
                rows.append((r["forward_s"] * pf, r["backward_s"] * pb))
        if rows:
            m = models.from_dict(c["model"])
            if model is not None and m != model:
                raise ValueError(f"run={run!r} is not allowed: its repeated floors are of more than one model")
            model = m
            work[bool(c["recompute"])] = (statistics.median(f for f, _ in rows), statistics.median(b for _, b in rows))
    if model is None or set(work) != {False, True}:
        raise ValueError(f"run={run!r} is not allowed: it has no repeated floors both with and without checkpointing")
    return steptime.checkpoint_over_op(model, work[False], work[True])


def _line(xs: list[float], ys: list[float]) -> tuple[float, float]:
    """Least-squares (intercept, slope) of ys on xs."""
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx > 0 else 0.0
    return my - b * mx, b


@lru_cache(maxsize=None)
def slowdown_law() -> tuple[tuple[float, float], tuple[float, float]]:
    """The calibration program's host seconds per op against its vCPU's pace p, a + b / p, forward and backward
    (least squares over :func:`floor_repeats` of :data:`SLOWDOWN_RUN`): ((a_f, b_f), (a_b, b_b))."""
    rows = floor_repeats(SLOWDOWN_RUN)
    inv = [1.0 / p for _, _, _, p in rows]
    return _line(inv, [f for _, f, _, _ in rows]), _line(inv, [b for _, _, b, _ in rows])


@lru_cache(maxsize=None)
def _rule_work(rule: str) -> tuple[float, float, float]:
    """Host work per forward op, per backward op and per checkpointed layer of a metered rule, in the units its
    :func:`metered_host` divides by."""
    _check.choice("rule", rule, METER_RULES)
    from mlcalc import steptime

    fl = floor_paces(CALIBRATION_RUN)
    if rule == "probe":  # seconds x pace: runs of the probe per op
        return steptime.host_constants_from_floors([(m, rc, f * p, b * p) for m, rc, f, b, p in fl])
    (af, bf), (ab, bb) = slowdown_law()  # priced at 100,000 runs a second through the calibration program's own law
    gf, gb = (lambda p: af + bf / p), (lambda p: ab + bb / p)
    return steptime.host_constants_from_floors([(m, rc, f * gf(1e5) / gf(p), b * gb(1e5) / gb(p))
                                                for m, rc, f, b, p in fl])


def metered_host(rule: str, pace: float) -> tuple[float, float, float]:
    """Host seconds per forward op, per backward op and per checkpointed layer at a vCPU pace (runs per CPU second
    of the fixed piece of Python) under a metered rule, both written before the call they were checked on
    (``scripts/gpu/predict_dist5.py``'s RULES): "probe" (dist6, dist6b): the calibration floors' host work in runs of
    the probe, divided by the pace; "calibrated" (dist6c): the floors' constants at 100,000 runs a second carried to
    the pace by the calibration program's own measured slowdown (:func:`slowdown_law`)."""
    _check.positive("pace", pace)
    w = _rule_work(rule)
    if rule == "probe":
        return w[0] / pace, w[1] / pace, w[2] / pace
    (af, bf), (ab, bb) = slowdown_law()
    sf, sb = (af + bf / pace) / (af + bf / 1e5), (ab + bb / pace) / (ab + bb / 1e5)
    return w[0] * sf, w[1] * sb, w[2] * sf


@lru_cache(maxsize=4096)
def predict_metered(case: DistCase, pace: float, rule: str) -> float:
    """The step of ``case`` predicted at a vCPU pace under a metered rule: :func:`predict` on the card's machine with
    the host constants of :func:`metered_host` (DTensor and FSDP2 host costs as the same ratios to the plain op)."""
    from mlcalc import hfruns, steptime

    f, b, ck = metered_host(rule, pace)
    base = hfruns.machine(MACHINE_RUN[case.device])._replace(host_s_per_op=f, host_s_per_backward_op=b,
                                                            host_s_per_checkpoint=ck)
    m = steptime.with_dist_host(base, host_floors(FLOORS_RUN[case.device]),
                                host_floors(FSDP_TP_FLOORS_RUN[case.device]))
    return steptime.predict_step(case.model, layout(case), seq_len=case.seq_len, machine=m, gpus_per_node=8,
                                 engine="eager").step_s


@dataclass(frozen=True)
class MeteredBlock:
    """A block of metered steps against a metered rule: medians of the measured and of the predicted steps."""

    case: DistCase
    block: int
    step_s: float  # median step of the block (each step the slowest rank's)
    pace: float  # median over the block's steps of the slowest rank's pace
    predicted_s: float  # median over the block's steps of predict_metered at each step's pace
    default_s: float  # the engine's prediction without the meter (predict)

    @property
    def error(self) -> float:
        return self.predicted_s / self.step_s - 1.0

    @property
    def default_error(self) -> float:
        return self.default_s / self.step_s - 1.0


def metered_blocks(run: str, rule: str) -> tuple[MeteredBlock, ...]:
    """Every block of a run's metered cases against a metered rule (:func:`metered_steps`, :func:`predict_metered`)."""
    _check.choice("rule", rule, METER_RULES)
    groups: dict[tuple[str, int], list[MeteredStep]] = {}
    for s in metered_steps(run):
        groups.setdefault((s.case.id, s.block), []).append(s)
    return tuple(MeteredBlock(g[0].case, g[0].block, statistics.median(x.step_s for x in g),
                              statistics.median(x.pace for x in g),
                              statistics.median(predict_metered(x.case, round(x.pace), rule) for x in g),
                              predict(g[0].case).step_s) for g in groups.values())


# ---------------------------------------------------------------------------------------------
# The engine's stated pace and the pace-aware prediction (host7)
# ---------------------------------------------------------------------------------------------


@lru_cache(maxsize=None)
def engine_pace(run: str, device: str = "NVIDIA H200", floor: str = "floor.json") -> float:
    """The pace (runs a second of the meter's fixed Python) at which the engine's seconds per forward op hold, from a
    metered run's calibration program in the training runs' placement (``floor.json`` of ``train_hf.py --floor
    --repeat --place``: the engine's floor models, each forward pass priced at its own window's pace): the median over
    the models without checkpointing of (median over its passes of forward runs) / forward ops
    (:func:`mlcalc.steptime.op_counts`), over the card's machine's seconds per forward op (:func:`_machine`)."""
    from mlcalc import steptime

    data, s = _floor_data(run, floor)
    per_op = []
    for c in data.get("cases", ()):
        if c.get("recompute"):
            continue
        runs_ = [r["forward_s"] * pace_over(s, *r["forward_epoch_s"]) for r in c.get("phase_repeats") or ()]
        runs_ = [x for x in runs_ if x > 0]
        if runs_:
            m = models.from_dict(c["model"])
            per_op.append(statistics.median(runs_) / steptime.op_counts(m, False)["forward"])
    if not per_op:
        raise ValueError(f"run={run!r} is not allowed: its floor.json has no repeated passes without checkpointing")
    return statistics.median(per_op) / _machine(device).host_s_per_op


#: A stated pace for the engine's host constants, in runs a second of the meter's fixed Python: the best of a scan (90,
#: 95, 100, 105, 110, 125 thousand) of the pace-aware prediction (:func:`paced_blocks`) over the dist6 and dist6c calls'
#: 68 metered blocks (63 within 15 %; 47 for the engine's one pace), chosen before the host7 calls and holding on their
#: 48 blocks (40 within 15 % against 29), but not written in the repository before them: the host7c call is its blind
#: test (scripts/gpu/host7c_predictions.json). One number for every case, not a constant per case. What the engine's
#: own calibration program gives in the training placement (:func:`engine_pace`: 160 thousand) does not carry over.
STATED_PACE = 90e3


def launch_floor_s() -> float:
    """Host seconds of one plain op that do not follow the vCPU's pace (host9): the launch path's floor, one kernel's
    back-to-back launch overhead (:func:`mlcalc.serving.null_kernel_s`, 3 us: the published 'speed of light' of
    null kernels, mlcalc/data/kernels.json). Not fitted: the rule it makes (:func:`paced_machine` with ``fixed_s``)
    was scored on the dist6, dist6c, host7 and host7b blocks (110 of 116 within 15 %; 104 without it) and held out on
    host7c, host8 and host8b (110 of 126; 102 without it; median error 8.0 -> 6.5 %). With issue 24's channel rule in
    the network model (the all-reduces inside one node slower) the same scores are 111 of 116 and 112 of 126 (105
    without it; median 8.0 -> 6.4 %). The meter12 and meter12b calls split on it (51 and 23 of 60 blocks; without it 50
    and 45), so the meter12c call decided by a rule committed before it (scripts/gpu/meter12c_predictions.json: more
    of that call's blocks within 15 % wins, a tie to this rule): 60 of 60 with it, 56 without; it stays."""
    from mlcalc import serving

    return serving.null_kernel_s()


def paced_machine(device: str, pace: float, stated: float, fixed_s: float = 0.0) -> Any:
    """The card's machine (:func:`_machine`) with every host constant at a vCPU pace: multiplied by stated / pace, where
    ``stated`` is the pace its constants hold at (:func:`engine_pace`). With ``fixed_s`` (seconds of one plain op that
    do not follow the pace, :func:`launch_floor_s`), each constant keeps the same share of itself fixed (``fixed_s``
    over the plain forward op, or over the plain backward op for the backward constants, at most all of it) and
    scales the rest: c x (share + (1 - share) x stated / pace)."""
    k = _check.positive("stated", stated) / _check.positive("pace", pace)
    _check.non_negative("fixed_s", fixed_s)
    m = _machine(device)
    out = {}
    for f in m._fields:
        if f.startswith("host_s_per"):
            plain = m.host_s_per_backward_op if "backward" in f else m.host_s_per_op
            share = min(1.0, fixed_s / plain) if plain > 0 else 0.0
            out[f] = getattr(m, f) * (share + (1.0 - share) * k)
    return m._replace(**out)


@lru_cache(maxsize=4096)
def predict_paced(case: DistCase, pace: float, stated: float, fixed_s: float = 0.0) -> float:
    """The step of ``case`` at a vCPU pace (:func:`paced_machine`): :func:`predict` with every host constant scaled
    (all of it, or all but the share ``fixed_s`` makes fixed)."""
    from mlcalc import steptime

    return steptime.predict_step(case.model, layout(case), seq_len=case.seq_len,
                                 machine=paced_machine(case.device, pace, stated, fixed_s), gpus_per_node=8,
                                 engine="eager").step_s


def paced_blocks(run: str, stated: float, fixed_s: float = 0.0) -> tuple[MeteredBlock, ...]:
    """Every block of a run's metered cases against the pace-aware prediction (:func:`predict_paced` at each step's
    slowest rank's pace, rounded to 1,000 runs a second; the block's median), beside the engine's default."""
    groups: dict[tuple[str, int], list[MeteredStep]] = {}
    for s in metered_steps(run):
        groups.setdefault((s.case.id, s.block), []).append(s)
    return tuple(MeteredBlock(g[0].case, g[0].block, statistics.median(x.step_s for x in g),
                              statistics.median(x.pace for x in g),
                              statistics.median(predict_paced(x.case, round(x.pace, -3), stated, fixed_s) for x in g),
                              predict(g[0].case).step_s) for g in groups.values())


#: The launch floor's test (host9): the calls the rule was scored on, and the calls it was held out of (each list of
#: runs with metered steps, in the order they ran). Written in the notes before the held-out calls were scored.
FLOOR_RULE_SEEN = ("h200x2-2026-11-27-train-dist6", "h200x4-2026-11-27-train-dist6c",
                   "h200x4-2026-11-27-train-host7", "h200x4-2026-11-27-train-host7b")
FLOOR_RULE_HELD_OUT = ("h200x4-2026-11-27-train-host7c", "h200x4-2026-11-27-train-host8",
                       "h200x4-2026-11-27-train-host8b")


@dataclass(frozen=True)
class FloorRuleScore:
    """Blocks of some metered calls against the stated-pace rule with and without the launch floor held fixed."""

    n: int
    within_scaled: int  # within 15 % with every host constant scaled by the pace (the host7c rule)
    within_floor: int  # within 15 % with the launch floor's share held fixed (:func:`launch_floor_s`)
    median_scaled: float  # median |error| of the blocks, host7c's rule
    median_floor: float  # median |error| with the launch floor


def floor_rule_score(runs_: tuple[str, ...]) -> FloorRuleScore:
    """The stated-pace rule's blocks (:func:`paced_blocks`) over ``runs_``, without and with :func:`launch_floor_s`."""
    a = [b.error for r in runs_ for b in paced_blocks(r, STATED_PACE)]
    b = [b.error for r in runs_ for b in paced_blocks(r, STATED_PACE, launch_floor_s())]
    if not a:
        raise ValueError(f"runs_={runs_!r} is not allowed: no metered blocks in them")
    return FloorRuleScore(len(a), sum(abs(e) <= STEP_TARGET for e in a), sum(abs(e) <= STEP_TARGET for e in b), statistics.median(abs(e) for e in a),
                          statistics.median(abs(e) for e in b))


@lru_cache(maxsize=None)
def case_pace(case: DistCase) -> float:
    """A metered case's pace: the median over its timed steps of the slowest rank's busy-vCPU pace
    (:func:`metered_steps`); 0 where the case was not metered."""
    if case.run not in runs_with_meters():
        return 0.0
    paces = [s.pace for s in metered_steps(case.run) if s.case.id == case.id and s.pace > 0]
    return statistics.median(paces) if paces else 0.0


def record_step_s(case: DistCase) -> float:
    """The step the book's record holds a case to: a metered case's at its own pace (:func:`predict_paced` at
    :func:`case_pace`, rounded to 1,000, and :data:`STATED_PACE`: the rule the host7c call checked blind, 41 of 48
    blocks within 15 % against 26 for the engine's one pace; since host9 with the launch floor's share of each host
    constant held fixed, :func:`launch_floor_s`, kept by meter12c's pre-registered decision), any other case's the
    engine's default (:func:`predict`)."""
    p = case_pace(case)
    if p <= 0:
        return float(predict(case).step_s)
    return predict_paced(case, round(p, -3), STATED_PACE, launch_floor_s())


# ---------------------------------------------------------------------------------------------
# The family's record: a configuration measured in the metered protocol is held to its metered runs (host8)
# ---------------------------------------------------------------------------------------------


def config(case: DistCase) -> tuple[Any, ...]:
    """What a case ran, without when or how it was timed: model, FSDP shards, tensor and pipeline ranks, schedule,
    micro-batches, micro-batch, sequence, checkpointing and the card kind."""
    return (case.model, case.dp, case.tp, case.pp, case.schedule, case.n_micro, case.micro_batch, case.seq_len,
            case.recompute, case.device)


@lru_cache(maxsize=None)
def metered_configs() -> frozenset[tuple[Any, ...]]:
    """The configurations (:func:`config`) with at least one metered case (:func:`case_pace` > 0) in the repository."""
    return frozenset(config(c) for r in runs_with_meters() if r in runs() for c in cases(r) if case_pace(c) > 0)


def in_step_record(case: DistCase) -> bool:
    """Whether a case's step counts in the family's step record (the rule the host8 call fixed before it ran,
    scripts/gpu/host8_predictions.json): a metered case always; an unmetered one (its host's pace unknown) only where
    its configuration was never metered. The others are history: kept with their scores and stated causes
    (:func:`step_history`). Memory does not depend on the host's pace: every case counts in the memory record."""
    return case_pace(case) > 0 or config(case) not in metered_configs()


def step_history() -> tuple[Check, ...]:
    """The unmetered cases whose configuration has metered runs (:func:`in_step_record` is False), against the engine's
    default (:func:`check`): what they said before the metered runs held their place in the record."""
    return tuple(chk for r in runs() for chk in checks(r) if not in_step_record(chk.case))


# ---------------------------------------------------------------------------------------------
# Host floors priced by the pace meter (host8): FSDP2 over DTensor parameters in plain ops of the same floors
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MeteredFloor:
    """One floor program at one layer count, every pass priced at its slowest rank's pace (lock-stepped ranks)."""

    program: str
    recompute: bool
    n_layers: int
    forward_runs: tuple[float, ...]  # per priced pass: its seconds x its pace (runs of the meter's fixed Python)
    backward_runs: tuple[float, ...]


#: The shortest window a floor pass is priced over (seconds, centred on the pass): a pass of a few milliseconds holds
#: no meter sample (one every ~20 ms), and a vCPU's pace moves over seconds, not tenths of one.
FLOOR_PACE_WINDOW_S = 0.1


def _pace_around(samples: tuple[tuple[float, int, float], ...], start: float, end: float) -> float:
    """:func:`pace_over` a pass's window widened, about its middle, to at least :data:`FLOOR_PACE_WINDOW_S`."""
    half = max(end - start, FLOOR_PACE_WINDOW_S) / 2
    mid = (start + end) / 2
    return pace_over(samples, mid - half, mid + half)


@lru_cache(maxsize=None)
def metered_floors(run: str) -> tuple[MeteredFloor, ...]:
    """The multi-GPU host floors of a run measured beside the pace meter (``train_dist.py --floors`` with
    ``METER_FLOORS=1``: each rank's busy threads on its metered vCPU, every pass's window in ``reps``): per program
    and layer count, each pass's work in runs of the meter's fixed Python over a window of at least
    :data:`FLOOR_PACE_WINDOW_S` (:func:`_pace_around`). The programs over several ranks wait for each other, so a pass
    is its longest rank's seconds times its slowest rank's pace; the plain program runs on each rank alone, so each
    rank's pass is its own seconds times its own pace (every rank's passes listed). Passes without a meter sample
    are left out. () where the run has none."""
    if run not in runs_with_meters():
        return ()
    s = pace_samples(run)
    by: dict[tuple[str, bool, int], dict[int, Mapping[str, Any]]] = {}
    for r in host_floors(run):
        if r.get("reps") and (r.get("placed") or {}).get("busy"):
            by.setdefault((str(r["program"]), bool(r["recompute"]), int(r["n_layers"])), {})[int(r["rank"])] = r
    out = []
    for (prog, rc, n), ranks in sorted(by.items()):
        cpus = {k: int(r["placed"]["busy"][0]) for k, r in ranks.items()}
        if not all(c in s for c in cpus.values()):
            continue
        fw, bw = [], []
        for i in range(min(len(r["reps"]) for r in ranks.values())):
            w = {k: r["reps"][i] for k, r in ranks.items()}
            pf = {k: _pace_around(s[cpus[k]], x[0], x[1]) for k, x in w.items()}
            pb = {k: _pace_around(s[cpus[k]], x[2], x[3]) for k, x in w.items()}
            if prog == "plain":
                fw += [float(w[k][4]) * pf[k] for k in w if pf[k] > 0]
                bw += [float(w[k][5]) * pb[k] for k in w if pb[k] > 0]
                continue
            if min(pf.values()) > 0:
                fw.append(max(float(x[4]) for x in w.values()) * min(pf.values()))
            if min(pb.values()) > 0:
                bw.append(max(float(x[5]) for x in w.values()) * min(pb.values()))
        out.append(MeteredFloor(prog, rc, n, tuple(fw), tuple(bw)))
    return tuple(out)


def _quartiles(xs: tuple[float, ...]) -> tuple[float, float, float]:
    q = statistics.quantiles(xs, n=4) if len(xs) >= 2 else [xs[0]] * 3
    return q[0], statistics.median(xs), q[2]


def metered_fsdp_dtensor(run: str) -> Mapping[str, tuple[float, ...]]:
    """FSDP2's host cost per layer over tensor-parallel parameters from a run's metered floors (:func:`metered_floors`),
    in plain ops of the same floors (as :func:`mlcalc.steptime.fsdp_dtensor_host_constants`, which takes seconds of
    one unmetered pass each): phase -> (low, median, high), the median from the programs' median passes, low and high
    from their quartiles (the fsdptp program's low against the tp2d program's high and the other way round): the
    floor's own spread. Also FSDP2 over plain parameters ("fsdp forward", "fsdp backward"), beside the engine's."""
    fl = {(f.program, f.n_layers): f for f in metered_floors(run) if not f.recompute}
    layers = sorted({n for _, n in fl})
    if len(layers) < 2:
        raise ValueError(f"run={run!r} is not allowed: it has no metered floors at two layer counts")
    lo, hi = layers[0], layers[-1]
    out: dict[str, tuple[float, ...]] = {}
    from mlcalc import steptime

    for ph, attr in (("forward", "forward_runs"), ("backward", "backward_runs")):
        q = {(p, n): _quartiles(getattr(fl[(p, n)], attr)) for p in ("plain", "tp2d", "fsdptp", "fsdp")
             for n in (lo, hi) if (p, n) in fl}
        unit = (q[("plain", hi)][1] - q[("plain", lo)][1]) / (hi - lo) / steptime.PLAIN_OPS_PER_LAYER[ph]
        if unit <= 0:
            raise ValueError(f"run={run!r} is not allowed: its plain floor's {ph} work does not grow with layers")

        for name, prog, base in ((ph, "fsdptp", "tp2d"), (f"fsdp {ph}", "fsdp", "plain")):
            if (prog, hi) in q and (prog, lo) in q and (base, hi) in q and (base, lo) in q:
                out[name] = tuple(((q[(prog, hi)][a] - q[(prog, lo)][b]) - (q[(base, hi)][c] - q[(base, lo)][e]))
                                  / (hi - lo) / unit for a, b, c, e in ((0, 2, 2, 0), (1, 1, 1, 1), (2, 0, 0, 2)))
    return MappingProxyType(out)


# ---------------------------------------------------------------------------------------------
# The calibration program at training-like token counts (host8): is the pace gap the token count?
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FloorAtTokens:
    """The calibration program's host work per op at one sequence length: each repeated pass's issue time (Python
    returned, before the device finished) times its vCPU's pace about the pass (:func:`_pace_around`), over the
    pass's ops (:func:`mlcalc.steptime.op_counts`; the backward with its recomputed forward); medians."""

    model: str
    seq_len: int
    recompute: bool
    forward_runs_per_op: float
    backward_runs_per_op: float
    pace: float  # median pace about its forward passes


def floor_tokens(run: str) -> tuple[FloorAtTokens, ...]:
    """A metered run's calibration program (``floor.json`` of ``train_hf.py --floor --floor-seq ... --repeat``,
    the passes' issue times recorded: host8 on) at each of its sequence lengths; () where it has none."""
    from mlcalc import steptime

    data, s = _floor_data(run)
    out = []
    for c in data.get("cases", ()):
        reps = [r for r in c.get("phase_repeats") or () if "forward_issue_s" in r]
        if not reps:
            continue
        m = models.from_dict(c["model"])
        ops = steptime.op_counts(m, bool(c["recompute"]))
        fwd, bwd, pace = [], [], []
        for r in reps:
            pf, pb = _pace_around(s, *r["forward_epoch_s"]), _pace_around(s, *r["backward_epoch_s"])
            if pf > 0 and pb > 0:
                fwd.append(r["forward_issue_s"] * pf / ops["forward"])
                bwd.append(r["backward_issue_s"] * pb / (ops["backward"] + ops["recomputed forward"]))
                pace.append(pf)
        if fwd:
            out.append(FloorAtTokens(m.name, int(c["seq_len"]), bool(c["recompute"]), statistics.median(fwd),
                                     statistics.median(bwd), statistics.median(pace)))
    return tuple(out)


def plain_floor_pace(run: str, device: str = "NVIDIA H200") -> tuple[float, float]:
    """The pace (runs a second of the meter's fixed Python) at which the engine's host time for one plain layer of the
    multi-GPU program (:func:`mlcalc.steptime.op_counts` per layer x the card's machine's seconds per op) equals that
    layer's metered work in the run's floors (:func:`metered_floors`, program "plain", the difference over the layer
    counts), forward and backward. Beside :func:`engine_pace` (the calibration program, Hugging Face's layers:
    160 thousand) and :data:`STATED_PACE` (what the steps hold to: 90 thousand) it places the gap between them."""
    from mlcalc import steptime

    fl = {(f.n_layers): f for f in metered_floors(run) if f.program == "plain" and not f.recompute}
    if len(fl) < 2:
        raise ValueError(f"run={run!r} is not allowed: it has no metered plain floors at two layer counts")
    lo, hi = min(fl), max(fl)
    m, mach = models.preset("Llama-3.2 1B"), _machine(device)
    a, b = steptime.op_counts(m.replace(n_layers=lo), False), steptime.op_counts(m.replace(n_layers=hi), False)
    out = []
    for ph, attr, per_op in (("forward", "forward_runs", mach.host_s_per_op),
                             ("backward", "backward_runs", mach.host_s_per_backward_op)):
        runs_ = (statistics.median(getattr(fl[hi], attr)) - statistics.median(getattr(fl[lo], attr))) / (hi - lo)
        out.append(runs_ / ((b[ph] - a[ph]) / (hi - lo) * per_op))
    return out[0], out[1]
