"""Blind predictions for the queue15 call (scripts/gpu/queue15_curve.py), written before it ran.

For each configuration of the call (the record's ``w1-single-1B-s2048-mb4`` and ``w1-single-1B-s8192-mb1``), each card
that may come (H100 or H200), each rule of :func:`mlcalc.steptime._passes` (``op-by-op``: the engine of today, mono14's
defect and all; ``queue``: the launch queue of :func:`mlcalc.steptime._queue_pass` with a device gap of
:func:`mlcalc.serving.null_kernel_s` per kernel), the step in seconds on a grid of the vCPU's pace (the pace meter's
runs a second, :data:`PACES`) and of the host seconds added to every op (:data:`ADDED_US`). The machine is the
engine's metered one (:func:`mlcalc.distruns.paced_machine` at the pace, the launch floor held fixed: the rule
meter12c kept) with the added seconds on both per-op constants (forward and backward ops; the checkpoint's own host
work is not an op, and these configurations do not checkpoint).

How a point is scored (fixed here, before the call): its added seconds per op are the spin N plus the mode's own
cost per op, that cost being (median issue time at N = 0 with the mode - median issue time of the plain point) /
ops the mode counted per step, both of the same visit; "plain" points have 0 added. Its pace is the median of the
pace meter over its timed steps. The prediction is the grid's, interpolated linearly in the pace and the added
seconds; the error is prediction / median measured step - 1.

    .venv/bin/python scripts/gpu/predict_queue15.py   (writes scripts/gpu/queue15_predictions.json, ~2 min)
"""

from __future__ import annotations

import bisect
import dataclasses
import json
import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from mlcalc import distruns, serving, steptime

CONFIGS = ("w1-single-1B-s2048-mb4", "w1-single-1B-s8192-mb1")
CARDS = ("NVIDIA H100 80GB HBM3", "NVIDIA H200")
RULES = ("op-by-op", "queue")
PACES = tuple(range(50_000, 180_001, 10_000))
ADDED_US = tuple(range(0, 151, 2))
PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "queue15_predictions.json")


def _case(case_id: str, card: str) -> Any:
    c = next(c for r in distruns.runs() for c in distruns.cases(r) if c.id == case_id)
    return dataclasses.replace(c, device=card)


def predict(case_id: str, card: str, rule: str, pace: float, added_s: float) -> float:
    """The step (s) of one configuration at a pace with ``added_s`` host seconds on every op, under a rule."""
    c = _case(case_id, card)
    old = steptime.HOST_RULE, steptime.KERNEL_GAP_S
    steptime.HOST_RULE, steptime.KERNEL_GAP_S = rule, (serving.null_kernel_s() if rule == "queue" else 0.0)
    try:
        m = distruns.paced_machine(c.device, pace, distruns.STATED_PACE, distruns.launch_floor_s())
        m = m._replace(host_s_per_op=m.host_s_per_op + added_s, host_s_per_backward_op=m.host_s_per_backward_op + added_s)
        return steptime.predict_step(c.model, distruns.layout(c), seq_len=c.seq_len, machine=m, gpus_per_node=8,
                                     engine="eager").step_s
    finally:
        steptime.HOST_RULE, steptime.KERNEL_GAP_S = old


def interpolate(table: list[list[float]], pace: float, added_us: float) -> float:
    """A grid's step at (pace, added microseconds), linear in both (held at the grid's edges)."""
    def at(grid: tuple[int, ...], v: float) -> tuple[int, float]:
        v = min(max(v, grid[0]), grid[-1])
        i = min(max(bisect.bisect_right(grid, v) - 1, 0), len(grid) - 2)
        return i, (v - grid[i]) / (grid[i + 1] - grid[i])
    i, fi = at(PACES, pace)
    j, fj = at(ADDED_US, added_us)
    row = [table[i][j] * (1 - fj) + table[i][j + 1] * fj, table[i + 1][j] * (1 - fj) + table[i + 1][j + 1] * fj]
    return row[0] * (1 - fi) + row[1] * fi


def main() -> int:
    out: dict[str, Any] = {"written_before_the_call": True, "paces": list(PACES), "added_us": list(ADDED_US),
                           "kernel_gap_s_queue": serving.null_kernel_s(), "stated_pace": distruns.STATED_PACE,
                           "launch_floor_s": distruns.launch_floor_s(), "steps_s": {}}
    for cid in CONFIGS:
        for card in CARDS:
            for rule in RULES:
                out["steps_s"][f"{cid}|{card}|{rule}"] = [[round(predict(cid, card, rule, p, a * 1e-6), 6)
                                                          for a in ADDED_US] for p in PACES]
                print(cid, card, rule, "done", flush=True)
    with open(PATH, "w") as f:
        json.dump(out, f, indent=0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
