"""KV cache of every layout (mlcalc.memory): MHA/GQA/MQA, MLA, sliding windows, fp8, paged blocks; MoE traffic.

Each architecture's bytes per token are checked exactly against its paper or released config (source above
each assertion).
"""

import itertools
import math

import pytest

from mlcalc import memory, models


def kv(model, kv_dtype="bf16"):
    return memory.model_kv_bytes_per_token(model, kv_dtype)


# DeepSeek-AI 2024, "DeepSeek-V3 Technical Report", section 2.1.1: "only the blue-boxed vectors (c_t^KV and k_t^R)
# need to be cached during generation"; section 4.2: 61 layers, d_c = 512, d_h^R = 64
# (config.json: kv_lora_rank 512, qk_rope_head_dim 64, num_hidden_layers 61). In bf16: 61 x 576 x 2 = 70,272 bytes,
# about 70 KB, against 61 x 2 x 128 x (128 + 64) x 2 = 6.0 MB had every head kept its own key and value.
def test_deepseek_v3_mla_cache_is_the_latent_and_the_rotary_key():
    v3 = memory.model_preset("DeepSeek-V3")
    assert kv(v3) == 61 * (512 + 64) * 2 == 70_272
    lay = memory.kv_layout(v3)
    assert lay.kind == "MLA" and lay.bytes_per_token_per_layer == 1152
    assert memory.kv_cache_bytes(v3, 4096) == 4096 * 70_272


# DeepSeek-AI 2024, "DeepSeek-V2", Table 1: MLA caches (d_c + d_h^R) l = (9/2) d_h l elements per token, with
# d_c = 4 d_h and d_h^R = d_h / 2; DeepSeek-V2: d_h = 128, l = 60 (config.json of deepseek-ai/DeepSeek-V2:
# num_hidden_layers 60, kv_lora_rank 512, qk_rope_head_dim 64, 128 heads of qk_nope_head_dim 128).
def test_deepseek_v2_mla_is_nine_halves_head_dims_per_layer():
    v2 = models.ModelConfig(name="DeepSeek-V2", n_layers=60, hidden=5120, n_heads=128, n_kv_heads=128, head_dim=128,
                            ffn_hidden=12288, vocab=102400, n_experts=160, experts_per_token=6, n_shared_experts=2,
                            moe_ffn_hidden=1536, first_dense_layers=1, attention="mla", q_lora_rank=1536,
                            kv_lora_rank=512, qk_rope_head_dim=64, v_head_dim=128)
    elements = kv(v2, "fp16") / 2
    assert elements == 9 / 2 * 128 * 60 == 34_560
    # against multi-head attention's 2 n_h d_h l elements (same table): 2.25 / n_h of it
    assert elements / (2 * 128 * 128 * 60) == pytest.approx(2.25 / 128)


# Kwon et al. 2023 (vLLM), section 3: OPT-13B, "2 (key and value vectors) x 5120 (hidden state size) x 40 (number
# of layers) x 2 (bytes per FP16)" = 800 KB per token (MHA: 40 heads of 128).
def test_opt_13b_mha():
    opt = models.ModelConfig(name="OPT-13B", n_layers=40, hidden=5120, n_heads=40, n_kv_heads=40, head_dim=128,
                             ffn_hidden=20480, vocab=50272, gated_mlp=False, biases=True, norm="layernorm",
                             learned_positions=2048, tied_embeddings=True)
    assert memory.kv_layout(opt).kind == "MHA"
    assert kv(opt, "fp16") == 800 * 1024


# Meta Llama 3 8B config.json: 32 layers, 8 key/value heads, head_dim 128 (4096 / 32): 128 KiB per token in bf16;
# Llama 3 70B: 80 layers, 8 KV heads: 320 KiB; Llama 2 7B is multi-head (32 KV heads): 512 KiB.
def test_llama_gqa_and_mha():
    assert kv(memory.model_preset("Llama-3 8B")) == 131_072
    assert kv(memory.model_preset("Llama-3 70B")) == 327_680
    assert memory.kv_layout(memory.model_preset("Llama-3 70B")).kind == "GQA"
    assert kv(memory.model_preset("Llama-2 7B")) == 524_288
    assert memory.kv_layout(memory.model_preset("Llama-2 7B")).kind == "MHA"


# Qwen2.5-7B config.json: 28 layers, num_key_value_heads 4, head_dim 128 (3584 / 28 heads): 57,344 bytes per token;
# Qwen3-235B-A22B config.json: 94 layers, 4 KV heads of 128: 192,512 bytes.
def test_qwen_gqa():
    assert kv(memory.model_preset("Qwen2.5 7B")) == 28 * 2 * 4 * 128 * 2 == 57_344
    assert kv(memory.model_preset("Qwen3 235B-A22B")) == 94 * 2 * 4 * 128 * 2 == 192_512


