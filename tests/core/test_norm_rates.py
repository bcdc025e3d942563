"""RMSNorm rates by row width, measured (issue 24): mlcalc/data/measured/{h100,h200}-2026-11-27-norm13/norm_rates.json,
scripts/gpu/norm_rates.py in session 36 (torch 2.11.0+cu130, transformers 5.17.0), one call on one H100 80GB HBM3 and
one on one H200; the H100's was run twice (norm_rates_repeat.json, the same machine, warm)."""
import json
import pathlib

import pytest

from mlcalc import models, steptime

DATA = pathlib.Path(steptime.__file__).parent / "data" / "measured"


def _load(run, name="norm_rates.json"):
    return json.loads((DATA / run / name).read_text())


def _row(data, kind, width, elements):
    (r,) = [r for r in data["norms"][kind] if r["width"] == width and r["elements"] == elements]
    return r


def _ab(data):
    return max(r["bytes_per_s"] for r in data["baseline_before"] + data["baseline_after"] if r["op"] == "a*b")


def test_the_measured_cards_and_modules():
    h100, h200 = _load("h100-2026-11-27-norm13"), _load("h200-2026-11-27-norm13")
    assert h100["environment"]["device_name"] == "NVIDIA H100 80GB HBM3"
    assert h200["environment"]["device_name"] == "NVIDIA H200"
    for d in (h100, h200):
        assert d["environment"]["modules"] == "transformers"  # the models' own classes, not a rewrite
        assert {r["timing"] for rows in d["norms"].values() for r in rows} == {"cuda graph"}
    # the baseline of the same call: a*b at 2^27 elements, H100 3.03 TB/s, H200 4.33 TB/s (read + written)
    assert _ab(h100) == pytest.approx(3.03e12, rel=0.01) and _ab(h200) == pytest.approx(4.33e12, rel=0.01)


def test_the_repeat_agrees_within_two_percent():
    a, b = _load("h100-2026-11-27-norm13"), _load("h100-2026-11-27-norm13", "norm_rates_repeat.json")
    for kind, rows in a["norms"].items():
        for r in rows:
            if r["elements"] >= 2**24:
                s = _row(b, kind, r["width"], r["elements"])
                assert s["forward_s"] == pytest.approx(r["forward_s"], rel=0.02)
                assert s["backward_s"] == pytest.approx(r["backward_s"], rel=0.02)


def test_norm_bytes_are_the_measured_times_at_the_measured_points():
    # H100, Qwen3RMSNorm of bf16 rows 128 wide, 2^24 elements: forward 303.3 us, backward 844.8 us (the log of the
    # call); 128 wide is Qwen3's head_dim, 2^24 elements its queries at 8 x 1024 tokens (16 heads)
    d = _load("h100-2026-11-27-norm13")
    r = _row(d, "qwen3_bf16_in", 128, 2**24)
    assert (r["forward_s"], r["backward_s"]) == pytest.approx((303.3e-6, 844.8e-6), abs=0.1e-6)
    f, b = steptime.norm_bytes("H100-SXM", "qwen3_bf16_in", 128, 2**24)
    assert f == pytest.approx(303.3e-6 * _ab(d) / 2**24, rel=1e-3)
    assert b == pytest.approx(844.8e-6 * _ab(d) / 2**24, rel=1e-3)
    # in between two measured widths: between their bytes (log-width interpolation)
    lo, hi = (steptime.norm_bytes("H100-SXM", "qwen3_bf16_in", w, 2**24)[1] for w in (128, 256))
    assert hi < steptime.norm_bytes("H100-SXM", "qwen3_bf16_in", 181, 2**24)[1] < lo


def test_narrow_rows_lose_rate_in_the_backward():
    # the law: per element, a backward over rows 128 wide takes 1.16x (H100) and 1.19x (H200) the time of rows
    # 1024-8192 wide, 256 wide 1.07x and 1.09x; the forward loses little above 64 wide
    for card, at128, at256 in (("H100-SXM", 1.16, 1.07), ("H200-SXM", 1.19, 1.09)):
        f128, b128 = steptime.norm_slowdown(card, "qwen3_bf16_in", 128, 2**24)
        assert b128 == pytest.approx(at128, abs=0.01)
        assert steptime.norm_slowdown(card, "qwen3_bf16_in", 256, 2**24)[1] == pytest.approx(at256, abs=0.01)
        assert f128 < 1.05
        for w in (2048, 4096, 8192):
            assert steptime.norm_slowdown(card, "llama_fp32_in", w, 2**24) == pytest.approx((1.0, 1.0), abs=0.03)
        for kind in steptime.NORM_KINDS:  # narrower is never faster, from 1024 down
            b = [steptime.norm_slowdown(card, kind, w, 2**24)[1] for w in (1024, 512, 256, 128)]
            assert b == sorted(b)
    # a card not measured takes the H100's
    assert steptime.norm_slowdown("A100-SXM", "qwen3_bf16_in", 128, 2**24) == steptime.norm_slowdown(
        "H100-SXM", "qwen3_bf16_in", 128, 2**24)


