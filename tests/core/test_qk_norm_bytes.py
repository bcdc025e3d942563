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
