"""The engine's predictions of every case of the blind11 call (scripts/gpu/run_blind11.sh), written BEFORE the call
to ``scripts/gpu/blind11_predictions.json`` for both cards a 4-GPU ask may bring (``nvidia-h100-x4`` may come as
H200s). Nothing the call measures goes into them: every input is from runs made before it.

What predicts them: ``train_dist.py --sweep blind11`` (FSDP2 on 4, TP 4, the 1F1B pipeline on 4, FSDP 2 x TP 2,
PP 2 x FSDP 2, PP 2 x TP 2 at shapes, lengths and micro-batches no sweep ran, and two ``-base`` cases the record
already holds) priced by ``mlcalc.distruns.predict_planned`` (step and per-GPU peak): the engine's default (no meters,
the card's measured machine ``mlcalc.distruns.MACHINE_RUN`` with the host floors of ``FLOORS_RUN`` /
``FSDP_TP_METERED_RUN``), 8 GPUs a node. Targets (the accuracy page's multi-GPU families): memory 10 %, step 15 %.
The ``-base`` cases are not blind (the record holds their shapes): they compare this host with the earlier ones.

    python scripts/gpu/predict_blind11.py   (writes scripts/gpu/blind11_predictions.json)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime, timezone
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

from mlcalc import distruns  # noqa: E402

H100, H200 = "NVIDIA H100 80GB HBM3", "NVIDIA H200"
CARDS = (H100, H200)
TARGETS = {"train-4gpu": {"memory": distruns.MEMORY_TARGET, "step": distruns.STEP_TARGET}}


def train_4gpu() -> dict[str, dict[str, Any]]:
    from train_dist import blind11_cases

    out: dict[str, dict[str, Any]] = {}
    for card in CARDS:
        out[card] = {}
        for c in blind11_cases():
            p = distruns.predict_planned(c, card)
            out[card][c["id"]] = {"step_s": p.step_s, "peak_bytes": p.peak_bytes_per_gpu, "host_s": p.host_s,
                                  "compute_s": p.compute_s, "comm_s": p.comm_s, "comm_exposed_s": p.comm_exposed_s,
                                  "bubble_s": p.bubble_s, "optimizer_s": p.optimizer_s}
    return out


def main() -> None:
    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=HERE).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--", "mlcalc"], capture_output=True, text=True,
                           cwd=HERE).stdout.strip()
    doc = {"_about": "The engine's predictions of every case of scripts/gpu/run_blind11.sh, made before the call "
                     f"(engine at commit {commit}{' + uncommitted mlcalc changes' if dirty else ''}); inputs from "
                     "earlier runs only (see the script's docstring)",
           "how": " ".join(__doc__.split("What predicts them: ")[1].split("\n\n    python")[0].split()),
           "made_utc": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"), "engine_commit": commit,
           "baseline_cases": [k for k in train_4gpu()[H100] if k.endswith("-base")],
           "targets": TARGETS, "families": {"train-4gpu": train_4gpu()}}
    with open(os.path.join(HERE, "blind11_predictions.json"), "w") as f:
        json.dump(doc, f, indent=1)
    for fam, cards in doc["families"].items():
        for card, rows in cards.items():
            for k, v in rows.items():
                print(f"{fam:11s} {card[:12]:12s} {k:52s} {v['step_s'] * 1e3:9.2f} ms "
                      f"{v['peak_bytes'] / 2**30:6.2f} GiB host {v['host_s'] * 1e3:7.1f} ms")


if __name__ == "__main__":
    main()
