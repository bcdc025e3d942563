"""Accelerator widgets: recompute on change, show bad input inline, keep the last good answer."""


import pytest

pytest.importorskip("ipywidgets")

from mlcalc import compute, spec
from mlcalc.widgets import (
    CatalogueWidget, CompareWidget, MfuWidget, OffersWidget, PeakWidget, RooflineWidget, ShapeEfficiencyWidget,
    TrainingCostWidget,
)


def test_catalogue_widget_filters_sorts_and_switches_source():
    w = CatalogueWidget()
    assert w.last_result[0].key == "GB200"  # largest dense bf16 figure
    w.dtype.value = "fp4"
    assert {r.key for r in w.last_result} == {"B200", "GB200", "B300", "GB300", "MI355X", "Trainium3"}
    w.dtype.value = "bf16"
    w.sort_by.value = "memory_gb"
    assert w.last_result[0].key in {"MI355X", "B300"} and w.last_result[0].memory_gb == 288  # 288 GB both
    w.source.value = "achievable"
    assert {r.key for r in w.last_result} <= {"GB200", "B200", "MI355X", "Gaudi3", "H100-SXM", "H200-SXM", "MI325X",
                                               "MI300X", "Gaudi2", "A100-80GB"}
    w.dtype.value = "tf32"  # no achievable tf32 figures at all
    assert "tf32" in w.last_error and w.last_result[0].key == "MI355X"


def test_compare_widget_ratio():
    w = CompareWidget(a="A100-80GB", b="H100-SXM")
    bf16 = next(r for r in w.last_result if r[0].startswith("bf16"))
    assert bf16[3] == f"{989.5 / 312:.2f}x"
    fp8 = next(r for r in w.last_result if r[0].startswith("fp8"))
    assert fp8[1] == "n/a" and fp8[3] == "n/a"


def test_peak_widget_follows_clock_and_accelerator():
    w = PeakWidget(accelerator="Gaudi3")
    assert w.last_result[1] == pytest.approx(spec("Gaudi3").peak_flops("bf16"), rel=0.001)
    w.clock_mhz.value = 1600  # Bekman's chapter: shipping Gaudi 3 runs at 1,600 MHz -> 1,677 TFLOPS
    assert w.last_result[1] / 1e12 == pytest.approx(1677.7, abs=0.1)
    w.accelerator.value = "A100-80GB"
    assert w.clock_mhz.value == 1410
    w.clock_mhz.value = 0
    assert "clock_mhz=0" in w.last_error


def test_training_cost_widget_climategpt_default_and_bad_input():
    w = TrainingCostWidget()
    total, peak, rc = w.last_result
    assert total == pytest.approx(6 * 7e9 * 319.5e9)
    assert rc.gpu_hours == pytest.approx(total / (peak * 0.4) / 3600)
    w.mfu.value = 0.2
    assert w.last_result[2].time_s == pytest.approx(2 * rc.time_s)
    w.n_gpus.value = 0
    assert "n_gpus=0" in w.last_error and w.last_result[2].time_s == pytest.approx(2 * rc.time_s)
    w.n_gpus.value = 160
    w.source.value = "achievable"
    assert w.last_error == "" and w.last_result[1] == pytest.approx(794.5e12)
    w.accelerator.value = "TPU-v5e"  # no achievable figure for it
    assert "TPU-v5e" in w.last_error


def test_offers_widget_three_offers():
    w = OffersWidget()
    assert len(w.last_result.results) == 3 and w.last_result.missing == ()
    h100, a100, _ = w.last_result.results
    assert a100.time_s / h100.time_s == pytest.approx(989.5 * 64 / (312 * 192))
    w.price_1.value = -1
    assert "price_per_gpu_hour=-1" in w.last_error


def test_mfu_widget_bekman_example_and_tokens_mode():
    w = MfuWidget()
    assert w.last_result[0] == pytest.approx(0.5)  # 624 TFLOP in 4 s on an A100
    w.mode.value = "tokens"
    w.n_params_billion.value = 1.0
    w.tokens_per_s.value = 312e12 * 0.25 / 6e9
    assert w.last_result[0] == pytest.approx(0.25)
    w.tokens_per_s.value = -5
    assert "tokens_per_s=-5" in w.last_error


def test_roofline_widget_matmul_and_decode():
    w = RooflineWidget()
    point, _, _ = w.last_result
    assert point.intensity == pytest.approx(compute.matmul_intensity(8192, 128, 8192, "bf16"))
    assert point.bound == "memory"  # 124 FLOP/B against an H100 ridge of 295
    w.mode.value = "decode"
    point, _, bound = w.last_result
    assert point.intensity == 1.0 and bound.bound == "memory"
    w.batch.value = 0
    assert "batch=0" in w.last_error


def test_shape_widget_8193():
    w = ShapeEfficiencyWidget()
    assert w.last_result[1].efficiency == pytest.approx(
        compute.matmul_shape_efficiency(8192, 8192, 8192, 132).efficiency)
    w.n_center.value = 8193
    assert not w.last_result[1].aligned
    w.m.value = -1
    assert "m=-1" in w.last_error


def test_widgets_update():
    w = TrainingCostWidget()
    for mfu in (0.3, 0.35, 0.45):  # speed is measured by scripts/benchmark.py, not here
        w.mfu.value = mfu
        assert w.last_error == ""


# Narayanan et al. 2021, Tables 1-2: the 175B configuration has 174.6B parameters, the 1T one 1008.0B.
def test_flops_widget_presets_and_bad_input():
    from mlcalc.widgets import FlopsWidget

    w = FlopsWidget(preset="GPT-3 175B")
    assert w.last_result.n_params / 1e9 == pytest.approx(174.6, abs=0.05)
    assert w.last_result.ratio_to_n == pytest.approx(8, rel=0.03)
    w.preset.value = "Megatron GPT 1008B"
    assert w.layers.value == 128 and w.last_result.n_params / 1e9 == pytest.approx(1008.0, abs=0.1)
    w.recompute.value = False
    assert w.last_result.ratio_to_n == pytest.approx(6, rel=0.03)
    w.hidden.value = 0
    assert "hidden=0" in w.last_error


def test_mfu_widget_hfu():
    w = MfuWidget()
    w.recompute.value = True
    assert w.last_error == "" and w.last_result[0] == pytest.approx(0.5)
