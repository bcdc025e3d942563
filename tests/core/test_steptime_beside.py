"""Kernels beside an overlapped collective (overlap15, issue 24): steptime.beside_collective_factor and the option
steptime.COLLECTIVE_INTERFERENCE (off by default).

NCCL runs one block per ring channel, 24 on an H100 or H200 node (network.nccl_ring_channels(18, 90); NCCL's INFO
log of 2 H200s: "24 coll channels", mlcalc/data/measured/h200x2-2026-11-27-overlap15/nccl_init.txt), of 132 SMs. The
rule is unmeasured here (overlap15's call hung before its first timing); these tests pin its arithmetic and what it
does to the multi-GPU record, both host rules.
"""

from __future__ import annotations

import pytest

from mlcalc import accuracy, blindruns, distruns, network, serving, steptime


def test_the_factor_is_the_sm_share_while_the_collective_lasts():
    blocks = network.nccl_ring_channels(18, 90).channels
    assert blocks == 24
    # the whole pass inside the collective: S / (S - C)
    assert steptime.beside_collective_factor(1.0, 0.1, blocks, 132) == pytest.approx(132 / 108)
    # a short collective: its seconds x C / S of work displaced, spread over the pass
    assert steptime.beside_collective_factor(0.01, 0.1, blocks, 132) == pytest.approx(1 + 0.01 * 24 / 132 / 0.1)
    assert steptime.beside_collective_factor(0.0, 0.1, blocks, 132) == 1.0
    assert steptime.beside_collective_factor(0.5, 0.0, blocks, 132) == 1.0
    assert steptime.beside_collective_factor(0.5, 0.1, 0, 132) == 1.0


@pytest.mark.parametrize("kw, name", [({"comm_s": -1.0}, "comm_s"), ({"device_s": float("nan")}, "device_s"),
                                      ({"blocks": 132}, "blocks"), ({"sms": 0}, "sms")])
def test_bad_input_names_the_parameter(kw, name):
    args = {"comm_s": 0.1, "device_s": 0.1, "blocks": 24, "sms": 132, **kw}
    with pytest.raises(ValueError, match=name):
        steptime.beside_collective_factor(**args)


def test_off_by_default():
    assert steptime.COLLECTIVE_INTERFERENCE is False
    assert steptime.HOST_RULE == "op-by-op"


def _record(monkeypatch, rule: str, on: bool) -> list[tuple[str, float]]:
    monkeypatch.setattr(steptime, "HOST_RULE", rule)
    monkeypatch.setattr(steptime, "KERNEL_GAP_S", serving.null_kernel_s() if rule == "queue" else 0.0)
    monkeypatch.setattr(steptime, "COLLECTIVE_INTERFERENCE", on)
    _clear()
    try:
        return [(f"{c.where}|{c.label}", c.predicted / c.observed - 1) for c in accuracy.cases("train-multigpu-step")]
    finally:
        _clear()


def _clear() -> None:
    """Every remembered answer of the modules the record goes through (they were computed under the other rule)."""
    for mod in (steptime, distruns, accuracy, blindruns):
        for v in vars(mod).values():
            if callable(getattr(v, "cache_clear", None)):
                v.cache_clear()


DIST4 = "h200x4-2026-11-26-train-dist4|Llama-3 8B, FSDP 4, 1 x 2048"
HELD = "h200x2-2026-11-26-train-dist-heldout|Llama-2 7B, FSDP 2, 1 x 2048, recomputed"
TP16K = "h200x2-2026-11-27-blind10|Llama-3.2 3B, TP 2, 1 x 16384, recomputed"


def _one(rec: list[tuple[str, float]], key: str) -> float:
    (v,) = [e for k, e in rec if k.startswith(key)]
    return v


def test_what_the_rule_does_to_the_multi_gpu_record(monkeypatch):
    """Measured on this commit (python -m mlcalc.accuracy, both host rules, the rule off and on): op-by-op 160 -> 160
    of 167, the queue 156 -> 158; under the queue the two FSDP cases it lost come back (FSDP 4 8B -19.5 -> -11.7 %,
    FSDP 2 7B checkpointed -16.2 -> -11.7 %), the tensor-parallel one (no overlapped collective) stays out."""
    for rule, off_n, on_n in (("op-by-op", 160, 160), ("queue", 156, 158)):
        off, on = _record(monkeypatch, rule, False), _record(monkeypatch, rule, True)
        assert len(off) == len(on) == 167
        assert sum(abs(e) <= 0.15 for _, e in off) == off_n
        assert sum(abs(e) <= 0.15 for _, e in on) == on_n
        assert _one(on, TP16K) == pytest.approx(_one(off, TP16K))
        for (k, a), (k2, b) in zip(off, on):  # the rule only ever slows a step
            assert k == k2 and b >= a - 1e-9
    q_off, q_on = _record(monkeypatch, "queue", False), _record(monkeypatch, "queue", True)
    assert _one(q_off, DIST4) == pytest.approx(-0.195, abs=0.002) and _one(q_on, DIST4) == pytest.approx(-0.117, abs=0.002)
    assert _one(q_off, HELD) == pytest.approx(-0.162, abs=0.002) and _one(q_on, HELD) == pytest.approx(-0.117, abs=0.002)


@pytest.mark.parametrize("card", ["NVIDIA H100 80GB HBM3", "NVIDIA H200"])
def test_the_queue_rule_with_the_slowdown_never_falls_as_the_host_slows(card, monkeypatch):
    """The factor depends on the collective's and the kernels' seconds, not the host's, and goes through the launch
    queue like any kernel time: every FSDP configuration of the multi-GPU record, both metered rules (the whole
    record, scripts/host_monotone_scan.py with both options set: 0 of 388 curves fall)."""
    import dataclasses

    from tests.core.test_steptime_queue import _layouts

    monkeypatch.setattr(steptime, "HOST_RULE", "queue")
    monkeypatch.setattr(steptime, "KERNEL_GAP_S", serving.null_kernel_s())
    monkeypatch.setattr(steptime, "COLLECTIVE_INTERFERENCE", True)
    _clear()
    try:
        n = 0
        for c0 in _layouts():
            if "fsdp" not in c0.id:
                continue
            c = dataclasses.replace(c0, device=card)
            for fx in (0.0, distruns.launch_floor_s()):
                paces = range(40_000, 180_001, 4_000)
                steps = [distruns.predict_paced(c, p, distruns.STATED_PACE, fx) for p in paces]
                rises = [(p, a, b) for p, a, b in zip(paces, steps, steps[1:]) if b > a * (1 + 1e-12)]
                assert not rises, f"{c.id} on {card}: the step rises with the pace at {rises[:2]}"
                n += 1
        assert n >= 20
    finally:
        _clear()
