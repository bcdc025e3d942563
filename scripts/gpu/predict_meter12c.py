"""The meter12c call's predictions, written BEFORE the call to ``scripts/gpu/meter12c_predictions.json``: the meter12
call (scripts/gpu/run_meter12.sh, ``train_dist.py --sweep meter12``) run a third time, unchanged, on whatever 4-GPU
host comes, as a pre-registered test of two host rules that the meter12 and meter12b calls left undecided.

The two rules price a metered case's host constants at its own vCPU pace (:func:`mlcalc.distruns.paced_machine`,
``STATED_PACE`` = 90,000 runs a second):
- the launch-floor rule (host9; the record's rule now, :func:`mlcalc.distruns.record_step_s`): each host constant keeps
  the share :func:`mlcalc.distruns.launch_floor_s` (3 us) of its plain op fixed and scales the rest by stated / pace;
- the host7c rule: every host constant scaled by stated / pace, nothing held fixed (``fixed_s`` = 0).
On meter12 (fast host, 80-152 thousand runs a second) the launch-floor rule had 51 of 60 blocks within 15 % (host7c's
50); on meter12b (slow host, 65-79 thousand) 23 of 60 (host7c's 45). Choosing host7c's after seeing meter12b would be
a fit; this call decides by the rule written here before it, whichever way it goes.

For every meter12 case and both cards a 4-GPU ask may bring: the engine's default (step and per-GPU peak, as meter12's
file) and each rule's step at every pace from 40,000 to 180,000 runs a second in steps of 1,000 (``paced_step_s``
for the launch-floor rule, as meter12's file; ``paced_step_s_scaled`` for host7c's; aligned with ``paces``).

    python scripts/gpu/predict_meter12c.py   (writes scripts/gpu/meter12c_predictions.json)
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

from mlcalc import distruns  # noqa: E402
import predict_meter12  # noqa: E402
from predict_meter12 import CARDS, PACES, TARGETS  # noqa: E402
from train_dist import METER12_REPEATS  # noqa: E402

DECISION = (
    "meter12c, fixed and landed before the call; no new constant, no constant per case. (1) Case pass criterion as "
    "meter12's: a case's prediction under a rule is the row of that rule's steps (paced_step_s: launch floor; "
    "paced_step_s_scaled: host7c) at the case's pace (mlcalc.distruns.case_pace: the median over its timed steps of the "
    "slowest rank's busy-vCPU pace, rounded to 1,000 runs a second); within 15 % of the case's median step is a hit. "
    "(2) Blocks: mlcalc.distruns.paced_blocks(run, STATED_PACE, fixed_s) for this call's run, fixed_s = "
    "launch_floor_s() (launch-floor rule) and fixed_s = 0 (host7c rule), a block within 15 % is a hit. (3) The "
    "decision: the rule with more of THIS call's blocks within 15 % becomes the record's rule "
    "(mlcalc.distruns.record_step_s) for every metered call in the repository; a tie goes to the committed launch-floor "
    "rule. Only this call's blocks count (meter12's and meter12b's are already seen). (4) If the host7c rule wins, "
    "record_step_s drops the launch floor (fixed_s = 0) for all metered calls, every family is re-checked and every "
    "text naming the rule updated; if that cannot be finished and tested in the session, the data and the score land "
    "and the switch is stated as pending, never half made. (5) The engine's defaults (step_s, peak_bytes) are scored as "
    "every blind call's (mlcalc.blindruns); the committed errors of earlier calls stay the record. (6) A case that "
    "misses gets its cause from the call's own meter, stated; nothing is fitted to it.")


def family_rows() -> dict[str, dict[str, dict[str, Any]]]:
    """meter12's rows (:func:`predict_meter12.family_rows`) with the host7c rule's steps beside the launch floor's."""
    return predict_meter12.family_rows(scaled=True)


def main() -> None:
    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=HERE).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--", "mlcalc"], capture_output=True, text=True,
                           cwd=HERE).stdout.strip()
    fams = family_rows()
    cards = {card: {k: {"step_s": r["step_s"], "peak_bytes": r["peak_bytes"]} for f in fams.values()
                    for k, r in f[card].items()} for card in CARDS}
    doc = {"_about": "The engine's predictions of every case of the meter12c call (scripts/gpu/run_meter12.sh, "
                     f"unchanged), made before the call (engine at commit {commit}"
                     f"{' + uncommitted mlcalc changes' if dirty else ''}); inputs from earlier runs only",
           "how": " ".join(__doc__.split("\n\n    python")[0].split()),
           "decision_rule": DECISION,
           "made_utc": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"), "engine_commit": commit,
           "stated_pace": distruns.STATED_PACE, "launch_floor_s": distruns.launch_floor_s(),
           "paces": list(PACES),
           "repeat_cases": [f"{i}-meter" for i in METER12_REPEATS], "baseline_cases": [],
           "targets": TARGETS, "families": fams, "cards": cards}
    with open(os.path.join(HERE, "meter12c_predictions.json"), "w") as f:
        json.dump(doc, f, indent=1)
    for card in CARDS:
        for k in cards[card]:
            fam = fams[f"train-{k[1]}gpu"][card][k]
            i = {p: PACES.index(p) for p in (60_000, 90_000, 120_000)}
            print(f"{card[:12]:12s} {k:50s} default {fam['step_s'] * 1e3:7.1f} ms; at 60/90/120k floor "
                  + "/".join(f"{fam['paced_step_s'][j] * 1e3:.0f}" for j in i.values()) + " scaled "
                  + "/".join(f"{fam['paced_step_s_scaled'][j] * 1e3:.0f}" for j in i.values()) + " ms")


if __name__ == "__main__":
    main()
