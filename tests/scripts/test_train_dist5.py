"""The dist5 parts of scripts/gpu/train_dist.py (no torch needed): the launch conditions, where a rank's threads are
placed, the per-thread host meter, and the predictions committed before each call."""

import json
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
GPU = os.path.join(os.path.dirname(os.path.dirname(HERE)), "scripts", "gpu")
sys.path.insert(0, GPU)

import train_dist  # noqa: E402


def test_every_case_and_condition_was_predicted_before_its_call():
    for sweep, f in (("dist5", "dist5_predictions.json"), ("dist5b", "dist5b_predictions.json")):
        pred = json.load(open(os.path.join(GPU, f)))["cards"]
        want = {f"{c['id']}-{v}" for c in train_dist.SWEEPS[sweep]() for v in train_dist.variant_names(c)}
        assert set(pred["NVIDIA H200"]) == set(pred["NVIDIA H100 80GB HBM3"]) == want


def test_launch_conditions():
    assert train_dist.variant_names({"variants": True}) == train_dist.VARIANTS
    assert train_dist.variant_names({"variants": ["base", "apart"]}) == ("base", "apart")
    tiny = train_dist.tiny_cases(train_dist.dist5b_cases())
    assert [train_dist.variant_names(c) for c in tiny] == [train_dist.PLACEMENTS] * 2 + [train_dist.PLACEMENTS[:2]]
    assert len({c["id"] for c in tiny}) == len(tiny)


def test_thread_classes():
    assert train_dist.thread_class("python3", 7, 7) == "main"
    assert train_dist.thread_class("pt_autograd_0", 8, 7) == "autograd"
    assert train_dist.thread_class("NCCL Progress", 9, 7) == "nccl"
    assert train_dist.thread_class("cuda-EvtHandlr", 10, 7) == "other"


# "apart": each rank's busy threads on a core of its own, never the speedometer's, never where the light threads are;
# "clash": the two ranks of a launch on the two vCPUs of one group.
def test_placement():
    groups = [[0, 16], [1, 17], [2, 18], [3, 19], [4, 20], [5, 21], [6, 22], [7, 23]]
    reserved = {7}
    busy = [train_dist.placement("apart", g, g, groups, reserved) for g in range(4)]
    cores = [b for b, _ in busy]
    assert len({min(b) for b in cores}) == 4
    for b, light in busy:
        assert not b & light and not b & reserved and 0 not in b
    a, b = (train_dist.placement("clash", s, s, groups, reserved)[0] for s in (0, 1))
    assert a != b and any(set(g) == a | b for g in groups)
    lone = [[c] for c in range(8)]
    a, b = (train_dist.placement("clash", s, s, lone, set())[0] for s in (0, 1))
    assert a == b  # no core with two vCPUs: both ranks on one


def test_host_meter_delta():
    m = train_dist.HostMeter()
    try:
        m.names = {1: "python3", 2: "pt_autograd_0", 3: "NCCL Service"}
        m.main_tid = 1
        a = {"t": 0.0, "th": {1: (0, 0), 2: (0, 0), 3: (0, 0)}, "stat": {"busy": 0, "idle": 0, "steal": 0},
             "gc_s": [0.0, 0.0, 0.0], "gc_n": [0, 0, 0]}
        b = {"t": 0.5, "th": {1: (2e8, 1e6), 2: (3e8, 0), 3: (1e6, 0)}, "stat": {"busy": 100, "idle": 50, "steal": 2},
             "gc_s": [0.001, 0.0, 0.15], "gc_n": [3, 0, 1]}
        d = m.delta(a, b)
        assert d["cpu_main_s"] == pytest.approx(0.2) and d["cpu_autograd_s"] == pytest.approx(0.3)
        assert d["runq_main_s"] == pytest.approx(0.001) and d["cpu_nccl_s"] == pytest.approx(0.001)
        assert d["vm_steal_s"] == pytest.approx(0.02) and d["threads_busy_20pct"] == 2
        assert d["gc_n"] == [3, 0, 1] and d["gc_s"][2] == pytest.approx(0.15)
    finally:
        m.close()


# ---- dist6: the metered conditions (each rank's busy threads on one vCPU whose pace pacemeter.py samples)


@pytest.mark.parametrize("sweep", ["dist6", "dist6b", "dist6c"])
def test_dist6_cases_were_predicted_before_the_call_with_the_rule(sweep):
    d = json.load(open(os.path.join(GPU, f"{sweep}_predictions.json")))
    want = {f"{c['id']}-{v}" for c in train_dist.SWEEPS[sweep]() for v in train_dist.variant_names(c)}
    assert set(d["cards"]["NVIDIA H200"]) == set(d["cards"]["NVIDIA H100 80GB HBM3"]) == want
    assert "smallest over its ranks" in d["metered_rule"] or "slowest" in d["metered_rule"]
    assert {v for c in train_dist.dist6_cases() for v in train_dist.variant_names(c)} == set(
        train_dist.METER_CONDITIONS)


