"""Score the queue15 call (mlcalc/data/measured/h100-2026-11-27-queue15) against the predictions written before it
(scripts/gpu/queue15_predictions.json), by the rule predict_queue15.py states.

Per configuration and point (spin N, both visits pooled): the median measured step and host issue time, the added host
microseconds per op (N plus the mode's own cost, measured per visit), the median pace over the point's timed steps,
and both rules' predictions with their errors. Also the device's side from the profiled plain steps: busy time,
kernels, the idle time per kernel and the host's time blocked in CUDA calls.

    .venv/bin/python scripts/gpu/score_queue15.py [--json OUT]
"""

from __future__ import annotations

import json
import os
import statistics
import sys
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, ROOT)
sys.path.insert(0, HERE)

import predict_queue15 as pq  # noqa: E402

from mlcalc import distruns  # noqa: E402

RUN = os.path.join(ROOT, "mlcalc", "data", "measured", "h100-2026-11-27-queue15")
CARD = "NVIDIA H100 80GB HBM3"  # the card that came (machine.txt)


def _pace_samples() -> tuple[tuple[float, int, float], ...]:
    rows = []
    with open(os.path.join(RUN, "pace_c3.txt")) as f:
        for line in f:
            if line.strip() and not line.startswith("#"):
                e, r, c = line.split()[:3]
                rows.append((float(e), int(r), float(c)))
    return tuple(rows)


def score() -> list[dict[str, Any]]:
    with open(os.path.join(RUN, "queue15_curve.json")) as f:
        data = json.load(f)
    with open(pq.PATH) as f:
        pred = json.load(f)
    samples = _pace_samples()
    out = []
    for c in data["configs"]:
        visits = c["visits"]
        over: dict[int, float] = {}  # the mode's own host seconds per op, per visit
        for k in (0, 1):
            plain = [s["issue_s"] for v in visits if v["visit"] == k and v["spin_us"] == "plain" for s in v["steps"]]
            zero = [s for v in visits if v["visit"] == k and v["spin_us"] == 0 for s in v["steps"]]
            over[k] = max(0.0, (statistics.median(s["issue_s"] for s in zero) - statistics.median(plain))
                          / statistics.median(s["ops"] for s in zero))
        for spin in data["spins_us"]:
            steps = [(v["visit"], s) for v in visits if v["spin_us"] == spin for s in v["steps"]]
            added = 0.0 if spin == "plain" else statistics.median(spin * 1e-6 + over[k] for k, _ in steps)
            paces = [distruns.pace_over(samples, s["epoch_s"], s["epoch_s"] + s["step_s"]) for _, s in steps]
            pace = statistics.median(p for p in paces if p > 0)
            meas = statistics.median(s["step_s"] for _, s in steps)
            row = {"config": c["id"], "spin_us": spin, "added_us": added * 1e6, "pace": pace, "step_s": meas,
                   "issue_s": statistics.median(s["issue_s"] for _, s in steps),
                   "ops": statistics.median(s["ops"] for _, s in steps) if spin != "plain" else None}
            for rule in pq.RULES:
                p = pq.interpolate(pred["steps_s"][f"{c['id']}|{CARD}|{rule}"], pace, added * 1e6)
                row[rule] = p
                row[f"{rule} error"] = p / meas - 1
            out.append(row)
    return out


def device_side() -> list[dict[str, Any]]:
    with open(os.path.join(RUN, "queue15_curve.json")) as f:
        data = json.load(f)
    rows = []
    for c in data["configs"]:
        for s in c["probe"]["summary"]:
            rows.append({"config": c["id"], "wall_s": s["wall_s"], "busy_s": s["compute_busy_s"],
                         "kernels": s["n_compute_kernels"],
                         "idle_per_kernel_s": (s["wall_s"] - s["compute_busy_s"]) / s["n_compute_kernels"],
                         "issue_s": s["issue_s"], "host_blocked_s": s["host_blocked_s"],
                         "lag_max_s": s["lag_max_s"]})
    return rows


