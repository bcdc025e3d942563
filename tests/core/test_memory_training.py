"""Bytes per parameter, ZeRO sharding and activation memory against published numbers."""

import pytest

from mlcalc import memory


# ZeRO (Rajbhandari et al. 2020), section 3.1: mixed-precision Adam holds 2 + 2 + 12 = 16
# bytes per parameter. Bekman "The AI Battlefield": 8 (AdamW) + 4 (grads) + 4 + 2 (weights) = 18.
def test_zero_and_bekman_conventions():
    assert sum(memory.training_bytes_per_param("zero-mixed-adam").values()) == 16
    assert memory.CONVENTIONS["zero-mixed-adam"].by_category()["optimizer states"] == 12  # K = 12
    assert sum(memory.training_bytes_per_param("bekman").values()) == 18
    assert sum(memory.training_bytes_per_param("bekman").values()) == sum(memory.BEKMAN_TRAINING_BYTES.values())


# Lockwood's notes on the Frontier paper (Dash et al. 2023): 24 bytes per parameter stated,
# an itemization (2 + 4 + 4 + 4) that adds to only 14.
def test_frontier_stated_and_itemized():
    conv = memory.CONVENTIONS["frontier"]
    assert conv.total == 24
    assert conv.total - conv.by_category()["other"] == 14


# Lockwood's notes on DeepSpeed's introduction: a 40 GB GPU holds a 1.2B-parameter model,
# "around 32 bytes" per parameter once residual memory is counted.
def test_deepspeed_residual_is_about_40gb_for_1_2b():
    total = memory.CONVENTIONS["deepspeed-residual"].total
    assert total == 32
    assert 1.2e9 * total == pytest.approx(40e9, rel=0.05)


# Hugging Face Transformers docs, "Anatomy of Model's Memory": optimizer states take 8 bytes
# (AdamW), 2 bytes (8-bit AdamW), 4 bytes (SGD with momentum); weights 6 bytes in mixed
# precision; gradients 4 bytes.
@pytest.mark.parametrize("key, states", [("bekman", 8), ("adam-8bit", 2), ("sgd-momentum", 4)])
def test_hf_anatomy_optimizer_states(key, states):
    parts = memory.training_bytes_per_param(key)
    moments = sum(b for label, b in parts.items() if "master" not in label and "weights" not in label
                  and "gradients" not in label)
    assert moments == states
    assert parts["bf16 weights"] + parts["fp32 master weights"] == 6


# DeepSeek-V3 technical report, section 3.3.2: AdamW moments in BF16, master weights
# and gradients in FP32 -> 2 + 4 + 4 + 2 + 2 = 14 with a bf16 working copy.
def test_bf16_adam_states():
    assert memory.CONVENTIONS["bf16-adam-states"].total == 14


def test_unknown_convention():
    with pytest.raises(ValueError, match="convention"):
        memory.training_bytes_per_param("adam-4bit")


# ZeRO paper, Figure 1: 7.5B parameters, Nd = 64, K = 12: baseline 120 GB,
# P_os 31.4 GB, P_os+g 16.6 GB, P_os+g+p 1.9 GB (GB = 1e9 bytes).
@pytest.mark.parametrize("stage, gb", [(0, 120), (1, 31.4), (2, 16.6), (3, 1.9)])
def test_zero_figure_1(stage, gb):
    mem = memory.zero_model_state_bytes(7.5e9, 64, stage)
    assert round(mem.device_bytes / 1e9, 1) == gb
    assert mem.cpu_bytes == 0


def test_zero_offload_moves_states_to_cpu():
    on = memory.zero_model_state_bytes(7.5e9, 8, 2, offload_optimizer=True)
    off = memory.zero_model_state_bytes(7.5e9, 8, 2)
    assert on.device_bytes == pytest.approx(2 * 7.5e9)  # only the fp16 parameters stay
    assert on.device_bytes + on.cpu_bytes == pytest.approx(off.device_bytes)
    both = memory.zero_model_state_bytes(7.5e9, 8, 3, offload_optimizer=True, offload_params=True)
    assert both.device_bytes == 0 and both.cpu_bytes == pytest.approx(16 * 7.5e9 / 8)


