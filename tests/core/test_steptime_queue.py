"""The launch-queue rule of a pass (queue15, :func:`mlcalc.steptime._queue_pass`).

Checked against a plain op-by-op simulation of the queue (end_i = max(issue_i, end_(i-1)) + device_i), for
monotonicity in the host's pace, and, under ``HOST_RULE = "queue"``, for every one-stage layout of the multi-GPU
record over the pace grid the metered predictions use (40,000 to 180,000 runs a second, both metered rules): a slower
host never makes the step shorter.
"""

from __future__ import annotations

import dataclasses
import random

import pytest

from mlcalc import distruns, serving, steptime


def _simulate(per_op, ckpt, matmuls, att, ew, n_layers, backward, gap):
    """The queue op by op, in the order :func:`_queue_pass` states (integer counts only)."""
    L = n_layers
    inside = [(c // L, d + gap) for c, d in matmuls if c % L == 0]
    outside = [(c, d + gap) for c, d in matmuls if c % L != 0]
    big = inside[: (len(inside) + 1) // 2] + [(att[0] // L, att[1] + gap)] + inside[(len(inside) + 1) // 2:]
    if backward:
        big.reverse()
    chunk = ew[0] // L // len(big)
    seq = []  # (host seconds, device seconds) per op
    if backward:
        seq += [(per_op, d) for n, d in outside for _ in range(n)]
    for _ in range(L):
        seq.append((ckpt, None))
        for n, d in big:
            seq += [(per_op, ew[1] + gap)] * chunk + [(per_op, d)] * n
    if not backward:
        seq += [(per_op, d) for n, d in outside for _ in range(n)]
    t = e = 0.0
    for h, d in seq:
        t += h
        if d is not None:
            e = max(t, e) + d
    return max(t, e)


@pytest.mark.parametrize("seed", range(40))
def test_closed_form_is_the_queue_op_by_op(seed, monkeypatch):
    rng = random.Random(seed)
    L = rng.randint(1, 6)
    gap = rng.choice([0.0, 3e-6])
    monkeypatch.setattr(steptime, "KERNEL_GAP_S", gap)
    matmuls = [(L * rng.randint(1, 3), rng.uniform(1e-6, 400e-6)) for _ in range(rng.randint(1, 6))]
    matmuls.append((1, rng.uniform(1e-6, 900e-6)))  # the output layer: outside the layers
    n_big = sum(1 for c, _ in matmuls if c % L == 0) + 1  # the layer's products and its attention
    att = (L * rng.randint(1, 2), rng.uniform(1e-6, 500e-6))
    ew = (L * n_big * rng.randint(1, 8), rng.uniform(0.5e-6, 60e-6))
    per_op, ckpt = rng.uniform(0.0, 80e-6), rng.choice([0.0, rng.uniform(0.0, 500e-6)])
    for backward in (False, True):
        got = steptime._queue_pass(per_op, ckpt, matmuls, att, ew, L, backward)
        want = _simulate(per_op, ckpt, matmuls, att, ew, L, backward, gap)
        assert got == pytest.approx(want, rel=1e-9, abs=1e-12)


def test_a_pass_is_monotone_in_the_hosts_time_and_meets_both_totals():
    matmuls, att, ew, L = [(32, 300e-6), (64, 120e-6), (1, 2e-3)], (16, 250e-6), (16 * 3 * 40, 4e-6), 16
    steps = [steptime._queue_pass(i * 0.5e-6, 0.0, matmuls, att, ew, L) for i in range(200)]
    assert all(b >= a for a, b in zip(steps, steps[1:]))
    n_ops = 32 + 64 + 1 + 16 + 16 * 3 * 40
    device = 32 * 300e-6 + 64 * 120e-6 + 2e-3 + 16 * 250e-6 + 16 * 3 * 40 * 4e-6
    assert steps[0] == pytest.approx(device)  # an instant host: the device's sum
    far = steptime._queue_pass(1e-3, 0.0, matmuls, att, ew, L)  # a slow host: its time and the last kernel
    assert far == pytest.approx(n_ops * 1e-3 + 2e-3)
    assert all(s >= max(device, i * 0.5e-6 * n_ops) - 1e-15 for i, s in enumerate(steps))


H100, H200 = "NVIDIA H100 80GB HBM3", "NVIDIA H200"


def _layouts():
    seen, out = set(), []
    for r in distruns.runs():
        for c in distruns.cases(r):
            key = distruns.config(c)[:-1]
            if key not in seen:
                seen.add(key)
                out.append(c)
    return out


@pytest.mark.parametrize("card", [H100, H200])
def test_the_queue_rule_never_falls_as_the_host_slows(card, monkeypatch):
    """Every configuration of the multi-GPU record (one-GPU, FSDP, TP, pipeline, FSDP x TP), both metered rules."""
    monkeypatch.setattr(steptime, "HOST_RULE", "queue")
    monkeypatch.setattr(steptime, "KERNEL_GAP_S", serving.null_kernel_s())
    steptime._stage_kernels_of.cache_clear()
    distruns.predict_paced.cache_clear()
    try:
        n = 0
        for c0 in _layouts():
            c = dataclasses.replace(c0, device=card)
            for fx in (0.0, distruns.launch_floor_s()):
                steps = [distruns.predict_paced(c, p, distruns.STATED_PACE, fx) for p in range(40_000, 180_001, 4_000)]
                rises = [(p, a, b) for p, a, b in zip(range(40_000, 180_001, 4_000), steps, steps[1:])
                         if b > a * (1 + 1e-12)]
                assert not rises, f"{c.id} on {card}: the step rises with the pace at {rises[:2]}"
                n += 1
        assert n >= 100
    finally:
        steptime._stage_kernels_of.cache_clear()
        distruns.predict_paced.cache_clear()
