"""Training memory and step time of Hugging Face models: predictions against the book's own runs.

The runs (scripts/gpu/train_hf.py on 2 x NVIDIA H200, torch 2.11, transformers 5.17; data in
mlcalc/data/measured/h200x2-2026-11-26-train-hf*) are the published numbers these tests pin: the
predictions use only the model's config and the machine's measured rates, never the case itself.
"""

import pytest

from mlcalc import hfruns, memory, models, steptime

RUN1, RUN2 = "h200x2-2026-11-26-train-hf", "h200x2-2026-11-26-train-hf-run2"
CASES = [c for r in (RUN1, RUN2) for c in hfruns.cases(r)]


def _id(c: hfruns.HFCase) -> str:
    return f"{c.run[-4:]}-{c.model.name}-b{c.batch}-s{c.seq_len}-rc{int(c.recompute)}"


def test_the_runs_cover_the_issue():
    assert len(hfruns.cases(RUN1)) == 21 and len(hfruns.cases(RUN2)) == 21
    kinds = {c.model.name.split()[0] for c in CASES}
    assert {"Llama-3.2", "Qwen2.5", "Qwen3", "Mistral", "Gemma-3", "Mixtral", "GPT-2"} <= kinds
    assert {c.recompute for c in CASES} == {False, True}
    assert {c.seq_len for c in CASES} >= {1024, 2048, 4096}
    assert all(c.device == "NVIDIA H200" for c in CASES)


# Our parameter count equals PyTorch's count of the built model, for every architecture.
def test_parameter_counts_match_the_built_models():
    for c in CASES:
        assert c.model.n_params() == c.n_params


# Peak torch.cuda.max_memory_allocated of every run within 10% (the issue's target).
@pytest.mark.parametrize("case", CASES, ids=_id)
def test_peak_memory_within_10_percent(case):
    pred = memory.training_peak(case.model, case.batch, case.seq_len, case.recompute)
    assert pred.total_bytes == pytest.approx(case.peak_bytes, rel=0.10)


# Median step time of every run within 20% (the issue's target), on the machine measured in run 2.
@pytest.mark.parametrize("case", CASES, ids=_id)
def test_step_time_within_20_percent(case):
    mach = hfruns.machine(RUN2)
    pred = steptime.step_time(case.model, case.batch, case.seq_len, case.recompute, mach)
    assert pred.total_s == pytest.approx(case.step_s, rel=0.20)


# The loss's logits under Hugging Face's convention: from the end of the forward (log-softmax output
# kept, 4 bytes per logit) to the backward's peak adds 8 bytes per logit (nll_loss's dense gradient and
# log-softmax's input gradient): Qwen2.5 0.5B, 8 x 1024 tokens, 151,936 entries.
def test_hf_loss_holds_12_bytes_per_logit_at_the_backward_peak():
    c = next(c for c in hfruns.cases(RUN1) if c.model.name == "Qwen2.5 0.5B" and not c.recompute)
    logits = c.batch * c.seq_len * c.model.vocab
    step = c.phases["backward_peak_bytes"] - c.phases["forward_alloc_bytes"]
    assert step / logits == pytest.approx(8.0, rel=0.01)
    assert memory.LOSS_CONVENTIONS["hf"] == (10.0, 12.0)


def test_full_recomputation_keeps_only_layer_inputs():
    m = models.preset("Llama-3 8B")
    full = memory.layer_activation_parts(m, recompute="full")
    assert sum(full.values()) == 4 * m.hidden  # the fp32 residual stream
    none = sum(memory.layer_activation_parts(m).values())
    assert none > 10 * sum(full.values())


def test_precisions_and_loss_conventions_change_the_peak():
    m = models.preset("Llama-3.2 1B")
    base = memory.training_peak(m, 4, 1024).total_bytes
    assert memory.training_peak(m, 4, 1024, precision="bf16-pure").total_bytes < base
    assert memory.training_peak(m, 4, 1024, loss="fused").total_bytes < base
    assert memory.training_peak(m, 4, 1024, attention="eager").total_bytes > base
    sel = memory.training_peak(m, 4, 1024, recompute="selective", attention="eager").total_bytes
    assert sel < memory.training_peak(m, 4, 1024, attention="eager").total_bytes


def test_deepseek_v3_mla_and_experts_are_counted():
    m = models.preset("DeepSeek-V3")
    parts = memory.layer_activation_parts(m)
    assert "routed experts" in parts and "shared experts" in parts
    st = steptime.step_gemms(m, 1, 4096)
    assert any("mla kv down" in g.label for g in st)


