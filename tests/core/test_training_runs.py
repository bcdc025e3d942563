"""Published large training runs (mlcalc/data/published_training.json) against the one step-time engine.

Every run is predicted from its model, chip, GPU count, layout, sequence and batch alone, by the same
engine with the same rules (mlcalc.steptime.predict_step); nothing is fitted to a case. Each source's
figure is compared in its own terms (TFLOP/s per GPU under its FLOP count, MFU, iteration time or tokens
per second per GPU).
"""

import pytest

from mlcalc import steptime, training_runs

NAMES = list(training_runs.runs())


def test_at_least_twelve_runs_dense_and_moe_on_three_chips():
    assert len(NAMES) >= 12
    chips = {training_runs.runs()[n]["chip"] for n in NAMES}
    assert {"A100-80GB", "H100-SXM", "H800-SXM"} <= chips
    assert any(training_runs.model_of(training_runs.runs()[n]).is_moe for n in NAMES)
    assert any(training_runs.layout_of(training_runs.runs()[n]).zero == 3 and training_runs.runs()[n]["chip"] == "H100-SXM"
               for n in NAMES)  # FSDP on H100 (MosaicML's MPT runs)
    sources = {training_runs.runs()[n]["source"] for n in NAMES}
    assert len(sources) >= 8 and all(s.startswith("https://") for s in sources)


@pytest.mark.parametrize("name", NAMES)
def test_each_run_states_its_source_layout_and_assumptions(name):
    e = training_runs.runs()[name]
    for field in ("chip", "gpus", "seq_len", "global_batch", "layout", "metric", "published", "source", "where"):
        assert e[field] not in (None, ""), field
    lay = training_runs.layout_of(e)
    assert lay.n_gpus == e["gpus"] and lay.global_batch == e["global_batch"]


# The target: within 15% of the published throughput, or the case says why not. A miss is stated in
# the data ("known_miss", with whether the source gives the cause); the list of misses is pinned here, so a
# run that drifts out of tolerance fails, and so does a stated miss that is no longer one.
KNOWN_MISSES = {"GPT-NeoX-20B (96 A100 40GB)", "OPT-175B (992 A100)", "Llama 3 405B (16384 H100, seq 131072)"}


@pytest.mark.parametrize("name", NAMES)
def test_within_15_percent_or_the_miss_is_stated(name):
    c = training_runs.check(name)
    e = training_runs.runs()[name]
    within = abs(training_runs.throughput_error(c)) <= training_runs.TOLERANCE
    if name in KNOWN_MISSES:
        assert not within, f"{name} is back within 15%: drop it from the misses ({c.error:+.3f})"
        assert len(e["known_miss"]) > 80 and ("source gives no cause" in e["known_miss"] or c.cause)
    else:
        assert within, f"{name}: predicted {c.predicted:.4g} against {c.published:.4g} ({c.error:+.3f})"
        assert "known_miss" not in e