@pytest.mark.parametrize(
    "kwargs, name",
    [({"stage": 4}, "stage"), ({"dp_degree": 0}, "dp_degree"), ({"n_params": -1}, "n_params"),
     ({"stage": 0, "offload_optimizer": True}, "offload_optimizer"),
     ({"stage": 2, "offload_params": True}, "offload_params")],
)
def test_zero_bad_input(kwargs, name):
    args = {"n_params": 1e9, "dp_degree": 8, "stage": 1}
    args.update(kwargs)
    with pytest.raises(ValueError, match=name):
        memory.zero_model_state_bytes(**args)


# DeepSpeed docs, "Memory Requirements", estimate_zero2_model_states_mem_needs_all_cold
# (total_params=2851e6, 8 GPUs, 1 node): per CPU 127.45GB; per GPU 5.31GB offloaded,
# 15.93GB not (GB there = 2**30 bytes).
def test_deepspeed_zero2_docs_example():
    off = memory.deepspeed_zero2_estimate(2851e6, 8, 1, offload_optimizer=True)
    on = memory.deepspeed_zero2_estimate(2851e6, 8, 1, offload_optimizer=False)
    assert round(off.cpu_bytes / 2**30, 2) == 127.45 and round(off.gpu_bytes / 2**30, 2) == 5.31
    assert round(on.cpu_bytes / 2**30, 2) == 127.45 and round(on.gpu_bytes / 2**30, 2) == 15.93


# Same page, estimate_zero3_model_states_mem_needs_all_cold(total_params=2851e6,
# largest_layer_params=32e6, 8 GPUs, 1 node).
@pytest.mark.parametrize(
    "opt, par, init, cpu_gb, gpu_gb",
    [(True, True, True, 71.69, 0.12), (True, True, False, 127.45, 0.12),
     (True, False, True, 63.72, 0.78), (True, False, False, 127.45, 0.78),
     (False, False, True, 1.43, 6.09), (False, False, False, 127.45, 6.09)],
)
def test_deepspeed_zero3_docs_example(opt, par, init, cpu_gb, gpu_gb):
    est = memory.deepspeed_zero3_estimate(2851e6, 32e6, 8, 1, offload_optimizer=opt, offload_params=par,
                                          zero_init=init)
    assert round(est.cpu_bytes / 2**30, 2) == cpu_gb
    assert round(est.gpu_bytes / 2**30, 2) == gpu_gb


# Korthikanti et al. 2022, Table 2, with GPT-3's shape (s = 2048, h = 12288, a = 96,
# t = 8; their Table 3) and b = 1. The 5as/h term is 80 for GPT-3.
S, B, H, A, T = 2048, 1, 12288, 96, 8
SBH = S * B * H


def test_korthikanti_5as_over_h_is_80_for_gpt3():
    attn = memory.activation_parts_per_layer(S, B, H, A)["attention scores (s^2)"]
    assert attn / SBH == pytest.approx(80)


@pytest.mark.parametrize(
    "kwargs, per_sbh",
    [
        ({}, 34 + 5 * A * S / H),  # no parallelism
        ({"tensor_parallel": T}, 10 + 24 / T + 5 * A * S / (H * T)),  # tensor parallel
        ({"tensor_parallel": T, "sequence_parallel": True}, 34 / T + 5 * A * S / (H * T)),
        ({"tensor_parallel": T, "recompute": "selective"}, 10 + 24 / T),
        ({"tensor_parallel": T, "sequence_parallel": True, "recompute": "selective"}, 34 / T),
        ({"recompute": "full"}, 2),
    ],
)
def test_korthikanti_table_2(kwargs, per_sbh):
    assert memory.activation_bytes_per_layer(S, B, H, A, **kwargs) == pytest.approx(SBH * per_sbh)


# Korthikanti et al. 2022, section 4.3: with TP + SP, selective recomputation cuts GPT-3's
# activation memory by 70% (34 of 34 + 80 bytes per sbh/t remain) and MT-NLG's by 65%
# (a = 128, h = 20480: 5as/h = 64).
@pytest.mark.parametrize("h, a, saving", [(12288, 96, 0.70), (20480, 128, 0.65)])
def test_selective_recompute_saving(h, a, saving):
    full = memory.activation_bytes_per_layer(S, 1, h, a, 8, True)
    sel = memory.activation_bytes_per_layer(S, 1, h, a, 8, True, "selective")
    assert 1 - sel / full == pytest.approx(saving, abs=0.005)