@pytest.mark.parametrize("kwargs, name", [
    ({"batch": 0}, "batch"), ({"seq_len": 1.5}, "seq_len"), ({"recompute": "half"}, "recompute"),
    ({"precision": "fp64"}, "precision"), ({"loss": "mse"}, "loss"), ({"attention": "ring"}, "attention")])
def test_training_peak_bad_input(kwargs, name):
    args = {"model": models.preset("Mistral 7B"), "batch": 1, "seq_len": 1024, **kwargs}
    with pytest.raises(ValueError, match=name):
        memory.training_peak(**args)


def test_step_time_bad_input_and_bounds():
    m = models.preset("Mistral 7B")
    mach = steptime.flat_machine("flat", 700e12, 3e12)
    with pytest.raises(ValueError, match="batch"):
        steptime.step_time(m, 0, 1024, False, mach)
    with pytest.raises(ValueError, match="tokens"):
        steptime.step_time(m, 10**6, 10**6, False, mach)
    with pytest.raises(ValueError, match="matmul_flops_per_s"):
        steptime.flat_machine("x", -1, 3e12)
    with pytest.raises(ValueError, match="mfu"):
        steptime.textbook_step_time(m, 1, 1024, 1e15, mfu=1.5)


# Kaplan et al. 2020: C = 6 N D. The textbook route and the MFU it implies are two sides of one formula.
def test_textbook_route_and_implied_mfu():
    m = models.preset("Llama-3 8B")
    t = steptime.textbook_step_time(m, 8, 4096, 989.5e12, mfu=0.4)
    assert t == pytest.approx(6 * m.n_params() * 8 * 4096 / (989.5e12 * 0.4))
    assert steptime.implied_mfu(m, 8, 4096, t, 989.5e12) == pytest.approx(0.4)


def test_step_time_is_positive_and_parts_add_up():
    mach = hfruns.machine(RUN2)
    for m in models.presets().values():
        if m.n_params() < 20e9:
            st = steptime.step_time(m, 1, 2048, True, mach)
            assert st.total_s > 0 and st.total_s == pytest.approx(sum(st.parts_s.values()))
            assert st.flop > st.model_flop > 0


# The layout planner (memory.training_memory) adds every part at once, gradients and activations
# together: with activations="architecture" and the HF loss it is an upper bound on each measured
# single-GPU peak (within 25%), where Korthikanti's GPT layer and 4-byte logits fall up to 48% short.
def test_layout_planner_with_architecture_activations_bounds_the_runs():
    for c in hfruns.cases(RUN1):
        rc = "full" if c.recompute else "none"
        fit = memory.training_memory(c.model, 1e15, c.batch, c.seq_len, convention="fp32-adam", recompute=rc,
                                     sequence_parallel=False, overhead_fraction=0.0, activations="architecture",
                                     loss="hf")
        assert c.peak_bytes * 0.99 <= fit.total_bytes <= 1.25 * c.peak_bytes
    with pytest.raises(ValueError, match="activations"):
        memory.training_memory(models.preset("Mistral 7B"), 80e9, activations="guess")


# Carrying the H200 machine over to an H100 SXM: matmul rates by the cards' measured best matmul
# (823.9 vs 848.4 TFLOP/s), element-wise bandwidth by their measured copies (1.51 vs 2.12 TB/s one way).
def test_machine_carried_over_to_another_card():
    h200 = hfruns.machine(RUN2)
    h100 = hfruns.machine_like(RUN2, "H100-SXM")
    assert h100.memory_bytes_per_s / h200.memory_bytes_per_s == pytest.approx(1510.7 / 2122.7, rel=0.01)
    assert h100.matmul_flops_per_s(4096, 4096, 4096) / h200.matmul_flops_per_s(4096, 4096, 4096) == \
        pytest.approx(823.9 / 848.4, rel=0.01)
    m = models.preset("Llama-3.2 1B")
    assert steptime.step_time(m, 4, 1024, False, h100).total_s > steptime.step_time(m, 4, 1024, False, h200).total_s


# The same 21 cases on other machines, run by scripts/gpu/run_card_check.sh: one NVIDIA H100 80GB HBM3 SXM
# (mlcalc/data/measured/h100-2026-11-26-train-hf: step times 46.9 to 313.1 ms) and 2 of 4 H200s asked for as H100s
# (h200x4-2026-11-26-train-hf). Each run has its own machine rates, floors and fp32 products.
H100 = "h100-2026-11-26-train-hf"
H200B = "h200x4-2026-11-26-train-hf"
H100_CASES = hfruns.cases(H100)


