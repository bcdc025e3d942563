"""Serving (weights + KV cache), mixture of experts, the whole training picture, the CPU side."""

import pytest

from mlcalc import memory, spec


# Kwon et al. 2023 (vLLM, PagedAttention), section 3: for OPT-13B "the KV cache of a
# single token demands 800 KB of space, calculated as 2 (key and value vectors) x 5120
# (hidden state size) x 40 (number of layers) x 2 (bytes per FP16)", and a 2048-token
# request "can be as much as 1.6 GB" (KB = 1024 bytes, GB = 2**30 bytes there).
def test_vllm_opt13b_kv_cache():
    per_token = memory.kv_cache_bytes_per_token(n_layers=40, n_kv_heads=40, head_dim=128, bytes_per_value=2)
    assert per_token == 800 * 1024
    assert per_token * 2048 / 2**30 == pytest.approx(1.6, abs=0.05)


# Same paper, section 1 / Figure 1: serving a 13B model on an A100 40GB, the weights take
# about 65% of the memory (13e9 x 2 bytes / 40 GB).
def test_vllm_13b_weights_take_65_percent_of_a100_40gb():
    opt13b = memory.ModelConfig(name="OPT-13B-like", n_layers=40, hidden=5120, n_heads=40, n_kv_heads=40,
                                head_dim=128, ffn_hidden=20480, vocab=50272, gated_mlp=False, biases=True,
                                norm="layernorm", learned_positions=2048, tied_embeddings=True)
    est = memory.serving_memory(opt13b, batch=1, context_len=1, device_bytes=40e9)
    assert est.weights_bytes / 40e9 == pytest.approx(0.65, abs=0.01)


# Touvron et al. 2023 (Llama 2), section 2.2: the 70B model uses grouped-query attention
# with 8 KV heads for its 64 query heads, an 8x smaller KV cache than multi-head attention.
def test_gqa_shrinks_the_kv_cache():
    cfg = memory.model_preset("Llama-2 70B")
    gqa = memory.kv_cache_bytes_per_token(cfg.n_layers, cfg.n_kv_heads, cfg.head_dim)
    mha = memory.kv_cache_bytes_per_token(cfg.n_layers, cfg.n_heads, cfg.head_dim)
    assert mha / gqa == 8
    assert gqa == 2 * 80 * 8 * 128 * 2  # 320 KiB per token in bf16


def test_weights_scale_with_dtype_and_devices_round_up():
    cfg = memory.model_preset("Llama-3 70B")
    bf16 = memory.serving_memory(cfg, 1, 1, 80e9, weight_dtype="bf16")
    int4 = memory.serving_memory(cfg, 1, 1, 80e9, weight_dtype="int4")
    assert bf16.weights_bytes == 4 * int4.weights_bytes
    assert bf16.n_devices == 2  # 141 GB of weights / 72 GB usable
    assert int4.n_devices == 1