def test_flash_attention_removes_the_quadratic_term():
    base = memory.activation_parts_per_layer(S, B, H, A, flash_attention=True)
    assert "attention scores (s^2)" not in base
    # Only the fp32 log-sum-exp per row remains: 4 a s b bytes, tiny next to 34 sbh.
    assert base["softmax statistics (flash attention)"] == 4 * A * S * B
    assert memory.activation_bytes_per_layer(S, B, H, A, flash_attention=True) < 35 * SBH


@pytest.mark.parametrize(
    "kwargs, name",
    [({"seq_len": 0}, "seq_len"), ({"micro_batch": 1.5}, "micro_batch"), ({"tensor_parallel": 5}, "tensor_parallel"),
     ({"recompute": "some"}, "recompute"), ({"n_heads": -1}, "n_heads")],
)
def test_activation_bad_input(kwargs, name):
    args = {"seq_len": 2048, "micro_batch": 1, "hidden": 4096, "n_heads": 32}
    args.update(kwargs)
    with pytest.raises(ValueError, match=name):
        memory.activation_bytes_per_layer(**args)


# ---- pipeline schedules: what each rank keeps in flight -------------------------------------------------------

# Korthikanti et al. 2022, 4.2.3: with 1F1B the first stage keeps p micro-batches of L / p layers, L layers' worth
# whatever p is; the interleaved schedule keeps L (1 + (p - 1) / (p m)) layers' worth, m the virtual stages.
@pytest.mark.parametrize("L, p, v", [(32, 4, 2), (96, 12, 8), (128, 16, 8), (64, 8, 4)])
def test_interleaved_first_rank_holds_korthikanti_count(L, p, v):
    assert memory.pipeline_in_flight(L, p, "1f1b")[0] == L
    held = memory.pipeline_in_flight(L, p, "interleaved", v)
    assert held[0] == pytest.approx(L * (1 + (p - 1) / (p * v)))
    assert max(held) == held[0]  # the first rank is the fullest when the chunks are equal


# Narayanan et al. 2021, 2.2.1: PipeDream-Flush keeps at most p micro-batches in flight; with fewer micro-batches
# than stages, all of them; GPipe keeps every micro-batch of the step.
def test_one_f_one_b_and_gpipe_in_flight():
    assert memory.pipeline_in_flight(32, 4, "1f1b", n_micro=2) == (16, 16, 16, 8)
    assert memory.pipeline_in_flight(32, 4, "gpipe", n_micro=6) == (48, 48, 48, 48)
    with pytest.raises(ValueError, match="n_micro"):
        memory.pipeline_in_flight(32, 4, "gpipe")


# Dubey et al. 2024, 3.3.2: Llama 3 405B's 126 layers plus the embedding and the output layer in 128 chunks of
# one layer over 16 ranks (8 virtual stages); its first chunk holds only the embedding. With 32 micro-batches
# (8,192 GPUs, batch 32 per data-parallel rank) rank 0 runs 2 x 15 + 7 x 16 = 142 chunks before its first backward,
# 31 of them its empty first chunk; rank 1 runs 140, all of one layer. With 16 micro-batches (= pp, 16,384 GPUs)
# Megatron-LM runs every forward first: 128 chunks a rank.
def test_llama3_balanced_interleaved_in_flight():
    layers = memory.pipeline_stage_layers(126, 16, 8, balanced=True)
    assert layers[0] == 0 and layers[-1] == 0 and set(layers[1:-1]) == {1} and sum(layers) == 126
    assert memory.pipeline_in_flight(126, 16, "interleaved", 8, 32, True)[:2] == (143 - 31, 141)
    assert max(memory.pipeline_in_flight(126, 16, "interleaved", 8, 16, True)) == 128


