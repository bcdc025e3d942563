"""Model presets: parameter counts from the architecture against the published counts."""

import pytest

from mlcalc import memory


def test_presets_cover_the_required_models():
    names = set(memory.model_presets())
    for name in ("GPT-3 175B", "Llama-2 7B", "Llama-2 13B", "Llama-2 70B", "Llama-3 8B", "Llama-3 70B",
                 "Llama-3 405B", "Mixtral 8x7B"):
        assert name in names
    for cfg in memory.model_presets().values():
        assert cfg.source.startswith(("Brown", "Touvron", "Llama Team", "Jiang")) and "http" in cfg.source


# Brown et al. 2020, Table 2.1: GPT-3 175B has n_params = 175.0B (stated to 0.1B).
def test_gpt3_count_matches_table_2_1():
    cfg = memory.model_preset("GPT-3 175B")
    assert cfg.n_params() == pytest.approx(175.0e9, rel=0.005)


# Narayanan et al. 2021 (Megatron-LM at scale), section 5.1: a GPT model has
# P = 12 l h^2 (1 + 13/(12h) + (V + s)/(12 l h)) parameters. Our count adds only
# the final LayerNorm (2h), which that formula leaves out.
def test_gpt3_count_matches_narayanan_formula_exactly():
    cfg = memory.model_preset("GPT-3 175B")
    l, h, v, s = cfg.n_layers, cfg.hidden, cfg.vocab, cfg.learned_positions
    formula = 12 * l * h**2 * (1 + 13 / (12 * h) + (v + s) / (12 * l * h))
    assert cfg.n_params() - 2 * h == pytest.approx(formula, rel=1e-12)


# Published counts of Llama and Mixtral are model names rounded to a whole (or, for
# Mixtral, a few) billion: Touvron et al. 2023 Table 1 (7B, 13B, 70B); Llama Team
# 2024 Table 3 (8B, 70B, 405B); Jiang et al. 2024 section 1 (47B total, 13B active).
# The count from the architecture must round to the name within 4% (the loosest,
# Llama-2 7B, counts 6.74B: the "7B" name rounds up).
@pytest.mark.parametrize("name", ["Llama-2 7B", "Llama-2 13B", "Llama-2 70B", "Llama-3 8B", "Llama-3 70B",
                                  "Llama-3 405B", "Mixtral 8x7B"])
def test_counts_match_published_names(name):
    cfg = memory.model_preset(name)
    assert cfg.n_params() == pytest.approx(cfg.published_params, rel=0.04)


# The released Llama-2-7b-hf weights: the Hugging Face Hub lists "Model size 6.74B
# params" (counted from the safetensors files); our count from the config must agree
# to the stated precision.
def test_llama2_7b_matches_the_released_weights():
    assert round(memory.model_preset("Llama-2 7B").n_params() / 1e9, 2) == 6.74


# Jiang et al. 2024 (Mixtral of Experts), section 1: 47B parameters in total,
# 13B active per token (top-2 of 8 experts).
def test_mixtral_total_and_active():
    cfg = memory.model_preset("Mixtral 8x7B")
    assert round(cfg.n_params() / 1e9) == 47
    assert round(cfg.n_active_params() / 1e9) == 13
    assert cfg.n_active_params() == pytest.approx(cfg.published_active_params, rel=0.04)


def test_dense_model_is_all_active_and_parts_add_up():
    cfg = memory.model_preset("Llama-3 8B")
    assert cfg.n_active_params() == cfg.n_params()
    assert sum(cfg.params_breakdown().values()) == cfg.n_params()


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"n_layers": 0}, "n_layers"),
        ({"hidden": 1.5}, "hidden"),
        ({"n_kv_heads": 3}, "n_kv_heads"),
        ({"experts_per_token": 3, "n_experts": 2}, "experts_per_token"),
        ({"norm": "batchnorm"}, "norm"),
    ],
)
def test_bad_config_names_the_field(kwargs, name):
    args = dict(name="x", n_layers=2, hidden=64, n_heads=4, n_kv_heads=4, head_dim=16, ffn_hidden=256, vocab=100)
    args.update(kwargs)
    with pytest.raises(ValueError, match=name):
        memory.ModelConfig(**args)


def test_unknown_preset_lists_the_known_ones():
    with pytest.raises(ValueError, match="Llama-3 8B"):
        memory.model_preset("GPT-5")
