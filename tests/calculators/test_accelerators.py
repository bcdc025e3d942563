"""Accelerator calculators (compute/view): their charts carry the numbers of the pure functions."""

import pytest

from mlcalc import calc, compute, spec
from mlcalc.calculators import accelerators as calcs
from mlcalc.vl import chart_values


def _evaluate(c, **given):
    _, view = c.evaluate(given)
    calc.check_chart(view.chart)
    return view


# Hoffmann et al. 2022 (Chinchilla): 70B parameters trained on 1.4T tokens; Table 3: a 10B model's
# compute-optimal budget is 205.1B tokens and a 1B model's 20.2B (about 20 tokens per parameter).
def test_token_budget_is_chinchillas_ratio():
    assert compute.tokens_from_budget(70e9) == pytest.approx(1.4e12)
    assert compute.tokens_from_budget(10e9) == pytest.approx(205.1e9, rel=0.03)
    assert compute.tokens_from_budget(1e9) == pytest.approx(20.2e9, rel=0.03)
    with pytest.raises(ValueError, match="tokens_per_param"):
        compute.tokens_from_budget(1e9, 0)


# Thulke et al. 2024 (ClimateGPT): a 7B model on 319.5B tokens; 6ND FLOP, on 160 H100s at 40% of 989.5 TFLOPS.
def test_training_cost_chart_is_the_run_cost_curve():
    view = _evaluate(calcs.TRAINING_COST)
    total = compute.training_flops(7e9, 319.5e9)
    peak = spec("H100-SXM").peak_flops("bf16")
    rows = chart_values(view.chart)
    curve = [r for r in rows if "label" not in r]
    for r in curve[::20]:
        days = compute.training_time_s(total, 160, peak, r["mfu"] / 100) / 86400
        assert r["days"] == pytest.approx(days, rel=1e-5)
        assert r["cost"] == pytest.approx(days * 160 * 24 * 12.5, rel=1e-5)
    here = next(r for r in rows if "label" in r)
    rc = compute.run_cost(total, 160, peak, 0.4, 12.5)
    assert here["cost"] == pytest.approx(rc.cost, rel=1e-5)
    assert f"${rc.cost:,.0f} at $12.50/GPU-hour" in view.text


def test_training_cost_from_a_token_budget():
    c = calcs.TRAINING_COST
    result, view = c.evaluate({"n_params_billion": 70, "budget": "ratio"})  # Chinchilla: 70B on 20 tokens per parameter
    assert result[0] == pytest.approx(6 * 70e9 * 1.4e12)
    assert "Hoffmann et al. 2022" in view.text and "hoffmann" not in view.text
    assert "tokens per param" in calc.run(c.key, {"budget": "ratio", "tokens_per_param": 0})["error"]


def test_offers_chart_and_table():
    view = _evaluate(calcs.OFFERS, n_params_billion=7, n_tokens_billion=300)
    results = compute.compare_offers(compute.training_flops(7e9, 300e9), [
        compute.ClusterOffer("a", "H100-SXM", 64, 3.0, 0.4), compute.ClusterOffer("b", "A100-80GB", 192, 1.0, 0.4),
        compute.ClusterOffer("c", "MI300X", 64, 2.5, 0.3)])
    rows = chart_values(view.chart)
    assert [r["days"] for r in rows] == pytest.approx([r.time_s / 86400 for r in results], rel=1e-5)
    assert [r["cost"] for r in rows] == pytest.approx([r.cost for r in results], rel=1e-5)
    assert view.table.rows[0][-1] == f"${results[0].cost:,.0f}" and view.table.rows[0][4] == "$3.00"


# NVIDIA Matrix Multiplication Background guide: an 8192x128x8192 fp16 GEMM has 124.1 FLOP/B.
def test_roofline_chart_point_and_roof():
    view = _evaluate(calcs.ROOFLINE)
    h100 = spec("H100-SXM")
    rows = chart_values(view.chart)
    point = next(r for r in rows if "bound" in r)
    assert point["i"] == pytest.approx(124.1, abs=0.05)
    assert point["tflops"] == pytest.approx(124.1 * h100.memory_bandwidth_bytes_per_s / 1e12, rel=1e-3)
    roof = [r for r in rows if set(r) == {"i", "tflops"}]
    assert max(r["tflops"] for r in roof) == pytest.approx(989.5, rel=1e-5)