# What a rank holds follows the micro-batch count only up to the schedule's steady state (Narayanan et al. 2021,
# 2.2.1: 1F1B holds min(p - r, m); 2.2.2 as Megatron-LM runs it: all forwards first when m = p): in_flight_micro_batches
# names the count with the same held activations (0: the steady state), which the planner's memory shortcut keys on.
# Every schedule, stage count, chunk count, layer count (even and uneven chunks, balanced or not) and micro-batch
# count of a grid: the same tuple as pipeline_in_flight with the count itself.
def test_in_flight_micro_batches_hold_what_the_count_itself_holds():
    checked = 0
    for p in (1, 2, 3, 4, 6, 8, 16):
        for L in (p * 4, p * 4 + 3, 126, 61):
            if L < p:
                continue
            for schedule, vs in (("1f1b", (1,)), ("interleaved", (1, 2, 4)), ("gpipe", (1,)), ("dualpipe", (1,))):
                if schedule == "dualpipe" and p % 2:
                    continue
                for v in vs:
                    if p * v > L and v > 1:
                        continue
                    for balanced in ((False, True) if L >= p * v + 2 else (False,)):
                        for m in sorted({1, 2, p - 1, p, p + 1, 2 * p, 3 * p, 4 * p, 5 * p, 9 * p + 1} - {0}):
                            same = memory.in_flight_micro_batches(p, schedule, v, m)
                            assert 0 <= same <= m
                            if same == 0 and schedule == "gpipe":
                                continue
                            assert memory.pipeline_in_flight(L, p, schedule, v, same, balanced) == \
                                memory.pipeline_in_flight(L, p, schedule, v, m, balanced), (p, L, schedule, v, m, balanced)
                            checked += 1
    assert checked > 1000
    # the steady state is reached: 1F1B from m = p; interleaved (v = 2, p = 4) from m v >= 2 p v + (v + 1) p - 1 = 27
    assert [memory.in_flight_micro_batches(4, "1f1b", 1, m) for m in (1, 3, 4, 64)] == [1, 3, 0, 0]
    assert [memory.in_flight_micro_batches(4, "interleaved", 2, m) for m in (4, 8, 12, 16, 64)] == [4, 8, 12, 0, 0]
    with pytest.raises(ValueError, match="schedule"):
        memory.in_flight_micro_batches(4, "zigzag", 1, 8)


# DeepSeek-AI 2024 (DeepSeek-V3), 3.2.1 and Table 2: DualPipe keeps PP + 1 micro-batches of a stage where 1F1B
# keeps PP ("only increasing the peak activation memory by 1/PP times") and two copies of the parameters.
def test_dualpipe_memory_is_deepseek_table_2():
    one_f_one_b = memory.pipeline_in_flight(64, 16, "1f1b")[0]
    assert memory.pipeline_in_flight(64, 16, "dualpipe")[0] == one_f_one_b * (1 + 1 / 16)
    m = memory.model_preset("Llama-2 7B")
    kw = dict(micro_batch=1, seq_len=4096, dp=8, pp=4, zero_stage=1, activations="architecture", program="megatron")
    single = memory.training_memory(m, 1e18, **kw).parts_bytes
    dual = memory.training_memory(m, 1e18, schedule="dualpipe", **kw).parts_bytes
    assert dual["parameters"] == pytest.approx(2 * single["parameters"])
    with pytest.raises(ValueError, match="even"):
        memory.pipeline_in_flight(64, 3, "dualpipe")


# ---- what Megatron-core keeps per layer ------------------------------------------------------------------------

# Megatron-LM, megatron/core/fusions/fused_bias_swiglu.py: SwiGLUFunction saves only its input (the gate and up
# outputs, 2f values) and recomputes the activation in the backward pass; the second projection keeps its input
# (f). A gated MLP keeps 6 f bytes a token in bf16, the unfused (Hugging Face) one 8 f: gate, up, silu(gate), product.
def test_fused_swiglu_keeps_six_f():
    m = memory.model_preset("Llama-3 405B")
    hf = memory.layer_activation_parts(m, "bf16-master", "flash", "none", 8192)
    mega = memory.layer_activation_parts(m, "bf16-master", "flash", "none", 8192, fused_swiglu=True)
    key = "MLP (gate, up, activation, product)"
    assert hf[key] == 8 * m.ffn_hidden and mega[key] == 6 * m.ffn_hidden
    # Korthikanti et al. 2022's sbh(34 / t) with t = 8 and sequence parallelism is for a 4h GELU MLP; Llama 3's
    # SwiGLU of 3.25 h with 8 KV heads keeps 31.75 h: norms' inputs and outputs 8h, Q 2h, K and V h/4, output 2h,
    # the MLP 6 x 3.25 h = 19.5 h (and the flash log-sum-exp)
    assert sum(mega.values()) == pytest.approx(31.75 * m.hidden + 4 * m.n_heads)


