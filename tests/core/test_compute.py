"""Compute, time, cost, MFU: each formula pinned to a published number, plus the bad-input errors."""

import math

import pytest

from mlcalc import compute, spec

DAY = 86400.0


# Bekman "The AI Battlefield", section "Model FLOPS Utilization (MFU)": an iteration of 624 TFLOP
# that takes 4 s on an A100 (advertised 312 TFLOPS bf16) runs at 156 TFLOPS, i.e. 50% MFU.
def test_bekman_a100_mfu_example():
    peak = spec("A100-80GB").peak_flops("bf16")
    assert compute.achieved_flops_per_gpu(624e12, 4.0) == pytest.approx(156e12)
    assert compute.mfu(624e12, 4.0, peak) == pytest.approx(0.5)


# Same Bekman section: a run that would take 7 days at the advertised peak takes 14 days at 50% MFU.
def test_bekman_half_mfu_doubles_the_days():
    peak = spec("A100-80GB").peak_flops("bf16")
    seven_days_of_flops = 7 * DAY * 8 * peak
    assert compute.training_time_s(seven_days_of_flops, 8, peak, mfu=1.0) / DAY == pytest.approx(7)
    assert compute.training_time_s(seven_days_of_flops, 8, peak, mfu=0.5) / DAY == pytest.approx(14)


# Narayanan et al. 2021, Sec. 5.1, eq. (4): GPT-3 (P = 175B) on T = 300B tokens with n = 1024 A100s
# at X = 140 TFLOP/s per GPU takes "around 34 days" (end-to-end time ~ 8TP / nX, recomputation on).
def test_narayanan_gpt3_34_days():
    total = compute.training_flops(175e9, 300e9, recompute=True)
    assert compute.training_time_s(total, 1024, 140e12) / DAY == pytest.approx(34, abs=0.5)


# Narayanan et al. 2021, Sec. 5.1: the 1-trillion-parameter model on 450B tokens with 3072 A100s at
# 163 TFLOP/s per GPU takes "around 84 days". P from their eq. (2) with the Table 1 configuration
# (128 layers, hidden 25600, vocabulary 51200, sequence 2048).
def test_narayanan_1t_84_days():
    p = compute.megatron_params(128, 25600, 51200, 2048)
    total = compute.training_flops(p, 450e9, recompute=True)
    assert compute.training_time_s(total, 3072, 163e12) / DAY == pytest.approx(84, abs=0.5)


# Narayanan et al. 2021, Table 2: the GPT models of 174.6B (96 layers, h=12288) and 529.6B
# (105 layers, h=20480) parameters; vocabulary 51200, sequence 2048 (Sec. 5).
def test_narayanan_parameter_counts():
    assert compute.megatron_params(96, 12288, 51200, 2048) / 1e9 == pytest.approx(174.6, abs=0.05)
    assert compute.megatron_params(105, 20480, 51200, 2048) / 1e9 == pytest.approx(529.6, abs=0.05)


# Narayanan et al. 2021, Sec. 5.1: eq. (3) per token is close to 8P, because 6h >> s and
# 16lh >> V + s; for the 175B configuration the two agree within 3%.
def test_megatron_flops_per_token_close_to_8p():
    p = compute.megatron_params(96, 12288, 51200, 2048)
    f = compute.megatron_flops_per_iteration(1536, 2048, 96, 12288, 51200, recompute=True)
    assert f / (1536 * 2048) == pytest.approx(8 * p, rel=0.03)
    assert f / (1536 * 2048) > 8 * p  # attention's s/(6h) term adds work that 8P leaves out


# Korthikanti et al. 2022, App. A: without recomputation the model FLOPs are
# 72 B s l h^2 (1 + s/6h + V/(12 l h)); full recomputation adds one forward of the layers,
# 24 B s l h^2 (1 + s/6h), and none of the logit layer.
def test_recompute_adds_one_forward_of_the_layers():
    b, s, l, h, v = 8, 2048, 24, 2048, 51200
    with_rc = compute.megatron_flops_per_iteration(b, s, l, h, v, recompute=True)
    without = compute.megatron_flops_per_iteration(b, s, l, h, v, recompute=False)
    assert with_rc - without == pytest.approx(24 * b * s * l * h * h * (1 + s / (6 * h)))
    assert compute.training_flops(1e9, 1e9, recompute=True) / compute.training_flops(1e9, 1e9) == pytest.approx(8 / 6)


