"""Blind checks: the engine's predictions committed BEFORE a GPU call, on shapes the book had never measured, next to
what the call measured (session 35's blind10 call: ``scripts/gpu/run_blind10.sh``; predictions
``scripts/gpu/blind10_predictions.json``, made by ``scripts/gpu/predict_blind10.py`` with the engine at 28c0ba4 and
inputs from earlier runs only; its blind11 call on 4 GPUs: ``scripts/gpu/run_blind11.sh``, predictions
``scripts/gpu/blind11_predictions.json`` by ``scripts/gpu/predict_blind11.py``, engine at c00f6f3).

Six families, each held to the target the accuracy page holds its family to: 1-GPU Hugging Face training (peak memory
10 %, step 20 %), FSDP2 / tensor / pipeline parallel training on 2 GPUs (memory 10 %, step 15 %; these cases also join
the page's multi-GPU families through :mod:`mlcalc.distruns`), eager ``generate`` decode (25 %, tokens per second), and
transformers' decode step eager (25 %) and replayed from a CUDA graph (20 %), and its eager prefill (25 %); and
(blind11) FSDP2 / tensor / pipeline parallel training and their 2 x 2 mixes on 4 GPUs (memory 10 %, step 15 %; they
join :mod:`mlcalc.distruns` too). The blind11 call's two ``-base`` cases (shapes the record holds, run again to compare
hosts) are no blind check: :func:`host_baseline`. The meter12 call (session 36, ``scripts/gpu/run_meter12.sh``,
predictions ``scripts/gpu/meter12_predictions.json``, engine at 3abe791) ran the configurations of the 2- and 4-GPU
blind step misses again beside the pace meter, and five tensor-parallel configurations never run; its predictions hold
the engine's default (scored here as every blind call's) and the metered rule at every pace (:func:`metered_errors`:
read at each case's own measured pace). The meter12b call ran the same script against the same predictions on a second
host, whose vCPUs ran at about half meter12's pace. The meter12c call ran it a third time, on a third host, against
its own predictions committed before it (``scripts/gpu/meter12c_predictions.json``: the same default and launch-floor
rows, and host7c's rule beside them) and a decision rule written there: the rule with more of its blocks within 15 %
holds the record (the launch floor kept: 60 of 60 against 56). The h100mg and h100mgb calls (session 37,
``scripts/gpu/run_h100mg.sh``, predictions ``scripts/gpu/h100mg_predictions.json``, engine at 41f9763) ran the first
metered 2-GPU sweep (FSDP2, TP 2 and the 1F1B pipeline) on two hosts; two H100s were asked for and two H200s came
both times.

A case outside its target carries the cause the run's ``blind_misses.json`` states for it (key
``"blind:<family>:<quantity>:<case>"``), found after the call from its own evidence (the host probes beside every
point, the floors measured in the same call, the nearest measured case). :func:`own_probe_errors` gives the record
rule of the serving families (the same engine, with the host and floor probes measured in the same call) beside the
blind prediction, and for the 4-GPU training the engine at the pace of the call's own calibration floor: what the
engine says once it knows the host it runs on.

Record code (not imported by the pages at start): read on demand.
"""

from __future__ import annotations

import json
import statistics
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from types import MappingProxyType
from typing import Any, Iterator, Mapping

from mlcalc import _check

