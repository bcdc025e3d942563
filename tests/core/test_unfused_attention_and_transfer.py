"""The A100's matmul rates carried over at its published best shape, and attention unfused as 2021-22 code ran it."""

import pytest

from mlcalc import compute, hfruns, steptime, training_runs

REF = "h200x2-2026-11-26-train-hf-run2"  # catalogue_machine's reference run (the measured H200)


# Bekman, ML Engineering Open Book, Accelerators chapter, "Maximum Achievable Matmul FLOPS comparison table"
# (mamf-finder.py, bf16, mean of 100 iterations after 50 warm-up): NVIDIA A100 SXM 271.2 TFLOP/s at
# 1024 x 10240 x 5120 (torch 2.6.0+cu126); NVIDIA H100 SXM 794.5 at 2048 x 2048 x 13312 ("H200 is the same").
def test_the_published_best_shapes_are_the_tables():
    a100, h200 = compute.flops_entry("A100-80GB"), compute.flops_entry("H200-SXM")
    assert (a100["tflops"], a100["best_shape_mxnxk"]) == (271.2, "1024x10240x5120")
    assert (h200["tflops"], h200["best_shape_mxnxk"]) == (794.5, "2048x2048x13312")
    assert steptime._best_shape("A100-80GB") == (1024, 10240, 5120)
    assert steptime._best_shape("TPU-v4") is None  # no published MAMF: the datasheet ratio, no best shape


def test_each_chip_reaches_at_its_best_shape_what_the_reference_reaches_at_its_own():
    ref = hfruns.machine(REF).matmul_flops_per_s
    at_ref_best = ref(2048, 2048, 13312) / 794.5e12  # the reference's rate at its best shape, over its MAMF
    a100 = steptime.catalogue_machine("A100-80GB").matmul_flops_per_s
    assert a100(1024, 10240, 5120) / 271.2e12 == pytest.approx(at_ref_best, rel=1e-9)
    # the old transfer (the H200's rate at the A100's best shape, scaled) gave 64% of that: the H200's shortfall there
    old = ref(1024, 10240, 5120) * 271.2 / 794.5
    assert 0.6 < old / a100(1024, 10240, 5120) < 0.85
    for key in ("B200", "MI300X", "Gaudi2"):  # every chip with a published best shape, the same fraction
        e = compute.flops_entry(key)
        m, n, k = (int(x) for x in str(e["best_shape_mxnxk"]).split("x"))
        rate = steptime.catalogue_machine(key).matmul_flops_per_s(m, n, k)
        assert rate / (float(e["tflops"]) * 1e12) == pytest.approx(at_ref_best, rel=1e-9), key


def test_no_shape_beats_the_chips_maximum_and_same_silicon_keeps_the_measured_curve():
    ref = hfruns.machine(REF).matmul_flops_per_s
    best = max(ref(*s) for s in hfruns.matmul_shapes(REF))
    a100 = steptime.catalogue_machine("A100-80GB").matmul_flops_per_s
    cap = best * 271.2 / 794.5
    shapes = [(8192, 8192, 8192), (2048, 25600, 12800), (4096, 14336, 14336), (16384, 16384, 65536)]
    assert all(a100(*s) <= cap * (1 + 1e-12) for s in shapes)
    assert a100(8192, 8192, 8192) == pytest.approx(cap)
    assert a100(256, 256, 256) < 0.1 * cap  # small shapes still follow the measured curve down
    h100 = steptime.catalogue_machine("H100-SXM").matmul_flops_per_s  # the H200's silicon: its curve as measured
    for s in shapes + [(1024, 10240, 5120), (256, 256, 256)]:
        assert h100(*s) == pytest.approx(ref(*s), rel=1e-12)