# Thulke et al. 2024 (ClimateGPT), Table 1 and Sec. 4 via Cockcroft's talk: ClimateGPT-FSC-7B took
# 14,131 GPU-hours on 160 H100s (20 nodes of 8), "almost four days".
def test_climategpt_gpu_hours_to_days():
    days = compute.wall_time_s_from_gpu_hours(14131, 160) / DAY
    assert days == pytest.approx(3.68, abs=0.01)
    assert 3.5 < days < 4.0


# Cockcroft's talk (, "Communicating megabytes in microseconds"): an AWS p5.48xlarge with
# 8 H100s at about $100 per hour, i.e. $12.50 per GPU-hour; run_cost multiplies GPU-hours by it.
def test_run_cost_at_the_bekman_cloud_price():
    peak = spec("H100-SXM").peak_flops("bf16")
    total = 8 * peak * 0.5 * 3600  # exactly one hour on 8 GPUs at 50% MFU
    rc = compute.run_cost(total, 8, peak, 0.5, 100 / 8)
    assert rc.gpu_hours == pytest.approx(8)
    assert rc.cost == pytest.approx(100)


# PaLM (Chowdhery et al. 2022), Sec. 4.1: MFU from tokens per second with 6N FLOP per token;
# Bekman's A100 example seen as throughput: 156 TFLOPS achieved = 50% of 312.
def test_mfu_from_tokens_matches_iteration_form():
    n_params = 1.3e9
    tokens_per_s = 8 * 156e12 / (6 * n_params)  # what 8 GPUs at 156 TFLOPS each process
    assert compute.mfu_from_tokens(tokens_per_s, 6 * n_params, 312e12, n_gpus=8) == pytest.approx(0.5)


def test_hfu_counts_recomputation():
    model = compute.training_flops(1e9, 1e6)
    hardware = compute.training_flops(1e9, 1e6, recompute=True)
    assert compute.hfu(hardware, 10.0, 312e12) / compute.mfu(model, 10.0, 312e12) == pytest.approx(8 / 6)


# Bekman's chapter, Maximum Achievable Matmul FLOPS table (bf16): H100 SXM 794.5 of 989 (80.3%),
# MI300X 668.4; fp8: B200 3432.5 of 4500 (76.3%).
def test_achievable_versus_advertised():
    assert compute.achievable_flops("H100-SXM", "bf16", "advertised") == pytest.approx(989.5e12)
    assert compute.achievable_flops("H100-SXM", "bf16", "achievable") == pytest.approx(794.5e12)
    assert compute.achievable_flops("H100-SXM", "bf16", "achievable") / 989e12 == pytest.approx(0.803, abs=0.001)
    assert compute.achievable_flops("MI300X", "bf16", "achievable") == pytest.approx(668.4e12)
    assert compute.achievable_flops("B200", "fp8", "achievable") / compute.achievable_flops("B200", "fp8") == pytest.approx(
        0.763, abs=0.001
    )
    entry = compute.flops_entry("H100-SXM", "bf16")
    assert str(entry["source"]).startswith("https://")


def test_every_achievable_entry_is_below_its_datasheet_peak_and_sourced():
    table = compute._tables()["achievable"]["entries"]
    for key, by_dtype in table.items():
        for dtype, entry in by_dtype.items():
            assert str(entry["source"]).startswith("https://"), (key, dtype)
            assert entry["tflops"] * 1e12 < spec(key).peak_flops(dtype), (key, dtype)


def test_a_measured_table_can_be_registered():
    compute.register_flops_table(
        "my-run", {"H100-SXM": {"bf16": {"tflops": 700.0, "source": "https://example.org/run"}}}, "test run"
    )
    try:
        assert "my-run" in compute.flops_sources()
        assert compute.achievable_flops("H100-SXM", "bf16", "my-run") == 700e12
        offers = [compute.ClusterOffer("measured H100", "H100-SXM", 8, 2.0, mfu=1.0, flops_source="my-run")]
        (res,) = compute.compare_offers(700e12 * 8 * 3600, offers)
        assert res.time_s == pytest.approx(3600)
    finally:
        compute.unregister_flops_table("my-run")
    assert "my-run" not in compute.flops_sources()
    with pytest.raises(ValueError, match="source"):
        compute.register_flops_table("x", {"H100-SXM": {"bf16": {"tflops": 1.0}}}, "no source")