def test_the_h100_run_is_the_same_sweep_on_an_h100():
    assert len(H100_CASES) == 21 and len(hfruns.cases(H200B)) == 21
    assert all(c.device == "NVIDIA H100 80GB HBM3" for c in H100_CASES)
    assert all(c.device == "NVIDIA H200" for c in hfruns.cases(H200B))
    # The allocations do not depend on the card: every peak equals the H200's to within 0.1%
    # (e.g. Llama-3.2 1B, 4 x 1024: 30.01 GiB on both).
    h200 = {(c.model.name, c.batch, c.seq_len, c.recompute): c.peak_bytes for c in hfruns.cases(RUN1)}
    for c in H100_CASES:
        assert c.peak_bytes == pytest.approx(h200[(c.model.name, c.batch, c.seq_len, c.recompute)], rel=1e-3)


@pytest.mark.parametrize("case", H100_CASES, ids=_id)
def test_h100_peak_memory_within_10_percent(case):
    pred = memory.training_peak(case.model, case.batch, case.seq_len, case.recompute)
    assert pred.total_bytes == pytest.approx(case.peak_bytes, rel=0.10)


# Step time on the H100 within 20%, twice: with the H100's own measured machine, and with the H200 machine carried
# over to the H100 by the two cards' measured matmul rates and copy bandwidths (what a reader without an H100 run
# gets). Measured here: -16% to +10% with its own machine, -15% to +10% carried over. Qwen3 0.6B with recomputation is
# the low end of both: the engine puts it on the device (255 ms of kernels against 192 of host on the H100) and it
# is under-predicted on every machine, by 11-17% (-20.6% at 4 x 2048 before its query/key norm's fp32 output and the
# fp32 rotary embedding after it were counted, -18.2% before their backward's counted bytes; what is left is the slow
# 128-wide reductions of the norm's backward: tests/core/test_qk_norm_bytes.py). Pinned as measured, not fitted.
@pytest.mark.parametrize("case", H100_CASES, ids=_id)
def test_h100_step_time_within_20_percent(case):
    for mach in (hfruns.machine(H100), hfruns.machine_like(RUN2, "H100-SXM")):
        pred = steptime.step_time(case.model, case.batch, case.seq_len, case.recompute, mach)
        assert pred.total_s == pytest.approx(case.step_s, rel=0.20), mach.name


def test_h100_is_slower_than_the_h200_where_bytes_dominate():
    # Source: the two runs. Same chip and clocks, 3.35 against 4.8 TB/s (datasheets): the H100's machine-rate
    # element-wise bandwidth is 2.98 TB/s against the H200's 4.26, its best matmul 788 against 802 TFLOP/s, so the
    # steps take 11% longer on the H100 on average, from 2% less (Qwen2.5 0.5B, 8 x 1024, recomputed: host-bound)
    # to 22% more (Qwen3 0.6B, 4 x 2048, recomputed); Gemma-3 1B, 4 x 1024: 157.2 against 136.0 ms.
    assert hfruns.machine(H100).memory_bytes_per_s / hfruns.machine(RUN2).memory_bytes_per_s == pytest.approx(
        2.98 / 4.255, rel=0.01)
    h200 = {(c.model.name, c.batch, c.seq_len, c.recompute): c.step_s for c in hfruns.cases(RUN2)}
    ratios = [c.step_s / h200[(c.model.name, c.batch, c.seq_len, c.recompute)] for c in H100_CASES]
    assert 0.95 < min(ratios) and max(ratios) < 1.25 and sum(ratios) / len(ratios) > 1.05


def test_second_h200_machine_within_targets():
    # h200x4-2026-11-26-train-hf with its own machine: memory within 10% and step time within 20% everywhere; the
    # closest, Qwen3 0.6B, 8 x 1024 with recomputation, at -17.5% (-20.7% before the query/key norm's fp32 output was
    # counted, -19.1% before its backward's counted bytes; its measured time equals the first H200 machine's, 247.5
    # against 241.8 ms, while this host's faster dispatch lowers the prediction). Pinned as measured, not fitted.
    mach = hfruns.machine(H200B)
    for c in hfruns.cases(H200B):
        assert memory.training_peak(c.model, c.batch, c.seq_len, c.recompute).total_bytes == pytest.approx(
            c.peak_bytes, rel=0.10)
        err = steptime.step_time(c.model, c.batch, c.seq_len, c.recompute, mach).total_s / c.step_s - 1
        assert abs(err) <= 0.20, (_id(c), err)