def test_meter_cpus(monkeypatch):
    allowed = set(range(32))
    monkeypatch.setenv("METER_CPUS", "6,12")
    monkeypatch.setenv("METER_LIGHT", "24,25")
    assert train_dist.meter_cpus(0, allowed) == ({6}, {24, 25})
    assert train_dist.meter_cpus(1, allowed) == ({12}, {24, 25})
    monkeypatch.delenv("METER_LIGHT")
    busy, light = train_dist.meter_cpus(1, allowed)
    assert busy == {12} and light == set(range(24, 32))
    busy, light = train_dist.meter_cpus(0, {0, 1})  # a small box: a vCPU it has, the others light
    assert busy <= {0, 1} and light and not (busy & light and len(light) > 1)


def test_pacemeter_sample():
    import pacemeter

    runs, cpu = pacemeter.sample(5)
    assert runs == 5 and cpu > 0


# ---- meter12: the six blind misses' configurations and five new tensor-parallel ones, metered; predicted before


def test_meter12_cases_were_predicted_before_the_call_with_the_rule():
    d = json.load(open(os.path.join(GPU, "meter12_predictions.json")))
    cases = train_dist.meter12_cases()
    want = {f"{c['id']}-{v}" for c in cases for v in train_dist.variant_names(c)}
    assert set(d["cards"]["NVIDIA H200"]) == set(d["cards"]["NVIDIA H100 80GB HBM3"]) == want
    for fam, w in (("train-2gpu", 2), ("train-4gpu", 4)):
        for card in ("NVIDIA H200", "NVIDIA H100 80GB HBM3"):
            rows = d["families"][fam][card]
            assert set(rows) == {k for k in want if k.startswith(f"w{w}-")}
            for r in rows.values():  # the metered rule at every pace: slower with a slower host, never faster
                paced = r["paced_step_s"]
                assert len(paced) == len(d["paces"]) and all(a >= b for a, b in zip(paced, paced[1:]))
    assert set(d["repeat_cases"]) <= want and len(d["repeat_cases"]) == 5
    assert "record_step_s" in d["metered_rule"] and "paced_blocks" in d["metered_rule"]
    # the 2-GPU cases run as two launches side by side; every 4-GPU case in one
    assert {c.get("lane", "") for c in cases if c["world"] == 2} == {"a", "b"}
    assert all("lane" not in c for c in cases if c["world"] == 4)
    assert [c.get("lane") for c in train_dist.tiny_cases(cases)] == [c.get("lane") for c in cases]


# ---- h100mg: the first 2-GPU sweep asked of H100s (FSDP2, TP 2, 1F1B pipeline), metered; predicted before the call


def test_h100mg_cases_were_predicted_before_the_call_with_both_rules():
    d = json.load(open(os.path.join(GPU, "h100mg_predictions.json")))
    cases = train_dist.h100mg_cases()
    want = {f"{c['id']}-{v}" for c in cases for v in train_dist.variant_names(c)}
    assert set(d["cards"]["NVIDIA H200"]) == set(d["cards"]["NVIDIA H100 80GB HBM3"]) == want
    assert set(d["families"]) == {"train-2gpu"}
    for card in ("NVIDIA H200", "NVIDIA H100 80GB HBM3"):
        for r in d["families"]["train-2gpu"][card].values():
            assert len(r["paced_step_s"]) == len(r["paced_step_s_scaled"]) == len(d["paces"])
    assert "record_step_s" in d["metered_rule"] and "paced_blocks" in d["metered_rule"]
    # every layout on 2 GPUs, checkpointing off and on, at least two models and two lengths
    assert {c["layout"] for c in cases} == {"fsdp2", "tp2", "pp2-1f1b"} and {c["world"] for c in cases} == {2}
    assert {c["recompute"] for c in cases} == {False, True}
    assert len({c["model"]["name"] for c in cases}) >= 2 and len({c["seq_len"] for c in cases}) >= 2
    # the baseline is meter12's case unchanged (the same id, model and shape), so the hosts compare case for case
    m12 = {c["id"]: c for c in train_dist.meter12_cases()}
    for b in train_dist.H100MG_BASELINE:
        (mine,) = [c for c in cases if c["id"] == b]
        assert {k: v for k, v in mine.items() if k != "lane"} == {k: v for k, v in m12[b].items() if k != "lane"}
        assert f"{b}-meter" in d["baseline_cases"]
    # every case fits an 80 GB card by the engine's own peak (the 8B under FSDP2 the fullest)
    peaks = {k: r["peak_bytes"] for k, r in d["cards"]["NVIDIA H100 80GB HBM3"].items()}
    assert max(peaks.values()) < 79 * 2**30 and max(peaks, key=peaks.get).startswith("w2-fsdp2-8B")