# Bekman "The AI Battlefield": "if you can get 3x of them [older GPUs] at the same cost as the next
# generation GPU you might finish training sooner". Three A100s for the price of one H100
# deliver 3 x 312 = 936 TFLOPS advertised against 989.5: about 5% slower at equal MFU and equal cost.
def test_three_older_gpus_for_the_price_of_one():
    total = compute.training_flops(7e9, 100e9)
    new, old = compute.compare_offers(
        total,
        [
            compute.ClusterOffer("1 x H100", "H100-SXM", 64, 3.0, mfu=0.4),
            compute.ClusterOffer("3 x A100", "A100-80GB", 192, 1.0, mfu=0.4),
        ],
    )
    assert old.time_s / new.time_s == pytest.approx(989.5 / 936)
    assert old.cost / new.cost == pytest.approx(989.5 / 936)


def test_bad_inputs_name_the_parameter():
    with pytest.raises(ValueError, match="n_params=-1"):
        compute.training_flops(-1, 1e9)
    with pytest.raises(ValueError, match="mfu=1.5.*\\(0, 1\\]"):
        compute.training_time_s(1e20, 8, 1e15, mfu=1.5)
    with pytest.raises(ValueError, match="n_gpus=0"):
        compute.run_cost(1e20, 0, 1e15, 0.5, 2.0)
    with pytest.raises(ValueError, match="price_per_gpu_hour=-2"):
        compute.run_cost(1e20, 8, 1e15, 0.5, -2)
    with pytest.raises(ValueError, match="iteration_time_s=0"):
        compute.mfu(1e12, 0, 1e15)
    with pytest.raises(ValueError, match="source='guess'"):
        compute.achievable_flops("H100-SXM", "bf16", "guess")
    with pytest.raises(ValueError, match="dtype='fp8'.*A100-80GB"):
        compute.achievable_flops("A100-80GB", "fp8", "achievable")
    with pytest.raises(ValueError, match="accelerator='H900'"):
        compute.achievable_flops("H900")
    with pytest.raises(ValueError, match="batch=0"):
        compute.megatron_flops_per_iteration(0, 2048, 24, 2048, 51200)
    with pytest.raises(ValueError, match="offers=\\[\\]"):
        compute.compare_offers(1e20, [])


def test_a_measured_data_file_is_picked_up(monkeypatch):
    extra = ('{"tables": {"lab-run": {"description": "book run", "entries": '
             '{"H100-SXM": {"bf16": {"tflops": 750.0, "source": "https://example.org/bench"}}}}}}')
    original = compute._matmul_files()
    before = compute.flops_sources()
    monkeypatch.setattr(compute, "_matmul_files", lambda: [*original, ("lab_matmul.json", extra)])
    compute._file_tables.cache_clear()
    try:
        assert compute.flops_sources() == (*before, "lab-run")
        assert compute.achievable_flops("H100-SXM", "bf16", "lab-run") == 750e12
    finally:
        monkeypatch.undo()
        compute._file_tables.cache_clear()
    assert compute.flops_sources() == before


def test_the_book_s_measured_h100_rate_is_a_source():
    # Our own run (mlcalc/data/measured/h100-2026-11-26/matmul.json): the best bf16 shape on one
    # H100 SXM beat a plain 8192^3 product and stayed under the dense datasheet peak (989.5).
    assert {"measured", "measured-sustained"} <= set(compute.flops_sources())
    burst = compute.achievable_flops("H100-SXM", "bf16", "measured")
    sustained = compute.achievable_flops("H100-SXM", "bf16", "measured-sustained")
    assert sustained < burst < spec("H100-SXM").peak_flops("bf16")


def test_catalogue_rows_sort_filter_and_errors():
    rows = compute.catalogue_rows("bf16", "advertised", "memory_gb")
    assert [r.memory_gb for r in rows] == sorted((r.memory_gb for r in rows), reverse=True)
    # 288 GB: MI355X (AMD product page) and B300 (NVIDIA DGX B300: 2.3 TB for 8 GPUs)
    assert {r.key for r in rows if r.memory_gb == rows[0].memory_gb} == {"MI355X", "B300"}
    h100 = next(r for r in rows if r.key == "H100-SXM")
    assert h100.ridge_flops_per_byte == pytest.approx(989.5 / 3.35)
    assert "V100-SXM2-32GB" not in {r.key for r in rows}  # Volta has no bf16
    achievable = compute.catalogue_rows("fp8", "achievable")
    assert {r.key for r in achievable} == {"Gaudi2", "Gaudi3", "B200", "H200-SXM", "GB200", "H100-SXM"}
    with pytest.raises(ValueError, match="sort_by='price'"):
        compute.catalogue_rows("bf16", "advertised", "price")
    with pytest.raises(ValueError, match="dtype='tf32' with source='achievable'"):
        compute.catalogue_rows("tf32", "achievable")


