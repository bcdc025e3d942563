"""The engine's predictions of the dist5 call's cases (``train_dist.py --sweep dist5``), written BEFORE the call
to ``scripts/gpu/dist5_predictions.json`` for both cards a 4-GPU ask may bring (the run folder gets a copy as its
``predictions.json``). A case is timed under every launch condition (``train_dist.VARIANTS``): each condition's row
(id ending in its name) gets the case's one prediction: the engine knows no launch condition.

    python scripts/gpu/predict_dist5.py [dist5|dist5b|dist5c|dist6|dist6b|dist6c|host7|host7c|host8|host8b]

For dist6 the file also states, before the call, the rule its metered blocks are checked by (:data:`RULES`): the
numbers it gives depend on the call's own meters, so only the rule can be written down before.
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


RULES = {"dist6": (
    "Metered prediction of each timed step (rule fixed before the call): the pace p of a vCPU over a window = runs "
    "over CPU seconds of scripts/gpu/pacemeter.py's samples that ended inside it. Calibration: every floor case of "
    "the call's train_hf.py --floor (the program whose floors give the engine's host constants, "
    "mlcalc.steptime.host_constants_from_floors) has its forward_s and backward_s multiplied by the pace of its own "
    "vCPU over its timed window (timed_epoch_s): host work in runs of the fixed piece of Python; the constants "
    "computed from those (runs per forward op, per backward op, per checkpointed layer) are divided by a step's pace "
    "to give that step's host seconds per op. A step's pace = the slowest rank's, the smallest over its ranks of the rank's busy vCPU's "
    "pace over the step's window (epoch_s, epoch_s + wall_s); its prediction = mlcalc.steptime.predict_step on the "
    "card's machine (rates unchanged; DTensor and FSDP2 host costs as the same ratios to the plain op, "
    "steptime.with_dist_host) with those host constants. A block's prediction = the median of its steps' "
    "predictions, checked against the block's median step (each step the slowest rank's): within 15 % is a hit. "
    "The unmetered prediction below (cards) is the engine's default and is scored as every earlier call's.")}
RULES["dist6b"] = RULES["dist6"]
RULES["dist6c"] = (
    "Second metered rule (fixed before the third call, after the first call's blocks missed by the first rule: host "
    "time does not follow the probe's pace one to one). The calibration program's own slowdown with its vCPU's pace "
    "is measured in the call: Llama-3.2 1B's floor (train_hf.py --floor, 1 x 64 tokens, without checkpointing) has "
    "its instrumented forward and backward repeated (--repeat), each with its time window; a least-squares line of "
    "host seconds per op against 1 / pace over those repeats (forward and backward apart) gives g(p) = a + b / p. "
    "A step's host seconds per op = the engine's constant x g(p) / g(p_cal), where p_cal is the pace at which the "
    "calibration floors (second call, 14 floor cases, their forward_s and backward_s priced per op at their own "
    "pace through g) give the engine's constant; the checkpoint constant is scaled as the forward one. A step's pace "
    "= the smallest over its ranks (as the first rule); the block's prediction = the median of its steps'; within "
    "15 % is a hit. The unmetered prediction (cards) is the engine's default.")

RULES["host7"] = (
    "Pace-aware rule (host7, fixed before the call). The engine's stated pace P0: the calibration program "
    "(train_hf.py --floor: the engine's floor cases, its 7 models at 1 x 64 tokens with and without checkpointing) runs "
    "in the training runs' placement (--place: its main and autograd threads on metered vCPU 20, every other thread on "
    "the light vCPUs), each instrumented forward and backward repeated (--repeat) with its own window; a case's work "
    "per forward op = the median over its repeats of forward_s x the vCPU's pace over that forward's window "
    "(mlcalc.distruns.pace_over) / steptime.op_counts' forward ops (runs of the meter's fixed Python per op). P0 = the "
    "median over the 7 models' cases without checkpointing of that work / the H200 machine's host_s_per_op (hfruns "
    "run2): the pace at which the engine's seconds per op are the work the calibration program does per op in this "
    "placement. A step at pace p (the slowest rank's busy-vCPU pace over the step's window, distruns.metered_steps) is "
    "predicted by mlcalc.steptime.predict_step on the card's machine with every host constant (per forward and backward "
    "op, per checkpointed layer, DTensor and FSDP2) multiplied by P0 / p; a block's prediction = the median of its "
    "steps'; within 15 % is a hit. Written before the call: P0 between 85 and 115 thousand runs a second; the paced "
    "rule within 15 % on more of this call's blocks than the unpaced engine (both scored); the same rule with this "
    "call's P0 applied to the dist6 and dist6c blocks is scored too (retro, not blind). If the paced rule wins on this "
    "call's blocks, every metered case's record becomes its paced prediction at its steps' median pace (unmetered "
    "cases keep the engine's default). The multi-GPU floors of this call (DTensor, FSDP2; every pass with its window, "
    "each rank's busy threads on its metered vCPU) are reported in runs beside the engine's ratios; this rule does not "
    "use them. The unmetered predictions (cards) are the engine's default (checkpointing's host cost at its forward "
    "op's pace, host7).")

RULES["host7c"] = (
    "Pace-aware rule with a stated pace (host7c, fixed before the call): every host constant of the card's machine "
    "(per forward and backward op, per checkpointed layer, DTensor and FSDP2) multiplied by 90,000 / p, where p is a "
    "step's pace (the slowest rank's busy-vCPU pace over the step's window, distruns.metered_steps, rounded to 1,000) "
    "and 90,000 runs a second is mlcalc.distruns.STATED_PACE (chosen on the dist6 and dist6c blocks: 63 of 68 within "
    "15 %; it then held on the host7 calls' 48 blocks, 40 within, but was not written down before them). A block's "
    "prediction = the median of its steps' (distruns.paced_blocks(run, STATED_PACE)); within 15 % is a hit. Written "
    "before the call: the rule within 15 % on at least 75 % of this call's blocks and on more than the unpaced engine. "
    "If it is, every metered case's record becomes the rule's prediction at its steps' median pace; if not, the rule "
    "is dropped. The unmetered predictions (cards) are the engine's default.")

RULES["host8"] = (
    "host8, fixed before the call; no new constant, no constant per case. (1) The blind test: every block of this "
    "call's metered cases against the pace-aware rule already in the repository (every host constant x "
    "mlcalc.distruns.STATED_PACE = 90,000 / the step's slowest-rank pace, distruns.paced_blocks), the criterion "
    "host7c's: at least 75 % of the call's blocks within 15 % and more than the unpaced engine. (2) Each case's record "
    "is distruns.record_step_s (its paced prediction at its steps' median pace), memory the engine's (within 10 %). "
    "(3) The family's record, if (1) holds: a configuration (model, dp x tp x pp and schedule, micro-batches, "
    "micro-batch, sequence, checkpointing, card kind) that has a metered run in the repository is held in the record "
    "by its metered runs alone; its unmetered runs (their host pace unknown) leave the record, hits and misses alike, "
    "and stay in the repository and on the accuracy page as history with their own scores and stated causes; a "
    "configuration never metered keeps its unmetered runs in the record. If (1) fails, the record keeps every run and "
    "the misses keep their causes. (4) FSDP2's host cost over tensor-parallel parameters: the call's metered floors "
    "(plain, tp2d, fsdptp at 2 and 6 layers, FLOOR_REPS passes each; a pass of the programs over several ranks = its "
    "longest rank's seconds x its slowest rank's pace, the plain program's each rank's own, over a window of at least "
    "0.1 s about the pass: distruns.metered_floors) give it per layer in plain ops of the same floors "
    "(distruns.metered_fsdp_dtensor, median; quartiles as its spread). It replaces the unmetered one (h200x4-2026-11-"
    "26-train-dist4b: 33 forward, 535 backward plain ops, each program's 7 passes at whatever pace it then had) in "
    "every FSDP x TP prediction, whatever that does to the record (as host7 replaced checkpointing's unmetered cost): "
    "one measured number for every case. If the call brings no metered floors, nothing changes.")

RULES["host8b"] = (
    "host8b, fixed before the call (after the host8 call met its criterion: 39 of 48 blocks within 15 %, the engine "
    "30; FSDP2 over DTensor now host8's metered floor, 115 forward and 309 backward plain ops a layer): the record's "
    "rules of host8 unchanged, no new constant. Configurations never metered whose unmetered runs are the record's "
    "one miss (FSDP 2 x TP 2 8B 2 x 2048 checkpointed, -17.9 %) or nearest misses (TP 2 3B 1 x 4096, 2 x 2048 and "
    "1 x 8192 checkpointed, TP 2 8B 1 x 2048 checkpointed: -12.7 to -14.7 %), metered: by rule (3) of host8 each "
    "configuration is then held to its metered run in the record, whatever it gives. Blind test as host8's (75 % of "
    "blocks within 15 % and more than the unpaced engine), reported; the cards below are the engine's default.")


def main(sweep: str = "dist5") -> None:
    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=HERE).stdout.strip()
    branch = subprocess.run(["git", "rev-parse", "--abbrev-ref", "HEAD"], capture_output=True, text=True,
                            cwd=HERE).stdout.strip()
    cards = {}
    for dev in ("NVIDIA H100 80GB HBM3", "NVIDIA H200"):
        cards[dev] = {}
        for c in SWEEPS[sweep]():
            p = distruns.predict_planned(c, dev)
            for v in variant_names(c):
                cards[dev][f"{c['id']}-{v}"] = {"step_s": p.step_s, "peak_bytes": p.peak_bytes_per_gpu}
    out = {"_about": "The engine's predictions (mlcalc.distruns.predict_planned) of every case of train_dist.py --sweep "
                     f"{sweep}, made before the call that measured them; engine at commit {commit} (worktree "
                     f"{branch}); the call's floors and meters are not in them",
           **({"metered_rule": RULES[sweep]} if sweep in RULES else {}),
           "made_utc": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"), "cards": cards}
    with open(os.path.join(HERE, f"{sweep}_predictions.json"), "w") as f:
        json.dump(out, f, indent=1)
    for dev, rows in cards.items():
        for k, v in rows.items():
            print(f"{dev[:12]:12s} {k:40s} {v['step_s'] * 1e3:8.1f} ms {v['peak_bytes'] / 2**30:6.2f} GiB")


if __name__ == "__main__":
    main(*sys.argv[1:2])