def mode_cost_host_bound(rows: list[dict[str, Any]]) -> float:
    """Post hoc (not the committed rule): the mode's own host seconds per op, from the points where the host sets
    the step (N >= 40 us: the issue time within 15 ms of the step): issue / ops - N - the plain program's host seconds
    per op (the profiled plain steps' issue time less their time blocked in CUDA calls, over the ops, median)."""
    plain = statistics.median((d["issue_s"] - d["host_blocked_s"]) / _ops(d["config"]) for d in device_side())
    return statistics.median(r["issue_s"] / r["ops"] - r["spin_us"] * 1e-6 - plain for r in rows
                             if r["spin_us"] != "plain" and r["spin_us"] >= 40)


def _ops(config: str) -> float:
    with open(os.path.join(RUN, "queue15_curve.json")) as f:
        data = json.load(f)
    c = next(c for c in data["configs"] if c["id"] == config)
    return statistics.median(s["ops"] for v in c["visits"] if v["spin_us"] != "plain" for s in v["steps"])


def rescore(rows: list[dict[str, Any]], cost_s: float) -> list[dict[str, Any]]:
    """The points again with the added seconds per op = N + ``cost_s`` (post hoc), from the same committed grids."""
    with open(pq.PATH) as f:
        pred = json.load(f)
    out = []
    for r in rows:
        x = 0.0 if r["spin_us"] == "plain" else r["spin_us"] + cost_s * 1e6
        q = {**r, "added_us": x}
        for rule in pq.RULES:
            p = pq.interpolate(pred["steps_s"][f"{r['config']}|{CARD}|{rule}"], r["pace"], x)
            q[rule], q[f"{rule} error"] = p, p / r["step_s"] - 1
        out.append(q)
    return out


def _summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    out = {}
    for rule in pq.RULES:
        errs = [r[f"{rule} error"] for r in rows]
        out[rule] = {"within_15": sum(abs(e) <= 0.15 for e in errs), "n": len(errs),
                     "median_abs": statistics.median(abs(e) for e in errs), "worst": max(errs, key=abs)}
    return out


def main(argv: list[str]) -> int:
    rows = score()
    cost = mode_cost_host_bound(rows)
    post = rescore(rows, cost)
    for r in rows:
        print(f"{r['config']:24s} N={str(r['spin_us']):>5s} added {r['added_us']:6.1f} us  pace {r['pace'] / 1e3:5.1f}k  "
              f"step {r['step_s'] * 1e3:6.1f} issue {r['issue_s'] * 1e3:6.1f} ms | op-by-op {r['op-by-op'] * 1e3:6.1f} "
              f"({r['op-by-op error'] * 100:+5.1f} %)  queue {r['queue'] * 1e3:6.1f} ({r['queue error'] * 100:+5.1f} %)")
    for name, rs in (("committed rule", rows), (f"post hoc, mode cost {cost * 1e6:.1f} us an op", post)):
        for rule, v in _summary(rs).items():
            print(f"{name}: {rule}: {v['within_15']} of {v['n']} within 15 %, median |error| "
                  f"{v['median_abs'] * 100:.1f} %, worst {v['worst'] * 100:+.1f} %")
    for r in post:
        print(f"post hoc {r['config']:24s} N={str(r['spin_us']):>5s} added {r['added_us']:6.1f} us  step "
              f"{r['step_s'] * 1e3:6.1f} | op-by-op {r['op-by-op error'] * 100:+5.1f} %  queue {r['queue error'] * 100:+5.1f} %")
    for d in device_side():
        print(f"{d['config']:24s} profiled plain step {d['wall_s'] * 1e3:.1f} ms: device busy {d['busy_s'] * 1e3:.1f} ms "
              f"in {d['kernels']} kernels (idle {d['idle_per_kernel_s'] * 1e6:.2f} us a kernel), host issue "
              f"{d['issue_s'] * 1e3:.1f} ms of which {d['host_blocked_s'] * 1e3:.1f} blocked in CUDA calls, "
              f"device up to {d['lag_max_s'] * 1e3:.1f} ms behind")
    if "--json" in argv:
        with open(argv[argv.index("--json") + 1], "w") as f:
            json.dump({"card": CARD, "points": rows, "summary": _summary(rows), "post_hoc_mode_cost_s": cost,
                       "post_hoc_points": post, "post_hoc_summary": _summary(post), "device": device_side()}, f,
                      indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