#: The blind10 call: 2 x NVIDIA H200 (asked for 2 x H100, ``nvidia-h100-x2``; the session held an H200 pair),
#: 2026-11-27 14:02-14:06 UTC, 245 s.
RUN = "h200x2-2026-11-27-blind10"
#: The blind10b call: its 1-GPU parts again on one NVIDIA H100 80GB HBM3 (``nvidia-h100-x1``), one after another
#: (no lane beside another), Llama 3 8B serving only, 2026-11-27 14:15-14:19 UTC, 241 s; the same committed predictions
#: (their H100 rows).
RUN_H100 = "h100-2026-11-27-blind10b"
#: The blind11 call: 4 x NVIDIA H200 (asked for 4 x H100, ``nvidia-h100-x4``; the machine lent came with H200s),
#: 2026-11-27 14:39-14:43 UTC, 189 s: ``train_dist.py --sweep blind11`` after the engine's calibration floor and the
#: host floors; predictions ``blind11_predictions.json`` (their H200 rows).
RUN_4GPU = "h200x4-2026-11-27-blind11"
#: The blind11b call: the same script and committed predictions again (asked for 4 x H100 once more; 4 x H200 came),
#: 2026-11-27 14:59-15:03 UTC, 189 s, on a host whose calibration floor took 79.4 ms against blind11's 61.3 ms.
RUN_4GPU_B = "h200x4-2026-11-27-blind11b"
#: The meter12 call (session 36): the configurations of the multi-GPU record's six unmetered blind misses (blind10's
#: two, blind11's three, blind11b's one) and five tensor-parallel configurations never run, metered as the host8 call
#: (``scripts/gpu/run_meter12.sh``), on 4 x NVIDIA H200 (asked for 4 x H100, ``nvidia-h100-x4``; H200s came),
#: 2026-11-27 16:52-16:57 UTC, 257 s; predictions ``meter12_predictions.json`` (engine at 3abe791): the engine's
#: default and the metered rule at every pace (:func:`metered_errors`).
RUN_METER = "h200x4-2026-11-27-meter12"
#: The meter12b call: the meter12 script and committed predictions again, unchanged (asked for 4 x H100,
#: ``nvidia-h100-x4``, once more; 4 x H200 came), 2026-11-27 17:23-17:28 UTC, 344 s, on a host whose calibration floor
#: took 60.7 ms at the call's start and 99.1 ms at its end (meter12: 81.1 and 70.6 ms).
RUN_METER_B = "h200x4-2026-11-27-meter12b"
#: The meter12c call: the meter12 script again, unchanged, on a third host (asked ``nvidia-h100-x4``; 4 x H200 came),
#: 2026-11-27 17:45-17:51 UTC, 319 s, against ``meter12c_predictions.json`` (committed and landed before it, engine at
#: cf3fffe): the calibration floor took 60.8 ms at the call's start and 85.6 ms at its end.
RUN_METER_C = "h200x4-2026-11-27-meter12c"
#: The h100mg call (session 37): the first metered 2-GPU sweep (``scripts/gpu/run_h100mg.sh``, ``train_dist.py --sweep
#: h100mg``: FSDP2, TP 2 and the 1F1B pipeline, four models, checkpointing off and on, meter12's TP 2 1B at 8 x 1024 as
#: the baseline), asked of 2 H100s (``nvidia-h100-x2``); 2 x NVIDIA H200 came, 2026-11-27 19:44-19:48 UTC, 225 s,
#: against ``h100mg_predictions.json`` (committed and landed before it, engine at 41f9763): the calibration floor took
#: 57.4 ms at the call's start and 55.4 ms at its end.
RUN_MG = "h200x2-2026-11-27-h100mg"
#: The h100mgb call: the same script and predictions again, unchanged (asked ``nvidia-h100-x2`` once more; 2 x H200
#: came, a second host), 2026-11-27 19:49-19:53 UTC, 243 s; calibration floor 52.0 ms at the start, 75.8 ms at the end.
RUN_MG_B = "h200x2-2026-11-27-h100mgb"
RUNS = (RUN, RUN_H100, RUN_4GPU, RUN_4GPU_B, RUN_METER, RUN_METER_B, RUN_METER_C, RUN_MG, RUN_MG_B)
#: Each family's target (the accuracy page's for the same model), as the predictions file states them.
FAMILIES = ("train-1gpu", "train-2gpu", "train-4gpu", "decode-generate", "serve-eager", "serve-graph", "serve-prefill")
#: Each run's predictions file (committed in scripts/gpu before its call; a copy in the run folder).
_PREDICTIONS = MappingProxyType({RUN: "blind10_predictions.json", RUN_H100: "blind10_predictions.json",
                                 RUN_4GPU: "blind11_predictions.json", RUN_4GPU_B: "blind11_predictions.json",
                                 RUN_METER: "meter12_predictions.json", RUN_METER_B: "meter12_predictions.json",
                                 RUN_METER_C: "meter12c_predictions.json", RUN_MG: "h100mg_predictions.json",
                                 RUN_MG_B: "h100mg_predictions.json"})


