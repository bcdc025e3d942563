"""mlcalc.finetune: LoRA and QLoRA memory against runs measured on an H100 and published figures."""

from __future__ import annotations

import pytest

from mlcalc import finetune, memory, models


def _llama65b() -> models.ModelConfig:
    # LLaMA 65B (Touvron et al. 2023, Table 2): width 8192, 64 heads (no GQA), 80 layers, MLP 22016, vocab 32000
    return models.preset("Llama-2 70B").replace(name="LLaMA 65B", n_kv_heads=64, ffn_hidden=22016,
                                                published_params=0.0)


@pytest.mark.parametrize("case", finetune.measured(), ids=lambda c: (
    f"{c['model']['name']}-r{c['rank']}-{len(c['targets'])}t-{'rc' if c['recompute'] else 'norc'}"))
def test_lora_peak_within_10_percent_of_the_h100_runs(case):
    # Measured in this book: mlcalc/data/measured/h100-2026-11-26-finetune-lora (1 x H100 80GB HBM3,
    # transformers 5.17, peft 0.21; random-weight Llama-3.1 8B and Llama-3.2 1B shapes, bf16 base, peft's fp32
    # adapters, AdamW): torch.cuda.max_memory_allocated over 5 steps.
    m = models.from_dict(case["model"])
    p = finetune.finetune_memory(m, "lora", case["rank"], case["targets"], case["batch"], case["seq_len"],
                                 case["recompute"])
    assert p.trainable_params == case["n_trainable"]  # the parameter count is exact
    assert p.total_bytes == pytest.approx(case["peak_bytes"], rel=0.10)
    assert p.static_bytes == pytest.approx(case["static_bytes"], rel=0.10)


def test_qlora_65b_fits_48_gb():
    # Dettmers et al. 2023, "QLoRA" (abstract): QLoRA "reduces the average memory requirements of finetuning a
    # 65B parameter model from >780GB of GPU memory to <48GB"; their recipe: NF4 with double quantization, LoRA
    # r = 64 on every linear layer, bf16 adapters, gradient checkpointing.
    m = _llama65b()
    assert m.n_params() == pytest.approx(65.2e9, rel=0.01)
    q = finetune.finetune_memory(m, "qlora", 64, finetune.MODULES, 1, 512, True, adapter_dtype="bf16")
    assert q.total_bytes < 48e9
    assert finetune.finetune_memory(m, "full", batch=1, seq_len=512).total_bytes > 780e9
    # 4.127 bits per weight: NF4 plus double-quantized constants (section 3)
    assert finetune.NF4_DQ_BITS == pytest.approx(4.127, abs=0.001)


def test_lora_gpt3_checkpoint_size():
    # Hu et al. 2021, "LoRA", section 4.2: GPT-3 175B with r = 4 on the query and value projections: the
    # checkpoint shrinks "from 350GB to 35MB" (fp16, 2 bytes per value; "roughly 10,000x").
    m = models.preset("GPT-3 175B")
    n = finetune.lora_params(m, 4, ("q_proj", "v_proj"))
    assert 2 * n == pytest.approx(35e6, rel=0.10)
    assert 2 * m.n_params() == pytest.approx(350e9, rel=0.01)


def test_full_is_the_training_peak_and_flops():
    m = models.preset("Llama-3.2 1B")
    f = finetune.finetune_memory(m, "full", batch=2, seq_len=1024)
    assert f.total_bytes == memory.training_peak(m, 2, 1024, "none", "fp32-autocast").total_bytes
    n = m.n_params()
    assert finetune.finetune_flops_per_token(m, "full") == 6 * n
    assert finetune.finetune_flops_per_token(m, "lora") == 4 * n
    assert finetune.finetune_flops_per_token(m, "qlora", recompute=True) == 6 * n
    assert finetune.finetune_step_s(m, 1000, 4 * n * 1000) == pytest.approx(1.0)


def test_qlora_saves_the_projections():
    m = models.preset("Llama-3.1 8B")
    lo = finetune.finetune_memory(m, "lora", 16, finetune.MODULES, 1, 2048, True)
    q = finetune.finetune_memory(m, "qlora", 16, finetune.MODULES, 1, 2048, True)
    proj = m.n_layers * sum(i * o for i, o in finetune.module_shapes(m).values())
    assert lo.total_bytes - q.total_bytes == pytest.approx(proj * (2 - finetune.NF4_DQ_BITS / 8))


@pytest.mark.parametrize("call, match", [
    (lambda: finetune.lora_params(models.preset("Llama-3.1 8B"), 0, ("q_proj",)), "rank"),
    (lambda: finetune.lora_params(models.preset("Llama-3.1 8B"), 8, ("wq",)), "targets"),
    (lambda: finetune.lora_params(models.preset("Llama-3.1 8B"), 8, ()), "targets"),
    (lambda: finetune.lora_params(models.preset("Mixtral 8x7B"), 8, ("q_proj",)), "model"),
    (lambda: finetune.finetune_memory(models.preset("GPT-3 175B"), "lora", 4, ("q_proj",)), "model"),
    (lambda: finetune.finetune_memory(models.preset("Llama-3.1 8B"), "dora"), "method"),
    (lambda: finetune.finetune_memory(models.preset("Llama-3.1 8B"), batch=0), "batch"),
    (lambda: finetune.finetune_memory(models.preset("Llama-3.1 8B"), adapter_dtype="fp8"), "adapter_dtype"),
])
def test_bad_input_names_the_parameter(call, match):
    with pytest.raises(ValueError, match=match):
        call()
