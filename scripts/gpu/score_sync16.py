"""Score the sync16 call (mlcalc/data/measured/h200x4-2026-11-28-sync16) against the predictions landed before it.

The rule is the one ``scripts/gpu/predict_sync16.py`` states (its docstring) and ``scripts/gpu/sync16_predictions.json``
carries: the host factor k of the call (its calibration floor over the card's calibration run's), the queue rule's step
S(k), host total H(k) and device total D at k, gap = step - S(k), and on configurations with a positive gap the three
candidates: (a) the slowest-issuing rank blocked in CUDA calls that wait for the device for gap / 2 or more; (b) every
rank's NCCL kernels busy beyond the engine's collective time by 34 % of it plus gap / 2; (h) the slowest-issuing
rank's issue time less its blocked time above H(k) by gap / 2 or more. Beside the score (labelled, chosen after
the call, not used to decide): the same at k = 1; the blocked time up to the step's Python returning (its
annotation's end: the committed window, its annotation's start plus the issue time, reaches past it into the
synchronize train_dist.py calls after the step, and so did the probes' ``host_blocked_s`` from dist4 to queue15); the host's time in launch calls longer than 100 us (a full launch queue); each rank's compute and
NCCL busy time; and each kernel's time beside an NCCL kernel against the same kernel's time alone in the same step
(:func:`beside_slowdown`). Writes ``scored.json`` in the run folder.

    .venv/bin/python scripts/gpu/score_sync16.py
"""

from __future__ import annotations

import bisect
import gzip
import json
import os
import statistics
import sys
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)

from mlcalc import distruns, hfruns  # noqa: E402

RUN = os.path.join(ROOT, "mlcalc", "data", "measured", "h200x4-2026-11-28-sync16")
PRED = os.path.join(ROOT, "scripts", "gpu", "sync16_predictions.json")


def _load(path: str) -> Any:
    with open(path) as f:
        return json.load(f)


def host_factor(card: str, floor: dict[str, Any], model: str = "Llama-3.2 1B") -> float:
    """The call's calibration floor (the model without checkpointing, 1 x 64 tokens) over the card's calibration run's."""
    mine = next(c["step_s"] for c in floor["cases"] if c["model"]["name"] == model and not c["recompute"])
    ref = next(c.step_s for c in hfruns.cases(distruns.MACHINE_RUN[card], "floor")
               if c.model.name == model and not c.recompute)
    return float(mine) / ref


def interp(ks: list[float], ys: list[float], k: float) -> float:
    """ys at k, linear between the grid's points (held at its edges)."""
    k = min(max(k, ks[0]), ks[-1])
    i = min(max(bisect.bisect_right(ks, k) - 1, 0), len(ks) - 2)
    f = (k - ks[i]) / (ks[i + 1] - ks[i])
    return ys[i] * (1 - f) + ys[i + 1] * f


def blocked_s(trace: dict[str, Any], rule: dict[str, Any]) -> list[float]:
    """Per profiled step but the first: seconds of CUDA runtime calls that wait for the device (the rule's names, and
    the named calls longer than their bound) that start while the host issues the step."""
    ev = trace["events"]
    ann = {e[1]: float(e[2]) for e in ev if e[0] == "user_annotation" and str(e[1]).startswith("probe_step_")}
    out = []
    for st in trace["steps"][1:]:
        lo = ann[st["name"]]
        hi = lo + st["issue_s"] * 1e6
        tot = 0.0
        for cat, name, ts, dur, *_ in ev:
            if cat not in ("cuda_runtime", "cuda_driver") or dur is None or not lo <= float(ts) < hi:
                continue
            long_ = rule["blocked_if_longer_than_s"].get(name)
            if name in rule["blocked_calls"] or (long_ is not None and float(dur) * 1e-6 > long_):
                tot += float(dur) * 1e-6
        out.append(tot)
    return out


def _window(trace: dict[str, Any], st: dict[str, Any], issue: bool) -> tuple[list[Any], float, float]:
    """The step's events, its annotation's start and the end of its issue (the annotation's end: the step's Python
    returning) or of the step."""
    ev = trace["events"]
    lo, dur = next((float(e[2]), float(e[3])) for e in ev if e[0] == "user_annotation" and e[1] == st["name"])
    return ev, lo, (min(lo + st["issue_s"] * 1e6, lo + dur) if issue else lo + st["wall_s"] * 1e6)


