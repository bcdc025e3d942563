"""The element-wise bytes of a query/key norm and the rotary embedding after it, per architecture.

Source: transformers 5.17 (pinned: the version of every measured one-GPU run), the modelling files
``models/qwen3/modeling_qwen3.py`` (``Qwen3RMSNorm.forward``: ``return self.weight * hidden_states.to(input_dtype)``,
an fp32 weight times a bf16 tensor, so an fp32 output, then ``apply_rotary_pos_emb`` on it) and
``models/gemma3/modeling_gemma3.py`` (``Gemma3RMSNorm.forward``: ``(x * (1 + w)).type_as(x)``, bf16 out).
Counted on the real modules on CPU (scripts/gpu/count_train_bytes.py, torch 2.13, T = 128 tokens, the bytes of
every ATen op that is neither a matmul nor attention, a 2-layer model less a 1-layer one, autocast bf16 as the
measured runs): a Qwen3 0.6B layer moves 390.7 x hidden bytes per token forward, a Llama-3.2 1B layer 191.6, a
Qwen2.5 0.5B layer 202.7 (activation casts included, weight casts excluded).
"""

import json
import pathlib

import pytest

from mlcalc import models, steptime

QWEN3_06B = models.ModelConfig("Qwen3 0.6B", 28, 1024, 16, 8, 128, 3072, 151936, tied_embeddings=True, qk_norm=True)
LLAMA32_1B = models.ModelConfig("Llama-3.2 1B", 16, 2048, 32, 8, 64, 8192, 128256, tied_embeddings=True)
QWEN25_05B = models.ModelConfig("Qwen2.5 0.5B", 24, 896, 14, 2, 64, 4864, 151936, tied_embeddings=True,
                                qkv_bias=True)
COUNTED = {QWEN3_06B: 390.7, LLAMA32_1B: 191.6, QWEN25_05B: 202.7}  # forward bytes per token and layer / hidden


@pytest.mark.parametrize("model", list(COUNTED), ids=lambda m: m.name)
def test_forward_layer_bytes_match_the_counted_modules(model):
    per_h = sum(steptime.elementwise_bytes_per_token_layer(model).values()) / model.hidden
    assert per_h == pytest.approx(COUNTED[model], rel=0.01)


def test_qwen3_query_key_norm_and_rotary_in_fp32():
    # per query/key element: the norm 38 (.float 6, pow 8, mean 4, x*rsqrt 8, .to(bf16) 6, fp32 weight * 6);
    # rotary on fp32 input 40 (mul 16, neg 4, cat 8, add 12) plus the cast to bf16 for attention (6): 84 in all,
    # where the same layer without the fp32 output would move 40 + 30 + 6 = 76
    parts = steptime.elementwise_bytes_per_token_layer(QWEN3_06B)
    qk = QWEN3_06B.q_width + QWEN3_06B.n_kv_heads * QWEN3_06B.head_dim
    assert parts["query/key norms"] / qk == 38.0
    assert parts["rotary embeddings and casts"] / qk == 46.0


def test_gemma3_query_key_norm_casts_back_to_bf16():
    gemma = models.ModelConfig("Gemma-3 1B", 26, 1152, 4, 1, 256, 6912, 262208, tied_embeddings=True,
                               qk_norm=True, norms_per_layer=4, activation="gelu_tanh")
    parts = steptime.elementwise_bytes_per_token_layer(gemma)
    qk = gemma.q_width + gemma.n_kv_heads * gemma.head_dim
    assert parts["query/key norms"] / qk == 40.0  # .float, pow, mean, x*rsqrt, * (1 + w) in fp32, .type_as(x)
    assert parts["rotary embeddings and casts"] / qk == 36.0  # bf16 rotary, as Llama's


# The backward of the q/k norm (fp32 output) and of the fp32 rotary embedding after it, counted on the real modules:
# scripts/gpu/count_qk_norm_bytes.json (scripts/gpu/count_qk_norm_bytes.py: Qwen3 0.6B less the same widths without
# its q/k norms, transformers 5.17, torch 2.13, CPU, bf16 autocast, T = 128, bytes per token and layer).
_COUNT = json.loads((pathlib.Path(__file__).resolve().parents[2] / "scripts/gpu/count_qk_norm_bytes.json").read_text())


def _counted_delta(phase):
    a, b = (_COUNT["models"][k][phase] for k in ("Qwen3 0.6B", "Qwen3 0.6B (no q/k norm)"))
    return sum(a.values()) - sum(b.values())  # the weight casts are the same in both and cancel


