"""Roofline, decoding bound and matmul shape efficiency, pinned to NVIDIA's performance guides."""

import pytest

from mlcalc import compute, spec


# NVIDIA Matrix Multiplication Background User's Guide, "Math and memory bounds" (fp16):
# an 8192x128x8192 GEMM has arithmetic intensity 124.1 FLOPS/B, 8192x8192x8192 has 2730.
def test_matmul_intensity_nvidia_examples():
    assert compute.matmul_intensity(8192, 128, 8192, "fp16") == pytest.approx(124.1, abs=0.05)
    assert compute.matmul_intensity(8192, 8192, 8192, "fp16") == pytest.approx(2730, abs=1)


# NVIDIA GPU Performance Background User's Guide, "Understanding performance": a linear layer with
# 4096 outputs, 1024 inputs and batch 512 has 315 FLOPS/B (math-limited on V100); with batch 1 it
# has 1 FLOPS/B (memory-limited). V100's ops:byte ratio is 125 TFLOPS / 900 GB/s = 138.9.
def test_linear_layer_examples_and_v100_ridge():
    v100 = spec("V100-SXM2-32GB")
    ridge = compute.ridge_intensity(v100.peak_flops("fp16"), v100.memory_bandwidth_bytes_per_s)
    assert ridge == pytest.approx(138.9, abs=0.05)
    big = compute.matmul_intensity(4096, 512, 1024, "fp16")
    one = compute.matmul_intensity(4096, 1, 1024, "fp16")
    assert big == pytest.approx(315, abs=0.5)
    assert one == pytest.approx(1, abs=0.01)
    assert compute.roofline(big, v100.peak_flops("fp16"), v100.memory_bandwidth_bytes_per_s).bound == "compute"
    assert compute.roofline(one, v100.peak_flops("fp16"), v100.memory_bandwidth_bytes_per_s).bound == "memory"


# The decode intensity 2B / bytes_per_param is the NVIDIA guide's batch-1 linear layer (about
# 1 FLOPS/B in fp16) in the limit of a large layer: weights dominate the bytes.
def test_decode_intensity_matches_batch_one_linear_layer():
    assert compute.decode_intensity(1, 2.0) == pytest.approx(compute.matmul_intensity(16384, 1, 16384, "fp16"), rel=1e-3)
    assert compute.decode_intensity(64, 2.0) == 64


def test_decode_bound_is_bandwidth_over_bytes_until_compute_takes_over():
    h100 = spec("H100-SXM")
    bw, peak = h100.memory_bandwidth_bytes_per_s, h100.peak_flops("bf16")
    one = compute.decode_bound(70e9, bw, peak, batch=1)
    assert one.bound == "memory"
    assert one.tokens_per_s == pytest.approx(bw / (70e9 * 2))  # 3.35 TB/s / 140 GB = 23.9 tokens/s
    # The batch at which compute catches up is the ridge point over the per-token intensity.
    ridge_batch = compute.ridge_intensity(peak, bw) / compute.decode_intensity(1, 2.0)
    below = compute.decode_bound(70e9, bw, peak, batch=int(ridge_batch) - 1)
    above = compute.decode_bound(70e9, bw, peak, batch=int(ridge_batch) + 2)
    assert below.bound == "memory" and above.bound == "compute"
    assert above.tokens_per_s == pytest.approx(peak / (2 * 70e9))


# NVIDIA Matrix Multiplication Background User's Guide, "Wave quantization": an A100 has 108 SMs;
# with 256x128 tiles and one tile per SM a wave is 108 tiles.
def test_wave_size_a100():
    eff = compute.matmul_shape_efficiency(4096, 4096, 4096, spec("A100-80GB").sm_count)
    assert eff.wave_size == 108
    assert eff.tiles == 16 * 32
    assert eff.waves == 5  # 512 tiles / 108 = 4.7 waves -> 5
    assert eff.wave_efficiency == pytest.approx(512 / 540)


def test_a_sweep_over_n_gives_each_n_its_own_numbers():
    # NVIDIA's guide, "Wave quantization" (A100, 108 SMs, 256x128 tiles): N = 4096 gives 512 tiles in 5 waves of 108,
    # as the one-shape function; every N of a sweep gives exactly what that function gives for it.
    n_sms = spec("A100-80GB").sm_count
    ns = [1, 7, 128, 129, 4000, 4096, 4097, 8193]
    for tile in ((256, 128), (64, 128)):
        for dtype in ("bf16", "fp8", "fp32"):
            sweep = compute.matmul_shape_efficiencies(4096, ns, 4096, n_sms, *tile, 1, dtype)
            assert sweep == [compute.matmul_shape_efficiency(4096, n, 4096, n_sms, *tile, 1, dtype) for n in ns]
    a100 = compute.matmul_shape_efficiencies(4096, [4096], 4096, n_sms)[0]
    assert (a100.tiles, a100.waves, a100.wave_size) == (512, 5, 108)
    assert compute.matmul_shape_efficiencies(4096, [], 4096, n_sms) == []
    with pytest.raises(ValueError, match="n=0"):
        compute.matmul_shape_efficiencies(4096, [8, 0], 4096, n_sms)
    with pytest.raises(ValueError, match="at most 10,000"):
        compute.matmul_shape_efficiencies(4096, [8] * (compute.MAX_SHAPES + 1), 4096, n_sms)
    with pytest.raises(ValueError, match="k=0"):
        compute.matmul_shape_efficiencies(4096, [8], 0, n_sms)


def test_8192_versus_8193():
    n_sms = spec("H100-SXM").sm_count
    a = compute.matmul_shape_efficiency(8192, 8192, 8192, n_sms)
    b = compute.matmul_shape_efficiency(8192, 8193, 8192, n_sms)
    assert a.tile_efficiency == 1.0 and a.aligned
    assert b.tile_efficiency == pytest.approx(8193 / 8320)  # one more column costs a whole column of tiles
    assert not b.aligned  # 8193 is no multiple of 8 bf16 elements: Tensor Cores lose efficiency too
    assert b.tiles > a.tiles


def test_roofline_bad_input():
    with pytest.raises(ValueError, match="intensity=0"):
        compute.roofline(0, 1e15, 1e12)
    with pytest.raises(ValueError, match="bandwidth_bytes_per_s=-1"):
        compute.ridge_intensity(1e15, -1)
    with pytest.raises(ValueError, match="dtype='fp12'"):
        compute.matmul_intensity(1, 1, 1, "fp12")
    with pytest.raises(ValueError, match="n_sms=0"):
        compute.matmul_shape_efficiency(1024, 1024, 1024, 0)
    with pytest.raises(ValueError, match="m=1.5"):
        compute.matmul_flops(1.5, 2, 2)