@dataclass(frozen=True)
class BlindCheck:
    """One blind case: the prediction committed before the call next to what the call measured."""

    family: str  # one of FAMILIES
    quantity: str  # "step", "memory" (training), "tokens/s" (generate decode), "step" (serving)
    case: str  # the case's key in the predictions file
    card: str  # the GPU that ran it
    predicted: float
    measured: float
    target: float  # the family's tolerance (fraction)
    cause: str = ""  # the stated cause where the case is outside its target ("" within it)

    @property
    def error(self) -> float:
        """predicted / measured - 1."""
        return self.predicted / self.measured - 1.0

    @property
    def within(self) -> bool:
        return abs(self.error) <= self.target


def _folder(run: str) -> Any:
    return resources.files("mlcalc.data").joinpath("measured").joinpath(_check.choice("run", run, RUNS))


def _has(run: str, name: str) -> bool:
    return bool(_folder(run).joinpath(name).is_file())


def _archs(run: str) -> list[tuple[str, Mapping[str, Any]]]:
    """(architecture, its bench_serve.py record) of every ``arch_*.json`` of the run, in name order."""
    names = sorted(f.name for f in _folder(run).iterdir() if f.name.startswith("arch_") and f.name.endswith(".json"))
    return [(a, r) for n in names for a, r in _read(run, n)["archs"].items() if "decode" in r]


@lru_cache(maxsize=None)
def _read(run: str, name: str) -> Any:
    return json.loads(_folder(run).joinpath(name).read_text())


def predictions(run: str = RUN) -> Mapping[str, Any]:
    """The predictions file as committed before the call (``blind10_predictions.json``, ``blind11_predictions.json``)."""
    return MappingProxyType(_read(run, _PREDICTIONS[_check.choice("run", run, RUNS)]))


def causes(run: str = RUN) -> Mapping[str, str]:
    """The stated causes of the blind misses (``blind_misses.json``, keys ``blind:<family>:<quantity>:<case>``)."""
    return MappingProxyType({k: v for k, v in _read(run, "blind_misses.json").items() if k.startswith("blind:")})


def card(run: str = RUN) -> str:
    """The GPU the call ran on, as torch names it."""
    name = next(n for n in ("train_hf_blind10.json", "train_dist_w4.json", "train_dist_w2.json") if _has(run, n))
    return str(_read(run, name)["environment"]["device_name"])


def _baseline_ids(run: str) -> frozenset[str]:
    """The cases of a call that re-ran shapes the record holds (the predictions file's ``baseline_cases``)."""
    return frozenset(predictions(run).get("baseline_cases", ()))


def _target(fam: str, quantity: str, run: str) -> float:
    t = predictions(run)["targets"][fam]
    return float(t[quantity] if isinstance(t, dict) else t)


def _hf_key(c: Mapping[str, Any]) -> str:
    return f"{c['model']['name']}|b{c['batch']}|s{c['seq_len']}" + ("|rc" if c["recompute"] else "")


def _measured(run: str) -> list[tuple[str, str, str, float]]:
    """(family, quantity, case key, measured value) of every case the call measured."""
    out: list[tuple[str, str, str, float]] = []
    for c in (_read(run, "train_hf_blind10.json")["cases"] if _has(run, "train_hf_blind10.json") else ()):
        if "step_s" in c:
            out += [("train-1gpu", "step", _hf_key(c), float(c["step_s"])),
                    ("train-1gpu", "memory", _hf_key(c), float(c["peak_bytes"]))]
    base = _baseline_ids(run)
    for w in (2, 4):
        for c in (_read(run, f"train_dist_w{w}.json")["cases"] if _has(run, f"train_dist_w{w}.json") else ()):
            if "step_s" in c and c["id"] not in base:
                out += [(f"train-{w}gpu", "step", c["id"], float(c["step_s"])),
                        (f"train-{w}gpu", "memory", c["id"], float(c["peak_allocated_max_bytes"]))]
    for key in ("1b", "8b"):
        for p in (_read(run, f"decode_{key}.json")["points"] if _has(run, f"decode_{key}.json") else ()):
            if "decode_tokens_per_s" in p:
                out.append(("decode-generate", "tokens/s", f"{key}|b{p['batch']}|c{p['max_cache_len']}",
                            float(p["decode_tokens_per_s"])))
    for arch, rec in _archs(run):
        for p in rec["decode"]:
            for path in ("eager", "graph"):
                if f"{path}_s" in p:
                    out.append((f"serve-{path}", "step", f"{path}|{arch}|b{p['batch']}|c{p['context']}",
                                float(p[f"{path}_s"])))
        for p in rec["prefill"]:
            if "prefill_s" in p:
                out.append(("serve-prefill", "step", f"prefill|{arch}|b{p['batch']}|p{p['prompt']}",
                            float(p["prefill_s"])))
    return out