# Multi-query attention: Gemma 3 1B config.json, num_key_value_heads 1, head_dim 256, 26 layers; Falcon-7B
# (config.json: multi_query true, 32 layers, hidden 4544 over 71 heads = head_dim 64): 2 x 32 x 64 x 2 = 8 KiB.
def test_mqa():
    g1 = memory.model_preset("Gemma-3 1B")
    assert memory.kv_layout(g1).kind == "MQA"
    assert kv(g1) == 26 * 2 * 1 * 256 * 2
    falcon = models.ModelConfig(name="Falcon-7B", n_layers=32, hidden=4544, n_heads=71, n_kv_heads=1, head_dim=64,
                                ffn_hidden=18176, vocab=65024, gated_mlp=False, norm="layernorm", tied_embeddings=True)
    assert kv(falcon) == 8192


# Jiang et al. 2023, "Mistral 7B", section 2 (Rolling Buffer Cache): with a window of W = 4096 "on a sequence
# length of 32k tokens, this reduces the cache memory usage by 8x".
def test_mistral_rolling_buffer_is_8x_smaller_at_32k():
    m = memory.model_preset("Mistral 7B")
    full = kv(m) * 32768
    assert memory.kv_cache_bytes(m, 32768) * 8 == full
    assert memory.kv_cache_bytes(m, 4096) == kv(m) * 4096  # up to the window every token is kept


# Gemma Team 2024, "Gemma 2", section 2.1: local sliding-window attention (4096 tokens) alternating with global
# attention every other layer; Gemma-2 9B config.json: 42 layers, 8 KV heads, head_dim 256 (8 KiB per token and
# layer in bf16). At 8192 tokens: 21 global layers keep 8192, 21 local layers 4096.
def test_gemma2_alternating_local_global():
    g = memory.model_preset("Gemma-2 9B")
    lay = memory.kv_layout(g)
    assert (lay.global_layers, lay.local_layers, lay.window) == (21, 21, 4096)
    assert memory.kv_cache_bytes(g, 8192) == 8192 * (21 * 8192 + 21 * 4096)
    assert memory.kv_cache_bytes(g, 2048) == kv(g) * 2048


# Gemma Team 2025, "Gemma 3 Technical Report", section 2: 5 local layers (span 1024) per global layer; Gemma-3 27B
# config.json: 62 layers, sliding_window 1024, sliding_window_pattern 6 (layers 6, 12, ..., 60 global: 10 of them),
# 16 KV heads of 128. At a 32k context the cache is 19% of a global-only one.
def test_gemma3_five_local_per_global():
    g = memory.model_preset("Gemma-3 27B")
    lay = memory.kv_layout(g)
    assert (lay.global_layers, lay.local_layers, lay.window) == (10, 52, 1024)
    ctx = 32768
    assert memory.kv_cache_bytes(g, ctx) == 8192 * (10 * ctx + 52 * 1024)
    assert memory.kv_cache_bytes(g, ctx) / (kv(g) * ctx) == pytest.approx(0.188, abs=0.001)


# vLLM docs, "Quantized KV Cache": an FP8 cache stores each value in one byte, half of bf16 ("reduces the memory
# footprint"): twice the tokens in the same memory.
def test_fp8_kv_halves_the_cache():
    m = memory.model_preset("Llama-3 70B")
    assert kv(m, "fp8") * 2 == kv(m) and kv(m, "int8") == kv(m, "fp8")
    assert memory.kv_cache_bytes(memory.model_preset("DeepSeek-V3"), 1, "fp8") == 61 * 576


# Kwon et al. 2023 (vLLM), section 4.2: with paged blocks "the memory waste ... only happens in the last block of a
# sequence"; section 6 / Figure 2: vLLM's waste is under 4% (16-token blocks, ShareGPT-like lengths of hundreds).
def test_paged_blocks_waste_only_the_last_block():
    m = memory.model_preset("Llama-3 8B")
    assert memory.kv_cache_bytes(m, 17, block_tokens=16) == kv(m) * 32
    assert memory.paged_waste_fraction(17, 16) == pytest.approx(15 / 32)
    mean_waste = sum(memory.paged_waste_fraction(c, 16) for c in range(200, 1000)) / 800
    assert mean_waste < 0.04
    # a windowed layer rounds up its own tokens
    mis = memory.model_preset("Mistral 7B")
    assert memory.kv_cache_bytes(mis, 5000, block_tokens=16) == kv(mis) * 4096


