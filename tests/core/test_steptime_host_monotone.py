"""Where a slower host makes the engine's step faster (mono14): a known defect, pinned.

A slower vCPU delays every launch; no kernel can start earlier for it, so a step should never fall as the host's pace
falls. The engine's does, at one place only: where a pass's host time crosses its device time the pass switches from
the op-by-op rule (each op the longer of its host and device time, a sum above both totals) to the host time alone
(:func:`mlcalc.steptime._passes`). These tests hold the engine to that: over the pace grid the metered predictions are
written on (scripts/gpu/predict_meter12.py: 40,000 to 180,000 runs a second), under both metered rules (every host
constant scaled, and the launch floor held fixed), the step never rises with the pace except between two paces where
some pass changes side; and they pin the drops the scan found (scripts/host_monotone_scan.py), so a change that
removes them has to say so here. The monotone rules that would remove them cost accuracy (steptime's comment there).
"""

from __future__ import annotations

import dataclasses

import pytest

from mlcalc import distruns, steptime

H100, H200 = "NVIDIA H100 80GB HBM3", "NVIDIA H200"
PACES = range(40_000, 180_001, 1_000)

# (case id in the record, card): layouts whose step fell somewhere as the host slowed (the scan of every
# configuration on both cards), and one that did not (FSDP 2 x TP 2)
LAYOUTS = [
    ("w2-fsdp2-8B-s2048-mb1-ac", H200),
    ("w2-fsdp2-3B-s4096-mb1-ac-mg-meter", H100),
    ("w2-fsdp2-1B-s2048-mb4", H100),
    ("w1-single-3B-s2048-mb1-ac", H200),
    ("w2-tp2-3B-s8192-mb1", H200),
    ("w4-fsdp4-8B-s2048-mb2-ac", H100),
    ("w4-fsdp2xtp2-8B-s2048-mb2-ac", H200),
]


def _case(case_id, card):
    c = next(c for r in distruns.runs() for c in distruns.cases(r) if c.id == case_id)
    return dataclasses.replace(c, device=card)


def _sides(c, pace, fixed):
    """Which passes of the case's (only) stage are host-bound at a pace: (forward, backward)."""
    lay = distruns.layout(c)
    m = distruns.paced_machine(c.device, pace, distruns.STATED_PACE, fixed)
    st = steptime._stage_kernels(c.model, m, c.micro_batch, c.seq_len, c.recompute, steptime.HF_EXPERTS_IN_FP32,
                                 c.tp, 1, 1, c.model.n_layers, True, lay.sequence_parallel and c.tp > 1, "eager", False,
                                 c.dp > 1, False, c.recompute)
    return tuple(st.host_s[ph] >= sum(v for k, v in st.device_s.items() if k.startswith(ph))
                 for ph in ("forward", "backward"))


@pytest.mark.parametrize("fixed", ["scaled", "launch floor"])
@pytest.mark.parametrize("spec", LAYOUTS, ids=lambda s: f"{s[0]}-{s[1][7:11]}")
def test_the_step_falls_with_a_slower_host_only_where_a_pass_crosses(spec, fixed):
    c = _case(*spec)
    assert c.pp == 1  # one stage: its passes are the step's
    fx = distruns.launch_floor_s() if fixed == "launch floor" else 0.0
    steps = [distruns.predict_paced(c, p, distruns.STATED_PACE, fx) for p in PACES]
    assert steps[0] > steps[-1]  # the grid spans a slow and a fast host
    for p, a, b in zip(PACES, steps, steps[1:]):
        if b > a * (1 + 1e-12):  # faster host, longer step
            assert _sides(c, p, fx) != _sides(c, p + 1_000, fx), f"the step rises with the pace at {p} runs/s"


def test_the_drops_the_scan_found():
    fx = distruns.launch_floor_s()

    def ms(case_id, card, pace, fixed=fx):
        return 1e3 * distruns.predict_paced(_case(case_id, card), pace, distruns.STATED_PACE, fixed)

    # Llama 3 8B FSDP 2, 1 x 2,048 checkpointed on H200: 502 ms at 54,000 runs/s, 383 ms at 53,000 (launch floor)
    assert ms("w2-fsdp2-8B-s2048-mb1-ac", H200, 54_000) == pytest.approx(502.4, abs=0.5)
    assert ms("w2-fsdp2-8B-s2048-mb1-ac", H200, 53_000) == pytest.approx(382.9, abs=0.5)
    # host7c's rule (every constant scaled): 384 ms at 60,000 against 406 at 90,000 (h100mg's finding)
    assert ms("w2-fsdp2-8B-s2048-mb1-ac", H200, 60_000, 0.0) < ms("w2-fsdp2-8B-s2048-mb1-ac", H200, 90_000, 0.0)
    # h100mg's FSDP 2 Llama-3.2 3B at 1 x 4,096 checkpointed on H100: 387 ms at 60,000 against 397 at 90,000
    assert ms("w2-fsdp2-3B-s4096-mb1-ac-mg-meter", H100, 60_000) == pytest.approx(387.1, abs=0.5)
    assert ms("w2-fsdp2-3B-s4096-mb1-ac-mg-meter", H100, 90_000) == pytest.approx(396.5, abs=0.5)
    # the largest: TP 2 Llama-3.2 3B at 1 x 16,384 checkpointed on H200, 1,209 ms at 84,000, 851 at 83,000
    assert ms("w2-tp2-3B-s16384-mb1-ac", H200, 84_000) == pytest.approx(1209.3, abs=0.5)
    assert ms("w2-tp2-3B-s16384-mb1-ac", H200, 83_000) == pytest.approx(851.0, abs=0.5)


def test_a_one_gpu_step_falls_once_per_pass_as_the_host_slows():
    """The one-GPU rule (:func:`mlcalc.steptime.step_time`, Llama-3.2 3B at 1 x 2,048 checkpointed on the H200 run's
    machine) with every host constant multiplied by 1.00 to 4.00: it falls once for each pass that crosses."""
    from mlcalc import hfruns

    base = hfruns.machine("h200x2-2026-11-26-train-hf-run2")
    m = _case(*LAYOUTS[3]).model
    steps = []
    for i in range(100, 401):
        k = i / 100
        mk = base._replace(host_s_per_op=base.host_s_per_op * k, host_s_per_backward_op=base.host_s_per_backward_op * k,
                           host_s_per_checkpoint=base.host_s_per_checkpoint * k)
        steps.append(steptime.step_time(m, 1, 2048, True, mk).total_s)
    falls = [i for i, (a, b) in enumerate(zip(steps, steps[1:])) if b < a * (1 - 1e-12)]
    assert 1 <= len(falls) <= 2 and steps[-1] > steps[0]
