"""Print the dist6 call's steps against their vCPUs' pace (``run_train_dist6.sh``'s folder): per case and block, the
median step (each step the slowest rank's) and each rank's pace over its steps (``pacemeter.py``'s samples inside
each step's window), and the calibration floors' pace.

    python scripts/gpu/summary_dist6.py OUT_DIR
"""

from __future__ import annotations

import glob
import json
import os
import statistics
import sys


def read_pace(path: str) -> list[tuple[float, int, float]]:
    out = []
    with open(path) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            e, r, c = line.split()[:3]
            out.append((float(e), int(r), float(c)))
    return out


def pace_between(samples: list[tuple[float, int, float]], a: float, b: float) -> tuple[float, int]:
    """Runs per CPU second of the samples that ended in (a, b], and how many there were."""
    got = [(r, c) for e, r, c in samples if a < e <= b]
    cpu = sum(c for _, c in got)
    return (sum(r for r, _ in got) / cpu if cpu > 0 else 0.0), len(got)


def main(argv: list[str]) -> int:
    d = argv[0]
    paces = {int(os.path.basename(p)[6:-4]): read_pace(p) for p in glob.glob(os.path.join(d, "pace_c*.txt"))}
    for cpu, s in sorted(paces.items()):
        if s:
            v = sorted(r / c for _, r, c in s if c > 0)
            print(f"vCPU {cpu}: {len(s)} samples, pace median {v[len(v) // 2]:.0f}, q10 {v[len(v) // 10]:.0f}, "
                  f"q90 {v[9 * len(v) // 10]:.0f} runs per CPU second")
    meters = [int(x) for x in os.environ.get("METER_CPUS", "6,12").split(",")]
    fl = os.path.join(d, "floor.json")
    if os.path.exists(fl):
        with open(fl) as f:
            data = json.load(f)
        s = paces.get(meters[-1], [])
        for c in data.get("cases", []):
            w = c.get("timed_epoch_s", [])
            p, n = pace_between(s, w[0], w[-1]) if len(w) == 2 else (0.0, 0)
            ph = c.get("phases", {})
            print(f"floor {c['model']['name'][:30]:30s} rc={int(c['recompute'])} fwd {ph.get('forward_s', 0) * 1e3:7.2f} "
                  f"bwd {ph.get('backward_s', 0) * 1e3:7.2f} ms pace {p:8.0f} ({n} samples) {c.get('error', '')[:100]}")
    for path in sorted(glob.glob(os.path.join(d, "train_dist_w*.json"))):
        with open(path) as f:
            data = json.load(f)
        for c in data["cases"]:
            if "error" in c:
                print(c["id"], "ERROR", c["error"][:200])
                continue
            ranks = c["ranks"]
            k = int(ranks[0].get("block_steps", 1))
            n = min(len(r["meter"]) for r in ranks)
            rows = []
            for i in range(n):
                wall = max(r["meter"][i]["wall_s"] for r in ranks)
                pr = []
                for ri, r in enumerate(ranks):
                    m = r["meter"][i]
                    cpu = (r.get("pinned", {}).get("busy") or [meters[ri % len(meters)]])[0]
                    pr.append(pace_between(paces.get(cpu, []), m["epoch_s"], m["epoch_s"] + m["wall_s"]))
                rows.append((wall, min(p for p, _ in pr), min(x for _, x in pr)))
            for b in range(0, n, k):
                blk = rows[b:b + k]
                print(f"{c['id']:44s} block {b // k}: step {statistics.median(x[0] for x in blk) * 1e3:7.1f} ms, "
                      f"slowest rank's pace {statistics.median(x[1] for x in blk):8.0f} "
                      f"(samples a step >= {min(x[2] for x in blk)})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
