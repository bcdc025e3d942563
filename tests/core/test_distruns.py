"""Multi-GPU training measured in this book against the step-time engine (issue 24, "Measured multi-GPU training").

Source of every measured number: mlcalc/data/measured/h200x2-2026-11-26-train-dist/ (scripts/gpu/train_dist.py on
2 x NVIDIA H200 joined by NVLink 4 (NV18), torch 2.11, NCCL 2.28.9; asked for 4 x H100, none was lent): FSDP2,
tensor parallel (sequence parallel) and pipeline (GPipe, 1F1B) training of Llama-shaped 1B, 3B and 8B models, and
the same program on one GPU. The engine (mlcalc.steptime.predict_step) sees only each case's model, layout and
sequence length and the card's machine measured on another day (mlcalc.hfruns): nothing is fitted to a case.
Where it misses the issue's targets (memory 10%, step 15%) the run's misses.json states why; these tests hold
that every miss has its cause written down, and pin the measurements the causes rest on.
"""

import statistics

import pytest

from mlcalc import distruns, steptime

RUN = "h200x2-2026-11-26-train-dist"
CASES = distruns.cases(RUN)


def test_the_run_covers_the_issue():
    multi = [c for c in CASES if c.world > 1]
    assert len(multi) >= 16 and len(CASES) == 24
    assert {c.family for c in multi} == {"fsdp", "tp", "pp"}
    assert {c.schedule for c in multi if c.pp > 1} == {"gpipe", "1f1b"}
    assert {c.model.name for c in CASES} == {"Llama-3.2 1B (untied)", "Llama-3.2 3B (untied)", "Llama-3 8B"}
    assert {c.seq_len for c in CASES} == {2048, 8192}
    assert {c.recompute for c in CASES} == {False, True}
    assert all(c.device == "NVIDIA H200" and c.total_memory_bytes == 150109880320 for c in CASES)
    assert all("torch 2.11.0" in c.software and "NCCL 2.28.9" in c.software for c in CASES)
    assert not distruns.failed(RUN)  # the two 8B cases gated on >100 GiB ran too: the cards were H200s


# PyTorch's count of the built model is mlcalc's count: the shards of FSDP and the stages of a pipeline add up to
# it; tensor parallel replicates the RMSNorm weights (2 per layer and the final one) on every rank.
def test_parameter_counts_match_the_built_models():
    for c in CASES:
        held = sum(c.params_local_per_rank)
        if c.tp > 1:
            norms = (2 * c.model.n_layers + 1) * c.model.hidden
            assert held == c.model.n_params() + (c.tp - 1) * norms, c.id
        else:
            assert held == c.model.n_params(), c.id


# After a step (gradients set to None) a rank holds its fp32 parameters and AdamW's two fp32 moments: 12 bytes per
# parameter (Loshchilov and Hutter 2019; PyTorch keeps exp_avg and exp_avg_sq in the parameter's dtype).
# The last pipeline stage holds more: torch.distributed.pipelining keeps each micro-batch's output (bf16 logits).
def test_memory_after_a_step_is_parameters_and_adamw_states():
    for c in CASES:
        for rank, (held, params) in enumerate(zip(c.after_step_bytes_per_rank, c.params_local_per_rank)):
            extra = 0.0
            if c.pp > 1 and rank == c.pp - 1:
                extra = c.n_micro * c.micro_batch * c.seq_len * c.model.vocab * 2.0
            assert held == pytest.approx(12.0 * params + extra, rel=0.03), (c.id, rank)


# The host-bound tensor-parallel runs: the same call measured the host time of one op on DTensors and on plain
# tensors (baseline.host_per_rank), and each TP step spends most of its time issuing work.
def test_dtensor_ops_cost_the_host_over_3_times_plain_ones():
    for rank in distruns.baseline(RUN, 2)["host_per_rank"]:
        assert rank["dtensor"]["fwd_s_per_op"] > 3 * rank["tensor"]["fwd_s_per_op"]
        assert rank["dtensor"]["bwd_s_per_node"] > 2.5 * rank["tensor"]["bwd_s_per_node"]
    assert all(c.issue_over_step > 0.9 for c in CASES if c.tp > 1)


def _id(c):
    return c.id


# Every run within the issue's targets, or its miss has a cause stated in the run's data.
@pytest.mark.parametrize("case", CASES, ids=_id)
def test_each_run_within_target_or_its_miss_has_a_stated_cause(case):
    chk = distruns.check(case)
    assert chk.step_pred_s > 0 and chk.memory_pred_bytes > 0
    if abs(chk.step_error) > distruns.STEP_TARGET:
        assert chk.step_cause and chk.step_cause != "(no cause stated)", (case.id, chk.step_error)
    if abs(chk.memory_error) > distruns.MEMORY_TARGET:
        assert chk.memory_cause and chk.memory_cause != "(no cause stated)", (case.id, chk.memory_error)


def test_summary_counts_the_cases_and_keeps_the_sign_of_the_worst():
    s = distruns.summary(RUN)
    errs = [distruns.check(c).step_error for c in CASES]
    assert s["cases"] == len(CASES)
    assert s["step_worst"] == max(errs, key=abs)
    assert s["step_within"] == sum(abs(e) <= distruns.STEP_TARGET for e in errs)


def test_bad_input_names_the_parameter():
    with pytest.raises(ValueError, match="run="):
        distruns.cases("no-such-run")
    with pytest.raises(ValueError, match="world="):
        distruns.baseline(RUN, 4)


# Peak memory per GPU is the program counted phase by phase (mlcalc.memory.eager_layout_peak): every measured case
# within the issue's 10%, FSDP2, tensor parallel, both pipeline schedules and one GPU alike.
@pytest.mark.parametrize("case", CASES, ids=_id)
def test_peak_memory_within_target_on_every_run(case):
    assert abs(distruns.check(case).memory_error) <= distruns.MEMORY_TARGET, case.id


# The fullest GPU of these pipelines is the last stage (the output layer, the loss, the kept outputs), as measured.
def test_the_fullest_pipeline_stage_is_the_last():
    for c in CASES:
        if c.pp > 1:
            assert c.peak_bytes_per_rank[-1] == max(c.peak_bytes_per_rank), c.id
            assert distruns.predict(c).memory_parts  # the stage and phase are named
            assert "stage 1" in memory_phase(c)


def memory_phase(c):
    from mlcalc import memory

    return memory.eager_layout_peak(c.model, c.micro_batch, c.seq_len, tp=c.tp, pp=c.pp, dp=c.dp, fsdp=c.dp > 1,
                                    sequence_parallel=c.tp > 1, recompute="full" if c.recompute else "none",
                                    schedule=c.schedule or "1f1b", n_micro=c.n_micro).phase


# Pipeline step time: each stage takes the longer of its device and host time per micro-batch, the bubble is the
# other stages' time: every measured pipeline run within the issue's 15%.
def test_pipeline_step_time_within_target():
    for c in CASES:
        if c.pp > 1:
            assert abs(distruns.check(c).step_error) <= distruns.STEP_TARGET, c.id


# ---- the held-out run: other shapes (Llama-2 7B: multi-head attention, 32k vocabulary), lengths and batches, another
# call (asked for H100s to change the card too: H200s came); the engine was not changed after seeing it except for
# reading its host floors (below), which are the one calibration of DTensor's and FSDP2's host cost.
HELD = "h200x2-2026-11-26-train-dist-heldout"
HELD_CASES = distruns.cases(HELD)


def test_the_held_out_run_covers_the_issue():
    multi = [c for c in HELD_CASES if c.world > 1]
    assert len(multi) == 21 and len(HELD_CASES) == 24 and not distruns.failed(HELD)
    assert {c.family for c in multi} == {"fsdp", "tp", "pp"}
    assert {c.schedule for c in multi if c.pp > 1} == {"gpipe", "1f1b"}
    assert len({c.model.name for c in multi}) == 4 and "Llama-2 7B" in {c.model.name for c in multi}
    assert {c.seq_len for c in multi} == {2048, 4096, 8192}
    assert {c.recompute for c in multi} == {False, True}
    assert all(c.device == "NVIDIA H200" for c in HELD_CASES)  # the card that came (asked for H100s)
    # no case of the first run is repeated at the same shape, length and batch but one, the 8B TP case: a repeat
    # that shows how much a host-bound step varies from call to call (912 and 1001 ms)
    first = {(c.model.name, c.family, c.schedule, c.seq_len, c.micro_batch, c.n_micro, c.recompute) for c in CASES}
    again = [c.id for c in multi if (c.model.name, c.family, c.schedule, c.seq_len, c.micro_batch, c.n_micro,
                                     c.recompute) in first]
    assert again == ["w2-tp2-8B-s2048-mb1-ac"]
    s1 = next(c.step_s for c in CASES if c.id == again[0])
    s2 = next(c.step_s for c in HELD_CASES if c.id == again[0])
    assert 0.05 < s2 / s1 - 1 < 0.15