def _predicted(run: str, fam: str, quantity: str, key: str, dev: str) -> float:
    fams = predictions(run)["families"]
    row = fams["serve" if fam.startswith("serve-") else fam][dev][key]
    if quantity == "memory":
        return float(row["peak_bytes"])
    if quantity == "tokens/s":
        return float(row["tokens_per_s"])
    return float(row["step_s"])


@lru_cache(maxsize=None)
def checks(run: str = RUN) -> tuple[BlindCheck, ...]:
    """Every measured case of the call against the prediction committed for the card that ran it."""
    dev, why = card(run), causes(run)
    out = []
    for fam, q, key, m in _measured(run):
        p = _predicted(run, fam, q, key, dev)
        t = _target(fam, q, run)
        miss = abs(p / m - 1.0) > t
        out.append(BlindCheck(fam, q, key, dev, p, m, t,
                              why.get(f"blind:{fam}:{q}:{key}", "(no cause stated)") if miss else ""))
    return tuple(out)


@dataclass(frozen=True)
class BlindSummary:
    """One family and quantity of a blind call: cases, how many within target, median and worst error."""

    family: str
    quantity: str
    n: int
    within: int
    median_abs_error: float
    worst_error: float
    target: float


def summary(run: str = RUN) -> tuple[BlindSummary, ...]:
    """Per family and quantity, in :data:`FAMILIES` order."""
    groups: dict[tuple[str, str], list[BlindCheck]] = {}
    for c in checks(run):
        groups.setdefault((c.family, c.quantity), []).append(c)
    out = []
    for fam in FAMILIES:
        for (f, q), cs in groups.items():
            if f == fam:
                errs = [c.error for c in cs]
                out.append(BlindSummary(f, q, len(cs), sum(c.within for c in cs),
                                        statistics.median(abs(e) for e in errs), max(errs, key=abs), cs[0].target))
    return tuple(out)


def _pct(x: float) -> str:
    return f"{x:+.1%}" if abs(x) < 0.1 else f"{x:+.0%}"


def markdown(run: str = RUN) -> str:
    """Every blind case as a Markdown table (the accuracy page shows it), misses with their causes."""
    rows = ["| family | case | predicted | measured | error | target |", "|---|---|---|---|---|---|"]
    for c in checks(run):
        unit = (1 / 2**30, "GiB") if c.quantity == "memory" else (1.0, "tok/s") if c.quantity == "tokens/s" \
            else (1e3, "ms")
        mark = "" if c.within else " **miss**"
        rows.append(f"| {c.family} ({c.quantity}) | {c.case.replace('|', ', ')} | {c.predicted * unit[0]:,.1f} "
                    f"{unit[1]} | {c.measured * unit[0]:,.1f} {unit[1]} | {_pct(c.error)}{mark} | "
                    f"±{c.target:.0%} |")
    return "\n".join(rows)


#: The run whose read bandwidth the committed H100 serving predictions took (scripts/gpu/predict_blind10.py: serve14's
#: probe).
PREDICTED_H100_BANDWIDTH_RUN = "h100-2026-11-27-serve14"


