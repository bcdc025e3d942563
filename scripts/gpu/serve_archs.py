"""Architectures for the serving measurements: Hugging Face ``transformers`` configs with random weights.

Each entry: the class, the config (a published model's shape, some cut to fewer layers so that the
measurement fits one GPU and the time of the call; a layer is a layer, so per-layer costs carry over),
and the tiny variant of the same class used for the launch-floor probe (width 64, 2 and 8 layers).
"""

from __future__ import annotations

import torch

ARCHS = {
    # Llama 3 8B (Dubey et al. 2024, Table 3): dense, GQA (32 query heads, 8 KV heads), head_dim 128
    "llama8b": dict(cls="LlamaForCausalLM", cfg="LlamaConfig", source="Llama 3 8B shape (Dubey et al. 2024, Table 3)",
                    kw=dict(hidden_size=4096, intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32,
                            num_key_value_heads=8, head_dim=128, vocab_size=128256, tie_word_embeddings=False,
                            rope_theta=500000.0, max_position_embeddings=16384)),
    # Llama 2 7B (Touvron et al. 2023): multi-head attention (a KV head per query head)
    "mha7b": dict(cls="LlamaForCausalLM", cfg="LlamaConfig", source="Llama 2 7B shape (Touvron et al. 2023)",
                  kw=dict(hidden_size=4096, intermediate_size=11008, num_hidden_layers=32, num_attention_heads=32,
                          num_key_value_heads=32, head_dim=128, vocab_size=32000, tie_word_embeddings=False,
                          max_position_embeddings=16384)),
    # Gemma 3 4B's text decoder (its config.json): head_dim 256, 5 sliding-window (1024) layers per global one
    "gemma3_4b": dict(cls="Gemma3ForCausalLM", cfg="Gemma3TextConfig", source="Gemma 3 4B text decoder shape (Gemma Team 2025)",
                      kw=dict(hidden_size=2560, intermediate_size=10240, num_hidden_layers=34, num_attention_heads=8,
                              num_key_value_heads=4, head_dim=256, vocab_size=262208, sliding_window=1024,
                              layer_types=[("full_attention" if (i + 1) % 6 == 0 else "sliding_attention")
                                           for i in range(34)],
                              query_pre_attn_scalar=256, tie_word_embeddings=True, max_position_embeddings=16384)),
    # Mixtral 8x7B (Jiang et al. 2024) with 8 of its 32 layers: 8 experts, 2 active per token
    "mixtral_8l": dict(cls="MixtralForCausalLM", cfg="MixtralConfig", source="Mixtral 8x7B shape, 8 of 32 layers (Jiang et al. 2024)",
                       kw=dict(hidden_size=4096, intermediate_size=14336, num_hidden_layers=8, num_attention_heads=32,
                               num_key_value_heads=8, head_dim=128, vocab_size=32000, num_local_experts=8,
                               num_experts_per_tok=2, tie_word_embeddings=False, max_position_embeddings=16384,
                               sliding_window=None)),
    # DeepSeek-V2-Lite (DeepSeek-AI 2024, its config.json) with 8 of its 27 layers: MLA (kv_lora_rank 512,
    # rope part 64), 64 routed experts (6 active) + 2 shared, the first layer dense
    "dsv2lite_8l": dict(cls="DeepseekV2ForCausalLM", cfg="DeepseekV2Config",
                        source="DeepSeek-V2-Lite shape, 8 of 27 layers (DeepSeek-AI 2024)",
                        kw=dict(hidden_size=2048, intermediate_size=10944, moe_intermediate_size=1408,
                                num_hidden_layers=8, num_attention_heads=16, num_key_value_heads=16,
                                n_shared_experts=2, n_routed_experts=64, num_experts_per_tok=6, kv_lora_rank=512,
                                q_lora_rank=None, qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128,
                                first_k_dense_replace=1, vocab_size=102400, topk_method="greedy",
                                norm_topk_prob=False, routed_scaling_factor=1.0, head_dim=64,
                                tie_word_embeddings=False, max_position_embeddings=16384)),
}

# What each shape keeps when shrunk for a CPU test or for the floor probe (same class, tiny width).
TINY = {
    "llama8b": dict(hidden_size=64, intermediate_size=128, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                    vocab_size=256),
    "mha7b": dict(hidden_size=64, intermediate_size=128, num_attention_heads=4, num_key_value_heads=4, head_dim=16,
                  vocab_size=256),
    "gemma3_4b": dict(hidden_size=64, intermediate_size=128, num_attention_heads=4, num_key_value_heads=2, head_dim=32,
                      vocab_size=256, sliding_window=128, query_pre_attn_scalar=32),  # window > the probe's 64
    "mixtral_8l": dict(hidden_size=64, intermediate_size=128, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                       vocab_size=256),
    "dsv2lite_8l": dict(hidden_size=64, intermediate_size=128, moe_intermediate_size=32, num_attention_heads=4,
                        num_key_value_heads=4, kv_lora_rank=16, qk_nope_head_dim=16, qk_rope_head_dim=8,
                        v_head_dim=16, head_dim=8, vocab_size=256),
}


def config(arch: str, tiny_layers: int | None = None):
    import transformers
    a = ARCHS[arch]
    kw = dict(a["kw"])
    if tiny_layers is not None:
        kw.update(TINY[arch])
        kw["num_hidden_layers"] = tiny_layers
        if "layer_types" in kw:
            kw["layer_types"] = [("full_attention" if (i + 1) % 6 == 0 else "sliding_attention") for i in range(tiny_layers)]
    cfg = getattr(transformers, a["cfg"])(**kw)
    return cfg


def build(arch: str, dev: torch.device, tiny_layers: int | None = None, attn: str = "sdpa"):
    import transformers
    cfg = config(arch, tiny_layers)
    cfg._attn_implementation = attn
    torch.manual_seed(0)
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.bfloat16)
    try:
        with dev:
            model = getattr(transformers, ARCHS[arch]["cls"])(cfg)
    finally:
        torch.set_default_dtype(old)
    model.eval()
    return model
