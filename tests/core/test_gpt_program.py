"""Predictions for the book's GPT training program (mlcalc.gpt_program): pure, no torch."""

from __future__ import annotations

import pytest

from mlcalc import gpt_program as predict
from mlcalc import memory
from mlcalc.bench.attention import attention_flop
from mlcalc.gpt_program import PRESETS, gpt2, preset


@pytest.mark.parametrize("name,millions", [("gpt2-124M", 124), ("gpt2-350M", 355), ("gpt2-774M", 774)])
def test_gpt2_parameter_counts(name, millions):
    # Hugging Face model cards of openai-community/gpt2, gpt2-medium, gpt2-large: 124M, 355M, 774M
    # parameters (GPT-2's 50,257-token vocabulary, 1,024 positions, tied output layer).
    cfg = preset(name).replace(vocab=50257, learned_positions=1024)
    assert round(cfg.n_params() / 1e6) == millions


def test_gpt2_xl_parameter_count():
    # Hugging Face model card of openai-community/gpt2-xl: "1.5B parameters".
    cfg = preset("gpt2-1.5B").replace(vocab=50257, learned_positions=1024)
    assert cfg.n_params() / 1e9 == pytest.approx(1.5, abs=0.06)


def test_program_presets_are_the_models_presets_with_the_padded_vocabulary():
    from mlcalc import models

    for key, name in (("gpt2-124M", "GPT-2 124M"), ("gpt2-1.5B", "GPT-2 1.5B")):
        assert PRESETS[key].replace(vocab=50257).n_params() == models.preset(name).n_params()


def test_gpt_config_bad_input():
    with pytest.raises(ValueError, match="n_head=7"):
        gpt2(n_layer=2, n_head=7, d_model=64)
    with pytest.raises(ValueError, match="model='gpt5'"):
        preset("gpt5")
    with pytest.raises(ValueError, match="seq_len=0"):
        predict.program_memory(preset("gpt2-124M"), 1, 0, False)
    with pytest.raises(ValueError, match="GPT-2's layout"):
        predict.program_memory(__import__("mlcalc.models").models.preset("Llama-3 8B"), 1, 16, False)


def test_layer_saved_bytes_against_korthikanti():
    # Korthikanti et al. 2022, section 4.1: a layer keeps 34 s b h bytes besides the attention
    # scores; 2 of them are the two 1-byte dropout masks (this program has no dropout), and the two
    # LayerNorm inputs count 2 bytes each there but 4 here (fp32 residual stream under autocast).
    assert sum(predict.LAYER_SAVED.values()) == 34 - 2 + 2 * 2


def test_textbook_memory_is_the_memory_chapters_formula():
    cfg, b, s = preset("gpt2-350M"), 8, 1024
    got = predict.textbook_memory(cfg, b, s, recompute=False)
    # 16 bytes/parameter + 34 s b h per layer (flash attention: + 4 a s b of softmax statistics)
    # + 4 s b V fp32 logits: Korthikanti et al. 2022 Table 2 with the memory chapter's conventions.
    per_layer = memory.activation_bytes_per_layer(s, b, cfg.hidden, cfg.n_heads, flash_attention=True)
    assert per_layer == pytest.approx(34 * s * b * cfg.hidden + 4 * cfg.n_heads * s * b)
    want = 16 * cfg.replace(learned_positions=s).n_params() + cfg.n_layers * per_layer + 4 * s * b * cfg.vocab
    assert got.total == pytest.approx(want)
    full = predict.textbook_memory(cfg, b, s, recompute=True)
    assert full.total == pytest.approx(16 * cfg.replace(learned_positions=s).n_params()
                                       + cfg.n_layers * 2 * s * b * cfg.hidden + 4 * s * b * cfg.vocab)


def test_program_memory_parts_and_phase():
    cfg = preset("gpt2-124M")
    p = predict.program_memory(cfg, 8, 1024, recompute=False)
    assert p.total == pytest.approx(sum(p.parts.values()))
    assert p.note.startswith("peak at the loss")
    # A big model with a short batch and recomputation peaks at the end of backward: 16 B/param.
    q = predict.program_memory(preset("gpt2-1.5B"), 1, 256, recompute=True)
    assert q.note.startswith("peak at the end of backward")
    assert q.total > 16 * preset("gpt2-1.5B").replace(learned_positions=256).n_params()


def test_step_gemms_count_six_flop_per_parameter_and_token():
    # Kaplan et al. 2020: a training step costs 6 N per token for the N weights the matmuls read
    # (2 forward, 4 backward); here N = the blocks' matrices plus the tied output layer.
    cfg, b, s = preset("gpt2-774M"), 4, 512
    flop = sum(g.flop for g in predict.step_gemms(cfg, b, s, recompute=False))
    n = cfg.n_matrix_params() + cfg.vocab * cfg.hidden
    assert flop == pytest.approx(6 * n * b * s)
    # Full recomputation adds one forward of the blocks: 8 N per token for them (Narayanan et al. 2021).
    flop_rc = sum(g.flop for g in predict.step_gemms(cfg, b, s, recompute=True))
    assert flop_rc - flop == pytest.approx(2 * cfg.n_matrix_params() * b * s)


def test_attention_flop_backward_is_two_and_a_half_forwards():
    # Dao 2023 (FlashAttention-2), section 4.1: the backward pass does 2.5 times the forward's FLOPs.
    fwd = attention_flop(2, 4, 128, 64, backward=False)
    assert attention_flop(2, 4, 128, 64, backward=True) == pytest.approx(3.5 * fwd)
    # Causal forward = half of 4 b s^2 h (two products over the full score matrix).
    assert fwd == pytest.approx(0.5 * 4 * 2 * 128**2 * (4 * 64))
    cfg = preset("gpt2-124M")
    assert predict.attention_flop(cfg, 2, 128, False) == pytest.approx(
        cfg.n_layers * attention_flop(2, cfg.n_heads, 128, cfg.hidden // cfg.n_heads, True))


def test_program_step_time_sums_its_parts_and_checks_input():
    cfg = preset("gpt2-124M")
    t = predict.program_step_time(cfg, 8, 1024, False, 700e12, 3e12)
    assert t.total == pytest.approx(sum(t.parts.values()))
    # Doubling every rate halves the time.
    t2 = predict.program_step_time(cfg, 8, 1024, False, 1400e12, 6e12)
    assert t2.total == pytest.approx(t.total / 2)
    with pytest.raises(ValueError, match="memory_bytes_per_s=0"):
        predict.program_step_time(cfg, 8, 1024, False, 700e12, 0)
    with pytest.raises(ValueError, match="matmul_flops_per_s=-1"):
        predict.program_step_time(cfg, 8, 1024, False, -1, 3e12)
    with pytest.raises(ValueError, match="batch=0"):
        predict.program_memory(cfg, 0, 1024, False)
