"""Blind predictions for the sync16 call (scripts/gpu/run_sync16.sh), written before it ran.

The call runs again, and profiles, the four configurations the launch-queue rule (``steptime.HOST_RULE = "queue"``,
queue15) predicts more than 15 % too fast, each measured step longer than both the engine's host total and its device
total (train_dist.py --sweep sync16; the record's runs: dist4's FSDP 4 Llama 3 8B at 1 x 2048, heldout's FSDP 2
Llama 2 7B at 1 x 2048 checkpointed, blind10's TP 2 Llama 3.2 3B at 1 x 16,384 checkpointed, host7c's one-GPU
Llama 3.2 3B at 1 x 2048 checkpointed). For each configuration, each card that may come (H100 or H200) and each host
rule (``op-by-op``: the engine's default; ``queue``: the launch queue with a device gap of
:func:`mlcalc.serving.null_kernel_s` a kernel), on a grid of a host factor k (every host constant of the card's
machine, :func:`mlcalc.distruns.machine`, times k): the step, the host total (the passes' host seconds, every
micro-batch) and the device total (kernels, optimizer, exposed communication). The call is unmetered; its host's
speed is measured by the engine's calibration floor (train_hf.py --floor, Llama-3.2 1B at 1 x 64 tokens, without
checkpointing) against the same floor of the card's calibration run (:data:`mlcalc.distruns.MACHINE_RUN`): k is
their ratio, as blind10 stated its host (75.0 against 47.5 ms).

How the call is scored (fixed here, before it; scripts/gpu/score_sync16.py): per configuration, the step is the
median over timed steps of the slowest rank's step, a rank's issue time the median of its own; r* is the rank with
the largest issue time. The queue rule's step S(k), host total H(k) and device total D at the call's k
(interpolated linearly on the grid); gap = step - S(k). From the profiled steps (all but the first) of r*:
``blocked`` = the seconds of CUDA runtime calls that wait for the device (cudaStreamSynchronize,
cudaDeviceSynchronize, cudaEventSynchronize, cudaMemcpy; cudaMemcpyAsync, cudaMalloc and cudaFree calls longer than
100 us) that start while the host issues the step, median over the profiled steps. Three candidates, each held or
not on each configuration with a positive gap:
  (a) the host waits for the device inside the step (a sync point drains the queue): blocked >= gap / 2;
  (b) with several ranks, one rank's host sets the others' pace segment by segment: on every rank the NCCL kernels'
      busy time exceeds the engine's collective time (hidden or not) by more than 34 % of it (the most overlap15b
      measured a collective slow beside compute) plus gap / 2 (multi-GPU configurations only);
  (h) the host does more work than the engine prices at its measured speed: r*'s timed issue time less blocked
      exceeds H(k) by gap / 2 or more.
A candidate is the mechanism if it holds on at least 3 of the 4 configurations ((b): 2 of the 3 multi-GPU ones).
The steps' errors under both rules at k are the call's blind record.

    .venv/bin/python scripts/gpu/predict_sync16.py   (writes scripts/gpu/sync16_predictions.json, ~1 min)
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from mlcalc import distruns, serving, steptime

#: (configuration id in the sync16 sweep, the record's run and case id it repeats)
CONFIGS = (("w4-fsdp4-8B-s2048-mb1-s16", "h200x4-2026-11-26-train-dist4", "w4-fsdp4-8B-s2048-mb1"),
           ("w2-fsdp2-Llama2-7B-s2048-mb1-ac-s16", "h200x2-2026-11-26-train-dist-heldout",
            "w2-fsdp2-Llama2-7B-s2048-mb1-ac"),
           ("w2-tp2-3B-s16384-mb1-ac-s16", "h200x2-2026-11-27-blind10", "w2-tp2-3B-s16384-mb1-ac"),
           ("w1-single-3B-s2048-mb1-ac-s16", "h200x4-2026-11-27-train-host7c", "w1-single-3B-s2048-mb1-ac-h7-meter"))
CARDS = ("NVIDIA H100 80GB HBM3", "NVIDIA H200")
RULES = ("op-by-op", "queue")
HOST_FACTORS = tuple(round(0.5 + 0.05 * i, 2) for i in range(51))  # 0.5 .. 3.0
PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sync16_predictions.json")


def _clear() -> None:
    for mod in (steptime, distruns):
        for v in vars(mod).values():
            if callable(getattr(v, "cache_clear", None)):
                v.cache_clear()


def _case(run: str, case_id: str, card: str) -> Any:
    c = next(c for c in distruns.cases(run) if c.id == case_id)
    return dataclasses.replace(c, device=card)


def totals(run: str, case_id: str, card: str, rule: str, k: float) -> tuple[float, float, float]:
    """(step, host total, device total) of a configuration on a card under a rule, every host constant times k."""
    c = _case(run, case_id, card)
    old = steptime.HOST_RULE, steptime.KERNEL_GAP_S, steptime._passes
    seen: list[Any] = []

    def spy(*a: Any, **kw: Any) -> Any:
        r = old[2](*a, **kw)
        seen.append(r)
        return r

    steptime.HOST_RULE, steptime.KERNEL_GAP_S = rule, (serving.null_kernel_s() if rule == "queue" else 0.0)
    steptime._passes = spy
    _clear()
    try:
        m = distruns.machine(c)
        m = m._replace(**{f: getattr(m, f) * k for f in m._fields if f.startswith("host_s_per")})
        p = steptime.predict_step(c.model, distruns.layout(c), seq_len=c.seq_len, machine=m, gpus_per_node=8,
                                  engine="eager")
    finally:
        steptime.HOST_RULE, steptime.KERNEL_GAP_S, steptime._passes = old
        _clear()
    st = max(seen, key=lambda s: s.host_s["forward"] + s.host_s["backward"])  # the fullest stage's passes
    host = c.n_micro * (st.host_s["forward"] + st.host_s["backward"])
    return p.step_s, host, p.compute_s + p.optimizer_s + p.comm_exposed_s


def comm_total(run: str, case_id: str, card: str) -> float:
    """The engine's collective seconds of a step, hidden or not (the card's machine)."""
    c = _case(run, case_id, card)
    _clear()
    return steptime.predict_step(c.model, distruns.layout(c), seq_len=c.seq_len, machine=distruns.machine(c),
                                 gpus_per_node=8, engine="eager").comm_s


def main() -> int:
    out: dict[str, Any] = {"written_before_the_call": True, "host_factors": list(HOST_FACTORS),
                           "kernel_gap_s_queue": serving.null_kernel_s(), "machine_runs": dict(distruns.MACHINE_RUN),
                           "configs": {cid: {"run": run, "case": rid} for cid, run, rid in CONFIGS},
                           "comm_total_s": {}, "grid": {},
                           "scoring": {"blocked_calls": ["cudaStreamSynchronize", "cudaDeviceSynchronize",
                                                         "cudaEventSynchronize", "cudaMemcpy"],
                                       "blocked_if_longer_than_s": {"cudaMemcpyAsync": 100e-6, "cudaMalloc": 100e-6,
                                                                    "cudaFree": 100e-6},
                                       "a_blocked_over_gap": 0.5, "b_collective_slowdown": 0.34, "b_over_gap": 0.5,
                                       "h_over_gap": 0.5, "holds_on": 3, "b_holds_on": 2,
                                       "floor_case": {"model": "Llama-3.2 1B", "recompute": False}}}
    for cid, run, rid in CONFIGS:
        for card in CARDS:
            out["comm_total_s"][f"{cid}|{card}"] = round(comm_total(run, rid, card), 6)
            for rule in RULES:
                rows = [totals(run, rid, card, rule, k) for k in HOST_FACTORS]
                out["grid"][f"{cid}|{card}|{rule}"] = {"step_s": [round(r[0], 6) for r in rows],
                                                       "host_s": [round(r[1], 6) for r in rows],
                                                       "device_s": [round(r[2], 6) for r in rows]}
    with open(PATH, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    for key, g in out["grid"].items():
        i = HOST_FACTORS.index(1.0)
        print(f"{key:70s} k=1: step {g['step_s'][i] * 1e3:7.1f} host {g['host_s'][i] * 1e3:7.1f} "
              f"device {g['device_s'][i] * 1e3:7.1f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