@pytest.mark.parametrize("case", HELD_CASES, ids=_id)
def test_held_out_memory_within_target_and_misses_have_causes(case):
    chk = distruns.check(case)
    assert abs(chk.memory_error) <= distruns.MEMORY_TARGET, case.id
    if abs(chk.step_error) > distruns.STEP_TARGET:
        assert chk.step_cause and chk.step_cause != "(no cause stated)", (case.id, chk.step_error)


def test_held_out_step_time_record():
    s = distruns.summary(HELD)
    assert s["step_within"] >= 20 and s["memory_within"] == 24


# The host floors counted the ops each program dispatches (TorchDispatchMode, torch 2.11 on CUDA): the engine's
# constants are those counts, per layer (the difference between 6 and 2 layers over 4).
def test_floor_op_counts_are_the_engine_constants():
    from mlcalc import steptime

    rows = distruns.host_floors(HELD)
    assert rows and {r["rank"] for r in rows} == {0, 1}

    def per_layer(prog, rc, key):
        by = {r["n_layers"]: r["ops"][key] for r in rows if r["program"] == prog and r["recompute"] == rc
              and r["rank"] == 0}
        return (by[6] - by[2]) / 4

    plain = {ph: per_layer("plain", False, f"{k}_plain") for ph, k in (("forward", "fwd"), ("backward", "bwd"))}
    assert plain == dict(steptime.PLAIN_OPS_PER_LAYER)
    for ph, k in (("forward", "fwd"), ("backward", "bwd")):
        dt = per_layer("tp", False, f"{k}_dtensor")
        total = dt + per_layer("tp", False, f"{k}_plain")
        assert dt == steptime.TP_DTENSOR_OPS_PER_LAYER[ph]
        assert total - plain[ph] == steptime.TP_EXTRA_OPS_PER_LAYER[ph]
    rc_dt = per_layer("tp", True, "bwd_dtensor") - per_layer("tp", False, "bwd_dtensor")
    assert rc_dt == steptime.TP_DTENSOR_OPS_PER_LAYER["recompute"]


# An op on DTensors costs the host several plain ops (the first run's micro-probe saw 3-4x for one element-wise op;
# the floors, a whole layer's worth, 8-10x); FSDP2 adds its hooks, gathers and reduce-scatters per layer.
def test_dist_host_constants_from_the_floors():
    from mlcalc import steptime

    df, db, ff, fb = steptime.dist_host_constants(distruns.host_floors(HELD))
    assert 5 < df < 15 and 5 < db < 15
    assert 40 < ff < 150 and 80 < fb < 300
    with pytest.raises(ValueError, match="floors"):
        steptime.dist_host_constants([])
    m = distruns.machine(HELD_CASES[0])
    assert m.host_s_per_dtensor_op == pytest.approx(df * m.host_s_per_op)


# ---- 4 GPUs: the combined layouts (h200x4-2026-11-26-train-dist4: 4 x H200, asked for 4 x H100), predicted before the
# call (predictions.json, engine at 09389fa), then the engine's rules fixed from the same call's profiled steps.
FOUR = "h200x4-2026-11-26-train-dist4"
FOUR_CASES = distruns.cases(FOUR)
RERUN = "h200x2-2026-11-26-train-dist4-rerun"
NEW_CASES = FOUR_CASES + distruns.cases(RERUN)


def test_the_four_gpu_run_covers_the_issue():
    w4 = [c for c in FOUR_CASES if c.world == 4]
    assert len(w4) == 20 and not distruns.failed(FOUR)
    assert {c.family for c in w4} == {"fsdp", "tp", "pp", "fsdpxtp", "fsdpxpp", "tpxpp"}
    assert {c.schedule for c in w4 if c.pp > 1} == {"gpipe", "1f1b"}
    assert {c.model.name for c in w4} == {"Llama-3.2 1B (untied)", "Llama-3.2 3B (untied)", "Llama-3 8B"}
    assert {c.seq_len for c in w4} == {2048, 8192}
    assert {c.recompute for c in w4} == {False, True}
    assert all(c.device == "NVIDIA H200" and "torch 2.11.0" in c.software for c in NEW_CASES)
    # FSDP x TP: each rank holds its FSDP shard of its tensor-parallel shard; the four add up to the model, with the
    # RMSNorm weights once more (replicated over the 2 tensor ranks, sharded over the 2 FSDP ranks)
    for c in w4:
        if c.family == "fsdpxtp":
            norms = (2 * c.model.n_layers + 1) * c.model.hidden
            assert sum(c.params_local_per_rank) == c.model.n_params() + norms, c.id
            assert len(set(c.params_local_per_rank)) == 1


@pytest.mark.parametrize("case", NEW_CASES, ids=_id)
def test_new_runs_memory_within_target_and_misses_have_causes(case):
    chk = distruns.check(case)
    assert abs(chk.memory_error) <= distruns.MEMORY_TARGET, case.id
    if abs(chk.step_error) > distruns.STEP_TARGET:
        assert chk.step_cause and chk.step_cause != "(no cause stated)", (case.id, chk.step_error)


def test_four_gpu_step_time_record():
    w4 = [distruns.check(c) for c in FOUR_CASES if c.world == 4]
    assert sum(abs(k.step_error) <= distruns.STEP_TARGET for k in w4) >= 18
    # the two outside (FSDP 2 x TP 2 3B at 1 x 8192, TP 4 8B recomputed) are unmetered runs of configurations that were
    # metered later (host7b/7c/8, host8): history, not in the record (distruns.in_step_record)
    assert all(not distruns.in_step_record(k.case) for k in w4 if abs(k.step_error) > distruns.STEP_TARGET)
    assert all(abs(k.memory_error) <= distruns.MEMORY_TARGET for k in w4)


# What the engine said before the call, on runs it had never seen: 20 of 25 within 15% in step time, 24 of 25 within
# 10% in memory (the one memory miss, FSDP x PP 1F1B, -10.3%, is what FSDP2's unsharded gradient accumulation under
# pipelining now counts).
def test_predictions_were_committed_before_the_calls():
    for run, n in ((FOUR, 25), (RERUN, 8)):
        pred = distruns.predictions(run)
        assert set(pred["cards"]) == {"NVIDIA H100 80GB HBM3", "NVIDIA H200"}
        assert pred["made_utc"] < min(d["environment"]["date_utc"] for d in distruns._files(run))
        blind = distruns.blind_errors(run)
        assert len(blind) == n
    blind = distruns.blind_errors(FOUR)
    assert sum(abs(s) <= distruns.STEP_TARGET for s, _ in blind.values()) == 20
    assert sum(abs(m) <= distruns.MEMORY_TARGET for _, m in blind.values()) == 24
    assert blind["w4-fsdp2xpp2-1f1b-8B-s2048-mb1-m4-ac"][1] == pytest.approx(-0.103, abs=0.002)
    assert distruns.check(next(c for c in FOUR_CASES if c.id == "w4-fsdp2xpp2-1f1b-8B-s2048-mb1-m4-ac")).memory_error \
        == pytest.approx(0.045, abs=0.01)


def _probe(run, cid):
    row = next(c for d in distruns._files(run) for c in d["cases"] if c["id"] == cid)
    return [r["probe"]["summary"][-1] for r in row["ranks"]]


# The proof of the host-bound rule (steptime RULES["host"]): in a profiled tensor-parallel step the rank whose host
# issues longest sets the pace; its device computes under half the step, each kernel starts when it is launched
# (median lag under 1 ms: the device waits for the host), and the step ends right after the host has issued it.
# The other rank's device runs behind its host and waits in NCCL kernels for the first. So long kernels cost no time
# of their own in a host-bound pass.
@pytest.mark.parametrize("run, cid", [(FOUR, "w2-tp2-3B-s8192-mb1"), (FOUR, "w2-tp2-Llama2-7B-s2048-mb1-ac"),
                                      (FOUR, "w2-tp2-3B-s2048-mb2"), (RERUN, "w2-tp2-3B-s2048-mb2-probe")])
def test_profiled_tensor_parallel_steps_are_host_bound(run, cid):
    ranks = _probe(run, cid)
    pace = max(ranks, key=lambda s: s["issue_s"])
    other = min(ranks, key=lambda s: s["issue_s"])
    assert pace["compute_busy_s"] < 0.5 * pace["wall_s"]
    assert pace["lag_median_s"] < 1e-3
    assert pace["issue_s"] > 0.95 * pace["wall_s"]
    assert other["lag_median_s"] > 0.04 and other["nccl_busy_s"] > other["compute_busy_s"]