def test_max_kv_tokens_is_what_fits_beside_the_weights():
    cfg = memory.model_preset("Llama-3 8B")
    dev = spec("H100-SXM").memory_bytes
    tokens = memory.max_kv_tokens(cfg, dev)
    per_token = memory.kv_cache_bytes_per_token(cfg.n_layers, cfg.n_kv_heads, cfg.head_dim)
    free = dev * memory.VLLM_MEMORY_UTILIZATION - cfg.n_params() * 2
    assert tokens == int(free // per_token)
    # A batch of exactly that many tokens fits on one device, one more token does not.
    assert memory.serving_memory(cfg, tokens, 1, dev).n_devices == 1
    assert memory.serving_memory(cfg, tokens + 1, 1, dev).n_devices == 2
    assert memory.max_kv_tokens(memory.model_preset("Llama-3 405B"), dev) == 0


@pytest.mark.parametrize(
    "kwargs, name",
    [({"batch": 0}, "batch"), ({"context_len": -1}, "context_len"), ({"device_bytes": 0}, "device_bytes"),
     ({"weight_dtype": "int3"}, "dtype"), ({"usable_fraction": 1.5}, "usable_fraction")],
)
def test_serving_bad_input(kwargs, name):
    args = {"model": memory.model_preset("Llama-3 8B"), "batch": 1, "context_len": 1024, "device_bytes": 80e9}
    args.update(kwargs)
    with pytest.raises(ValueError, match=name):
        memory.serving_memory(**args)


# Jiang et al. 2024 (Mixtral), section 1: "each token has access to 47B parameters, but
# only uses 13B active parameters during inference".
def test_moe_memory_follows_total_compute_follows_active():
    moe = memory.moe_summary(memory.model_preset("Mixtral 8x7B"))
    assert round(moe.total_params / 1e9) == 47 and round(moe.active_params / 1e9) == 13
    assert moe.weights_bytes == 2 * moe.total_params
    assert moe.forward_flops_per_token == 2 * moe.active_params  # Kaplan et al. 2020: C_forward ~ 2N


# Ren et al. 2021 (ZeRO-Offload), abstract: trains models of over 13 billion parameters on a
# single GPU (a 32 GB V100): with the optimizer offloaded, the GPU keeps only the 2-byte weights.
def test_zero_offload_13b_on_one_32gb_gpu():
    mem = memory.zero_model_state_bytes(13e9, 1, 2, offload_optimizer=True)
    assert mem.device_bytes == pytest.approx(26e9)
    assert mem.device_bytes < 32e9 < memory.zero_model_state_bytes(13e9, 1, 2).device_bytes


def test_training_memory_reproduces_zero_and_korthikanti_parts():
    cfg = memory.model_preset("GPT-3 175B")
    fit = memory.training_memory(cfg, 80e9, micro_batch=1, seq_len=2048, dp=64, tp=8, pp=8, zero_stage=1,
                                 recompute="none", flash_attention=False)
    states = memory.zero_model_state_bytes(cfg.n_params() / 64, 64, 1)
    assert fit.parts_bytes["optimizer states"] == pytest.approx(states.device_parts["optimizer states"])
    # Korthikanti et al. 2022, section 4.2.3: the first 1F1B stage holds L layers' activations for any p.
    per_layer = memory.activation_bytes_per_layer(2048, 1, 12288, 96, 8, True)
    assert fit.parts_bytes["activations"] == pytest.approx(96 * per_layer)
    assert fit.total_bytes == pytest.approx(sum(fit.parts_bytes.values()))
    assert fit.fits == (fit.total_bytes <= 80e9)


def test_fewest_devices_is_minimal():
    cfg = memory.model_preset("Llama-2 13B")
    dev = spec("A100-80GB").memory_bytes
    best = memory.fewest_devices(cfg, dev, micro_batch=1, seq_len=4096, zero_stage=3)
    assert best is not None and best.fits
    for t in (1, 2, 4, 8):
        for p in (1, 2, 4, 5, 8, 10, 20, 40):
            for d in (1, 2, 4, 8, 16):
                if t * p * d < best.n_devices:
                    assert not memory.training_memory(cfg, dev, 1, 4096, d, t, p, 3).fits


def test_fit_grid_shrinks_with_stage_and_grows_with_batch():
    cfg = memory.model_preset("Llama-3 8B")
    grid = memory.training_fit_grid(cfg, 80e9, zero_stages=(0, 3), micro_batches=(1, 4), dp=8, seq_len=4096)
    assert grid[1][0] < grid[0][0] and grid[0][1] > grid[0][0]


@pytest.mark.parametrize(
    "kwargs, name",
    [({"pp": 3}, "pp"), ({"tp": 0}, "tp"), ({"overhead_fraction": 1.0}, "overhead_fraction"),
     ({"zero_stage": 5}, "stage"), ({"tp": 3}, "tensor_parallel")],
)
def test_training_bad_input(kwargs, name):
    with pytest.raises(ValueError, match=name):
        memory.training_memory(memory.model_preset("Llama-3 8B"), 80e9, **kwargs)


# Bekman, "The AI Battlefield", CPU memory and CPU: "2-3 possibly DL workers per Accelerator
# (so 16-24 processes with 8 accelerators per node)" and "enough cores to run 2-3 DL
# workers +1 per gpu - so at least 30 cores".
def test_bekman_dataloader_workers_and_cores():
    assert memory.cpu_needs(8, 2).dataloader_workers == 16
    three = memory.cpu_needs(8, 3)
    assert three.dataloader_workers == 24
    assert three.cores == 32 and three.cores >= 30


# DeepSpeed docs, "Memory Requirements": loading t5-3b (2851M params) on 8 GPUs needs
# params x 4 x n_gpus x 1.5 = 127.45GB of general RAM (GB = 2**30 bytes there).
def test_deepspeed_ram_to_load_the_model():
    needs = memory.cpu_needs(8, 2, n_params=2851e6)
    assert round(needs.ram_parts_bytes["loading the model (all processes)"] / 2**30, 2) == 127.45
    assert needs.ram_bytes == needs.ram_parts_bytes["loading the model (all processes)"]


@pytest.mark.parametrize(
    "kwargs, name",
    [({"accelerators_per_node": 0}, "accelerators_per_node"), ({"workers_per_accelerator": 2.5},
     "workers_per_accelerator"), ({"n_params": -1}, "n_params"), ({"buffer_factor": 0.5}, "buffer_factor")],
)
def test_cpu_bad_input(kwargs, name):
    with pytest.raises(ValueError, match=name):
        memory.cpu_needs(**kwargs)
