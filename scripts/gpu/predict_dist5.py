"""The engine's predictions of the dist5 call's cases (``train_dist.py --sweep dist5``), written BEFORE the call
to ``scripts/gpu/dist5_predictions.json`` for both cards a 4-GPU ask may bring (the run folder gets a copy as its
``predictions.json``). A case is timed under every launch condition (``train_dist.VARIANTS``): each condition's row
(id ending in its name) gets the case's one prediction: the engine knows no launch condition.

    python scripts/gpu/predict_dist5.py [dist5|dist5b|dist5c]
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime, timezone

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, HERE)

from mlcalc import distruns  # noqa: E402
from train_dist import SWEEPS, variant_names  # noqa: E402


def main(sweep: str = "dist5") -> None:
    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=HERE).stdout.strip()
    cards = {}
    for dev in ("NVIDIA H100 80GB HBM3", "NVIDIA H200"):
        cards[dev] = {}
        for c in SWEEPS[sweep]():
            p = distruns.predict_planned(c, dev)
            for v in variant_names(c):
                cards[dev][f"{c['id']}-{v}"] = {"step_s": p.step_s, "peak_bytes": p.peak_bytes_per_gpu}
    out = {"_about": "The engine's predictions (mlcalc.distruns.predict_planned) of every case of train_dist.py --sweep "
                     f"{sweep}, made before the call that measured them; engine at commit {commit} (worktree dist5); "
                     "the call's floors and meters are not in them",
           "made_utc": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"), "cards": cards}
    with open(os.path.join(HERE, f"{sweep}_predictions.json"), "w") as f:
        json.dump(out, f, indent=1)
    for dev, rows in cards.items():
        for k, v in rows.items():
            print(f"{dev[:12]:12s} {k:40s} {v['step_s'] * 1e3:8.1f} ms {v['peak_bytes'] / 2**30:6.2f} GiB")


if __name__ == "__main__":
    main(*sys.argv[1:2])