# FSDP2's host never waits inside a step either (the only synchronizing call is the one after it): its paced rank's
# kernels start at their launch too.
def test_profiled_fsdp2_step_runs_its_kernels_at_launch():
    ranks = _probe(RERUN, "w2-fsdp2-8B-s2048-mb1-ac")
    pace = max(ranks, key=lambda s: s["issue_s"])
    assert pace["lag_median_s"] < 1e-3 and pace["issue_s"] > 0.9 * pace["wall_s"]


# A finished torch.profiler session leaves the host as fast as before (the rerun: the three baseline cases before and
# after a profiled step), so the 4-GPU host's slow 2-stage pipeline (385 ms against 271-281 elsewhere) is that host's.
def test_a_finished_profiler_session_slows_nothing():
    got = {c.id: c.step_s for c in distruns.cases(RERUN)}
    for cid in ("w2-fsdp2-1B-s2048-mb4", "w2-tp2-3B-s2048-mb2", "w2-pp2-1f1b-1B-s2048-mb1-m8"):
        assert abs(got[cid + "-after"] / got[cid] - 1) < 0.06, cid
    slow = next(c.step_s for c in FOUR_CASES if c.id == "w2-pp2-1f1b-1B-s2048-mb1-m8")
    assert slow / got["w2-pp2-1f1b-1B-s2048-mb1-m8"] > 1.3


# The engine's rules, on the cases they came from: a host-bound pass takes its host time (the per-op rule added the
# long kernels' excess: +23% on the 3B, 1 x 8192 TP case, now within 15%); a host-bound pipeline stage absorbs the
# bubble (PP 2 x TP 2: +25%, now within).
def test_host_bound_rules_on_their_cases():
    from mlcalc import steptime

    by = {c.id: c for c in FOUR_CASES}
    for cid in ("w2-tp2-3B-s8192-mb1", "w4-tp4-8B-s8192-mb1", "w4-tp2xpp2-1f1b-3B-s2048-mb1-m4",
                "w2-tp2-Llama2-7B-s2048-mb1-ac"):
        assert abs(distruns.check(by[cid]).step_error) <= distruns.STEP_TARGET, cid
    c = by["w2-tp2-3B-s8192-mb1"]
    p = distruns.predict(c)
    assert steptime.RULES["host"] in p.notes
    assert p.parts_s["forward (kernels and host)"] + p.parts_s["backward (kernels and host)"] > 0


# ---- dist4b (h200x4-2026-11-26-train-dist4b: 4 x H200, asked for 4 x H100): the engine's misses repeated, a host
# probe beside each run, and FSDP2 over DTensor parameters as a host floor (programs tp2d and fsdptp on a 2 x 2 mesh).
D4B = "h200x4-2026-11-26-train-dist4b"
D4B_CASES = distruns.cases(D4B)


def test_the_dist4b_run_and_its_blind_predictions():
    assert len(D4B_CASES) == 12 and not distruns.failed(D4B)
    assert all(c.device == "NVIDIA H200" for c in D4B_CASES)
    pred = distruns.predictions(D4B)
    assert pred["made_utc"] < min(d["environment"]["date_utc"] for d in distruns._files(D4B))
    blind = distruns.blind_errors(D4B)
    assert len(blind) == 12
    assert sum(abs(s) <= distruns.STEP_TARGET for s, _ in blind.values()) == 6
    assert all(abs(m) <= distruns.MEMORY_TARGET for _, m in blind.values())


@pytest.mark.parametrize("case", D4B_CASES, ids=_id)
def test_dist4b_memory_within_target_and_misses_have_causes(case):
    chk = distruns.check(case)
    assert abs(chk.memory_error) <= distruns.MEMORY_TARGET, case.id
    if abs(chk.step_error) > distruns.STEP_TARGET:
        assert chk.step_cause and chk.step_cause != "(no cause stated)", (case.id, chk.step_error)


# FSDP2 over DTensor parameters costs the host more per layer than FSDP2 over plain ones (the floors of one host: the
# FSDP x TP program less the same TP program, against the FSDP program less the plain one).
def test_fsdp_over_dtensor_floor():
    from mlcalc import steptime

    fl = distruns.host_floors(D4B)
    assert {r["program"] for r in fl} == {"plain", "tp", "fsdp", "tp2d", "fsdptp"}
    tf, tb = steptime.fsdp_dtensor_host_constants(fl)
    _, _, ff, fb = steptime.dist_host_constants([r for r in fl if r["program"] in ("plain", "tp", "fsdp")])
    per_layer = steptime.PLAIN_OPS_PER_LAYER
    plain_f = sum(r["fwd_s"] * (1 if r["n_layers"] == 6 else -1) for r in fl
                  if r["program"] == "plain" and not r["recompute"]) / 4 / 4  # 4 ranks, 4 layers apart
    assert tf + tb > 1.2 * (ff + fb)
    # about 8 ms per layer on this host (fwd + bwd), in its plain ops: plain forward op ~ 16 us here
    assert 6e-3 < (tf + tb) * plain_f / per_layer["forward"] < 11e-3
    with pytest.raises(ValueError, match="floors"):
        steptime.fsdp_dtensor_host_constants([r for r in fl if r["program"] != "fsdptp"])
    # the engine's machine now takes host8's metered floor instead (test_fsdp_over_dtensor_floor_metered)
    m = distruns.machine(D4B_CASES[0])
    assert m.host_s_per_fsdp_dtensor_backward_layer == pytest.approx(
        distruns.fsdp_dtensor_constants()[1] * m.host_s_per_backward_op)


# The rule on its cases: FSDP x TP, -20.9% and -11.0% on the 4-GPU call before it, now within 15%; it changes no
# layout without tensor parallelism (FSDP alone keeps FSDP2's plain cost).
def test_fsdp_tp_host_rule_on_its_cases():
    from mlcalc import steptime

    fsdptp = [c for c in FOUR_CASES + D4B_CASES if c.family == "fsdpxtp"]
    assert len(fsdptp) == 5
    for c in fsdptp:
        p = distruns.predict(c)
        assert steptime.RULES["eager-fsdp-tp-host"] in p.notes
        bare = distruns.machine(c)._replace(host_s_per_fsdp_dtensor_layer=0.0, host_s_per_fsdp_dtensor_backward_layer=0.0)
        old = steptime.predict_step(c.model, distruns.layout(c), seq_len=c.seq_len, machine=bare, engine="eager")
        assert p.step_s > old.step_s
    for c in FOUR_CASES:  # within 15 % with dist4b's floor; with host8's metered one the 3B is -15.2 % (history)
        if c.family == "fsdpxtp":
            assert abs(distruns.check(c).step_error) <= distruns.STEP_TARGET or not distruns.in_step_record(c), c.id
    fsdp = next(c for c in FOUR_CASES if c.family == "fsdp")
    assert steptime.RULES["eager-fsdp-tp-host"] not in distruns.predict(fsdp).notes


# The host probe timed beside each run (the plain program's floor, before and after) does not follow the run's speed:
# the same case three times in one launch, 561, 563 and 669 ms, with probes that do not order them so.
def test_the_host_probe_does_not_follow_the_step():
    import statistics

    def per_layer(rows_by_rank):
        v = []
        for rows in rows_by_rank:
            by = {r["n_layers"]: r for r in rows}
            v.append((by[6]["fwd_s"] + by[6]["bwd_s"] - by[2]["fwd_s"] - by[2]["bwd_s"]) / 4)
        return statistics.median(v)

    raw = {c["id"]: c for d in distruns._files(D4B) for c in d["cases"]}
    ids = ["w2-tp2-3B-s2048-mb2", "w2-tp2-3B-s2048-mb2-r2", "w2-tp2-3B-s2048-mb2-r3"]
    step = [raw[i]["step_s"] for i in ids]
    probe = [(per_layer(raw[i]["host_probe"]["before"]) + per_layer(raw[i]["host_probe"]["after"])) / 2 for i in ids]
    assert max(step) / min(step) > 1.15
    slowest = step.index(max(step))
    assert probe[slowest] < max(probe)  # the slowest run's probe is not the slowest probe


# ---- dist5 (h200x4-2026-11-27-train-dist5: 4 x H200; h200x2-2026-11-27-train-dist5b: 2 x H200; both asked for
# H100s): the host-bound misses again, each case built once and timed in blocks under launch conditions (as before,
# garbage collector off, threads pinned, both; then each rank's busy threads on a vCPU of its own or the two ranks on
# one pair), every step metered per thread, a speedometer beside, and each vCPU's pace timed alone.
D5, D5B = "h200x4-2026-11-27-train-dist5", "h200x2-2026-11-27-train-dist5b"