@contextmanager
def _serving_card(run: str, bandwidth_s: float | None = None) -> Iterator[None]:
    """servemeasured's inputs for the run's card: on an H200 as they are (the eager record's H200 run); on an H100 the
    read bandwidth of this call's own probe (or ``bandwidth_s``, bytes/s) and the matmul rate the predictions took (the
    eager record's 8192^3 rate x the H100 / H200 ratio of the bench's 8192^3 reference rates); servemeasured's
    functions swapped while pricing."""
    from mlcalc import measured
    from mlcalc import servemeasured as sm

    if "H200" in card(run):
        yield
        return
    bw = _probe_bandwidth(run) if bandwidth_s is None else bandwidth_s
    h100, h200 = (measured.matmul(k, "bf16").reference_tflops for k in ("H100-SXM", "H200-SXM"))
    if not h100 or not h200:
        raise ValueError(f"run={run!r}: the bench measured no 8192^3 reference rate for the H100 or the H200")
    ratio = h100 / h200
    rate = sm.matmul_rate(sm.RUN8) * ratio
    old = sm.read_bandwidth, sm.matmul_rate
    sm.read_bandwidth, sm.matmul_rate = (lambda r=sm.RUN: bw), (lambda r=sm.RUN: rate)  # type: ignore[assignment]
    try:
        yield
    finally:
        sm.read_bandwidth, sm.matmul_rate = old


def _probes(run: str) -> list[Mapping[str, Any]]:
    return [_read(run, n) for n in ("probe_start.json", "probe_end.json") if _has(run, n)]


def _probe_bandwidth(run: str) -> float:
    return statistics.fmean(float(p["read_bandwidth"]["bytes_per_s"]) for p in _probes(run))


def own_probe_errors(run: str = RUN) -> Mapping[str, float]:
    """The serving cases priced by the family's record rule, with what this call measured of its own host: eager
    decode and prefill (serve-eager, serve-prefill) with the tiny models' floors at the host probe timed beside the
    point (``servemeasured.predict_hf(..., host_s=)``, the eager record's rule; on an H100 with this call's read
    bandwidth); generate decode with the floor line of this call's own floor probes and their read bandwidth (the
    decode record's rule; the copy rate of ``repeat_kv`` from the last decode run on the same card, these calls ran no
    attention micro-benchmark). Case key -> error (a point's step or tokens per second, as its family counts it)."""
    from mlcalc import compute, serving
    from mlcalc import servemeasured as sm
    from mlcalc import serving_record as rec

    if "paces" in predictions(run):  # a metered training call: the metered rule committed before, at each case's pace
        return MappingProxyType({k: e for k, (_, _, e) in metered_errors(run).items()})
    if "train-4gpu" in predictions(run)["families"]:  # a training call: no serving probes, its calibration floor
        return own_pace_errors(run)
    out: dict[str, float] = {}
    with _serving_card(run):
        for arch, r in _archs(run):
            for p in r["decode"]:
                host = sm.point_host_s(p.get("eager", {}))
                if "eager_s" in p and host:
                    d = sm.predict_hf(arch, "eager", int(p["batch"]), int(p["context"]), sm.RUN8, host)
                    out[f"eager|{arch}|b{p['batch']}|c{p['context']}"] = d.step_s / float(p["eager_s"]) - 1.0
            for p in r["prefill"]:
                host = sm.point_host_s(p.get("timing", {}))
                if "prefill_s" in p and host:
                    pr = sm.predict_hf_prefill(arch, int(p["batch"]), int(p["prompt"]), sm.RUN8, host)
                    out[f"prefill|{arch}|b{p['batch']}|p{p['prompt']}"] = pr.total_s / float(p["prefill_s"]) - 1.0
    pts = [(float(o["n_layers"]), float(o["decode_step_s"])) for pr in _probes(run) for o in pr["overhead"]]
    mx, my = statistics.fmean(x for x, _ in pts), statistics.fmean(y for _, y in pts)
    slope = sum((x - mx) * (y - my) for x, y in pts) / sum((x - mx) ** 2 for x, _ in pts)
    floor = serving.Floor(max(0.0, my - slope * mx), max(0.0, slope), f"floor probes of {run}")
    h200 = "H200" in card(run)
    src_run = "h200x4-2026-11-26-decode" if h200 else "h100-2026-11-27-serve14"
    copy = serving.measured_copy_bandwidth(src_run)
    rate = compute.achievable_flops("H200-SXM" if h200 else "H100-SXM", "bf16", "achievable")
    src = predictions(run)["families"]["decode-generate"][card(run)]
    for key in ("1b", "8b"):
        model = rec.llama_shape(key, src_run)
        for p in _read(run, f"decode_{key}.json")["points"]:
            k = f"{key}|b{p['batch']}|c{p['max_cache_len']}"
            if "decode_tokens_per_s" in p and k in src:
                d = serving.decode_step(model, int(p["batch"]), int(p["max_cache_len"]), _probe_bandwidth(run), rate, 1,
                                        floor, copy, small_kernels_s=serving.hf_small_kernels_s())
                out[k] = d.tokens_per_s / float(p["decode_tokens_per_s"]) - 1.0
    return MappingProxyType(out)