# NVIDIA Matrix Multiplication Background guide: 8192^3 on an A100 (108 SMs, 256x128 tiles) runs 2,048 tiles in
# 19 waves (99.8% of the last wave busy).
def test_shape_chart_follows_the_pure_function():
    view = _evaluate(calcs.SHAPE_EFFICIENCY, accelerator="A100-80GB")
    rows = chart_values(view.chart)
    line = [r for r in rows if r.get("series") == "tile x wave"]
    assert len(line) <= calcs.N_POINTS
    for r in line[::25]:
        e = compute.matmul_shape_efficiency(8192, r["n"], 8192, 108)
        assert r["pct"] == pytest.approx(e.efficiency * 100, rel=1e-5)
    assert "2,048 tiles in 19 waves of 108" in view.text
    huge = _evaluate(calcs.SHAPE_EFFICIENCY, n_center=10**9, span=8192)
    assert len(chart_values(huge.chart)) <= 2 * calcs.N_POINTS + 1  # the sweep never grows with N


def test_catalogue_chart_has_every_chip_once():
    view = _evaluate(calcs.CATALOGUE)
    rows = compute.catalogue_rows()
    dots = [r for r in chart_values(view.chart) if "vendor" in r]
    labelled = " / ".join(r["label"] for r in dots)
    assert all(r.key in labelled for r in rows)
    b200 = next(d for d in dots if "B200" in d["label"].split(" / "))  # B300 shares its bf16 and TB/s
    assert b200["tflops"] == pytest.approx(2250.0) and b200["tbps"] == pytest.approx(8.0)


# NVIDIA datasheets: A100 312 and H100 SXM 989.5 dense bf16 TFLOPS -> 3.17x.
def test_compare_chart_ratios():
    view = _evaluate(calcs.COMPARE)
    bf16 = next(r for r in chart_values(view.chart) if r.get("figure", "").startswith("bf16"))
    assert bf16["ratio"] == pytest.approx(989.5 / 312, rel=1e-5)


# Jiang et al. 2024 (Mixtral of Experts): each token uses about 13B of Mixtral 8x7B's 47B parameters, and
# 6ND counts the parameters a token meets; a typed number turns the model choice back to "custom".
def test_training_cost_from_a_model_preset():
    result, view = calcs.TRAINING_COST.evaluate({"model": "Mixtral 8x7B",
                                                 "n_params_billion": calcs.model_params_b("Mixtral 8x7B"),
                                                 "n_tokens_billion": 1000})
    assert calcs.model_params_b("Mixtral 8x7B") == pytest.approx(13, abs=0.2)
    assert result[0] == pytest.approx(6 * calcs.model_params_b("Mixtral 8x7B") * 1e9 * 1e12)
    assert view.text.startswith("model Mixtral 8x7B: 12.9 B parameters")
    from mlcalc.widgets import TrainingCostWidget

    w = TrainingCostWidget(model="Llama-3 70B")
    assert w.n_params_billion.value == calcs.model_params_b("Llama-3 70B")
    w.n_params_billion.value = 8
    assert w.model.value == "custom"


def test_offers_on_a_measured_table_leave_out_chips_it_lacks():
    # the measured table holds H100 and H200 only: an A100 offer is named and left out, not a failure
    out = calc.run(calcs.OFFERS.key, {**calcs.OFFERS.values({}), "source": "measured", "accelerator_1": "H100-SXM",
                                      "accelerator_2": "A100-80GB"})
    assert out["ok"] and "left out" in out["text"] and "offer 2: A100-80GB" in out["text"]
    bad = calc.run(calcs.OFFERS.key, {**calcs.OFFERS.values({}), "source": "measured", "accelerator_1": "A100-80GB",
                                      "accelerator_2": "A100-80GB", "accelerator_3": "V100-SXM2-32GB"})
    assert not bad["ok"] and "source='measured'" in bad["error"] and "H100-SXM" in bad["error"]


def test_v100_offers_train_in_fp16():
    # the V100 has no bf16: mixed precision runs in fp16 there (Micikevicius et al. 2018), at its fp16 peak
    from mlcalc.accelerators import spec, training_dtype

    assert training_dtype("V100-SXM2-32GB") == "fp16" and training_dtype("H100-SXM") == "bf16"
    out = calc.run(calcs.OFFERS.key, {**calcs.OFFERS.values({}), "accelerator_1": "V100-SXM2-32GB"})
    assert out["ok"], out
    assert f"{spec('V100-SXM2-32GB').dense_tflops['fp16']:,.1f}" in out["text"] + str(out.get("table"))