def test_qk_norm_backward_bytes_are_the_counted_ones():
    qk = QWEN3_06B.q_width + QWEN3_06B.n_kv_heads * QWEN3_06B.head_dim
    fwd, bwd = _counted_delta("forward") / qk, _counted_delta("backward") / qk
    # forward: the norm (38) and the rotary's fp32 excess (40 - 30) the engine already charges, 48.2 counted
    assert fwd == pytest.approx(steptime.QK_NORM_FP32_OUT + steptime.ROPE_FP32_IN - steptime.ROPE, rel=0.01)
    # backward: 120.3 counted, 2.5 times the forward, where the engine's rule for every other kind is 2
    assert bwd == pytest.approx(steptime.QK_NORM_FP32_BACKWARD, rel=0.001)
    assert bwd / fwd == pytest.approx(2.5, abs=0.02)
    extra = steptime.qk_norm_backward_extra_per_token_layer(QWEN3_06B)
    # (the engine's forward is 48 where 48.2 was counted: within 2 %)
    assert extra == pytest.approx(_counted_delta("backward") - steptime.BACKWARD_OVER_FORWARD * _counted_delta(
        "forward"), rel=0.02)


def test_qk_norm_backward_extra_reaches_the_step_bytes():
    b, s = 8, 1024
    extra = steptime.qk_norm_backward_extra_per_token_layer(QWEN3_06B) * b * s * QWEN3_06B.n_layers
    for tp in (1, 2):  # split over tensor-parallel ranks with the heads
        e = steptime.elementwise_bytes(QWEN3_06B, b, s, tp=tp)
        assert e["backward: layers"] - steptime.BACKWARD_OVER_FORWARD * e["forward: layers"] == pytest.approx(
            extra / tp, rel=1e-9)


@pytest.mark.parametrize("model", [LLAMA32_1B, QWEN25_05B], ids=lambda m: m.name)
def test_no_backward_extra_without_an_fp32_qk_norm(model):
    assert steptime.qk_norm_backward_extra_per_token_layer(model) == 0.0
    gemma = models.ModelConfig("Gemma-3 1B", 26, 1152, 4, 1, 256, 6912, 262208, tied_embeddings=True,
                               qk_norm=True, norms_per_layer=4, activation="gelu_tanh")
    assert steptime.qk_norm_backward_extra_per_token_layer(gemma) == 0.0  # its norm casts back to bf16


def test_measured_device_time_of_the_qk_norm_backward_exceeds_the_counted_bytes():
    # Source: scripts/gpu/profile_hf_step_h100.json (scripts/gpu/profile_hf_step.py, one H100 80GB HBM3, torch 2.11,
    # transformers 5.17, session 36): Qwen3 0.6B at 8 x 1024 against the same widths without q/k norms, each pass
    # under torch.profiler. The norms add 10.7 ms of kernels to the forward and 38.7 ms to the backward (3.6 times):
    # the counted bytes (2.5 times) explain the forward and part of the backward; the rest is the rate of its
    # kernels, not their bytes: the two reductions of each norm's backward over 128-wide rows (aten::sum of
    # [8, 1024, 16, 128] fp32, 98.5 us for 64 MiB read: 0.68 TB/s, against 21.5 us for the hidden-wide norm's
    # [8, 1024, 1024], 1.56 TB/s). The engine now prices the loss of narrow rows as measured on the modules alone
    # (steptime.norm_slowdown, tests/core/test_norm_rates.py: 1.16x at 128 wide on the H100); the rest stays a stated
    # miss (Qwen3 0.6B under-predicted 9-16 % on every machine).
    prof = json.loads((pathlib.Path(__file__).resolve().parents[2] / "scripts/gpu/profile_hf_step_h100.json")
                      .read_text())
    assert prof["device"].startswith("NVIDIA H100")
    dev = {}
    for c in prof["cases"]:
        if c["case"]["recompute"]:
            continue
        dev[c["case"]["model"]["name"]] = {p: sum(r["self_device_us"] for r in c["phases"][p]
                                                  if r["op"].startswith("aten::")) for p in ("forward", "backward")}
    d = {p: dev["Qwen3 0.6B"][p] - dev["Qwen3 0.6B (no q/k norm)"][p] for p in ("forward", "backward")}
    assert d["forward"] == pytest.approx(10.7e3, rel=0.02) and d["backward"] == pytest.approx(38.7e3, rel=0.02)
    counted = _counted_delta("backward") / _counted_delta("forward")
    assert 2.0 < counted < d["backward"] / d["forward"]