def own_pace(run: str = RUN_4GPU) -> tuple[float, float]:
    """This call's host against the engine's calibration host: the call's own calibration floor (``train_hf.py
    --floor``, Llama-3.2 1B at 1 x 64 tokens without checkpointing, ``train_hf_floor.json``) over the same model's floor
    in the card's calibration run (:data:`mlcalc.distruns.MACHINE_RUN`), forward and backward host time."""
    from mlcalc import distruns, hfruns

    dev = card(run)
    cal = [c for c in hfruns.cases(distruns.MACHINE_RUN[dev], "floor") if not c.recompute]
    own = [c for c in _read(run, "train_hf_floor.json")["cases"] if "phases" in c and not c["recompute"]]
    for c in own:
        ref = [r for r in cal if r.model.name == c["model"]["name"]]
        if ref:
            return (float(c["phases"]["forward_s"]) / ref[0].phases["forward_s"],
                    float(c["phases"]["backward_s"]) / ref[0].phases["backward_s"])
    raise ValueError(f"run={run!r} is not allowed: its calibration floor has no model the calibration run timed")


def own_pace_errors(run: str = RUN_4GPU) -> Mapping[str, float]:
    """The 4-GPU training cases priced by the same engine at this call's own host pace (:func:`own_pace`): the card's
    machine (:func:`mlcalc.distruns.machine`) with every host constant priced in plain forward ops scaled by the
    forward ratio and those in backward ops by the backward ratio (the DTensor and FSDP2 ratios of its calibration
    floors kept), the engine as it is now. One pace for the whole call, measured once at its start. Case id -> step
    error."""
    from mlcalc import distruns, steptime

    kf, kb = own_pace(run)
    m = distruns._machine(card(run))
    m = m._replace(host_s_per_op=m.host_s_per_op * kf, host_s_per_backward_op=m.host_s_per_backward_op * kb,
                   host_s_per_checkpoint=m.host_s_per_checkpoint * kf,
                   host_s_per_dtensor_op=m.host_s_per_dtensor_op * kf,
                   host_s_per_dtensor_backward_op=m.host_s_per_dtensor_backward_op * kb,
                   host_s_per_fsdp_layer=m.host_s_per_fsdp_layer * kf,
                   host_s_per_fsdp_backward_layer=m.host_s_per_fsdp_backward_layer * kb,
                   host_s_per_fsdp_dtensor_layer=m.host_s_per_fsdp_dtensor_layer * kf,
                   host_s_per_fsdp_dtensor_backward_layer=m.host_s_per_fsdp_dtensor_backward_layer * kb)
    base = _baseline_ids(run)
    out: dict[str, float] = {}
    for c in distruns.cases(run):
        if c.id not in base:
            p = steptime.predict_step(c.model, distruns.layout(c), seq_len=c.seq_len, machine=m, gpus_per_node=8,
                                      engine="eager")
            out[c.id] = p.step_s / c.step_s - 1.0
    return MappingProxyType(out)


