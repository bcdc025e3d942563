"""The h100mg call's predictions, written BEFORE the call to ``scripts/gpu/h100mg_predictions.json``: the first
multi-GPU sweep asked of 2 H100s (``nvidia-h100-x2``; it may come as 2 H200s, so both cards are predicted), run by
``scripts/gpu/run_h100mg.sh`` (``train_dist.py --sweep h100mg``: FSDP2, TP 2 and the 1F1B pipeline on 2 GPUs, Llama
3.2 1B and 3B, Mistral 7B and Llama 3 8B, 1024 to 4096 tokens, checkpointing off and on, metered as meter12, and
meter12's TP 2 1B at 8 x 1024 as the call's baseline). Nothing the call measures goes into them.

For every case and card: the engine's default (``mlcalc.distruns.predict_planned``: step and per-GPU peak on the card's
measured machine, the host at its calibration host's pace) and the metered rules at every vCPU pace from 40,000 to
180,000 runs a second in steps of 1,000 (aligned with ``paces``): the record's launch-floor rule (``paced_step_s``,
:func:`mlcalc.distruns.record_step_s`) and host7c's (``paced_step_s_scaled``, every host constant scaled), as
meter12c's file (:func:`predict_meter12.family_rows`). No new constant, no constant per case.

    python scripts/gpu/predict_h100mg.py   (writes scripts/gpu/h100mg_predictions.json)
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
import predict_meter12  # noqa: E402
from predict_meter12 import CARDS, PACES  # noqa: E402
from train_dist import H100MG_BASELINE, h100mg_cases  # noqa: E402

TARGETS = {"train-2gpu": {"memory": distruns.MEMORY_TARGET, "step": distruns.STEP_TARGET}}

RULE = (
    "h100mg, fixed before the call; no new constant, no constant per case. (1) A case's metered prediction is the row "
    "of its paced_step_s (the record's launch-floor rule, mlcalc.distruns.record_step_s) at its pace "
    "(mlcalc.distruns.case_pace: the median over its timed steps of the slowest rank's busy-vCPU pace, rounded to 1,000 "
    "runs a second); within 15 % of the case's median step is a hit; paced_step_s_scaled (host7c's rule) is read the "
    "same way and stated, not used to decide. (2) Blocks: mlcalc.distruns.paced_blocks(run, STATED_PACE, "
    "launch_floor_s()), a block within 15 % a hit. (3) Memory: the default's peak_bytes within 10 % of the largest "
    "rank's max_memory_allocated. (4) The defaults (step_s, peak_bytes) are scored as every blind call's "
    "(mlcalc.blindruns); these committed errors stay the record. (5) The card is the one the call reports; on H100s "
    "it is the record's first multi-GPU H100 run. (6) A case that misses gets its cause from the call's own meter and "
    "floors, stated as numbers; nothing is fitted to it.")


def main() -> None:
    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=HERE).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--", "mlcalc"], capture_output=True, text=True,
                           cwd=HERE).stdout.strip()
    fams = predict_meter12.family_rows(scaled=True, cases=h100mg_cases(), worlds=(2,))
    cards = {card: {k: {"step_s": r["step_s"], "peak_bytes": r["peak_bytes"]} for f in fams.values()
                    for k, r in f[card].items()} for card in CARDS}
    doc = {"_about": "The engine's predictions of every case of the h100mg call (scripts/gpu/run_h100mg.sh), made "
                     f"before the call (engine at commit {commit}{' + uncommitted mlcalc changes' if dirty else ''}); "
                     "inputs from earlier runs only",
           "how": " ".join(__doc__.split("\n\n    python")[0].split()),
           "metered_rule": RULE,
           "made_utc": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"), "engine_commit": commit,
           "stated_pace": distruns.STATED_PACE, "launch_floor_s": distruns.launch_floor_s(),
           "paces": list(PACES), "repeat_cases": [], "baseline_cases": [f"{i}-meter" for i in H100MG_BASELINE],
           "targets": TARGETS, "families": fams, "cards": cards}
    with open(os.path.join(HERE, "h100mg_predictions.json"), "w") as f:
        json.dump(doc, f, indent=1)
    i = {p: PACES.index(p) for p in (60_000, 90_000, 120_000)}
    for card in CARDS:
        for k in cards[card]:
            r = fams["train-2gpu"][card][k]
            print(f"{card[:12]:12s} {k:45s} default {r['step_s'] * 1e3:7.1f} ms {r['peak_bytes'] / 2**30:6.2f} GiB;"
                  " at 60/90/120k floor " + "/".join(f"{r['paced_step_s'][j] * 1e3:.0f}" for j in i.values())
                  + " scaled " + "/".join(f"{r['paced_step_s_scaled'][j] * 1e3:.0f}" for j in i.values()) + " ms")


if __name__ == "__main__":
    main()