def _blind_run(run, n, within):
    """A call's n cases on H200s, none failed, predicted before the call: ``within`` of the blind step predictions
    inside the step target, every blind memory prediction inside its own. Returns the cases."""
    cs = distruns.cases(run)
    assert len(cs) == n and not distruns.failed(run)
    assert all(c.device == "NVIDIA H200" for c in cs)
    pred = distruns.predictions(run)
    assert pred["made_utc"] < min(d["environment"]["date_utc"] for d in distruns._files(run))
    blind = distruns.blind_errors(run)
    assert len(blind) == n
    assert sum(abs(s) <= distruns.STEP_TARGET for s, _ in blind.values()) == within
    assert all(abs(m) <= distruns.MEMORY_TARGET for _, m in blind.values())
    return cs


def test_the_dist5_runs_and_their_blind_predictions():
    for run, n, within in ((D5, 24, 21), (D5B, 8, 8)):
        cs = _blind_run(run, n, within)
        for c in cs:
            chk = distruns.check(c)
            assert abs(chk.memory_error) <= distruns.MEMORY_TARGET, c.id
            if abs(chk.step_error) > distruns.STEP_TARGET:
                assert chk.step_cause and chk.step_cause != "(no cause stated)", c.id


def _blocks(run):
    """Case (id without the launch condition) -> launch condition -> its steps (each the slowest rank's wall)."""
    walls = {}
    for r in distruns.host_meter(run):
        key = (r["case"], r["step"])
        walls[key] = max(walls.get(key, 0.0), r["wall_s"])
    out = {}
    for (cid, _), w in sorted(walls.items()):
        base, cond = cid.rsplit("-", 1)
        out.setdefault(base, {}).setdefault(cond, []).append(w)
    return out


# Neither the garbage collector nor where a rank's threads run sets a host-bound case's pace: every launch condition's
# median lies within 13% of the same case's as-before median, and for the tensor-parallel cases (the misses' family)
# within the spread of the as-before steps themselves.
def test_gc_and_placement_do_not_set_the_pace():
    for run in (D5, D5B):
        tp = {c.id.rsplit("-", 1)[0] for c in distruns.cases(run) if c.tp > 1}
        steps = {c.id: c.step_s for c in distruns.cases(run)}
        blocks = _blocks(run)
        assert set(blocks) == {c.id.rsplit("-", 1)[0] for c in distruns.cases(run)}
        for base, by in blocks.items():
            assert "base" in by and len(by) >= 2, base
            assert statistics.median(by["base"]) == pytest.approx(steps[f"{base}-base"], rel=1e-4)  # meter: rounded
            for cond, walls in by.items():
                assert abs(statistics.median(walls) / statistics.median(by["base"]) - 1) < 0.13, (base, cond)
                if base in tp:
                    spread = max(by["base"]) - min(by["base"])
                    assert abs(statistics.median(walls) - statistics.median(by["base"])) <= spread, (base, cond)


# What the meter shows on every step of every rank: no steal time, no run-queue delay where the threads float as in
# every earlier run; the young generations of the garbage collector take under 2% of a step; a gen-2 collection
# (the whole heap) costs 150-210 ms, on every rank at once, and came 3 times in the two calls.
def test_the_host_meter():
    rows = distruns.host_meter(D5) + distruns.host_meter(D5B)
    assert len(rows) == 432 + 112
    assert max(r["steal_s"] for r in rows) <= 0.01
    assert max(r["runq_s"] for r in rows if r["variant"] in ("base", "gcoff")) < 0.001
    young = [r["gc_s"] / r["wall_s"] for r in rows if r["gc2"] == 0]
    assert max(young) < 0.02
    full = [r for r in rows if r["gc2"]]
    assert len({(r["case"], r["wall_s"] > 0) for r in full}) == 3
    assert all(0.14 < r["gc_s"] < 0.21 for r in full)
    assert all(not distruns.host_meter(r) for r in (RUN, D4B))  # earlier runs metered nothing


