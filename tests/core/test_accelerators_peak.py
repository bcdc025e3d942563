"""Theoretical peak from first principles: clock x units x FMA per clock x 2 reproduces the datasheets."""

import pytest

from mlcalc import accelerators, spec
from mlcalc.accelerators import recipe, theoretical_peak_flops


# NVIDIA GPU Performance Background User's Guide: an A100 with 108 SMs at 1.41 GHz has peak dense
# throughputs of 156 TF32 TFLOPS and 312 FP16 TFLOPS (1024 fp16 / 512 tf32 FMA per SM per clock).
def test_a100_from_nvidia_guide():
    assert theoretical_peak_flops(1.41e9, 108, 1024) == pytest.approx(312e12, rel=0.001)
    assert theoretical_peak_flops(1.41e9, 108, 512) == pytest.approx(156e12, rel=0.001)
    assert recipe("A100-80GB").flops() == pytest.approx(spec("A100-80GB").peak_flops("bf16"), rel=0.001)


# NVIDIA GPU Performance Background User's Guide: a V100 SXM2 with 80 SMs at 1.53 GHz has peak
# throughputs of 15.7 FP32 TFLOPS (64 FMA per SM per clock) and 125 FP16 TFLOPS (512).
def test_v100_from_nvidia_guide():
    assert theoretical_peak_flops(1.53e9, 80, 64) == pytest.approx(15.7e12, rel=0.003)
    assert recipe("V100-SXM2-32GB").flops() == pytest.approx(125e12, rel=0.003)


# Bekman's chapter, "How to calculate theoretical TFLOPS": 1830e6 * 512 * 2 * 528 = 989.43 TFLOPS for
# H100 SXM (528 tensor cores = 4 x 132 SMs); the once-quoted 1980 MHz would give 1070.53.
def test_h100_clock():
    r = recipe("H100-SXM")
    assert r.flops() / 1e12 == pytest.approx(989.43, abs=0.01)
    assert r.flops(clock_mhz=1980) / 1e12 == pytest.approx(1070.53, abs=0.01)
    assert r.flops() == pytest.approx(spec("H100-SXM").peak_flops("bf16"), rel=0.001)


# Bekman's chapter: MI300X 2100 MHz x 256 x 2 x 1216 = 1307.4; MI250X 1700 x 128 x 2 x 880 = 383.0;
# MI355X 2400 x 512 x 2 x 1024 = 2516.6 (AMD prints 2.5 PFLOPS).
def test_amd_recipes():
    assert recipe("MI300X").flops() / 1e12 == pytest.approx(1307.4, abs=0.05)
    assert recipe("MI300X").flops() == pytest.approx(spec("MI300X").peak_flops("bf16"), rel=1e-4)
    assert recipe("MI250X").flops() / 1e12 == pytest.approx(383.0, abs=0.05)
    assert recipe("MI355X").flops() / 1e12 == pytest.approx(2516.6, abs=0.05)
    assert recipe("MI355X").flops() == pytest.approx(spec("MI355X").peak_flops("bf16"), rel=0.01)


# Bekman's chapter: Gaudi 2 1650 MHz x 256*256 x 2 x 2 MMEs = 432.5 TFLOPS; Gaudi 3 with 8 MMEs needs
# 1750 MHz for the white paper's 1835 TFLOPS, and shipping parts at 1600 MHz give 1677.
def test_gaudi_recipes():
    assert recipe("Gaudi2").flops() / 1e12 == pytest.approx(432.5, abs=0.05)
    g3 = recipe("Gaudi3")
    assert g3.flops() == pytest.approx(spec("Gaudi3").peak_flops("bf16"), rel=0.001)
    assert g3.flops(clock_mhz=1600) / 1e12 == pytest.approx(1677.7, abs=0.05)


def test_every_recipe_matches_its_datasheet_within_one_percent():
    for key, r in accelerators.recipes().items():
        assert r.source.startswith("https://"), key
        assert r.flops() == pytest.approx(spec(key).peak_flops(r.dtype), rel=0.01), key


def test_bad_input():
    with pytest.raises(ValueError, match="clock_hz=0"):
        theoretical_peak_flops(0, 108, 1024)
    with pytest.raises(ValueError, match="n_units=2.5"):
        theoretical_peak_flops(1e9, 2.5, 1024)
    with pytest.raises(ValueError, match="accelerator \\(with a peak recipe\\)='TPU-v5e'"):
        recipe("TPU-v5e")
    with pytest.raises(ValueError, match="clock_mhz=-5"):
        recipe("H100-SXM").flops(clock_mhz=-5)