# Smith et al. 2022 (MT-NLG 530B), 2.4: batch 1,920 on 280, 350 and 420 DGX A100 nodes (TP 8 x PP 35, so DP 8, 10,
# 12), iterations of 60.1, 50.2 and 44.4 s; the micro-batch size is not stated. Under 1F1B (DeepSpeed's TrainSchedule,
# tests/core/test_deepspeed_pipeline.py) an iteration is m micro-batches' passes plus a bubble of p - 1 of them plus
# what runs once an iteration, with m = 1920 / (DP b): the published times alone (no engine) give the micro-batch b.
def test_mt_nlg_micro_batch_from_its_three_iteration_times():
    t = {8: 60.1, 10: 50.2, 12: 44.4}
    p, batch = 35, 1920
    per_dp = (t[8] - t[12]) / (1 / 8 - 1 / 12)  # seconds of passes x DP: T = per_dp / DP + fixed
    fixed = t[8] - per_dp / 8
    assert per_dp == pytest.approx(376.8, abs=0.1) and fixed == pytest.approx(13.0, abs=0.05)
    assert abs(t[10] - (per_dp / 10 + fixed)) < 0.01 * t[10]  # the third point on the line within 1%
    # per-iteration time the bubble of p - 1 micro-batches of b sequences leaves, for each b that divides the batch
    left = {b: fixed - (p - 1) * per_dp * b / batch for b in (1, 2, 4, 8)}
    b = min(left, key=lambda k: abs(left[k]))  # the algebra's answer: the b whose bubble is the fixed part
    assert abs(left[b]) < 0.5 and all(abs(left[k]) > 6 for k in left if k != b)
    assert left[1] == pytest.approx(6.3, abs=0.1)  # b = 1 leaves 6.3 s an iteration unaccounted
    for n in ("MT-NLG 530B (2240 A100)", "MT-NLG 530B (2800 A100)", "MT-NLG 530B (3360 A100)"):
        e = training_runs.runs()[n]
        lay = training_runs.layout_of(e)
        assert lay.micro_batch == b and lay.grad_accum == batch // (b * lay.dp) and e["published"] == t[lay.dp]
        assert "not stated by Smith et al. 2022" in e["assumed"] and "no engine" in e["assumed"]
        assert e["inferred"].startswith("micro-batch not stated by Smith et al. 2022") and f"b = {b}" in e["inferred"]
        assert abs(training_runs.check(n).error) <= training_runs.TOLERANCE
        # the case's text keeps what the former assumption gives: b = 1 is outside 15 %, by the numbers it states
        one_lay = steptime.Layout(**dict(e["layout"], micro_batch=1, grad_accum=batch // lay.dp))
        one = steptime.predict_step(training_runs.model_of(e), one_lay, seq_len=e["seq_len"], machine=e["chip"],
                                    engine=e["engine"])
        assert f"{one.step_s:.1f}" in e["assumed"] and f"{e['published'] / one.step_s - 1:+.1%}" in e["assumed"]
        assert f"{e['published'] / one.step_s - 1:+.1%}" in e["inferred"]
    # the accuracy page shows the inference beside each case (accuracy.Case.note)
    from mlcalc import accuracy
    notes = {c.label.split(":")[0]: c.note for c in accuracy.cases("published-large-runs")}
    assert all(notes[n] == training_runs.runs()[n].get("inferred", "") for n in NAMES)
    assert sum(bool(v) for v in notes.values()) == 3


def test_misses_are_a_minority_and_bounded():
    errs = [abs(training_runs.throughput_error(training_runs.check(n))) for n in NAMES]
    assert sum(e <= 0.15 for e in errs) >= 0.75 * len(errs)
    assert max(errs) < 0.5  # the worst, Llama 3 at 131,072 tokens, is a stated miss of the FLOP count (about 39%)


# OPT's FLOP count, from the team's own final training note (metaseq, projects/OPT/chronicles/final_update.md,
# 7 Jan 2022): "300B tokens ... ~4.30E+23 FLOPs of compute, or roughly ~33 days of continuous training on 1024 80GB
# A100s". 4.30e23 is Narayanan et al.'s eq. 3 (recomputation counted) for 300B tokens, and over 33 days on 1,024 GPUs
# it is the paper's 147 TFLOP/s: the case compares in eq. 3. metaseq's OPT recipe (metaseq/launcher/opt_baselines.py)
# runs full recomputation with --distribute-checkpointed-activations: Megatron's CheckpointFunction keeps 1/8 of each
# layer's input per tensor-parallel rank and all-gathers it before the recomputation, one more collective a layer on
# the critical path. Since the A100's rates are carried over at its published best shape and attention runs unfused as
# metaseq ran it, the case is about 22% fast (known_miss: the source gives no cause).
def test_opt_147_tflops_is_megatron_eq3():
    from mlcalc import compute
    e = training_runs.runs()["OPT-175B (992 A100)"]
    m = training_runs.model_of(e)
    f = compute.megatron_flops_per_iteration(round(300e9 / 2048), 2048, m.n_layers, m.hidden, m.vocab, recompute=True)
    assert f == pytest.approx(4.30e23, rel=0.005)
    assert f / (33 * 86400 * 1024) / 1e12 == pytest.approx(147, rel=0.005)
    assert e["convention"] == "megatron-eq3" and e["published"] == 147
    c = training_runs.check("OPT-175B (992 A100)")
    assert training_runs.layout_of(e).distribute_checkpoints and training_runs.layout_of(e).unfused_attention
    assert 0.15 < c.error < 0.30
    off = steptime.predict_step(m, steptime.Layout(**dict(e["layout"], distribute_checkpoints=False)), seq_len=2048,
                                machine=e["chip"], engine=e["engine"])
    one = steptime._collective_s(8 * 2048 * m.hidden * steptime.ACTIVATION_BYTES,
                                 steptime._fabric_of(steptime.default_system(e["chip"]), 8, 1, 8), "all_gather")
    assert c.prediction.step_s - off.step_s == pytest.approx(m.n_layers * one)
    assert any("distributed checkpoints" in n for n in c.prediction.notes)
    with pytest.raises(ValueError, match="distribute_checkpoints"):
        steptime.Layout(tp=2, distribute_checkpoints="yes")


# GPT-NeoX-20B's 117 TFLOP/s is what its code logged: EleutherAI/gpt-neox megatron/logging.py get_flops (May 2021 to
# September 2023) = train_batch x seq x (6 x total params + 60 x seq x hidden x layers) / (iteration time x GPUs).
# For the 20B (44 layers, hidden 6144, 20.55B parameters, sequence 2048) that is 1.568e11 FLOP per token, 8% below
# Narayanan et al.'s eq. 3 with recomputation; counted that way, with attention unfused as its code ran it, the engine
# is still about 21% above 117.
def test_gpt_neox_counts_as_its_code_logged():
    e = training_runs.runs()["GPT-NeoX-20B (96 A100 40GB)"]
    m = training_runs.model_of(e)
    per_token = training_runs.gpt_neox_flops_per_token(m, 2048)
    assert per_token == pytest.approx(6 * 20.5546e9 + 60 * 2048 * 6144 * 44, rel=1e-4)
    assert per_token == pytest.approx(1.568e11, rel=0.002)
    assert 0.15 < training_runs.check("GPT-NeoX-20B (96 A100 40GB)").error < 0.30
    with pytest.raises(ValueError, match="seq_len"):
        training_runs.gpt_neox_flops_per_token(m, 0)


def test_every_miss_is_on_the_accuracy_page_with_its_cause():
    from mlcalc import accuracy
    shown = {c.label.split(": ")[0]: c.cause for c in accuracy.cases("published-large-runs")}
    for name in KNOWN_MISSES:
        assert shown[name] == training_runs.runs()[name]["known_miss"]


# DeepSeek-V3: fp8 products at the H100's published fp8/bf16 matmul ratio (the H800 is the same silicon),
# experts spread over 64 GPUs, DualPipe hiding the all-to-all behind computation.
def test_deepseek_v3_needs_dualpipe_and_fp8():
    c = training_runs.check("DeepSeek-V3 (2048 H800)")
    assert abs(c.error) < 0.15
    e = dict(training_runs.runs()["DeepSeek-V3 (2048 H800)"])
    lay = dict(e["layout"], schedule="1f1b")
    slow = steptime.predict_step(training_runs.model_of(e), steptime.Layout(**lay), seq_len=4096,
                                 machine="H800-SXM", engine="megatron", dtype="fp8")
    assert slow.tokens_per_s < 0.7 * c.prediction.tokens_per_s
    bf16 = steptime.predict_step(training_runs.model_of(e), training_runs.layout_of(e), seq_len=4096,
                                 machine="H800-SXM", engine="megatron")
    assert bf16.step_s > c.prediction.step_s


# MosaicML's published throughput (llm-foundry scripts/train/benchmarking/README.md, 2024-01-06, table "H100 80GB BF16
# (Large Scale, >= 128 GPUs)"): MPT-1B to 70B on 128, 256 and 512 H100 with PyTorch FSDP. Each row's MFU is its tokens
# per second per GPU times MosaicML's count (6 N + 12 l d s per token, N = NumParams) over 989 TFLOP/s: that every
# row satisfies it checks the transcription of both figures (to 0.1%).
MPT = [n for n in NAMES if n.startswith("MPT-")]


def test_mosaicml_rows_are_transcribed_consistently():
    assert len(MPT) == 18
    for name in MPT:
        e = training_runs.runs()[name]
        m = training_runs.model_of(e)
        per_token = 6 * e["model"]["published_params"] + 12 * m.n_layers * m.hidden * e["seq_len"]
        assert e["published"] * per_token / 989e12 == pytest.approx(e["published_mfu"], rel=1e-3), name
        assert m.n_params() == pytest.approx(e["model"]["published_params"], rel=0.005), name
        assert e["layout"]["dp"] == e["gpus"] and e["engine"] == "eager"


def test_bad_run_name():
    with pytest.raises(ValueError, match="run"):
        training_runs.check("GPT-5")


# Narayanan et al. 2021, 4.1: Megatron-LM sends 1/t of a pipeline stage's output between nodes from each of the t
# tensor-parallel ranks and all-gathers it over NVLink ("scatter/gather"); DeepSpeed's pipeline engine (MT-NLG, BLOOM,
# GPT-NeoX) partitions its sends its own way (Layout.deepspeed_pipeline, tests/core/test_deepspeed_pipeline.py). Korthikanti et al. 2022's 530B with full recomputation and no
# sequence parallelism (TP 8 x PP 35 on 2,240 A100, 42.1% MFU) is Megatron-LM: with the switch it is within 15%.
def test_megatron_scatter_gather_cuts_the_pipeline_sends():
    name = "Korthikanti 530B, full recomputation (2240 A100)"
    e = training_runs.runs()[name]
    assert e["layout"]["scatter_gather"] and not e["layout"]["sequence_parallel"]
    c = training_runs.check(name)
    assert abs(c.error) <= training_runs.TOLERANCE
    off = steptime.predict_step(training_runs.model_of(e), steptime.Layout(**dict(e["layout"], scatter_gather=False)),
                                seq_len=2048, machine="A100-80GB", engine="megatron")
    on_s, off_s = c.prediction.parts_s["pipeline sends"], off.parts_s["pipeline sends"]
    assert on_s < off_s / 3 and off.step_s > c.prediction.step_s
    assert any("scatter/gather" in n for n in c.prediction.notes)
    # with sequence parallelism the stage output is already split: the switch changes nothing
    sel = training_runs.runs()["Korthikanti 530B, selective recomputation (2240 A100)"]
    lays = [steptime.Layout(**dict(sel["layout"], scatter_gather=f)) for f in (True, False)]
    a, b = (steptime.predict_step(training_runs.model_of(sel), x, seq_len=2048, machine="A100-80GB",
                                  engine="megatron").step_s for x in lays)
    assert a == b
    # DeepSpeed's pipeline runs are not Megatron-LM's scatter/gather
    for n in NAMES:
        if n.startswith(("MT-NLG", "BLOOM", "GPT-NeoX")):
            assert not training_runs.layout_of(training_runs.runs()[n]).scatter_gather, n
    with pytest.raises(ValueError, match="scatter_gather"):
        steptime.Layout(scatter_gather="yes")


# Dubey et al. 2024, 3.3.2: "we reduce one Transformer layer each from the first and the last stages ... the first
# model chunk on the first stage has only the embedding": one layer per model chunk, so the 126 layers and the 2
# removed are 128 chunks over PP 16, 8 virtual stages; and the fullest rank holds 8 layers without the output layer
# (balanced_stages), where an unbalanced pipeline's last stage holds its layers and the output layer. Table 4: 430 TFLOP/s on 8,192 H100 (DP 64, 32 micro-batches)
# and 400 on 16,384 (DP 128, 16 micro-batches); with V = 8 the bubble (PP - 1)/(V M) is 5.9% and 11.7%.
def test_llama3_takes_its_virtual_stages_from_the_paper():
    from mlcalc import parallel
    runs = [n for n in NAMES if n.startswith("Llama 3")]
    assert len(runs) == 3
    for n in runs:
        lay = training_runs.layout_of(training_runs.runs()[n])
        assert lay.virtual_stages == 8 and lay.pp * lay.virtual_stages == 126 + 2
    assert parallel.bubble_fraction(16, 32, 8) == pytest.approx(15 / 256)
    assert parallel.bubble_fraction(16, 16, 8) == pytest.approx(15 / 128)
    for n in ("Llama 3 405B (8192 H100, seq 8192)", "Llama 3 405B (16384 H100, seq 8192)"):
        assert abs(training_runs.check(n).error) <= training_runs.TOLERANCE


# The 131,072-token run's stated miss: the paper names no FLOP count. Eq. 3 counts the full s x s attention product
# (s / 6h = 1.33 of the dense work at s = 131,072, h = 16,384); the model runs causal attention, half of it. The
# numbers the miss states are what the engine's predicted steps give under 6 N + 6 L s h (causal).
def test_llama3_long_context_miss_states_the_flop_count():
    from mlcalc import compute
    e = training_runs.runs()["Llama 3 405B (16384 H100, seq 131072)"]
    m = training_runs.model_of(e)
    assert e["seq_len"] / (6 * m.hidden) == pytest.approx(1.33, abs=0.005)
    err = training_runs.check("Llama 3 405B (16384 H100, seq 131072)").error
    assert err > 0.15 and f"{err:.0%} more" in e["known_miss"]
    said = {"Llama 3 405B (16384 H100, seq 131072)": "377 TFLOP/s (-0.7%)",
            "Llama 3 405B (8192 H100, seq 8192)": "+3.8%", "Llama 3 405B (16384 H100, seq 8192)": "+5.3%"}
    for n, text in said.items():
        r = training_runs.runs()[n]
        c = training_runs.check(n)
        causal = compute.executed_flops_per_token(m, r["seq_len"]) * r["global_batch"] * r["seq_len"] \
            / (c.prediction.step_s * r["gpus"]) / 1e12
        err = causal / r["published"] - 1
        assert f"{err * 100:+.1f}%" in text, (n, causal, err)
        if "TFLOP/s" in text:
            assert f"{causal:.0f} TFLOP/s" in text
        assert text in e["known_miss"]


# MosaicML ran every MPT row (llm-foundry benchmarking README, 2024-01-06) on 80 GB H100s: MPT-1B and 3B with
# FSDP SHARD_GRAD_OP (ZeRO-2), 7B to 70B with FULL_SHARD. The fit is the eager program's phase by phase
# (memory.eager_layout_peak): FULL_SHARD holds one layer's bf16 parameters at a time, SHARD_GRAD_OP keeps every
# layer's bf16 parameters from its forward to its backward (2 bytes per parameter more). Every row must fit.
def test_every_mpt_run_fits_its_h100s():
    from mlcalc import memory
    for name in MPT:
        c = training_runs.check(name)
        assert c.prediction.fits, (name, c.prediction.peak_bytes_per_gpu / 1e9)
    e = training_runs.runs()["MPT-3B (512 H100, FSDP)"]
    m, lay = training_runs.model_of(e), training_runs.layout_of(e)
    assert lay.zero == 2 and "SHARD_GRAD_OP" in e["where"]
    parts = training_runs.check("MPT-3B (512 H100, FSDP)").prediction.memory_parts
    assert parts["unsharded bf16 parameters (no reshard after forward)"] == pytest.approx(2 * m.n_params())
    full = memory.eager_layout_peak(m, lay.micro_batch, e["seq_len"], dp=lay.dp, fsdp=True)
    grad_op = memory.eager_layout_peak(m, lay.micro_batch, e["seq_len"], dp=lay.dp, fsdp=True,
                                       reshard_after_forward=False)
    assert grad_op.total_bytes - full.total_bytes == pytest.approx(2 * m.n_params())
    assert "bf16 weight copies (autocast)" not in parts  # FSDP's bf16 parameters, no autocast cache
    with pytest.raises(ValueError, match="reshard_after_forward"):
        memory.eager_layout_peak(m, 1, 2048, dp=2, fsdp=True, reshard_after_forward="no")


def test_balanced_stages_put_the_output_layer_in_a_layers_place():
    # Dubey et al. 2024, 3.3.2 "To balance the pipeline, we reduce one Transformer layer each from the first and the
    # last stages": with it, Llama 3 405B's slowest rank runs 8 layers and no output layer; without it, the last rank
    # runs ceil(126 / 16) = 8 layers and the output layer (128,256 x 16,384 over TP 8), which is slower.
    e = training_runs.runs()["Llama 3 405B (16384 H100, seq 8192)"]
    assert e["layout"]["balanced_stages"]
    m, lay = training_runs.model_of(e), training_runs.layout_of(e)
    on = steptime.predict_step(m, lay, seq_len=8192, machine="H100-SXM", engine="megatron")
    off = steptime.predict_step(m, steptime.Layout(**dict(e["layout"], balanced_stages=False)), seq_len=8192,
                                machine="H100-SXM", engine="megatron")
    assert on.step_s < off.step_s
    # the difference is the output layer's work on the last rank: at least its three products (logits forward,
    # input and weight gradients) per micro-batch, at the rate of their shapes
    mach = steptime.catalogue_machine("H100-SXM")
    with_out = steptime.step_gemms(m, 1, 8192, False, False, 8, 1, 1, 8, True)
    logits_s = sum(g.flop / mach.matmul_flops_per_s(g.m, g.n, g.k) for g in with_out if g.label.startswith("logits"))
    assert logits_s > 0 and off.compute_s - on.compute_s >= 0.99 * lay.grad_accum * logits_s
    assert on.model_flops == off.model_flops
    with pytest.raises(ValueError, match="balanced_stages"):
        steptime.Layout(balanced_stages=1.5)


# Every published run ran, so its fullest GPU's predicted peak must fit the memory it had. The planner's stated 10%
# reserve (steptime.MEMORY_RESERVE_FRACTION) is a planning margin: Llama 3 405B on 8,192 H100s leaves less, which is
# what Dubey et al. 2024, 3.3.2 describe ("to reduce memory cost, based on detailed memory allocation profiling, we
# proactively deallocate tensors ... With these optimizations, we could pre-train Llama 3 on sequences of 8K tokens
# without activation checkpointing").
@pytest.mark.parametrize("name", NAMES)
def test_every_published_run_fits_as_it_ran(name):
    p = training_runs.check(name).prediction
    assert p.device_bytes is not None and p.peak_bytes_per_gpu <= p.device_bytes, (name, p.peak_bytes_per_gpu / 1e9)


def test_llama3_and_deepseek_v3_fit_their_80_gb():
    tight = training_runs.check("Llama 3 405B (8192 H100, seq 8192)").prediction
    assert 0.9 < tight.peak_bytes_per_gpu / tight.device_bytes < 1.0 and not tight.fits
    for n in ("Llama 3 405B (16384 H100, seq 8192)", "Llama 3 405B (16384 H100, seq 131072)",
              "DeepSeek-V3 (2048 H800)"):
        assert training_runs.check(n).prediction.fits, n
    # Llama 3: ZeRO-2 as the paper states it (3.3.2: "shards optimizer states and gradients")
    assert {training_runs.layout_of(training_runs.runs()[n]).zero for n in NAMES if n.startswith("Llama 3")} == {2}


# Dubey et al. 2024, 3.3.2: Llama 3's context parallelism all-gathers K and V before each layer's attention ("the
# all-gather communication latency is exposed in the critical path"), unlike ring attention, whose exchange hides
# behind the attention. The 131,072-token run (CP 16) runs it so; its K/V gathers and their gradients'
# reduce-scatters are all exposed, and the step is longer than the ring's.
def test_llama3_context_parallel_all_gather_is_exposed():
    name = "Llama 3 405B (16384 H100, seq 131072)"
    e = training_runs.runs()[name]
    lay = training_runs.layout_of(e)
    assert lay.cp == 16 and lay.cp_allgather
    c = training_runs.check(name)
    tot, exposed = c.prediction.comm_parts_s["context"]
    assert tot > 0 and exposed == pytest.approx(tot)
    assert c.prediction.parts_s["context-parallel exchange (exposed)"] == pytest.approx(tot)
    ring = steptime.predict_step(training_runs.model_of(e), steptime.Layout(**dict(e["layout"], cp_allgather=False)),
                                 seq_len=e["seq_len"], machine=e["chip"], engine=e["engine"])
    assert ring.comm_parts_s["context"][1] < exposed and ring.step_s < c.prediction.step_s
    assert any("all-gather" in n and "Llama 3" in n for n in c.prediction.notes)
    with pytest.raises(ValueError, match="cp_allgather"):
        steptime.Layout(cp=2, cp_allgather=1)


# Dubey et al. 2024 ('The Llama 3 Herd of Models'), 1: the 405B model was pre-trained with 3.8 x 10^25 FLOPs on 15.6T
# tokens, i.e. 6 N D with no attention term; 3.3.2 splits each sequence into 2 x CP chunks for load balancing (rank i
# gets chunks i and 2 CP - 1 - i), which balances a kernel that skips the causal mask's masked half. The 131,072-token
# case states both; the numbers its text gives for the 6 N count are the engine's.
def test_llama_131k_states_what_the_paper_settles_and_what_it_does_not():
    n_long = "Llama 3 405B (16384 H100, seq 131072)"
    m = training_runs.model_of(training_runs.runs()[n_long])
    assert 6 * m.n_active_params() * 15.6e12 == pytest.approx(3.8e25, rel=0.01)
    text = training_runs.runs()[n_long]["known_miss"]
    assert "2 x CP chunks" in text and "6 N D" in text
    for n, fmt in ((n_long, "{:+.0%}"), ("Llama 3 405B (8192 H100, seq 8192)", "{:+.1%}"),
                   ("Llama 3 405B (16384 H100, seq 8192)", "{:+.1%}")):
        e, c = training_runs.runs()[n], training_runs.check(n)
        six = 6 * m.n_active_params() * e["global_batch"] * e["seq_len"] / (c.prediction.step_s * e["gpus"]) / 1e12
        assert fmt.format(six / e["published"] - 1) in text, n


# The 131,072-token run's attention kernel, which Dubey et al. 2024 do not name. Shah et al. 2024 ('FlashAttention-3:
# Fast and Accurate Attention with Asynchrony and Low-precision', abstract): "FlashAttention-2 achieving only 35%
# utilization on the H100 GPU". The case's text states what the same engine gives with the attention at that rate
# (the H100's dense bf16 peak x 0.35), the rate PaLM's count would need, and the engine's own rate; each number is
# recomputed here from the engine.
FA2_H100_UTILIZATION = 0.35  # Shah et al. 2024, abstract


def _llama_with_attention_rate(name, rate):
    from mlcalc import compute
    e = training_runs.runs()[name]
    m, lay = training_runs.model_of(e), training_runs.layout_of(e)
    base = steptime.catalogue_machine(e["chip"])
    mach = base if rate is None else base._replace(attention_flops_per_s=lambda d, s: rate)
    p = steptime.predict_step(m, lay, seq_len=e["seq_len"], machine=mach, engine=e["engine"])
    tokens = e["global_batch"] * e["seq_len"]
    palm = compute.palm_flops_per_token(m, e["seq_len"]) * tokens / (p.step_s * lay.n_gpus) / 1e12
    causal = compute.executed_flops_per_token(m, e["seq_len"]) * tokens / (p.step_s * lay.n_gpus) / 1e12
    return p, palm / e["published"] - 1, causal / e["published"] - 1


def test_llama_131k_states_the_attention_kernel_it_does_not_know():
    from mlcalc.accelerators import spec
    n_long = "Llama 3 405B (16384 H100, seq 131072)"
    n8 = ("Llama 3 405B (8192 H100, seq 8192)", "Llama 3 405B (16384 H100, seq 8192)")
    text = training_runs.runs()[n_long]["known_miss"]
    peak = spec("H100-SXM").peak_flops("bf16")
    fa2 = FA2_H100_UTILIZATION * peak
    assert f"({fa2 / 1e12:.0f} TFLOP/s)" in text
    own = steptime.catalogue_machine("H100-SXM").attention_flops_per_s(128, 131072 // 16)
    assert f"priced at {own / 1e12:.0f} TFLOP/s" in text
    p, palm, causal = _llama_with_attention_rate(n_long, None)
    assert palm == pytest.approx(training_runs.check(n_long).error)
    free, _, _ = _llama_with_attention_rate(n_long, 1e30)  # attention at no cost: its share of the kernel time
    assert f"({1 - free.compute_s / p.compute_s:.0%})" in text
    _, palm, causal = _llama_with_attention_rate(n_long, fa2)
    assert f"gives {palm:+.0%} under PaLM's count and {causal:+.0%} under the causal one" in text
    e8 = [_llama_with_attention_rate(n, fa2) for n in n8]
    assert f"runs {e8[0][1]:+.1%} and {e8[1][1]:+.1%}, or {e8[0][2]:+.1%} and {e8[1][2]:+.1%}" in text
    lo, hi = 50e12, fa2  # the rate at which PaLM's count meets the published 380
    for _ in range(50):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if _llama_with_attention_rate(n_long, mid)[1] > 0 else (mid, hi)
    assert f"at {mid / 1e12:.0f} TFLOP/s ({mid / peak:.0%} of the dense bf16 peak)" in text
    assert mid < fa2 < own


# OPT-175B's logged throughput (metaseq projects/OPT/chronicles/56_percent_update.md, chart run12_upgrade_shift.jpeg:
# train_inner wps about 1.00e5-1.01e5 before the accidental Megatron 2.4 -> 2.6 upgrade, about 1.02e5 after). metaseq's
# wps is the tokens of all data-parallel ranks a second (tasks/base_task.py: metrics.log_speed("wps", ntokens)); by
# eq. 3 on 992 GPUs that is the published 147 TFLOP/s, so the case's miss lies in the steady state.
def test_opt_logged_wps_is_the_published_rate():
    from mlcalc import compute
    name = "OPT-175B (992 A100)"
    e, text = training_runs.runs()[name], training_runs.runs()[name]["known_miss"]
    m = training_runs.model_of(e)
    per_token = compute.megatron_flops_per_iteration(1, 2048, m.n_layers, m.hidden, m.vocab, recompute=True) / 2048
    lo, hi = (w * per_token / e["gpus"] / 1e12 for w in (1.00e5, 1.02e5))
    assert f"{lo:.1f} to {hi:.1f} TFLOP/s per GPU" in text
    assert lo < e["published"] < hi
    engine_wps = training_runs.check(name).predicted * 1e12 * e["gpus"] / per_token
    assert f"engine's step is {engine_wps / 1e5:.2f} x 10^5 tokens a second" in text


# NVIDIA's DGX Cloud Benchmarking recipes (NVIDIA/dgxc-benchmarking v25.01, commit 143b90d): each README's
# 'Expected Performance' table gives the layout (TP, PP, CP, VP, MBS, GA), the GPU count, the global batch and the
# step time of NeMo 24.09 / 24.11 on H100, bf16 and fp8. The book takes, for each of the seven full-size models, the
# smallest and the largest GPU count of each table (28 runs), predicted by the unchanged engine. Their layouts are the
# tables' own: GPUs = TP x PP x CP x DP and global batch = DP x MBS x GA.
NEMO_TABLES = {  # README: (TP, PP, CP, VP, MBS, GA, {dtype: ((GPUs, global batch, step s), ...)})
    "llama3.1/README_405b.md": (8, 9, 2, 7, 1, 63, {"bf16": ((576, 252, 17.20), (2304, 1008, 17.62)),
                                                    "fp8": ((576, 252, 11.24), (2304, 1008, 12.35))}),
    "llama3.1/README_70b.md": (4, 4, 2, 5, 1, 64, {"bf16": ((64, 128, 14.72), (2048, 4096, 14.98)),
                                                   "fp8": ((64, 128, 11.01), (2048, 4096, 11.39))}),
    "llama3.1/README_8b.md": (1, 1, 2, 1, 1, 32, {"bf16": ((8, 128, 12.91), (128, 2048, 13.10)),
                                                 "fp8": ((8, 128, 9.67), (128, 2048, 9.82))}),
    "nemotron/README_340b.md": (8, 8, 1, 12, 1, 16, {"bf16": ((128, 32, 4.61), (2048, 512, 4.84)),
                                                     "fp8": ((128, 32, 3.16), (2048, 512, 3.49))}),
    "nemotron/README_15b.md": (4, 1, 1, 1, 4, 4, {"bf16": ((16, 64, 2.83), (2048, 8192, 2.96)),
                                                  "fp8": ((16, 64, 2.08), (2048, 8192, 2.18))}),
    "nemo_megatron/README_175b.md": (4, 8, 1, 12, 1, 64, {"bf16": ((128, 256, 8.91), (2048, 4096, 9.02)),
                                                          "fp8": ((128, 256, 5.92), (2048, 4096, 6.24))}),
    "grok1/README_314b.md": (4, 8, 2, 8, 1, 128, {"bf16": ((512, 1024, 20.83), (2048, 4096, 21.09)),
                                                  "fp8": ((512, 1024, 16.69), (2048, 4096, 17.04))}),
}


def test_nemo_recipe_runs_are_the_tables():
    nemo = {n: e for n, e in training_runs.runs().items() if "dgxc-benchmarking" in e["source"]}
    assert len(nemo) == 28
    seen = set()
    for n, e in nemo.items():
        readme = e["source"].split("143b90dd91f9be958fed4773ae95d941a3356a82/")[1]
        tp, pp, cp, vp, mbs, ga, table = NEMO_TABLES[readme]
        lay = training_runs.layout_of(e)
        assert (lay.tp, lay.pp, lay.cp, lay.micro_batch, lay.grad_accum) == (tp, pp, cp, mbs, ga), n
        assert lay.virtual_stages == vp and lay.n_gpus == e["gpus"] and lay.global_batch == e["global_batch"]
        assert (e["gpus"], e["global_batch"], e["published"]) in table[e["dtype"]] and e["metric"] == "step_s"
        seen.add((readme, e["dtype"], e["gpus"]))
        assert lay.ep == (8 if readme.startswith("grok1") else 1)
    assert len(seen) == 28


# The recipes' own switch (each case's "assumed" quotes its YAML): ub_tp_comm_overlap true in llama3.1_405b.yaml,
# llama3.1_70b.yaml, nemotron4-15b-synth.yaml and gpt3_175b_hydra.yaml; false in nemotron4-340b-synth.yaml and
# grok1_314b.yaml; the 8B runs without tensor parallelism. The layout carries it, and nothing else does.
def test_nemo_tp_comm_overlap_is_the_recipes_switch():
    nemo = {n: e for n, e in training_runs.runs().items() if "dgxc-benchmarking" in e["source"]}
    on = {n for n, e in nemo.items() if "ub_tp_comm_overlap: true" in e["assumed"]}
    assert len(on) == 16
    for n, e in training_runs.runs().items():
        assert training_runs.layout_of(e).tp_comm_overlap == (n in on), n


# The overlap rule (RULES["tensor-overlap"]) against the published bf16 steps of the four recipes that switch it on
# (NVIDIA/dgxc-benchmarking v25.01, 'Expected Performance': Llama 3.1 405B 17.20 and 17.62 s, 70B 14.72 and 14.98 s,
# Nemotron-4 15B 2.83 and 2.96 s, GPT-3 175B 8.91 and 9.02 s). With the collectives on the critical path the engine was
# 2% to 14% slow on all eight; with each collective beside its GEMM it is within 8% of each. The time taken off is
# the exposed tensor-parallel time (and the pipeline bubble's share of it) and nothing else.
def test_tp_comm_overlap_against_the_recipes_bf16_steps():
    import dataclasses
    nemo = {n: e for n, e in training_runs.runs().items() if "dgxc-benchmarking" in e["source"]}
    rows = [n for n, e in nemo.items() if e["dtype"] == "bf16" and training_runs.layout_of(e).tp_comm_overlap]
    assert len(rows) == 8
    for n in rows:
        e = nemo[n]
        c = training_runs.check(n)
        off = dataclasses.replace(training_runs.layout_of(e), tp_comm_overlap=False)
        p = steptime.predict_step(training_runs.model_of(e), off, seq_len=e["seq_len"], machine=e["chip"],
                                  engine=e["engine"], dtype=e["dtype"])
        assert -0.15 < e["published"] / p.step_s - 1 < -0.02, n
        assert abs(c.error) < 0.08, (n, c.error)
        tp_on, tp_off = c.prediction.comm_parts_s["tensor"], p.comm_parts_s["tensor"]
        assert tp_on[0] == pytest.approx(tp_off[0]) and tp_on[1] < tp_off[1] == pytest.approx(tp_off[0])
        on, off_parts = c.prediction.parts_s, p.parts_s
        assert off_parts["tensor-parallel collectives"] - on["tensor-parallel collectives"] == pytest.approx(
            tp_off[1] - tp_on[1], rel=1e-9)
        # (the bubble is the pipeline's share of the micro-batches' time, collectives included: it shrinks with them)
        assert all(on[k] == off_parts[k] for k in on if k not in ("tensor-parallel collectives", "pipeline bubble"))


# fp8 as the recipes run it: the engine's fp8 step against its bf16 step of the same layout, beside the recipe's own
# ratio (the two published step times). The fp8 rules (FP8_BF16_LABELS: the output layer in bf16; the quantization
# passes, FP8_CAST_BYTES_PER_ELEMENT) take the engine's ratio from 1.47 to 1.37 on Grok-1 (published 1.25 and 1.24:
# 19% over, now 10.5%) and hold every one of the seven recipes' fourteen ratios within 11% of the published one.
def test_nemo_fp8_speedup_against_the_recipes():
    nemo = {n: e for n, e in training_runs.runs().items() if "dgxc-benchmarking" in e["source"]}
    pairs = [(n, n.replace("bf16", "fp8")) for n in nemo if "bf16" in n]
    assert len(pairs) == 14
    for b, f in pairs:
        published = nemo[b]["published"] / nemo[f]["published"]
        engine = training_runs.check(b).prediction.step_s / training_runs.check(f).prediction.step_s
        assert 1.2 < published < 1.55 and abs(engine / published - 1) < 0.11, (b, published, engine)


# torchtitan's performance page of 24 April 2024 (docs/performance.md at 157a12c): FSDP2 on 64 A100 80GB, WPS per GPU
# (train.py: the rank's label tokens over the logging interval / model-parallel size) and MFU. The book takes the rows
# whose activation checkpointing the engine runs as stated (none, full). The page's MFU is its WPS times torchtitan's
# FLOP count (6 N + 12 L H Q T, train.py get_num_flop_per_token) over the A100's 312 TFLOP/s; that ties each WPS to
# the page's MFU column, so the rows are read right.
TORCHTITAN_ROWS = {"Llama-3 70B": (1, "full", 8192, 331, 0.517), "Llama-2 13B": (2, "none", 4096, 2162, 0.611),
                   "Llama-2 70B": (2, "full", 4096, 353, 0.505)}


def test_torchtitan_rows_are_the_page():
    from mlcalc import compute
    tt = {n: e for n, e in training_runs.runs().items() if n.startswith("torchtitan")}
    assert len(tt) == 3
    for n, e in tt.items():
        b, rec, s, wps, mfu = TORCHTITAN_ROWS[e["model"]]
        lay = training_runs.layout_of(e)
        assert (lay.dp, lay.zero, lay.micro_batch, lay.grad_accum, lay.recompute) == (64, 3, b, 1, rec)
        assert (e["seq_len"], e["published"], e["engine"], e["metric"]) == (s, wps, "eager", "tokens_per_s_per_gpu")
        m = training_runs.model_of(e)
        assert compute.palm_flops_per_token(m, s) * wps / 312e12 == pytest.approx(mfu, abs=0.006), n
        assert abs(training_runs.check(n).error) <= training_runs.TOLERANCE