def in_step_waits(trace: dict[str, Any]) -> dict[str, float]:
    """Per profiled step but the first, medians: seconds in synchronising CUDA calls (the committed rule's) that start
    before the step's Python returns (its annotation's end: the harness's synchronize after it left out), and seconds
    in launch calls longer than 100 us."""
    sync, launch = [], []
    for st in trace["steps"][1:]:
        ev, lo, hi = _window(trace, st, True)
        a = b = 0.0
        for cat, name, ts, dur, *_ in ev:
            if cat not in ("cuda_runtime", "cuda_driver") or dur is None or not lo <= float(ts) < hi:
                continue
            if name in ("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize", "cudaMemcpy") or (
                    name in ("cudaMemcpyAsync", "cudaMalloc", "cudaFree") and float(dur) > 100):
                a += float(dur) * 1e-6
            elif "Launch" in name and float(dur) > 100:
                b += float(dur) * 1e-6
        sync.append(a)
        launch.append(b)
    return {"sync_s": statistics.median(sync), "launch_wait_s": statistics.median(launch)}


def beside_slowdown(trace: dict[str, Any]) -> dict[str, float]:
    """In the first kept profiled step: each compute kernel (by name) more than 90 % inside an NCCL kernel's span
    ("beside") or less than 10 % ("alone"); over the names with at least 3 of each, the beside kernels' seconds and
    what the same kernels take at their mean alone time, and the compute kernels' seconds by class."""
    st = trace["steps"][1]
    ev, lo, hi = _window(trace, st, False)
    ks = [(float(e[2]), float(e[2]) + float(e[3]), str(e[1])) for e in ev if e[0] == "kernel" and lo <= float(e[2]) < hi]
    nccl = sorted((a, b) for a, b, n in ks if "nccl" in n.lower())
    starts = [a for a, _ in nccl]

    def share(a: float, b: float) -> float:
        o, i = 0.0, max(0, bisect.bisect_left(starts, a) - 1)
        while i < len(nccl) and nccl[i][0] < b:
            o += max(0.0, min(b, nccl[i][1]) - max(a, nccl[i][0]))
            i += 1
        return o / (b - a) if b > a else 0.0

    per: dict[str, list[float]] = {}
    classes = {"gemm": 0.0, "attention": 0.0, "other": 0.0}
    for a, b, n in ks:
        if "nccl" in n.lower():
            continue
        kind = ("gemm" if ("nvjet" in n or "gemm" in n.lower() or "cutlass" in n.lower()) else
                "attention" if ("sdpa" in n or "flash" in n.lower() or "cudnn" in n) else "other")
        classes[kind] += (b - a) * 1e-6
        f = share(a, b)
        x = per.setdefault(n, [0.0, 0, 0.0, 0])
        if f > 0.9:
            x[2] += b - a
            x[3] += 1
        elif f < 0.1:
            x[0] += b - a
            x[1] += 1
    beside = at_alone = 0.0
    for sa, na, sb, nb in per.values():
        if na >= 3 and nb >= 3:
            beside += sb * 1e-6
            at_alone += nb * sa / na * 1e-6
    return {"beside_s": beside, "beside_at_alone_s": at_alone,
            "slowdown": beside / at_alone - 1 if at_alone > 0 else 0.0, **{f"{k}_s": v for k, v in classes.items()}}