# Narayanan et al. 2021, eq. 3: 96 B s l h^2 (1 + s / 6h + V / 16lh) FLOP an iteration with full recomputation
# (4 forward-equivalents); its s / 6h term is attention over the whole s x s square: 16 B s^2 l h, i.e. 4 B s^2 h a layer
# forward (Q K^T and the product with V, 2 B s^2 h each), backward twice that, the recomputed forward once more.
def test_unfused_attention_flop_is_narayanan_eq3_attention_term():
    e = training_runs.runs()["Megatron-LM GPT 1.7B (32 A100)"]
    m = training_runs.model_of(e)
    b, s, h, L = 1, 2048, m.hidden, m.n_layers
    u = steptime.unfused_attention(m, b, s, recomputed=True)
    assert u.flop["forward"] + u.flop["backward"] == pytest.approx(96 * b * s * L * h**2 * (s / (6 * h)))
    assert u.flop["forward"] == pytest.approx(4 * b * s**2 * h * L)
    # the flash rule counts the causal half forward: the unfused products are twice its forward
    assert u.flop["forward"] == pytest.approx(2 * steptime.attention_flop(m, b, s)["forward"])
    # the 2-byte scores through memory: 4 passes forward, 7 backward, 4 more recomputed
    one = 2.0 * b * m.n_heads * s * s * L
    assert u.score_bytes["forward"] == pytest.approx(4 * one)
    assert u.score_bytes["backward"] == pytest.approx(11 * one)
    assert steptime.unfused_attention(m, b, s).score_bytes["backward"] == pytest.approx(7 * one)
    # split over tensor-parallel ranks by heads
    assert steptime.unfused_attention(m, b, s, tp=8, recomputed=True).flop["forward"] == pytest.approx(
        u.flop["forward"] / 8, rel=0.01)


def test_unfused_attention_costs_time_and_is_named():
    e = training_runs.runs()["Megatron-LM GPT 1.7B (32 A100)"]
    m, lay = training_runs.model_of(e), training_runs.layout_of(e)
    assert lay.unfused_attention
    on = steptime.predict_step(m, lay, seq_len=2048, machine="A100-80GB", engine="megatron")
    off = steptime.predict_step(m, steptime.Layout(**dict(e["layout"], unfused_attention=False)), seq_len=2048,
                                machine="A100-80GB", engine="megatron")
    assert on.step_s > 1.05 * off.step_s and on.compute_s > off.compute_s
    assert any("unfused" in n for n in on.notes) and not any("unfused" in n for n in off.notes)
    with pytest.raises(ValueError, match="unfused_attention"):
        steptime.Layout(unfused_attention="yes")
    with pytest.raises(ValueError, match="unfused_attention"):
        steptime.Layout(cp=2, dp=2, unfused_attention=True)
    with pytest.raises(ValueError, match="unfused_attention"):
        steptime.predict_step(m, steptime.Layout(unfused_attention=True), seq_len=2048, machine="A100-80GB",
                              engine="eager")


def test_every_a100_run_ran_unfused_attention_and_says_which_code():
    # every published A100 run of 2021-22 predates flash attention in its code line (Dao et al. 2022; GPT-NeoX got
    # it in November 2022); torchtitan's FSDP2 runs (April 2024) call torch's scaled_dot_product_attention, and the
    # H100/H800 runs use flash attention
    for name, e in training_runs.runs().items():
        lay = training_runs.layout_of(e)
        if name.startswith("torchtitan"):
            assert not lay.unfused_attention and "scaled_dot_product_attention" in e["assumed"], name
        elif e["chip"].startswith("A100"):
            assert lay.unfused_attention and "Attention unfused" in e["assumed"], name
        else:
            assert not lay.unfused_attention, name


def test_with_the_transfer_and_unfused_attention_megatrons_own_runs_are_within():
    # the A100 runs of Megatron-LM's own code (Narayanan et al. 2021, Korthikanti et al. 2022) and BLOOM
    for name in training_runs.runs():
        if name.startswith(("Megatron-LM", "Korthikanti", "BLOOM")):
            assert abs(training_runs.check(name).error) < 0.10, name
