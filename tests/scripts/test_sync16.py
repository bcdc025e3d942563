"""The sync16 call (issue 24): the four configurations the launch-queue rule predicts too fast, profiled again.

Before the call: its sweep repeats each configuration exactly as the record ran it, and the predictions and the
scoring rule it is held to are in the repository (``scripts/gpu/sync16_predictions.json``, written by
``scripts/gpu/predict_sync16.py``). The engine's default does not move here.
"""

from __future__ import annotations

import json
import os

import pytest

from mlcalc import distruns, steptime
from tests.scripts._gpu import GPU
from tests.scripts._gpu import load as _load



@pytest.fixture(scope="module")
def preds():
    with open(os.path.join(GPU, "sync16_predictions.json")) as f:
        return json.load(f)


def test_the_sweep_repeats_the_records_configurations(preds):
    td = _load("train_dist")
    swept = {c["id"]: c for c in td.sync16_cases()}
    assert set(swept) == set(preds["configs"])
    for cid, ref in preds["configs"].items():
        c = swept[cid]
        (old,) = [x for x in distruns.cases(ref["run"]) if x.id == ref["case"]]
        assert c["model"]["name"] == old.model.name and c["model"]["n_layers"] == old.model.n_layers
        assert (c["world"], c["dp"], c["tp"], c["pp"], c["micro_batch"], c["seq_len"], c["recompute"]) == (
            old.world, old.dp, old.tp, old.pp, old.micro_batch, old.seq_len, old.recompute)
        assert c.get("probe") is True  # every configuration profiled


def test_the_predictions_were_written_for_both_cards_and_rules(preds):
    assert preds["written_before_the_call"] is True
    ks = preds["host_factors"]
    assert ks[0] == 0.5 and ks[-1] == 3.0 and 1.0 in ks
    i = ks.index(1.0)
    for cid in preds["configs"]:
        for card in ("NVIDIA H100 80GB HBM3", "NVIDIA H200"):
            q, o = preds["grid"][f"{cid}|{card}|queue"], preds["grid"][f"{cid}|{card}|op-by-op"]
            assert q["host_s"] == o["host_s"] and q["device_s"] == o["device_s"]  # the rule moves only the step
            assert all(b >= a for a, b in zip(q["step_s"], q["step_s"][1:]))  # the queue: monotone in the host
            assert all(b >= a for a, b in zip(q["host_s"], q["host_s"][1:]))
    # the queue's misses the call is for: on the H200 each configuration's queue step at k = 1 is below the record's
    for cid, ref in preds["configs"].items():
        (old,) = [x for x in distruns.cases(ref["run"]) if x.id == ref["case"]]
        assert preds["grid"][f"{cid}|NVIDIA H200|queue"]["step_s"][i] < 0.85 * old.step_s


def test_the_engine_default_is_unchanged():
    assert steptime.HOST_RULE == "op-by-op"


# ---- after the call (mlcalc/data/measured/h200x4-2026-11-28-sync16, 4 x H200): the record, pinned ----


@pytest.fixture(scope="module")
def scored():
    return _load("score_sync16").score()


def _row(scored, prefix):
    (r,) = [r for r in scored["rows"] if r["config"].startswith(prefix)]
    return r


def test_the_blind_verdict_no_candidate_holds(scored):
    v = scored["verdict_at_k"]
    assert v["mechanism"] == [] and v["held_on"] == {"a": 0, "b": 0, "h": 0}
    assert v["configs_with_positive_gap"] == 1  # only FSDP 4 8B is longer than the queue's step at k
    for r in scored["rows"]:
        assert r["k"] == pytest.approx(1.498, abs=0.001)  # the floor: 71.1 ms against the calibration run's 47.5
        assert r["card"] == "NVIDIA H200"
    errs = {r["config"][:12]: (r["at_k"]["queue_error"], r["at_k"]["op_by_op_error"]) for r in scored["rows"]}
    assert errs["w4-fsdp4-8B-"] == pytest.approx((-0.130, -0.175), abs=0.002)
    assert errs["w2-tp2-3B-s1"] == pytest.approx((0.441, 0.426), abs=0.002)