@dataclass(frozen=True)
class HostBaseline:
    """A case of a blind call that re-ran a shape the record holds: its step now and on the record's earlier runs."""

    case: str
    step_s: float
    earlier: tuple[tuple[str, str, float], ...]  # (run, case id, step) of the same configuration on the same card


def host_baseline(run: str = RUN_4GPU) -> tuple[HostBaseline, ...]:
    """The call's ``-base`` cases (:func:`predictions`' ``baseline_cases``) next to every earlier measurement of the
    same configuration (:func:`mlcalc.distruns.config`) on the same kind of card: how this host compares."""
    from mlcalc import distruns

    base = _baseline_ids(run)
    mine = [c for c in distruns.cases(run) if c.id in base]
    out = []
    for b in mine:
        same = tuple((r, c.id, c.step_s) for r in distruns.runs() if r != run for c in distruns.cases(r)
                     if distruns.config(c) == distruns.config(b))
        out.append(HostBaseline(b.id, b.step_s, same))
    return tuple(out)


@lru_cache(maxsize=None)
def current_engine_errors(run: str = RUN) -> Mapping[str, float]:
    """The transformers serving cases (serve-eager, serve-graph, serve-prefill) priced again by the engine as it is
    now with the inputs the committed predictions took (scripts/gpu/predict_blind10.py: the eager record's run, no
    host probe of this call; on an H100 serve14's read bandwidth): what a change of the engine since the predictions
    moves. The blind checks themselves (:func:`checks`) stay the committed predictions. Case key -> error."""
    from mlcalc import serving
    from mlcalc import servemeasured as sm

    out: dict[str, float] = {}
    with _serving_card(run, serving.measured_read_bandwidth(PREDICTED_H100_BANDWIDTH_RUN)):
        for c in checks(run):
            if not c.family.startswith("serve-"):
                continue
            path, arch, b, n = c.case.split("|")
            if path == "prefill":
                got = sm.predict_hf_prefill(arch, int(b[1:]), int(n[1:]), sm.RUN8, None).total_s
            else:
                got = sm.predict_hf(arch, path, int(b[1:]), int(n[1:]), sm.RUN8, None).step_s
            out[c.case] = got / c.measured - 1.0
    return MappingProxyType(out)


def metered_errors(run: str = RUN_METER, column: str = "paced_step_s") -> Mapping[str, tuple[float, float, float]]:
    """The metered rule committed before a metered call (``predictions.json``'s ``paced_step_s``: the engine's step at
    every vCPU pace, ``mlcalc.distruns.paced_machine``), read at each case's own pace (the median over its timed steps
    of the slowest rank's busy-vCPU pace, :func:`mlcalc.distruns.case_pace`, rounded to 1,000 runs a second): case id
    -> (pace, predicted step, error). Blind too: the predictions held every pace; the call measured which one ran.
    ``column`` ``"paced_step_s_scaled"`` reads host7c's rule where the file holds it (meter12c's)."""
    from mlcalc import distruns

    pred = predictions(run)
    _check.choice("column", column, ("paced_step_s", "paced_step_s_scaled"))
    if "paces" not in pred:
        raise ValueError(f"run={run!r} is not allowed: its predictions hold no metered rule (no 'paces')")
    paces = [int(p) for p in pred["paces"]]
    dev = card(run)
    out: dict[str, tuple[float, float, float]] = {}
    for c in distruns.cases(run):
        p = distruns.case_pace(c)
        row = pred["families"][f"train-{c.world}gpu"][dev].get(c.id)
        if p <= 0 or row is None:
            continue
        at = int(round(p, -3))
        if at not in paces:
            raise ValueError(f"run={run!r}: case {c.id!r} ran at {at} runs/s, outside the committed paces")
        if column not in row:
            raise ValueError(f"column={column!r} is not allowed for run={run!r}: its predictions hold no such rows")
        step = float(row[column][paces.index(at)])
        out[c.id] = (p, step, step / c.step_s - 1.0)
    return MappingProxyType(out)


def repeat_cases(run: str = RUN_METER) -> tuple[str, ...]:
    """The cases of a call that ran again the configurations of earlier blind misses (``repeat_cases``), or ()."""
    return tuple(predictions(run).get("repeat_cases", ()))
