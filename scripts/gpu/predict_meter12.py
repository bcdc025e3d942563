"""The engine's predictions of every case of the meter12 call (scripts/gpu/run_meter12.sh), written BEFORE the call to
``scripts/gpu/meter12_predictions.json`` for both cards a 4-GPU ask may bring (``nvidia-h100-x4`` may come as H200s).
Nothing the call measures goes into them: every input is from runs made before it.

What predicts them: ``train_dist.py --sweep meter12`` (the configurations of the multi-GPU family's six unmetered blind
misses, TP 2, TP 4 and FSDP 2 x TP 2, and five tensor-parallel configurations no call ran), each case twice: the
engine's default (``mlcalc.distruns.predict_planned``: step and per-GPU peak on the card's measured machine, the host at
its calibration host's pace), and the metered rule at every vCPU pace from 40,000 to 180,000 runs a second in steps of
1,000 (``paced_step_s``, aligned with ``paces``): the card's machine with every host constant priced at that pace
(``mlcalc.distruns.paced_machine`` with ``STATED_PACE`` = 90,000 runs a second and the launch floor held fixed,
``launch_floor_s``: what ``mlcalc.distruns.record_step_s`` gives a metered case at its pace). Which row holds for a
case is the call's to measure: its pace is the median over its timed steps of the slowest rank's busy-vCPU pace
(``mlcalc.distruns.case_pace``, rounded to 1,000). Targets (the accuracy page's multi-GPU families): memory 10 %,
step 15 %.

    python scripts/gpu/predict_meter12.py   (writes scripts/gpu/meter12_predictions.json)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime, timezone
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, HERE)

from mlcalc import distruns, models, steptime  # noqa: E402
from train_dist import METER12_REPEATS, meter12_cases, variant_names  # noqa: E402

H100, H200 = "NVIDIA H100 80GB HBM3", "NVIDIA H200"
CARDS = (H100, H200)
TARGETS = {f: {"memory": distruns.MEMORY_TARGET, "step": distruns.STEP_TARGET} for f in ("train-2gpu", "train-4gpu")}
PACES = tuple(range(40_000, 180_001, 1_000))

RULE = (
    "meter12, fixed before the call; no new constant, no constant per case. (1) A case's metered prediction is the row "
    "of its paced_step_s at its pace: the median over its timed steps of the slowest rank's busy-vCPU pace "
    "(mlcalc.distruns.case_pace), rounded to 1,000 runs a second; that is mlcalc.distruns.record_step_s with the "
    "engine as committed (every host constant x STATED_PACE = 90,000 / the pace, the launch floor's share held fixed). "
    "Within 15 % of the case's median step is a hit. (2) The blocks: mlcalc.distruns.paced_blocks(run, STATED_PACE, "
    "launch_floor_s()) against the engine's default, the criterion of host7c and host8: at least 75 % of the call's "
    "blocks within 15 % and more than the default. (3) The six blind misses' configurations (repeat_cases) hold when "
    "metered if (1) is within 15 % for each; the five new configurations are scored the same way, blind. (4) The "
    "family's record follows host8's rule (3) unchanged: a configuration (model, layout, micro-batches, micro-batch, "
    "sequence, checkpointing, card kind) with a metered run is held to its metered runs; on another kind of card than "
    "the blind calls' H200s the blind runs stay in the record. (5) The defaults below (step_s, peak_bytes) are scored "
    "as every blind call's (mlcalc.blindruns); the committed blind errors of blind10, blind11 and blind11b stay the "
    "record. (6) A case that misses at its own pace gets its cause from the call's own meter (per-rank issue time, "
    "CPU, run-queue, steal and garbage-collector seconds per step) and floors, stated; nothing is fitted to it.")


def paced_step_s(c: dict[str, Any], card: str, pace: float, fixed_s: float | None = None) -> float:
    """The metered rule's step of a planned case at a pace: :func:`mlcalc.distruns.predict_paced` for a planned case.
    ``fixed_s``: the share of each host constant held fixed (default the launch floor, :func:`launch_floor_s`; 0 is
    the host7c rule, every constant scaled)."""
    fixed = distruns.launch_floor_s() if fixed_s is None else fixed_s
    m = distruns.paced_machine(card, pace, distruns.STATED_PACE, fixed)
    return steptime.predict_step(models.from_dict(c["model"]), distruns.layout(c), seq_len=int(c["seq_len"]),
                                 machine=m, gpus_per_node=8, engine="eager").step_s


def family_rows(scaled: bool = False, cases: list[dict[str, Any]] | None = None,
                worlds: tuple[int, ...] = (2, 4)) -> dict[str, dict[str, dict[str, Any]]]:
    """Each case's row per family and card; ``scaled``: also the host7c rule's steps (``paced_step_s_scaled``).
    ``cases``: another sweep's cases (default meter12's) on ``worlds`` GPUs (one family each)."""
    floor = distruns.launch_floor_s()
    out: dict[str, dict[str, dict[str, Any]]] = {f"train-{w}gpu": {} for w in worlds}
    for card in CARDS:
        for fam in out:
            out[fam][card] = {}
        for c in (meter12_cases() if cases is None else cases):
            p = distruns.predict_planned(c, card)
            row = {"step_s": p.step_s, "peak_bytes": p.peak_bytes_per_gpu, "host_s": p.host_s,
                   "compute_s": p.compute_s, "comm_s": p.comm_s, "comm_exposed_s": p.comm_exposed_s,
                   "optimizer_s": p.optimizer_s,
                   "paced_step_s": [round(paced_step_s(c, card, x, floor), 6) for x in PACES]}
            if scaled:
                row["paced_step_s_scaled"] = [round(paced_step_s(c, card, x, 0.0), 6) for x in PACES]
            for v in variant_names(c):
                out[f"train-{c['world']}gpu"][card][f"{c['id']}-{v}"] = row
    return out


def main() -> None:
    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=HERE).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--", "mlcalc"], capture_output=True, text=True,
                           cwd=HERE).stdout.strip()
    fams = family_rows()
    cards = {card: {k: {"step_s": r["step_s"], "peak_bytes": r["peak_bytes"]} for f in fams.values()
                    for k, r in f[card].items()} for card in CARDS}
    doc = {"_about": "The engine's predictions of every case of scripts/gpu/run_meter12.sh, made before the call "
                     f"(engine at commit {commit}{' + uncommitted mlcalc changes' if dirty else ''}); inputs from "
                     "earlier runs only (see the script's docstring)",
           "how": " ".join(__doc__.split("What predicts them: ")[1].split("\n\n    python")[0].split()),
           "metered_rule": RULE,
           "made_utc": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"), "engine_commit": commit,
           "stated_pace": distruns.STATED_PACE, "launch_floor_s": distruns.launch_floor_s(),
           "paces": list(PACES),
           "repeat_cases": [f"{i}-meter" for i in METER12_REPEATS], "baseline_cases": [],
           "targets": TARGETS, "families": fams, "cards": cards}
    with open(os.path.join(HERE, "meter12_predictions.json"), "w") as f:
        json.dump(doc, f, indent=1)
    for card in CARDS:
        for k, r in cards[card].items():
            fam = fams[f"train-{k[1]}gpu"][card][k]
            at = {p: fam["paced_step_s"][PACES.index(p)] for p in (60_000, 90_000, 120_000)}
            print(f"{card[:12]:12s} {k:50s} default {r['step_s'] * 1e3:7.1f} ms {r['peak_bytes'] / 2**30:6.2f} GiB; "
                  f"metered at 60/90/120k: " + " / ".join(f"{v * 1e3:.0f}" for v in at.values()) + " ms")


if __name__ == "__main__":
    main()
