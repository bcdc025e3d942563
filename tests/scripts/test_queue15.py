"""The queue15 call (mlcalc/data/measured/h100-2026-11-27-queue15): a host delay per op across the crossing.

Scored by ``scripts/gpu/score_queue15.py`` against the predictions landed before the call
(``scripts/gpu/queue15_predictions.json``). What the record says, pinned: the measured step stays at the device's
time while the host's grows below it and then follows the host (the launch queue's shape), where the engine's
op-by-op rule rises early and falls at the crossing; both rules' blind scores; the device side the profiled steps
show.
"""

from __future__ import annotations

import json
import os
import statistics
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "scripts", "gpu"))

import score_queue15 as sq  # noqa: E402

from mlcalc import serving, steptime  # noqa: E402


@pytest.fixture(scope="module")
def rows():
    return sq.score()


def test_the_blind_scores(rows):
    s = sq._summary(rows)
    assert (s["queue"]["within_15"], s["op-by-op"]["within_15"], s["queue"]["n"]) == (19, 16, 22)
    assert s["queue"]["median_abs"] == pytest.approx(0.075, abs=0.001)
    assert s["op-by-op"]["median_abs"] == pytest.approx(0.099, abs=0.001)
    # the op-by-op rule's misses are above the measured step just below the crossing (N = 10-30 us)
    high = [r for r in rows if r["op-by-op error"] > 0.15]
    assert high and all(r["spin_us"] != "plain" and 10 <= r["spin_us"] <= 30 for r in high)


def test_the_measured_step_holds_at_the_device_then_follows_the_host(rows):
    for cfg in {r["config"] for r in rows}:
        pts = {r["spin_us"]: r for r in rows if r["config"] == cfg}
        plain = pts["plain"]["step_s"]
        # with the mode spinning up to 15 us before every op the step is within 20 % of the plain step
        assert all(pts[n]["step_s"] < 1.2 * plain for n in (0, 5, 10, 15))
        # past the crossing the step is the host's issue time plus the last kernels (13-20 ms)
        for n in (40, 60, 90):
            assert 0.012 < pts[n]["step_s"] - pts[n]["issue_s"] < 0.021
        # the host's time holds at least the spin of every op the mode counted (the pace moves the rest: no slope)
        assert pts[90]["issue_s"] > pts[90]["ops"] * 90e-6


def test_the_device_side_of_the_plain_steps():
    d = sq.device_side()
    first = [x for i, x in enumerate(d) if i % 2 == 0 or x["config"].endswith("s8192-mb1")]
    for x in first:
        if x["idle_per_kernel_s"] < 5e-6:  # one profiled step of the 2,048 configuration was disturbed (21 us)
            # idle per kernel near the null kernel's stream time the queue rule adds (kernels.json: 3 us)
            assert 0.6 * serving.null_kernel_s() < x["idle_per_kernel_s"] < 1.0 * serving.null_kernel_s()
    assert all(x["kernels"] == 2452 for x in d)
    ops = {r["ops"] for r in sq.score() if r["ops"]}
    assert ops == {3664}  # 0.67 kernels an aten op


def test_the_predictions_file_is_the_one_written_before_the_call():
    with open(os.path.join(ROOT, "scripts", "gpu", "queue15_predictions.json")) as f:
        pred = json.load(f)
    assert pred["written_before_the_call"] and pred["kernel_gap_s_queue"] == serving.null_kernel_s()
    t = pred["steps_s"]["w1-single-1B-s8192-mb1|NVIDIA H100 80GB HBM3|op-by-op"]
    row = t[pred["paces"].index(90_000)]
    # the engine of today falls as the host slows: 319 ms at 30 us added, 268 ms at 50 us
    assert row[pred["added_us"].index(30)] > row[pred["added_us"].index(50)] + 0.04
    q = pred["steps_s"]["w1-single-1B-s8192-mb1|NVIDIA H100 80GB HBM3|queue"][pred["paces"].index(90_000)]
    assert all(b >= a for a, b in zip(q, q[1:]))
    assert steptime.HOST_RULE == "op-by-op"  # the engine's default is unchanged by this record
    assert statistics.median(row) > 0