# Megatron-core's grouped experts (megatron/core/transformer/moe/experts.py, activation_func_with_probs) weight the
# activation's output by the router probability before the second projection, so the combine is a plain sum and
# no expert output is kept: each routed copy keeps its input (h), the first projection's output (2f) and the
# weighted activation (f). Top-k: k copies a token, not one per expert.
def test_megatron_routed_experts_keep_k_copies_of_input_and_mlp():
    m = memory.model_preset("DeepSeek-V3")
    h, f, k = m.hidden, m.expert_ffn, m.experts_per_token
    mega = memory.layer_activation_parts(m, "bf16-master", "flash", "none", 4096, experts_in_fp32=False,
                                         fused_swiglu=True)
    assert mega["routed experts"] == k * 2 * (h + 3 * f)
    # FP8 (DeepSeek-AI 2024, 3.3.1 and 3.3.3): the dispatched input, the SwiGLU's input and the second projection's
    # input in FP8, one byte a value
    fp8 = memory.layer_activation_parts(m, "bf16-master", "flash", "none", 4096, experts_in_fp32=False,
                                        fused_swiglu=True, fp8_linear_inputs=True)
    assert fp8["routed experts"] == k * (h + 3 * f)


# DeepSeek-AI 2024 (DeepSeek-V3), 3.2.3: "We recompute all RMSNorm operations and MLA up-projections during
# back-propagation": a layer keeps each norm's input, the compressed latents (1536 + 512, and the 64-wide rotary
# key), the attention output (128 heads x 128) and the log-sum-exp; not the 128 heads' Q, K and V.
def test_mla_selective_recomputation_keeps_the_latents():
    m = memory.model_preset("DeepSeek-V3")
    parts = memory.layer_activation_parts(m, "bf16-master", "flash", "selective", 4096)
    assert parts["attention (latents, output, log-sum-exp)"] == 2 * (1536 + 512 + 64) + 2 * 128 * 128 + 4 * 128
    assert parts["norms"] == 2 * 2 * m.hidden
    none = memory.layer_activation_parts(m, "bf16-master", "flash", "none", 4096)
    assert none["attention (Q, K, V, output, log-sum-exp)"] > 4 * parts["attention (latents, output, log-sum-exp)"]


# Megatron-core shards a routed expert's optimizer states over the ranks that hold the same expert, its expert
# data-parallel group of dp / ep ranks (DeepSeek-V3: EP 64 of 128 data-parallel ranks, 2 copies of each expert a
# stage), not over all dp ranks. With one layer a stage, the fullest rank holds one of the 58 MoE layers (the first
# three are dense, DeepSeek-AI 2024, 4.2): its routed experts are 1 / 58 of them, not 1 / 61.
def test_expert_states_shard_over_the_expert_data_parallel_group():
    m = memory.model_preset("DeepSeek-V3")
    fit = memory.training_memory(m, 1e18, 1, 4096, dp=128, pp=61, zero_stage=1, activations="architecture",
                                 program="megatron", ep=64)
    routed = m.n_moe_layers * m.n_experts * m.mlp_params_per_expert()
    dense = m.n_params() - routed
    k = 12.0  # fp32 master weights and AdamW moments (Rajbhandari et al. 2020)
    assert m.n_moe_layers == 58
    assert fit.parts_bytes["optimizer states"] == pytest.approx(k * (dense / 61 / 128 + routed / 64 / 58 / 2))
    with pytest.raises(ValueError, match="ep"):
        memory.training_memory(m, 1e18, dp=96, ep=64, activations="architecture")