def test_serving_memory_and_fit_use_the_layout():
    v3 = memory.model_preset("DeepSeek-V3")
    est = memory.serving_memory(v3, 8, 4096, 80e9)
    assert est.kv_cache_bytes == 8 * 4096 * 70_272 and est.kv_bytes_per_token == 70_272
    g = memory.model_preset("Gemma-2 9B")
    # windows let more sequences fit than the per-token figure says
    n_full = memory.max_kv_tokens(g, 80e9) // 8192
    assert memory.max_sequences(g, 80e9, 8192) > n_full


# The expected number of distinct experts: each of B tokens picks k of E without replacement, an expert escapes one
# token with probability C(E-1, k) / C(E, k) = 1 - k/E (the occupancy problem; Feller, An Introduction to
# Probability Theory, vol. 1, II.11). Checked by enumerating every choice on small cases.
@pytest.mark.parametrize("e,k,b", [(4, 2, 1), (4, 2, 2), (4, 1, 3), (5, 2, 2), (6, 3, 2)])
def test_experts_touched_by_enumeration(e, k, b):
    choices = list(itertools.combinations(range(e), k))
    total = sum(len(set().union(*combo)) for combo in itertools.product(choices, repeat=b))
    assert memory.moe_experts_touched(e, k, b) == pytest.approx(total / len(choices) ** b)


# Jiang et al. 2024 (Mixtral), section 1: 13B active of 47B; a decode step at batch 1 reads about the active
# weights (plus the output projection), and at a large batch every expert: the total less the embedding table.
def test_moe_traffic_grows_from_active_to_total():
    mix = memory.model_preset("Mixtral 8x7B")
    one = memory.moe_decode_weight_bytes(mix, 1)
    assert one / 2 == pytest.approx(mix.n_active_params() - mix.params_breakdown()["embeddings"], rel=1e-9)
    many = memory.moe_decode_weight_bytes(mix, 1024)
    assert many / 2 == pytest.approx(mix.n_params() - mix.params_breakdown()["embeddings"], rel=1e-6)
    assert round((one / 2 + mix.vocab * mix.hidden) / 1e9) == 13  # the paper's 13B active
    assert memory.moe_experts_touched(8, 2, 8) == pytest.approx(8 * (1 - 0.75 ** 8))
    assert memory.moe_decode_weight_bytes(memory.model_preset("Llama-3 8B"), 64) == pytest.approx(
        2 * (8.03e9 - 128256 * 4096), rel=1e-3)


@pytest.mark.parametrize("call, name", [
    (lambda: memory.kv_cache_bytes(memory.model_preset("Llama-3 8B"), 0), "context"),
    (lambda: memory.kv_cache_bytes(memory.model_preset("Llama-3 8B"), 10, block_tokens=1.5), "block_tokens"),
    (lambda: memory.paged_waste_fraction(10, 0), "block_tokens"),
    (lambda: memory.moe_experts_touched(8, 9, 1), "experts_per_token"),
    (lambda: memory.moe_experts_touched(8, 2, 0), "batch"),
    (lambda: memory.model_kv_bytes_per_token(memory.model_preset("Llama-3 8B"), "int3"), "dtype"),
    (lambda: models.ModelConfig(name="x", n_layers=2, hidden=8, n_heads=2, n_kv_heads=1, head_dim=4, ffn_hidden=8,
                                vocab=8, sliding_window=-1), "sliding_window"),
])
def test_kv_bad_input(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_every_preset_has_a_finite_cache():
    for m in memory.model_presets().values():
        b = memory.kv_cache_bytes(m, 8192)
        assert 0 < b <= kv(m) * 8192 and math.isfinite(b)


# Properties of the layouts: over every preset, any context and block size.
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_PRESETS = sorted(memory.model_presets())


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(_PRESETS), st.integers(1, 200_000), st.integers(1, 10_000), st.sampled_from((0, 1, 16, 256)))
def test_cache_grows_with_context_and_never_exceeds_full_attention(name, ctx, more, block):
    m = memory.model_presets()[name]
    a = memory.kv_cache_bytes(m, ctx, block_tokens=block)
    b = memory.kv_cache_bytes(m, ctx + more, block_tokens=block)
    assert 0 < a <= b
    held = -(-ctx // block) * block if block else ctx
    assert a <= memory.model_kv_bytes_per_token(m) * held
    assert 0 <= memory.paged_waste_fraction(ctx, block or 16) < 1


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 512), st.data(), st.integers(1, 4096))
def test_experts_touched_between_k_and_e_and_growing(e, data, b):
    k = data.draw(st.integers(1, e))
    t1, t2 = memory.moe_experts_touched(e, k, b), memory.moe_experts_touched(e, k, b + 1)
    assert k - 1e-9 <= t1 <= t2 <= e + 1e-9
