"""Short table of a dist5 call (``run_train_dist5.sh``): per case and launch condition the step (slowest rank,
median), and per rank the median issue time, main and autograd threads' CPU time, run-queue delay, the VM's steal,
garbage collection per step and the speedometer's pace during the steps (runs per 10 ms window over the call's
median).

    python scripts/gpu/summary_dist5.py OUT_DIR
"""

from __future__ import annotations

import bisect
import glob
import json
import os
import statistics
import sys
from typing import Any


def speed(folder: str) -> tuple[list[float], list[float], float]:
    t, n = [], []
    path = os.path.join(folder, "speed.txt")
    if os.path.exists(path):
        for line in open(path):
            if line.startswith("#"):
                continue
            p = line.split()
            if len(p) >= 2:
                t.append(float(p[0]))
                n.append(float(p[1]))
    return t, n, statistics.median(n) if n else float("nan")


def pace(sp: tuple[list[float], list[float], float], a: float, b: float) -> float:
    t, n, med = sp
    i, j = bisect.bisect_left(t, a), bisect.bisect_right(t, b)
    return statistics.median(n[i:j]) / med if j > i else float("nan")


def med(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def main(folder: str) -> None:
    sp = speed(folder)
    print(f"speedometer: {len(sp[0])} windows, median {sp[2]:.0f} runs per window")
    for f in sorted(glob.glob(os.path.join(folder, "train_dist_w*.json"))):
        d = json.load(open(f))
        e = d["environment"]
        print(os.path.basename(f), e.get("device_name"), e.get("torch"))
        fl = d.get("host_floors", {})
        if "error" in fl:
            print("  floors ERROR", fl["error"][:300])
        for rank, rows in enumerate(fl.get("per_rank") or []):
            by: dict[str, dict[int, Any]] = {}
            for r in rows:
                by.setdefault(r["program"], {})[r["n_layers"]] = r
            print(f"  floors r{rank} ms/layer " + " ".join(
                f"{p}: {(v[6]['fwd_s'] - v[2]['fwd_s']) / 4e-3:.2f}+{(v[6]['bwd_s'] - v[2]['bwd_s']) / 4e-3:.2f}"
                for p, v in by.items() if 2 in v and 6 in v))
        for c in d["cases"]:
            if "error" in c:
                print(f"  {c['id']:44s} ERROR {c['error'][:200]}")
                continue
            print(f"  {c['id']:48s} {c['step_s'] * 1e3:7.1f} ms  steps {[round(x * 1e3) for x in c['step_s_all']]}")
            for i, r in enumerate(c["ranks"]):
                m = r.get("meter") or []
                if not m:
                    continue
                g = lambda k: med([x.get(k, 0.0) for x in m]) * 1e3  # noqa: E731
                gc_ms = med([sum(x["gc_s"]) for x in m]) * 1e3
                gc2 = sum(x["gc_n"][2] for x in m)
                pc = med([pace(sp, x["epoch_s"], x["epoch_s"] + x["wall_s"]) for x in m])
                print(f"     r{i} issue {g('issue_s'):6.1f} cpu main {g('cpu_main_s'):6.1f} autograd "
                      f"{g('cpu_autograd_s'):6.1f} nccl {g('cpu_nccl_s'):5.1f} other {g('cpu_other_s'):5.1f} runq "
                      f"{g('runq_main_s') + g('runq_autograd_s'):5.2f} steal {g('vm_steal_s'):5.1f} gc {gc_ms:5.2f} "
                      f"(gen2 {gc2}) pace {pc:.3f}")


if __name__ == "__main__":
    main(sys.argv[1])