def test_at_the_engines_own_host_the_queue_holds_three_of_four(scored):
    """Not the rule (k = 1): the queue within 6 % on three configurations, FSDP 4 8B -15.4 %; op-by-op +43 % on TP 2 16k."""
    q = {r["config"][:12]: r["at_k1"]["queue_error"] for r in scored["rows"]}
    o = {r["config"][:12]: r["at_k1"]["op_by_op_error"] for r in scored["rows"]}
    assert q == pytest.approx({"w4-fsdp4-8B-": -0.154, "w2-fsdp2-Lla": -0.012, "w2-tp2-3B-s1": 0.057,
                               "w1-single-3B": 0.024}, abs=0.002)
    assert o["w2-tp2-3B-s1"] == pytest.approx(0.434, abs=0.002)


def test_no_step_waits_for_the_device_inside_it(scored):
    """The only synchronising call of a profiled step is the harness's cudaDeviceSynchronize after it."""
    for r in scored["rows"]:
        assert max(r["in_step_sync_s_per_rank"]) < 0.5e-3
        assert min(r["blocked_s_per_rank"]) > 5e-3  # what the committed window counted: that synchronize


def test_fsdp_kernels_beside_nccl_are_slower_than_alone(scored):
    four = [x["slowdown"] for x in _row(scored, "w4-fsdp4")["beside_nccl_per_rank"]]
    two = [x["slowdown"] for x in _row(scored, "w2-fsdp2")["beside_nccl_per_rank"]]
    assert len(four) == 4 and 0.40 < min(four) and max(four) < 0.95
    assert len(two) == 2 and 0.15 < min(two) and max(two) < 0.22  # beside overlap15's uniform +22.2 %
    # the FSDP 4 8B step is the device's: its compute kernels are busy well past the engine's device total
    r = _row(scored, "w4-fsdp4")
    assert min(r["compute_busy_s_per_rank"]) > 1.15 * r["at_k1"]["device_total_s"]


def test_the_probes_blocked_time_stops_when_the_step_returns():
    """train_dist.trace_summary: a synchronising call inside the step counts, the harness's synchronize after the
    step's annotation ends does not, though the issue time (timed from before the annotation) reaches into it."""
    td = _load("train_dist")
    ev = [{"cat": "user_annotation", "name": "probe_step_1", "ts": 0.0, "dur": 1000.0},
          {"cat": "cuda_runtime", "name": "cudaStreamSynchronize", "ts": 500.0, "dur": 200.0},
          {"cat": "cuda_runtime", "name": "cudaDeviceSynchronize", "ts": 1005.0, "dur": 5000.0}]
    (s,) = td.trace_summary(ev, [{"name": "probe_step_1", "wall_s": 0.007, "issue_s": 0.0011}])
    assert s["host_blocked_s"] == pytest.approx(200e-6)


def test_the_queue_with_overlap15s_rule_holds_the_four_on_this_host(monkeypatch):
    """After the call, labelled: with steptime.COLLECTIVE_INTERFERENCE (overlap15's rule, landed before the call, off)
    and the queue rule at the engine's own host constants (k = 1), all four within 8 % (FSDP 4 8B -15.4 -> -7.1 %);
    today's default (op-by-op, the rule off) misses TP 2 16k by +43 %."""
    ps = _load("predict_sync16")
    measured = {"w4-fsdp4-8B-s2048-mb1-s16": 0.3243, "w2-fsdp2-Llama2-7B-s2048-mb1-ac-s16": 0.3564,
                "w2-tp2-3B-s16384-mb1-ac-s16": 0.8198, "w1-single-3B-s2048-mb1-ac-s16": 0.2016}
    monkeypatch.setattr(steptime, "COLLECTIVE_INTERFERENCE", True)
    q = {cid: ps.totals(run, rid, "NVIDIA H200", "queue", 1.0)[0] / measured[cid] - 1 for cid, run, rid in ps.CONFIGS}
    assert max(abs(e) for e in q.values()) < 0.08
    assert q["w4-fsdp4-8B-s2048-mb1-s16"] == pytest.approx(-0.071, abs=0.003)
    monkeypatch.setattr(steptime, "COLLECTIVE_INTERFERENCE", False)
    o = {cid: ps.totals(run, rid, "NVIDIA H200", "op-by-op", 1.0)[0] / measured[cid] - 1 for cid, run, rid in ps.CONFIGS}
    assert o["w2-tp2-3B-s16384-mb1-ac-s16"] == pytest.approx(0.434, abs=0.003)
    assert sum(abs(e) <= 0.15 for e in o.values()) == 3
