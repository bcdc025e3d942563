"""Multi-GPU training measured in this book against the step-time engine (issue 24, "Measured multi-GPU training").

Source of every measured number: mlcalc/data/measured/h200x2-2026-11-26-train-dist/ (scripts/gpu/train_dist.py on
2 x NVIDIA H200 joined by NVLink 4 (NV18), torch 2.11, NCCL 2.28.9; asked for 4 x H100, none was lent): FSDP2,
tensor parallel (sequence parallel) and pipeline (GPipe, 1F1B) training of Llama-shaped 1B, 3B and 8B models, and
the same program on one GPU. The engine (mlcalc.steptime.predict_step) sees only each case's model, layout and
sequence length and the card's machine measured on another day (mlcalc.hfruns): nothing is fitted to a case.
Where it misses the issue's targets (memory 10%, step 15%) the run's misses.json states why; these tests hold
that every miss has its cause written down, and pin the measurements the causes rest on.
"""

import pytest

from mlcalc import distruns

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
