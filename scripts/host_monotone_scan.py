"""Where the engine's step falls as the host slows (mono14): every configuration of the multi-GPU record (and its
one-GPU runs of ``train_dist.py``), on both cards, under both metered rules (``mlcalc.distruns.predict_paced`` with
every host constant scaled by the pace, and with the launch floor held fixed, ``launch_floor_s``), at every vCPU pace
from 40,000 to 180,000 runs a second in steps of 1,000 (the grid of ``scripts/gpu/predict_meter12.py``). A step that
rises from one pace to the next faster one is a step that falls as the host slows; each such curve is printed with
its largest drop and the case's own metered pace (0: not metered).

The cause is :func:`mlcalc.steptime._passes`: a pass whose host time reaches its device time switches from the
op-by-op rule (a sum above both totals) to its host time alone; see the comment there and
``tests/core/test_steptime_host_monotone.py``.

    .venv/bin/python scripts/host_monotone_scan.py   (about 1 minute of CPU)
"""

from __future__ import annotations

import dataclasses
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from mlcalc import distruns

CARDS = ("NVIDIA H100 80GB HBM3", "NVIDIA H200")
PACES = tuple(range(40_000, 180_001, 1_000))


def main() -> None:
    rules = (("launch floor", distruns.launch_floor_s()), ("scaled", 0.0))
    seen: set[tuple[object, ...]] = set()
    curves = falling = 0
    configs: set[tuple[object, ...]] = set()
    for run in distruns.runs():
        for case in distruns.cases(run):
            for card in CARDS:
                key = distruns.config(case)[:-1] + (card,)
                if key in seen:
                    continue
                seen.add(key)
                c = dataclasses.replace(case, device=card)
                for name, fixed in rules:
                    steps = [distruns.predict_paced(c, p, distruns.STATED_PACE, fixed) for p in PACES]
                    curves += 1
                    ups = [(p, a, b) for p, a, b in zip(PACES, steps, steps[1:]) if b > a * (1 + 1e-12)]
                    if not ups:
                        continue
                    falling += 1
                    configs.add(key)
                    p, a, b = max(ups, key=lambda u: u[2] - u[1])
                    print(f"{run:40s} {case.id:42s} {card[7:11]} {name:12s} falls {len(ups)}x; largest: "
                          f"{a * 1e3:.1f} ms at {p // 1000}k, {b * 1e3:.1f} ms at {p // 1000 + 1}k; "
                          f"case pace {distruns.case_pace(case) / 1e3:.0f}k")
    print(f"{falling} of {curves} curves fall somewhere as the host slows; {len(configs)} of {len(seen)} "
          "configurations x cards")


if __name__ == "__main__":
    main()