def score() -> dict[str, Any]:
    preds = _load(PRED)
    rule = preds["scoring"]
    floor = _load(os.path.join(RUN, "floor.json"))
    rows = []
    for w in (4, 2, 1):
        data = _load(os.path.join(RUN, f"sync16_w{w}.json"))
        card = data["environment"]["device_name"]
        k = host_factor(card, floor)
        ks = preds["host_factors"]
        for c in data["cases"]:
            cid = c["id"]
            step = float(c["step_s"])
            issue = [statistics.median(r["issue_s_rank"]) for r in c["ranks"]]
            star = max(range(len(issue)), key=lambda i: issue[i])
            q = preds["grid"][f"{cid}|{card}|queue"]
            o = preds["grid"][f"{cid}|{card}|op-by-op"]
            comm = preds["comm_total_s"][f"{cid}|{card}"]
            traces = [_load_gz(os.path.join(RUN, "traces", f"probe-{cid}-r{i}.json.gz")) for i in range(len(issue))]
            blocked = [statistics.median(blocked_s(t, rule)) for t in traces]
            summ = [r["probe"]["summary"] for r in c["ranks"]]
            nccl = [statistics.median(s["nccl_busy_s"] for s in ss) for ss in summ]
            compute = [statistics.median(s["compute_busy_s"] for s in ss) for ss in summ]
            busy = [statistics.median(s["all_busy_s"] for s in ss) for ss in summ]
            walls = [statistics.median(s["wall_s"] for s in ss) for ss in summ]
            row: dict[str, Any] = {"config": cid, "card": card, "k": k, "step_s": step, "issue_s_per_rank": issue,
                                   "slowest_issue_rank": star, "comm_total_s": comm}
            for tag, kk in (("at_k", k), ("at_k1", 1.0)):
                s_q, h_q = interp(ks, q["step_s"], kk), interp(ks, q["host_s"], kk)
                d_q, s_o = interp(ks, q["device_s"], kk), interp(ks, o["step_s"], kk)
                gap = step - s_q
                held: dict[str, Any] = {}
                if gap > 0:
                    held["a"] = blocked[star] >= rule["a_blocked_over_gap"] * gap
                    held["h"] = (issue[star] - blocked[star]) - h_q >= rule["h_over_gap"] * gap
                    if len(issue) > 1:
                        held["b"] = all(n - comm >= rule["b_collective_slowdown"] * comm + rule["b_over_gap"] * gap
                                        for n in nccl)
                row[tag] = {"queue_step_s": s_q, "op_by_op_step_s": s_o, "queue_error": s_q / step - 1,
                            "op_by_op_error": s_o / step - 1, "host_total_s": h_q, "device_total_s": d_q,
                            "gap_s": gap, "held": held}
            waits = [in_step_waits(t) for t in traces]
            row.update({"in_step_sync_s_per_rank": [x["sync_s"] for x in waits],
                        "launch_wait_s_per_rank": [x["launch_wait_s"] for x in waits],
                        "beside_nccl_per_rank": [beside_slowdown(t) for t in traces] if len(traces) > 1 else []})
            row.update({"blocked_s_per_rank": blocked, "nccl_busy_s_per_rank": nccl,
                        "compute_busy_s_per_rank": compute, "device_busy_s_per_rank": busy,
                        "profiled_wall_s_per_rank": walls})
            rows.append(row)
    out: dict[str, Any] = {"rows": rows}
    for tag in ("at_k", "at_k1"):
        n = {x: sum(1 for r in rows if r[tag]["held"].get(x)) for x in ("a", "b", "h")}
        out[f"verdict_{tag}"] = {"held_on": n, "configs_with_positive_gap": sum(1 for r in rows if r[tag]["gap_s"] > 0),
                                 "mechanism": [x for x in ("a", "h") if n[x] >= rule["holds_on"]]
                                 + (["b"] if n["b"] >= rule["b_holds_on"] else [])}
    return out


def _load_gz(path: str) -> Any:
    with gzip.open(path, "rt") as f:
        return json.load(f)


def main() -> int:
    out = score()
    with open(os.path.join(RUN, "scored.json"), "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    for r in out["rows"]:
        a, b = r["at_k"], r["at_k1"]
        print(f"{r['config']:38s} k={r['k']:.3f} step {r['step_s'] * 1e3:6.1f} | at k: queue {a['queue_error']:+.3f} "
              f"op {a['op_by_op_error']:+.3f} gap {a['gap_s'] * 1e3:+7.1f} held {a['held']} | at k=1: queue "
              f"{b['queue_error']:+.3f} op {b['op_by_op_error']:+.3f} gap {b['gap_s'] * 1e3:+7.1f} held {b['held']}")
        print(f"    issue {[round(x * 1e3, 1) for x in r['issue_s_per_rank']]} blocked "
              f"{[round(x * 1e3, 1) for x in r['blocked_s_per_rank']]} nccl {[round(x * 1e3, 1) for x in r['nccl_busy_s_per_rank']]}"
              f" compute {[round(x * 1e3, 1) for x in r['compute_busy_s_per_rank']]} comm {r['comm_total_s'] * 1e3:.1f}"
              f" host(k) {a['host_total_s'] * 1e3:.1f} host(1) {b['host_total_s'] * 1e3:.1f} device {a['device_total_s'] * 1e3:.1f}")
    for r in out["rows"]:
        print(f"  {r['config']:36s} in-step sync {[round(x * 1e3, 2) for x in r['in_step_sync_s_per_rank']]} ms, "
              f"launch waits {[round(x * 1e3, 1) for x in r['launch_wait_s_per_rank']]} ms, beside NCCL "
              f"{[round(x['slowdown'], 3) for x in r['beside_nccl_per_rank']]}")
    print("verdict at k:", out["verdict_at_k"], " at k=1 (not the rule):", out["verdict_at_k1"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