# The cause of the spread: the vCPUs run at two paces. Timed alone one after another, 15 of the 32 vCPUs ran a fixed
# piece of Python at 0.57 of the other 17's rate; no pair of vCPUs slowed each other both ways (not our threads
# sharing a core); the same piece timed on one vCPU all along ran at 0.75 of its median pace or less in about a third
# of its 10-ms windows on both machines.
def test_the_vcpus_run_at_two_paces():
    v = distruns.vcpu_pace(D5B)
    alone = sorted(v["alone"].values())
    assert len(alone) == 32
    slow = [x for x in alone if x < 0.75 * alone[-1]]
    fast = [x for x in alone if x >= 0.75 * alone[-1]]
    assert len(slow) == 15 and len(fast) == 17
    assert 0.5 < max(slow) / min(fast) and statistics.median(slow) / statistics.median(fast) == pytest.approx(0.57,
                                                                                                              abs=0.03)
    pairs = v["pairs"]
    assert not [p for p, r in pairs.items() if r < 0.8 and pairs.get((p[1], p[0]), 1.0) < 0.8]
    for run in (D5, D5B):
        pace = distruns.host_pace(run)
        share = sum(x <= 0.75 for x in pace) / len(pace)
        assert len(pace) > 5000 and 0.25 < share < 0.4, run
        assert sorted(pace)[len(pace) // 20] < 0.6
    assert distruns.host_pace(D4B) == () and distruns.vcpu_pace(D4B) == {}


# The third call (h200x2-2026-11-27-train-dist5c): TP 2 3B with each rank's busy threads on a vCPU timed just before
# each block (the fastest or the slowest of six) and timed again just after. The pace before ranks nothing (it changes
# within the block's 2 s); the slower rank's pace after the block ranks the blocks' steps (Spearman -0.90 over 8):
# the step follows the pace of its slower rank's vCPU.
D5C = "h200x2-2026-11-27-train-dist5c"


def _spearman(x, y):
    def ranks(v):
        order = sorted(range(len(v)), key=lambda i: v[i])
        r = [0] * len(v)
        for k, i in enumerate(order):
            r[i] = k
        return r

    n = len(x)
    return 1 - 6 * sum((a - b) ** 2 for a, b in zip(ranks(x), ranks(y))) / (n * (n * n - 1))


def test_the_step_follows_its_slower_ranks_vcpu():
    cs = distruns.cases(D5C)
    assert len(cs) == 3 and all(c.device == "NVIDIA H200" for c in cs)
    blind = distruns.blind_errors(D5C)
    assert len(blind) == 3 and all(abs(s) <= distruns.STEP_TARGET and abs(m) <= distruns.MEMORY_TARGET
                                   for s, m in blind.values())
    blocks = distruns.pace_blocks(D5C)
    assert len(blocks) == 8 and {b["variant"] for b in blocks} == {"fastcpu", "slowcpu"}
    steps = [b["step_s"] for b in blocks]
    assert _spearman([b["pace_after"] for b in blocks], steps) < -0.85
    assert abs(_spearman([b["pace_before"] for b in blocks], steps)) < 0.3
    slow = [b["step_s"] for b in blocks if b["pace_after"] < 80e3 and b["pace_before"] < 80e3 or b["pace_after"] < 74e3]
    fast = [b["step_s"] for b in blocks if b["pace_after"] > 100e3]
    assert min(slow) > 0.62 and max(fast) < 0.46 and min(slow) / max(fast) > 1.35
    assert distruns.pace_blocks(D5) == ()


# The TP 4 miss's suspected cause (DTensor host constants from 2-rank floors) is not one: on one host at one time the
# tensor-parallel floor over 4 ranks costs what it costs over 2 (within 3%, forward + backward a layer), while the same
# 4-rank floor on the dist4b host cost 1.4 x this one (the pace).
def test_the_tp_degree_does_not_change_the_dtensor_host_cost():
    from mlcalc import steptime

    t = steptime._floor_per_layer(distruns.host_floors(D5), ("plain", "tp", "tp2d"))
    tp4, tp2 = t[("tp", "forward")] + t[("tp", "backward")], t[("tp2d", "forward")] + t[("tp2d", "backward")]
    assert tp4 == pytest.approx(tp2, rel=0.03)
    old = steptime._floor_per_layer(distruns.host_floors(D4B), ("plain", "tp", "tp2d"))
    assert (old[("tp", "forward")] + old[("tp", "backward")]) / tp4 > 1.3


# ---- dist6 (h200x2-2026-11-27-train-dist6: 2 x H200; h200x4-2026-11-27-train-dist6b and -dist6c: 4 x H200): every
# step timed beside its own vCPU's pace. Each rank's main and autograd threads on one vCPU that
# scripts/gpu/pacemeter.py samples every 20 ms (a fixed piece of Python, runs per CPU second); the program whose
# floors give the engine's host constants (train_hf.py --floor) run beside on a metered vCPU of its own.
D6, D6B, D6C = "h200x2-2026-11-27-train-dist6", "h200x4-2026-11-27-train-dist6b", "h200x4-2026-11-27-train-dist6c"


def test_the_dist6_runs_and_their_blind_predictions():
    for run, n, within in ((D6, 7, 5), (D6C, 5, 2)):
        cs = _blind_run(run, n, within)
        assert "metered_rule" in distruns.predictions(run)
        for c in cs:
            chk = distruns.check(c)
            if abs(chk.step_error) > distruns.STEP_TARGET:
                assert "pacemeter" in chk.step_cause, c.id
    assert D6B in distruns.runs_with_meters() and D6B not in distruns.runs()  # its train_dist results did not come back
    assert len(distruns.floor_paces(D6B)) == 14 and distruns.floor_paces(D6) == ()


def test_every_metered_step_has_its_pace():
    for run, n in ((D6, 190), (D6C, 150)):
        steps = distruns.metered_steps(run)
        assert len(steps) == n
        assert all(40e3 < s.pace < 200e3 for s in steps)
    assert distruns.metered_steps(D5) == ()
    samples = distruns.pace_samples(D6)
    assert set(samples) == {6, 12} and all(len(s) > 4000 for s in samples.values())
    assert distruns.pace_over(((1.0, 30, 0.0003), (2.0, 30, 0.0006)), 0.5, 2.0) == pytest.approx(60 / 0.0009)
    assert distruns.pace_over(((1.0, 30, 0.0003),), 1.0, 2.0) == 0.0  # a sample that ended at the window's start


# The one-GPU checkpointed 3B (the miss with the widest spread, 183-271 ms over earlier calls) follows its vCPU's pace
# step by step: at 120 thousand runs a second or more it sits on the device's own time (the engine's kernels and
# optimizer, 176 ms), at 80 thousand or less it takes 1.2-1.4 x that; Python's garbage collector is not it (under 2 ms
# a step, no gen-2 collection, and with the collector off the same steps).
def test_the_one_gpu_checkpointed_spread_is_the_pace_not_the_collector():
    rows = [s for run in (D6, D6C) for s in distruns.metered_steps(run) if s.case.family == "single"
            and s.case.recompute]
    assert len(rows) == 70
    fast = [s.step_s for s in rows if s.pace >= 120e3]
    slow = [s.step_s for s in rows if s.pace <= 80e3]
    assert len(fast) >= 20 and len(slow) >= 10
    assert max(fast) < 0.195 and min(slow) > 0.225
    assert _spearman([s.pace for s in rows], [s.step_s for s in rows]) < -0.8
    p = distruns.predict(rows[0].case)
    assert p.compute_s + p.optimizer_s == pytest.approx(0.176, abs=0.002)
    gc = [r for r in distruns.host_meter(D6) if "single-3B" in r["case"]]
    assert max(r["gc_s"] for r in gc) < 0.002 and not any(r["gc2"] for r in gc)
    off = [s.step_s for s in rows if s.case.id.endswith("metergcoff")]
    on = [s.step_s for s in rows if s.case.id.endswith("m-meter")]
    assert min(off) >= min(on) - 0.002  # the collector off is no faster than its best steps with it on


# Device-bound cases do not follow the pace (PP 2 1F1B 1B, FSDP 2 1B, one-GPU 1B: every block within 10% of one
# another over paces of 60-150 thousand); host-bound tensor-parallel steps do, and by both ranks' paces: TP 2 3B in
# the third call took 390-415 ms a step with both vCPUs at 128 thousand or more, 655-722 with both at 71-78 thousand
# and 573-801 with one slow and the other fast.
def test_host_bound_steps_follow_the_pace_device_bound_do_not():
    by = {}
    for b in distruns.metered_blocks(D6, "probe"):
        by.setdefault(b.case.id, []).append(b)
    for k, v in by.items():
        if "pp2" in k or "fsdp2" in k or "single-1B" in k:
            assert max(b.step_s for b in v) / min(b.step_s for b in v) < 1.10, k
            assert max(b.pace for b in v) / min(b.pace for b in v) > 1.1, k
    raw = {c["id"]: c for d in distruns._files(D6C) for c in d["cases"]}["w2-tp2-3B-s2048-mb2-m3-meter"]
    samples = distruns.pace_samples(D6C)
    both_fast, both_slow, one = [], [], []
    for i in range(len(raw["ranks"][0]["meter"])):
        ms = [r["meter"][i] for r in raw["ranks"]]
        ps = [distruns.pace_over(samples[r["pinned"]["busy"][0]], m["epoch_s"], m["epoch_s"] + m["wall_s"])
              for r, m in zip(raw["ranks"], ms)]
        wall = max(m["wall_s"] for m in ms)
        (both_fast if min(ps) >= 128e3 else both_slow if max(ps) < 80e3 else
         one if min(ps) < 70e3 and max(ps) > 110e3 else []).append(wall)
    assert len(both_fast) == 5 and len(both_slow) == 4 and len(one) >= 5
    assert max(both_fast) < 0.42 and min(both_slow) > 0.65 and max(both_fast) < min(one) < max(one)
    assert statistics.median(one) < min(both_slow)  # one slow rank costs less than two


# The calibration program (train_hf.py --floor, Llama-3.2 1B at 1 x 64 tokens) slows one to one with the probe: its
# host time per op is 1.65 x at under 80 thousand runs a second what it is at 110 thousand or more (the probe: 1.8 x);
# the engine's constants are the calibration floors' at 118-130 thousand.
def test_the_calibration_program_follows_the_probe():
    rows = distruns.floor_repeats(D6C)
    assert len(rows) == 150
    fast = statistics.median(f for _, f, _, p in rows if p >= 110e3)
    slow = statistics.median(f for _, f, _, p in rows if p < 80e3)
    assert fast == pytest.approx(13.9e-6, rel=0.01) and slow == pytest.approx(23.0e-6, rel=0.01)
    (af, bf), (ab, bb) = distruns.slowdown_law()
    assert (af + bf / 70e3) / (af + bf / 130e3) == pytest.approx(1.77, abs=0.02)
    m = distruns._machine("NVIDIA H200")
    f, b, _ = distruns.metered_host("probe", 1.0)  # runs of the probe per op
    assert 118e3 < f / m.host_s_per_op < 131e3 and 118e3 < b / m.host_s_per_backward_op < 131e3
    with pytest.raises(ValueError, match="rule"):
        distruns.metered_host("fitted", 1e5)
    with pytest.raises(ValueError, match="pace"):
        distruns.metered_host("probe", 0.0)


# Both metered rules, written before the calls they were checked on, missed: pricing each step's host at its metered
# pace (the slowest rank's) gives 20 ("probe"; 21 before issue 24's channel rule) and 16 ("calibrated") of 68 blocks
# within 15 %, the engine's one pace
# 41 with checkpointing's host cost from two floor steps at two paces, 47 since it is at the pace of the forward op
# (distruns.checkpoint_calibration). The pace explains the spread's order, not its size: kept as a stated cause.
def test_the_metered_rules_missed_blind():
    score = {}
    for rule in distruns.METER_RULES:
        blocks = distruns.metered_blocks(D6, rule) + distruns.metered_blocks(D6C, rule)
        assert len(blocks) == 68
        score[rule] = sum(abs(b.error) <= distruns.STEP_TARGET for b in blocks)
        score["default"] = sum(abs(b.default_error) <= distruns.STEP_TARGET for b in blocks)
    assert score == {"probe": 20, "calibrated": 16, "default": 47}
    assert {b.predicted_s > b.step_s for b in distruns.metered_blocks(D6C, "probe") if b.case.tp > 1} == {True}


# The engine's host constants are at one pace: against the second dist6 call's calibration floors (in runs of the
# meter's fixed Python) its seconds per forward op, per backward op and per checkpointed layer hold at 118-137 thousand
# runs a second (the checkpointing cost held at 61 thousand before distruns.checkpoint_calibration: two floor steps at
# two paces). At 115 thousand or more every host-bound block (tensor parallel, the one-GPU checkpointed 3B) ran 12-34 %
# under the engine; at 75 thousand or less from 27 % over it to 1 % under.
def test_the_engine_is_high_at_the_pace_of_its_own_constants():
    m = distruns._machine("NVIDIA H200")
    f, b, ck = distruns.metered_host("probe", 1.0)
    paces = (f / m.host_s_per_op, b / m.host_s_per_backward_op, ck / m.host_s_per_checkpoint)
    assert 115e3 < min(paces) and max(paces) < 140e3
    assert m.host_s_per_checkpoint == pytest.approx(distruns.checkpoint_calibration() * m.host_s_per_op)
    blocks = [b for run in (D6, D6C) for b in distruns.metered_blocks(run, "probe")
              if b.case.tp > 1 or (b.case.recompute and b.case.family == "single")]
    fast = [b.default_error for b in blocks if b.pace >= 115e3]
    slow = [b.default_error for b in blocks if b.pace <= 75e3]
    assert len(fast) == 11 and 0.10 < min(fast) and max(fast) < 0.35
    assert len(slow) == 17 and -0.28 < min(slow) and max(slow) < 0.01


# Checkpointing's host work per layer and pass, in forward ops of the same program at the same pace (dist6c: Llama-3.2
# 1B's floor 150 times with and 150 times without checkpointing on one metered vCPU, each pass priced at its own
# window's pace): 59 forward ops (the forward's own excess 50, the backward's beyond its recomputed forward 69). The
# machines' own floor differences gave 133 (H200 run2), 90 (H100) and 49 (4 x H200 card check) forward ops: two
# single steps, each at its vCPU's pace then.
def test_checkpointing_host_cost_is_measured_at_one_pace():
    from mlcalc import hfruns, models

    r = distruns.checkpoint_calibration()
    assert r == pytest.approx(59.3, abs=0.5)
    for run in ("h200x2-2026-11-26-train-hf-run2", "h100-2026-11-26-train-hf", "h200x4-2026-11-26-train-hf"):
        m = hfruns.machine(run)
        assert m.host_s_per_checkpoint == pytest.approx(r * m.host_s_per_op)
    llama = models.preset("Llama-3.2 1B")
    ops = steptime.op_counts(llama, True)
    fwd = ops["forward"] * 2.0  # 2 units a forward op; the checkpointed passes 100 units a layer more in each
    got = steptime.checkpoint_over_op(llama, (fwd, 3000.0), (fwd + 100 * 16, 3000.0 + ops["recomputed forward"] * 2.0
                                                              + 100 * 16))
    assert got == pytest.approx(50.0)
    with pytest.raises(ValueError, match="plain"):
        steptime.checkpoint_over_op(llama, (0.0, 1.0), (1.0, 1.0))


# The pace-aware prediction (host7): every host constant of the card's machine scaled by stated / pace. At the stated
# pace it is the engine's default; a host-bound case (TP 2 3B, host 495 of its 517 ms) slows almost one to one when
# the pace halves, a device-bound one (one-GPU 1B at 4 x 2048: kernels 176 of its 185 ms) hardly at all.
def test_the_paced_prediction_scales_every_host_constant():
    cases = {c.id: c for c in distruns.cases(D6)}
    tp, one = cases["w2-tp2-3B-s2048-mb2-m-meter"], cases["w1-single-1B-s2048-mb4-m-meter"]
    for c in (tp, one):
        assert distruns.predict_paced(c, 1e5, 1e5) == pytest.approx(distruns.predict(c).step_s)
    m = distruns.paced_machine(tp.device, 5e4, 1e5)
    base = distruns._machine(tp.device)
    assert m.host_s_per_dtensor_op == pytest.approx(2 * base.host_s_per_dtensor_op)
    assert m.host_s_per_checkpoint == pytest.approx(2 * base.host_s_per_checkpoint)
    assert m.matmul_flops_per_s(4096, 4096, 4096) == base.matmul_flops_per_s(4096, 4096, 4096)
    assert 1.85 < distruns.predict_paced(tp, 5e4, 1e5) / distruns.predict(tp).step_s < 2.0
    assert distruns.predict_paced(one, 5e4, 1e5) / distruns.predict(one).step_s < 1.25
    with pytest.raises(ValueError, match="pace"):
        distruns.paced_machine(tp.device, 0.0, 1e5)


# dist6c's calibration program ran with its whole process on one metered vCPU: there the H200 machine's seconds per
# forward op are what the calibration does per op at 172 thousand runs a second, faster than any vCPU was seen to run
# (60-154 thousand): the placement matters, so the stated pace is measured in the training runs' placement (host7).
def test_engine_pace_of_the_whole_process_placement():
    assert distruns.engine_pace(D6C) == pytest.approx(172e3, rel=0.02)


H7, H7B = "h200x4-2026-11-27-train-host7", "h200x4-2026-11-27-train-host7b"


# The host7 calls (4 x H200 twice), predicted before them: 3 of 4 and 2 of 4 within 15 % in step time, every memory
# within 10 %; the misses are the slow pace (TP 4 1B -17 %, FSDP 2 x TP 2 3B -20 %, the slowest vCPU at 62-74
# thousand runs a second) and the fastest (the checkpointed 3B on its device's own time, +18 %).
def test_the_host7_runs_and_their_blind_predictions():
    for run, n, within in ((H7, 4, 3), (H7B, 4, 2)):
        for c in _blind_run(run, n, within):
            chk = distruns.check(c)
            if abs(chk.step_error) > distruns.STEP_TARGET:
                assert chk.step_cause and chk.step_cause != "(no cause stated)", c.id


# The pace-aware rule, written before the host7 calls (scripts/gpu/host7_predictions.json): the engine's stated pace
# is what its own calibration program does per forward op in the training runs' placement (160 thousand runs a
# second; 85-115 was written before), every host constant scaled by stated / the step's pace. Blind it put 7 of the
# calls' 48 blocks within 15 %, the engine's one pace 29 (30 with issue 24's channel rule): the meter's pace does not
# carry into a step's host time one to one (a TP step of 2 x 2048 3B took 390 ms at 124 thousand and 459-548 at 81-109; the rule says 660-1000).
def test_the_pace_aware_rule_missed_blind():
    stated = distruns.engine_pace(H7)
    assert stated == pytest.approx(160e3, rel=0.02)
    blocks = distruns.paced_blocks(H7, stated) + distruns.paced_blocks(H7B, stated)
    assert len(blocks) == 48
    assert sum(abs(b.error) <= distruns.STEP_TARGET for b in blocks) == 7
    assert sum(abs(b.default_error) <= distruns.STEP_TARGET for b in blocks) == 30  # 29 before issue 24's channel rule
    tp = [b for b in blocks if b.case.tp > 1]
    assert all(b.predicted_s > 1.4 * b.step_s for b in tp)


H7C = "h200x4-2026-11-27-train-host7c"
M12 = "h200x4-2026-11-27-meter12"
M12B = "h200x4-2026-11-27-meter12b"
M12C = "h200x4-2026-11-27-meter12c"
MG, MGB = "h200x2-2026-11-27-h100mg", "h200x2-2026-11-27-h100mgb"
H8, H8B = "h200x4-2026-11-27-train-host8", "h200x4-2026-11-27-train-host8b"


# The pace-aware record's blind test (host7c, 4 x H200): the rule with one stated pace (distruns.STATED_PACE, 90,000
# runs a second, committed before the call with its criterion: 75 % of the blocks within 15 % and more than the
# engine's one pace) put 41 of 48 blocks within 15 %, the engine 26. The engine's default, also committed before: 4 of
# 8 cases within 15 % in step time, every memory within 10 %.
def test_the_stated_pace_rule_held_blind():
    assert distruns.STATED_PACE == 90e3
    pred = distruns.predictions(H7C)
    assert "90,000" in pred["metered_rule"] and "75 %" in pred["metered_rule"]
    _blind_run(H7C, 8, 4)
    blocks = distruns.paced_blocks(H7C, distruns.STATED_PACE)
    assert len(blocks) == 48
    paced = sum(abs(b.error) <= distruns.STEP_TARGET for b in blocks)
    default = sum(abs(b.default_error) <= distruns.STEP_TARGET for b in blocks)
    # blind, with the engine of then: 41 and 26 (misses.json); with host8's metered FSDP2-over-DTensor floor 42 and 25
    assert (paced, default) == (42, 25) and paced >= 0.75 * len(blocks)
    # the dist6/dist6c blocks it was chosen on, and the host7/host7b blocks it then held on (40 of 48 then)
    seen = [b for run in (D6, D6C) for b in distruns.paced_blocks(run, distruns.STATED_PACE)]
    after = [b for run in (H7, H7B) for b in distruns.paced_blocks(run, distruns.STATED_PACE)]
    assert sum(abs(b.error) <= distruns.STEP_TARGET for b in seen) == 63 and len(seen) == 68
    assert sum(abs(b.error) <= distruns.STEP_TARGET for b in after) == 41 and len(after) == 48


# A metered case's record is its paced prediction at its steps' median pace, with the launch floor's share of each
# host constant held fixed (host9); an unmetered one keeps the engine's default. The 41 metered cases (28 until host7,
# 13 of the host8 calls): 28 within 15 % by the engine's one pace, 39 paced with every host constant scaled (misses:
# TP 2 recomputed at the fast pace, host8 1B -16 % at 143 thousand runs a second, host8b 8B -18 % at 126), 41 with the
# launch floor. FSDP 2 x TP 2 3B on host7c, +15.6 % with dist4b's unmetered FSDP2-over-DTensor floor, is within 10 %
# with host8's metered one.
def test_a_metered_case_is_held_to_its_paced_prediction():
    # the metered calls up to host8b (meter12's, meter12b's and meter12c's ten cases each, h100mg's and h100mgb's:
    # tests/core/test_blindruns.py)
    metered = [c for run in distruns.runs() for c in distruns.cases(run)
               if distruns.case_pace(c) > 0 and run not in (M12, M12B, M12C, MG, MGB)]
    assert len(metered) == 41
    assert sum(abs(distruns.predict(c).step_s / c.step_s - 1) <= distruns.STEP_TARGET for c in metered) == 28
    scaled = {c: distruns.predict_paced(c, round(distruns.case_pace(c), -3), distruns.STATED_PACE) / c.step_s - 1
              for c in metered}
    assert sum(abs(e) <= distruns.STEP_TARGET for e in scaled.values()) == 39
    assert sorted((c.run, c.family, c.recompute, round(100 * e)) for c, e in scaled.items()
                  if abs(e) > distruns.STEP_TARGET) == [(H8, "tp", True, -16), (H8B, "tp", True, -18)]
    assert sum(abs(distruns.check(c).step_error) <= distruns.STEP_TARGET for c in metered) == 41
    for c in metered:
        assert distruns.record_step_s(c) == pytest.approx(distruns.predict_paced(
            c, round(distruns.case_pace(c), -3), distruns.STATED_PACE, distruns.launch_floor_s()))
    plain = distruns.cases(D5)[0]
    assert distruns.case_pace(plain) == 0.0 and distruns.record_step_s(plain) == distruns.predict(plain).step_s
    assert abs(distruns.check(next(c for c in metered if c.run == H7C and c.family == "fsdpxtp")).step_error) < 0.10


# host9: a share of each host constant does not follow the meter's pace. Pooled, the stated-pace rule's blocks run
# with the pace both ways (slow blocks over-predicted, fast ones under): the host's time falls more slowly than 1 / pace.
# The share held fixed is the launch path's floor, 3 us a kernel (the published 'speed of light' of back-to-back null
# kernels, NVIDIA Developer Forums, N. Juffa 2022; mlcalc/data/kernels.json), over the plain op's host seconds (10.95
# forward, 9.60 backward at the stated pace): not fitted. Scored on the calls the stated pace was chosen and first
# seen on (dist6, dist6c, host7, host7b: 104 -> 110 of 116 blocks within 15 %), held out on the later three (host7c,
# host8, host8b: 102 -> 110 of 126, median error 8.0 -> 6.5 %), split written before the held-out blocks were scored.
def test_the_launch_floor_rule_holds_out_of_sample():
    assert distruns.launch_floor_s() == 3e-6
    seen, held = distruns.floor_rule_score(distruns.FLOOR_RULE_SEEN), distruns.floor_rule_score(distruns.FLOOR_RULE_HELD_OUT)
    # with issue 24's channel rule (coll10: the all-reduces inside one node slower) the scores are 104 -> 111 of 116 and
    # 105 -> 112 of 126, median 8.0 -> 6.4 % (104 -> 110, 102 -> 110 and 8.0 -> 6.5 % with the engine of then)
    assert (seen.n, seen.within_scaled, seen.within_floor) == (116, 104, 111)
    assert (held.n, held.within_scaled, held.within_floor) == (126, 105, 112)
    assert held.median_floor < held.median_scaled
    assert round(100 * held.median_scaled, 1) == 8.0 and round(100 * held.median_floor, 1) == 6.4
    assert not set(distruns.FLOOR_RULE_SEEN) & set(distruns.FLOOR_RULE_HELD_OUT)
    # meter12 (session 36), a later call the floor never saw: 50 -> 51 of its 60 blocks, median 8.3 -> 6.8 %
    later = distruns.floor_rule_score((M12,))
    assert (later.n, later.within_scaled, later.within_floor) == (60, 50, 51)
    assert round(100 * later.median_scaled, 1) == 8.3 and round(100 * later.median_floor, 1) == 6.8
    # meter12b (the same call on a second host, its vCPUs at 65-79 thousand): 45 -> 23 of 60, median 12.0 -> 16.5 %;
    # the floor held fixed lowers the prediction at a slow pace, and there the ranks' host work was 1.0-1.25 times the
    # engine's (tests/core/test_blindruns.py). Not refitted: the record keeps the rule committed before both calls.
    second = distruns.floor_rule_score((M12B,))
    assert (second.n, second.within_scaled, second.within_floor) == (60, 45, 23)
    assert round(100 * second.median_scaled, 1) == 12.0 and round(100 * second.median_floor, 1) == 16.5
    # meter12c (a third host, 71-79 thousand) decided between them by a rule committed before it
    # (scripts/gpu/meter12c_predictions.json: more of its blocks within 15 %, a tie to the launch floor): 60 against 56,
    # the launch floor stays in record_step_s
    third = distruns.floor_rule_score((M12C,))
    assert (third.n, third.within_scaled, third.within_floor) == (60, 56, 60)
    assert round(100 * third.median_scaled, 1) == 4.0 and round(100 * third.median_floor, 1) == 6.6
    c = next(x for x in distruns.cases(M12C) if distruns.case_pace(x) > 0)
    assert distruns.record_step_s(c) == distruns.predict_paced(c, round(distruns.case_pace(c), -3), distruns.STATED_PACE,
                                                               distruns.launch_floor_s())
    # h100mg and h100mgb (session 37, two 2 x H200 hosts, FSDP2, TP 2 and the 1F1B pipeline): 56 -> 58 and 54 -> 56
    assert [(s.n, s.within_scaled, s.within_floor) for s in (distruns.floor_rule_score((r,)) for r in (MG, MGB))] == [
        (60, 56, 58), (60, 54, 56)]
    assert set(distruns.FLOOR_RULE_SEEN) | set(distruns.FLOOR_RULE_HELD_OUT) | {M12, M12B, M12C, MG, MGB} == {
        r for r in distruns.runs_with_meters() if r in distruns.runs() and distruns.metered_steps(r)}
    with pytest.raises(ValueError, match="runs_"):
        distruns.floor_rule_score(())


# The fixed share: c x (share + (1 - share) x stated / pace), share = the floor over the plain op (forward constants) or
# the plain backward op (backward ones). No floor is host7c's rule bit for bit; at the stated pace the floor changes
# nothing; at twice the pace the plain op keeps 3 us and halves the rest.
def test_the_launch_floor_share_of_each_host_constant():
    tp = next(c for c in distruns.cases(D6) if c.id == "w2-tp2-3B-s2048-mb2-m-meter")
    base = distruns._machine(tp.device)
    old = distruns.paced_machine(tp.device, 1.8e5, 9e4)
    assert old == distruns.paced_machine(tp.device, 1.8e5, 9e4, 0.0)
    assert old.host_s_per_op == base.host_s_per_op * 0.5
    assert distruns.paced_machine(tp.device, 9e4, 9e4, 3e-6) == base
    m = distruns.paced_machine(tp.device, 1.8e5, 9e4, 3e-6)
    assert m.host_s_per_op == pytest.approx(3e-6 + (base.host_s_per_op - 3e-6) / 2)
    assert m.host_s_per_backward_op == pytest.approx(3e-6 + (base.host_s_per_backward_op - 3e-6) / 2)
    share = 3e-6 / base.host_s_per_op
    assert m.host_s_per_dtensor_op == pytest.approx(base.host_s_per_dtensor_op * (share + (1 - share) / 2))
    share_b = 3e-6 / base.host_s_per_backward_op
    assert m.host_s_per_fsdp_backward_layer == pytest.approx(base.host_s_per_fsdp_backward_layer
                                                             * (share_b + (1 - share_b) / 2))
    assert distruns.paced_machine(tp.device, 1.8e5, 9e4, 1.0) == base  # a floor above the op: nothing follows the pace
    with pytest.raises(ValueError, match="fixed_s"):
        distruns.paced_machine(tp.device, 1.8e5, 9e4, -1e-6)


# ---- host8 (h200x4-2026-11-27-train-host8, -host8b: 4 x H200, asked for 4 x H200): every configuration of the step
# record's unmetered misses, then the record's remaining miss and nearest misses, metered as host7c's. Rules committed
# before each call (predictions.json = scripts/gpu/host8_predictions.json, host8b_predictions.json).
def test_the_host8_calls_and_their_blind_tests():
    rule = distruns.predictions(H8)["metered_rule"]
    assert "75 %" in rule and "metered runs alone" in rule and "whatever that does to the record" in rule
    _blind_run(H8, 8, 5)  # the engine's default, before the call: 5 of 8 in step time, 8 of 8 in memory
    _blind_run(H8B, 5, 3)
    # host8's blocks blind, with the engine of then (dist4b's FSDP2-over-DTensor floor): 39 of 48 paced, 30 the engine;
    # with the metered floor it adopted 38 and 30. host8b's were predicted with the metered floor.
    # recomputed with issue 24's channel rule (coll10): 39 and 30 of host8's, 24 and 11 of host8b's (38/30, 22/10 before)
    for run, n, paced_in, default_in in ((H8, 48, 39, 30), (H8B, 30, 24, 11)):
        blocks = distruns.paced_blocks(run, distruns.STATED_PACE)
        assert len(blocks) == n
        assert sum(abs(b.error) <= distruns.STEP_TARGET for b in blocks) == paced_in
        assert sum(abs(b.default_error) <= distruns.STEP_TARGET for b in blocks) == default_in
    # host8 met host7c's criterion (39 of 48 = 81 %, more than 30): the family's record rule took effect
    assert 39 >= 0.75 * 48


# The family's step record (the rule host8 committed before its call): a configuration with metered runs is held to
# them; its unmetered runs are history. Every unmetered miss of the record before host8 (12) is history now, each of
# them a configuration metered since; memory keeps every run.
def test_the_step_record_holds_metered_configurations_to_their_metered_runs():
    from mlcalc import accuracy

    every = [c for r in distruns.runs() for c in distruns.cases(r)]
    record = [c for c in every if distruns.in_step_record(c)]
    history = distruns.step_history()
    # blind10 (session 35): 7 configurations never run before, unmetered, all in the record; blind11: 14 more on 4 GPUs,
    # and its two -base cases (configurations with metered runs: history); blind11b: the same 16 again on another host;
    # meter12 (session 36): 10 metered cases, five of them configurations of blind10, blind11 and blind11b, whose 8
    # unmetered runs there (the six misses and blind11b's two hits of the same configurations) are history since;
    # meter12b: the same ten again on a second host, all in the record; meter12c: on a third host, all in the record;
    # h100mg and h100mgb (session 37): ten metered 2-GPU cases each on two 2 x H200 hosts, all in the record, and two
    # unmetered runs of their configurations history since (blind10's FSDP 2 Mistral 7B at 1 x 4096 checkpointed and
    # the held-out sweep's TP 2 1B at 2 x 4096, both within)
    assert len(every) == 258 and len(record) == 167 and len(history) == 91
    assert {h.case for h in history} == {c for c in every if not distruns.in_step_record(c)}
    metered = {distruns.config(c) for c in every if distruns.case_pace(c) > 0}
    for c in every:
        if distruns.case_pace(c) > 0:
            assert distruns.in_step_record(c)
        else:
            assert distruns.in_step_record(c) == (distruns.config(c) not in metered)
    assert len(accuracy.cases("train-multigpu-step")) == 167 and len(accuracy.cases("train-multigpu-memory")) == 258
    before = {("h200x2-2026-11-26-train-dist-heldout", "w2-tp2-1B-s2048-mb2-ac"),
              ("h200x2-2026-11-26-train-dist4-rerun", "w2-tp2-3B-s2048-mb2-after"),
              ("h200x2-2026-11-26-train-dist4-rerun", "w2-fsdp2-8B-s2048-mb1-ac"),
              ("h200x2-2026-11-27-train-dist5b", "w1-single-3B-s2048-mb1-ac-p-apart"),
              (FOUR, "w2-tp2-3B-s2048-mb2"), (FOUR, "w2-pp2-1f1b-1B-s2048-mb1-m8"), (FOUR, "w4-tp4-8B-s2048-mb2-ac"),
              (D4B, "w1-single-3B-s2048-mb1-ac"), (D4B, "w2-pp2-1f1b-1B-s2048-mb1-m8-r2"),
              (D4B, "w2-tp2-3B-s2048-mb2-r3"), (D4B, "w4-tp4-1B-s8192-mb2"), (D5, "w1-single-3B-s2048-mb1-ac-base")}
    assert before <= {(h.case.run, h.case.id) for h in history}
    recs = [distruns.check(c) for c in record]
    # 92 of the 92 before blind10 (90 before the launch floor, host9); blind10's two unmetered host-bound TP runs missed,
    # and blind11's three (11 of its 14 within); blind11b's one (13 of 14): 121 of 127; since meter12 those six are
    # history and the one miss is meter12's TP 4 Llama-2 7B (9 of its 10 within at their own pace); meter12b, the same
    # configurations on a second, slower host, 5 of 10 (all five misses predicted too fast): 133 of 139
    # meter12c, a third host: 10 of 10 (143 of 149); h100mg 10 of 10, h100mgb 9 of 10 (its baseline TP 2 1B at 8 x 1024
    # +16.5 %), less the two within that became history: 160 of 167
    assert sum(abs(k.step_error) <= distruns.STEP_TARGET for k in recs) == 160
    assert all(k.step_cause and k.step_cause != "(no cause stated)" for k in recs
               if abs(k.step_error) > distruns.STEP_TARGET)


# FSDP2 over DTensor parameters, measured beside the meter (24 passes a program, each at its slowest rank's pace): 115
# forward and 309 backward plain ops a layer on host8's host, 135 and 294 on host7b's (12 passes), each inside the
# other's spread; the unmetered floor the engine had (dist4b: 7 passes, each program at whatever pace it then had)
# said 33 and 535. The engine's machine takes host8's.
def test_fsdp_over_dtensor_floor_metered():
    from mlcalc import steptime

    h8, h7 = distruns.metered_fsdp_dtensor(H8), distruns.metered_fsdp_dtensor(H7B)
    assert all(len(f.forward_runs) == len(f.backward_runs) == (96 if f.program == "plain" else 24)
               for f in distruns.metered_floors(H8))
    assert h8["forward"][1] == pytest.approx(115.3, abs=0.5) and h8["backward"][1] == pytest.approx(308.6, abs=0.5)
    assert h7["forward"][1] == pytest.approx(134.9, abs=0.5) and h7["backward"][1] == pytest.approx(293.8, abs=0.5)
    for a, b in ((h8, h7), (h7, h8)):
        for ph in ("forward", "backward"):
            assert a[ph][0] <= b[ph][1] <= a[ph][2]
    assert distruns.fsdp_dtensor_constants() == (h8["forward"][1], h8["backward"][1])
    old = steptime.fsdp_dtensor_host_constants(distruns.host_floors(D4B))
    assert old == pytest.approx((33.0, 534.8), abs=0.5)
    m = distruns.machine(distruns.cases(H8)[0])
    assert m.host_s_per_fsdp_dtensor_layer == pytest.approx(h8["forward"][1] * m.host_s_per_op)
    # host7c's FSDP 2 x TP 2 3B, +15.6 % paced with the old floor, is +9.4 % with the metered one (its pace 62-70
    # thousand runs a second: with the launch floor held fixed, host9, +2.7 %); with issue 24's channel rule (coll10:
    # its TP all-reduces slower) +10.3 % and +3.6 %
    c = next(c for c in distruns.cases(H7C) if c.family == "fsdpxtp")
    scaled = distruns.predict_paced(c, round(distruns.case_pace(c), -3), distruns.STATED_PACE) / c.step_s - 1
    assert scaled == pytest.approx(0.103, abs=0.005)
    assert distruns.check(c).step_error == pytest.approx(0.036, abs=0.005)


# The pace gap (host7: the steps hold to 90 thousand runs a second, the engine's calibration program gives 160
# thousand). Not the token count: the calibration program's host work per op is the same at 64, 512 and 2048 tokens
# (issue times, each pass priced at its vCPU's pace). Part of it is the program: the multi-GPU program's own plain
# layer, metered in the same calls, costs what the engine charges a Hugging Face layer at 111-117 thousand.
def test_the_pace_gap_is_not_the_token_count():
    rows = distruns.floor_tokens(H8)
    assert len(rows) == 12 and {r.seq_len for r in rows} == {64, 512, 2048}
    for r in rows:
        at64 = next(x for x in rows if (x.model, x.recompute, x.seq_len) == (r.model, r.recompute, 64))
        assert r.forward_runs_per_op == pytest.approx(at64.forward_runs_per_op, rel=0.06)
        assert r.backward_runs_per_op == pytest.approx(at64.backward_runs_per_op, rel=0.06)
    plain = [r for r in rows if not r.recompute]
    assert all(1.6 < r.forward_runs_per_op < 1.9 for r in plain)  # the engine's 160 thousand: 1.75 runs an op
    assert distruns.engine_pace(H7) == pytest.approx(160e3, rel=0.02)
    for run in (H8, H7B):
        f, b = distruns.plain_floor_pace(run)
        assert 105e3 < f < 120e3 and 105e3 < b < 120e3
        assert distruns.STATED_PACE < min(f, b) and max(f, b) < distruns.engine_pace(H7)