def test_counted_backward_bytes_of_the_modules():
    # scripts/gpu/count_norm_bytes.json (CPU, torch 2.13, transformers 5.17): the norm's backward moves 2.7-3.4 times
    # its forward bytes, against the engine's BACKWARD_OVER_FORWARD (2): stated, not priced (see steptime)
    c = json.loads((pathlib.Path(steptime.__file__).parents[1] / "scripts/gpu/count_norm_bytes.json").read_text())
    n = c["norms"]
    assert n["llama_fp32_in"]["fwd_total"] == pytest.approx(steptime.RMSNORM_FP32_IN, rel=0.01)
    assert n["gemma3_bf16_in"]["fwd_total"] == pytest.approx(steptime.RMSNORM_BF16_IN, rel=0.01)
    assert n["qwen3_bf16_in"]["fwd_total"] == pytest.approx(steptime.QK_NORM_FP32_OUT, rel=0.01)
    for k, lo, hi in (("llama_fp32_in", 3.4, 3.42), ("qwen3_bf16_in", 2.93, 2.95), ("gemma3_bf16_in", 2.69, 2.7)):
        assert lo < n[k]["bwd_total"] / n[k]["fwd_total"] < hi


QWEN3 = models.preset("Qwen3 0.6B")


def test_the_engine_prices_the_qk_norms_at_their_width():
    b, s = 8, 1024
    T = b * s
    plain = steptime.elementwise_bytes(QWEN3, b, s)
    h100 = steptime.elementwise_bytes(QWEN3, b, s, card="H100-SXM")
    kv = QWEN3.n_kv_heads * QWEN3.head_dim
    fq, bq = steptime.norm_slowdown("H100-SXM", "qwen3_bf16_in", 128, T * QWEN3.q_width)
    fk, bk = steptime.norm_slowdown("H100-SXM", "qwen3_bf16_in", 128, T * kv)
    fh, bh = steptime.norm_slowdown("H100-SXM", "llama_fp32_in", QWEN3.hidden, T * QWEN3.hidden)
    L = QWEN3.n_layers
    qk_fwd = steptime.QK_NORM_FP32_OUT * (fq * QWEN3.q_width + fk * kv)
    norms_fwd = 2 * steptime.RMSNORM_FP32_IN * QWEN3.hidden * fh
    d_fwd = (qk_fwd + norms_fwd - steptime.QK_NORM_FP32_OUT * (QWEN3.q_width + kv)
             - 2 * steptime.RMSNORM_FP32_IN * QWEN3.hidden) * T * L
    assert h100["forward: layers"] - plain["forward: layers"] == pytest.approx(d_fwd, rel=1e-9)
    per_qk_back = 2 * steptime.QK_NORM_FP32_OUT + steptime.qk_norm_backward_extra_per_token_layer(QWEN3) / (
        QWEN3.q_width + kv)
    d_bwd = (per_qk_back * (bq * QWEN3.q_width + bk * kv - QWEN3.q_width - kv)
             + 2 * 2 * steptime.RMSNORM_FP32_IN * QWEN3.hidden * (bh - 1)) * T * L
    assert h100["backward: layers"] - plain["backward: layers"] == pytest.approx(d_bwd, rel=1e-9)
    assert d_bwd > 0.1 * per_qk_back * (QWEN3.q_width + kv) * T * L  # the q/k backward costs over 10% more
    # nothing else moves
    for k in plain:
        if "layers" not in k:
            assert h100[k] == plain[k]


def test_wide_norms_and_other_engines_do_not_move():
    llama = models.preset("Llama-3.2 1B")
    plain = steptime.elementwise_bytes(llama, 2, 4096)
    h100 = steptime.elementwise_bytes(llama, 2, 4096, card="H100-SXM")
    assert h100["backward: layers"] == pytest.approx(plain["backward: layers"], rel=0.002)  # 2048 wide: plateau
    gpt2 = models.preset("GPT-2 355M")  # LayerNorm: one fused kernel, not measured here
    assert steptime.elementwise_bytes(gpt2, 8, 1024, card="H100-SXM") == steptime.elementwise_bytes(gpt2, 8, 1024)
    mega = steptime.elementwise_bytes(QWEN3, 8, 1024, engine="megatron", card="H100-SXM")
    assert mega == steptime.elementwise_bytes(QWEN3, 8, 1024, engine="megatron")  # fused norms: not these kernels


@pytest.mark.parametrize("args, name", [(("H100-SXM", "rmsnorm", 128, 2**24), "kind"),
                                        (("H100-SXM", "qwen3_bf16_in", 0, 2**24), "width"),
                                        (("H100-SXM", "qwen3_bf16_in", 128, -1.0), "elements")])
def test_bad_input_names_the_parameter(args, name):
    with pytest.raises(ValueError, match=name):
        steptime.norm_slowdown(*args)
    with pytest.raises(ValueError, match=name):
        steptime.norm_bytes(*args)
