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