# Thulke et al. 2024 (ClimateGPT), Table 1 via Cockcroft's talk: GPU-hours 2,182 / 301 / 157 / 14,131 /
# 14,288 for the 70B, 13B, 7B fine-tunes and the two 7B from-scratch models, on 160 H100s; the
# Cockcroft talk's p5.48xlarge: 8 H100s at about $100 per hour.
def test_published_runs_and_price():
    hours = {r.name: r.gpu_hours for r in compute.CLIMATEGPT_RUNS}
    assert hours == {"ClimateGPT-70B": 2182, "ClimateGPT-13B": 301, "ClimateGPT-7B": 157,
                     "ClimateGPT-FSC-7B": 14131, "ClimateGPT-FSG-7B": 14288}
    assert all(r.n_gpus == 160 and r.accelerator == "H100-SXM" for r in compute.CLIMATEGPT_RUNS)
    assert compute.COCKCROFT_P5_PRICE_PER_HOUR / compute.COCKCROFT_P5_GPUS == 12.5
    fsc = compute.CLIMATEGPT_RUNS[3]
    u = compute.mfu(compute.training_flops(fsc.n_params, fsc.n_tokens), fsc.gpu_hours * 3600, spec("H100-SXM").peak_flops())
    assert 0.2 < u < 0.35  # a plausible multi-node MFU, below Bekman's "above 50% is fantastic"


# Narayanan et al. 2021, Table 1: the weak-scaling models of 1.7B, 18.4B and 1008.0B parameters
# (the 175B and 530B rows are pinned above); attention's share shrinks as h grows.
def test_megatron_table1_configs():
    from mlcalc import models

    sizes = {k: compute.gpt_iteration_flops(models.preset(k), b).n_params / 1e9 for k, b in compute.MEGATRON_BATCH.items()}
    assert sizes["Megatron GPT 1.7B"] == pytest.approx(1.7, abs=0.05)
    assert sizes["Megatron GPT 18.4B"] == pytest.approx(18.4, abs=0.05)
    assert sizes["Megatron GPT 1008B"] == pytest.approx(1008.0, abs=0.1)
    shares = [compute.gpt_iteration_flops(models.preset(k), b).attention_share
              for k, b in compute.MEGATRON_BATCH.items() if k.startswith("Megatron")]
    assert shares == sorted(shares, reverse=True)


# Chowdhery et al. 2022 (PaLM), section 4.1 and Appendix B: PaLM 540B (118 layers, 48 heads of 256,
# 540.35B parameters, sequence 2048) at 238.3K tokens/s on 6144 TPU v4 (275 TFLOP/s bf16) is 45.7%
# MFU without the attention term and 46.2% with it.
def test_palm_540b_mfu_with_and_without_attention():
    from mlcalc import models

    palm = models.ModelConfig(name="PaLM 540B", n_layers=118, hidden=18432, n_heads=48, n_kv_heads=1,
                              head_dim=256, ffn_hidden=73728, vocab=256000)
    with_att = compute.palm_flops_per_token(palm, 2048, n_params=540.35e9)
    bare = compute.palm_flops_per_token(palm, 2048, attention=False, n_params=540e9)
    assert compute.mfu_from_tokens(238.3e3, bare, 275e12, 6144) == pytest.approx(0.457, abs=0.0005)
    assert compute.mfu_from_tokens(238.3e3, with_att, 275e12, 6144) == pytest.approx(0.462, abs=0.0005)


# Chowdhery et al. 2022, section 4.1: Megatron-Turing NLG 530B (105 layers, 128 heads of 160) at
# 65.43K tokens/s on 2240 A100s (312 TFLOP/s) is 29.7% MFU without attention, 30.2% with it
# (the paper truncates: 29.77% and 30.27%).
def test_mtnlg_mfu_by_palms_convention():
    from mlcalc import models

    mt = models.preset("Megatron GPT 529.6B")
    bare = compute.palm_flops_per_token(mt, 2048, attention=False, n_params=530e9)
    with_att = compute.palm_flops_per_token(mt, 2048, n_params=530e9)
    assert math.floor(1000 * compute.mfu_from_tokens(65.43e3, bare, 312e12, 2240)) / 10 == 29.7
    assert math.floor(1000 * compute.mfu_from_tokens(65.43e3, with_att, 312e12, 2240)) / 10 == 30.2


