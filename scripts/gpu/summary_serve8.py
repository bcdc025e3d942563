"""The serve8 call's host evidence in one small file (mlcalc/data/measured/h200-2026-11-27-serve8/pace_summary.json),
from its raw pace-meter lines and vCPU scans (logs/): for each pinned process (five architectures, three floor probes)
the vCPU it ran on, what the scan found just before (that vCPU's pace and the slowest vCPU's), the meter's pace over
the process (5th, 50th and 95th percentile), and for the architecture processes how the host probe timed next to every
timing group follows the meter: the correlation and slope of log(probe time) on log(pace) over the probe's samples (each
probe sample against the meter's mean over the same seconds).   Usage: python scripts/gpu/summary_serve8.py
"""

from __future__ import annotations

import glob
import json
import math
import os
import re
import statistics

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
D = os.path.join(ROOT, "mlcalc", "data", "measured", "h200-2026-11-27-serve8")


def pace_lines(path: str) -> list[tuple[float, float]]:
    out = []
    for line in open(path):
        f = line.split()
        if not line.startswith("#") and len(f) == 3 and float(f[2]) > 0:
            out.append((float(f[0]), int(f[1]) / float(f[2])))
    return out


def q(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * len(xs)))]


def main() -> None:
    out: dict = {"about": __doc__.strip().splitlines()[0], "unit": "runs per CPU second of pacemeter.work", "processes": {}}
    for path in sorted(glob.glob(os.path.join(D, "logs", "pace_*_c*.txt"))):
        name, cpu = re.match(r"pace_(.+)_c(\d+)\.txt", os.path.basename(path)).groups()
        pace = pace_lines(path)
        scan = json.load(open(os.path.join(D, "logs", f"scan_{name}.json")))
        rec = {"vcpu": int(cpu), "scan_chosen_runs_per_s": scan["median_runs_per_s"][cpu],
               "scan_slowest_runs_per_s": min(scan["median_runs_per_s"].values()),
               "meter_samples": len(pace), "meter_p05": q([p for _, p in pace], 0.05),
               "meter_p50": q([p for _, p in pace], 0.50), "meter_p95": q([p for _, p in pace], 0.95)}
        arch_file = os.path.join(D, f"arch_{name}_gpu0.json")
        if os.path.exists(arch_file):
            d = json.load(open(arch_file))
            t0 = d["host_end"]["t"] - d["wall_s"]  # the process's clock origin in epoch seconds
            xs, ys = [], []
            for s in d["host_probe"]["samples"]:
                end = t0 + s["t_process_s"]
                w = [p for t, p in pace if end - 5 * s["s"] - 0.01 <= t <= end + 0.02]
                if w:
                    xs.append(math.log(s["s"]))
                    ys.append(math.log(statistics.fmean(w)))
            mx, my = statistics.fmean(xs), statistics.fmean(ys)
            sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
            sxx, syy = sum((x - mx) ** 2 for x in xs), sum((y - my) ** 2 for y in ys)
            rec.update({"probe_samples": len(xs), "probe_min_s": min(s["s"] for s in d["host_probe"]["samples"]),
                        "probe_max_s": max(s["s"] for s in d["host_probe"]["samples"]),
                        "corr_log_probe_log_pace": sxy / math.sqrt(sxx * syy), "slope_log_probe_on_log_pace": sxy / syy})
        out["processes"][name] = rec
    with open(os.path.join(D, "pace_summary.json"), "w") as fh:
        json.dump(out, fh, indent=1)
    for k, v in out["processes"].items():
        print(k, {a: (round(b, 3) if isinstance(b, float) else b) for a, b in v.items()})


if __name__ == "__main__":
    main()