# Korthikanti et al. 2022, Table 5 (iteration times with sequence parallelism and selective
# recomputation) and Table 3 (models; global batch 4 on 8 GPUs for 22B, 64 on 64, 280 on 280, 512 on 512;
# sequence 2048, vocabulary 51200; A100 312 TFLOP/s): MFU 41.5 / 51.4 / 56.0 / 56.3% and HFU
# 43.7 / 52.8 / 57.0 / 57.0%, model FLOPs by their eq. 7, hardware FLOPs by eq. 8.
@pytest.mark.parametrize("layers, hidden, heads, batch, gpus, seconds, mfu, hfu", [
    (48, 6144, 64, 4, 8, 1.10, 0.415, 0.437), (96, 12288, 96, 64, 64, 13.75, 0.514, 0.528),
    (105, 20480, 128, 280, 280, 37.83, 0.560, 0.570), (128, 25600, 160, 512, 512, 71.49, 0.563, 0.570)])
def test_korthikanti_table5_mfu_and_hfu(layers, hidden, heads, batch, gpus, seconds, mfu, hfu):
    from mlcalc import models

    gpt = models.ModelConfig(name="GPT", n_layers=layers, hidden=hidden, n_heads=heads, n_kv_heads=heads,
                             head_dim=hidden // heads, ffn_hidden=4 * hidden, vocab=51200, gated_mlp=False,
                             biases=True, norm="layernorm", learned_positions=2048)
    u = compute.utilization(gpt, batch, 2048, seconds, 312e12, gpus, recompute="selective")
    assert u.mfu == pytest.approx(mfu, abs=0.003)
    assert u.hfu == pytest.approx(hfu, abs=0.003)


# Korthikanti et al. 2022 eq. 9: with selective recomputation hardware / model FLOPs is about 1 + s/(6h).
def test_selective_recompute_ratio():
    f = compute.korthikanti_flops_per_iteration
    ratio = f(1, 2048, 96, 12288, 51200, "selective") / f(1, 2048, 96, 12288, 51200, "none")
    assert ratio == pytest.approx(1 + 2048 / (6 * 12288), rel=0.002)
    with pytest.raises(ValueError, match="recompute"):
        f(1, 2048, 96, 12288, 51200, "some")


def test_gemm_kernel_large_shape_by_hand():
    # 8,192^3 on an H100's 132 SMs: the 128 x 256 tile (TensorRT-LLM's largest sm90 tile) gives 64 x 32 = 2,048 tiles,
    # 16 waves of 132 (the last 68 % full): 2,048 / (16 x 132) of the SMs' time is useful, the rest the last wave
    g = compute.gemm_kernel(8192, 8192, 8192, 132)
    assert (g.tile_m, g.tile_n, g.swapped, g.split_k, g.ctas, g.waves) == (128, 256, False, 1, 2048, 16)
    assert g.tile_rate == 1.0 and g.useful == pytest.approx(2048 / (16 * 132), rel=1e-12)
    # one tile more than fills a wave: 133 SMs' worth of 128 x 256 tiles on 132 SMs costs two waves, so a smaller tile
    # (the rule's choice: whatever finishes first) must do better than half
    h = compute.gemm_kernel(128 * 7, 256 * 19, 4096, 132)
    assert h.useful > 0.5 and h.waves * 132 >= h.ctas


def test_gemm_kernel_small_m_runs_swapped_and_narrow():
    # one row (a decode step's GEMV): the library runs (N x K) @ (K x 1), the row in the narrowest tile column (16):
    # at most 1/16 of the tile is useful, and a 16-wide warpgroup block is fed at 64 x 16 / 80 / 32 = 40 % of the rate
    for dt in ("bf16", "fp8"):
        g = compute.gemm_kernel(1, 4096, 4096, 132, dt)
        assert g.swapped and g.tile_n == 16 and g.tile_rate == pytest.approx(0.4)
        assert g.useful <= 1 / 16 * 0.4 + 1e-12
    # every pick's useful share is a share, and grows from 1 row to a full tile's worth
    shares = [compute.gemm_kernel(m, 6144, 4096, 132, "fp8").useful for m in (1, 16, 64, 256, 1024, 4096)]
    assert all(0 < s <= 1 for s in shares) and shares == sorted(shares)


def test_gemm_kernel_refuses_bad_input():
    with pytest.raises(ValueError, match="m="):
        compute.gemm_kernel(0, 1, 1, 132)
    with pytest.raises(ValueError, match="n_sms="):
        compute.gemm_kernel(1, 1, 1, 0)
    with pytest.raises(ValueError, match="tiles="):
        compute.gemm_kernel(1, 1, 1, 132, tiles=((64, 0),))
    with pytest.raises(ValueError, match="tiles="):
        compute.gemm_kernel(1, 1, 1, 132, tiles=())
    with pytest.raises(ValueError, match="max_split_k="):
        compute.gemm_kernel(1, 1, 1, 132, max_split_k=0)
