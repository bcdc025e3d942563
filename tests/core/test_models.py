"""mlcalc.models: one ModelConfig, one preset table; parameter counts against their publications."""

import dataclasses

import pytest

from mlcalc import models

# Relative tolerance of each preset's count against the figure its source states, by how the
# source states it (the source itself is in the preset's "source" field):
TOLERANCE = {
    # OpenAI's checkpoint names (124M, 355M, 774M, 1558M): three or four significant digits.
    "GPT-2 124M": 0.004, "GPT-2 355M": 0.002, "GPT-2 774M": 0.001, "GPT-2 1.5B": 0.001,
    # Brown et al. 2020 Table 2.1 states 125M, 350M, 760M, 2.7B, 6.7B, 175.0B: two or three digits.
    "GPT-3 125M": 0.004, "GPT-3 350M": 0.02, "GPT-3 760M": 0.001, "GPT-3 2.7B": 0.02, "GPT-3 6.7B": 0.007,
    "GPT-3 175B": 0.003,
    # Narayanan et al. 2021 Table 1 (eq. 2 rounded to 0.1B; 1.7B is eq. 2's 1.65B rounded up).
    "Megatron GPT 1.7B": 0.03, "Megatron GPT 3.6B": 0.011, "Megatron GPT 7.5B": 0.005,
    "Megatron GPT 18.4B": 0.003, "Megatron GPT 39.1B": 0.001, "Megatron GPT 76.1B": 0.001,
    "Megatron GPT 145.6B": 0.001, "Megatron GPT 310.1B": 0.001, "Megatron GPT 529.6B": 0.001,
    "Megatron GPT 1008B": 0.001,
    # Llama 2 / 3 and Mixtral 8x7B publish names rounded to whole billions (Llama-2 7B counts 6.74B).
    "Llama-2 7B": 0.04, "Llama-2 13B": 0.002, "Llama-2 70B": 0.015, "Llama-3 8B": 0.004,
    "Llama-3 70B": 0.008, "Llama-3 405B": 0.003, "Llama-3.1 8B": 0.004, "Llama-3.1 70B": 0.008,
    "Llama-3.1 405B": 0.003, "Mixtral 8x7B": 0.007, "Mixtral 8x22B": 0.003,
    # Llama 3.2 model card (1.23B, 3.21B), Mistral 7B weights (7.24B), Qwen model cards (three digits).
    "Llama-3.2 1B": 0.005, "Llama-3.2 3B": 0.001, "Mistral 7B": 0.001,
    "Qwen2.5 0.5B": 0.009, "Qwen2.5 7B": 0.001, "Qwen2.5 72B": 0.001,
    "Qwen3 0.6B": 0.007, "Qwen3 8B": 0.002, "Qwen3 30B-A3B": 0.002, "Qwen3 235B-A22B": 0.001,
    # Gemma 2 Table 2 states every parameter: exact.
    "Gemma-2 2B": 1e-9, "Gemma-2 9B": 1e-9, "Gemma-2 27B": 1e-9,
    # Gemma 3 Table 1 states millions; its embedding column is up to 0.5% above vocabulary x width
    # (the non-embedding column matches to the million: test_gemma3_non_embedding).
    "Gemma-3 1B": 0.001, "Gemma-3 4B": 0.0015, "Gemma-3 12B": 0.001, "Gemma-3 27B": 0.001,
    # DeepSeek-V3: 671B total.
    "DeepSeek-V3": 0.001,
}


def test_every_preset_has_a_source_and_a_tolerance():
    for name, cfg in models.presets().items():
        assert "http" in cfg.source, name
        assert cfg.published_params > 0, name
        assert name in TOLERANCE, name


# Each preset's count against its publication (source named in the preset, tolerance above).
@pytest.mark.parametrize("name", list(TOLERANCE))
def test_count_matches_publication(name):
    cfg = models.preset(name)
    assert cfg.n_params() == pytest.approx(cfg.published_params, rel=TOLERANCE[name])


# Published active parameters of the mixtures of experts: Jiang et al. 2024 (Mixtral 8x7B: 13B),
# Mistral AI 2024 (8x22B: 39B), Qwen3 model cards (3.3B, 22B), DeepSeek-V3 abstract (37B).
@pytest.mark.parametrize("name, rel", [("Mixtral 8x7B", 0.01), ("Mixtral 8x22B", 0.005),
                                       ("Qwen3 30B-A3B", 0.02), ("Qwen3 235B-A22B", 0.01),
                                       ("DeepSeek-V3", 0.015)])
def test_active_params_match_publication(name, rel):
    cfg = models.preset(name)
    assert cfg.n_active_params() == pytest.approx(cfg.published_active_params, rel=rel)


# Gemma Team 2024 Table 2: Gemma 2 2B has 590,118,912 embedding and 2,024,517,888 non-embedding parameters.
def test_gemma2_split_exactly():
    cfg = models.preset("Gemma-2 2B")
    assert cfg.n_embedding_params() == 590_118_912
    assert cfg.n_params() - cfg.n_embedding_params() == 2_024_517_888


# Gemma Team 2025, Table 1: non-embedding parameters 698M, 3,209M, 10,759M, 25,600M.
@pytest.mark.parametrize("name, millions", [("Gemma-3 1B", 698), ("Gemma-3 4B", 3209), ("Gemma-3 12B", 10759),
                                            ("Gemma-3 27B", 25600)])
def test_gemma3_non_embedding(name, millions):
    cfg = models.preset(name)
    assert round((cfg.n_params() - cfg.n_embedding_params()) / 1e6) == millions


# Narayanan et al. 2021 eq. 2: P = 12 l h^2 (1 + 13/(12h) + (V + s)/(12 l h)); our count adds only the
# final LayerNorm (2h), which the formula leaves out.
def test_megatron_presets_follow_eq_2_exactly():
    for name, cfg in models.presets().items():
        if name.startswith("Megatron"):
            l, h, v, s = cfg.n_layers, cfg.hidden, cfg.vocab, cfg.learned_positions
            formula = 12 * l * h**2 * (1 + 13 / (12 * h) + (v + s) / (12 * l * h))
            assert cfg.n_params() - 2 * h == pytest.approx(formula, rel=1e-12)


# The released Llama-2-7b-hf weights: the Hugging Face Hub lists "Model size 6.74B params".
def test_llama2_7b_matches_the_released_weights():
    assert round(models.preset("Llama-2 7B").n_params() / 1e9, 2) == 6.74


# "GPT-3 175B" has one vocabulary now: GPT-2's 50257 tokens (Brown et al. 2020 section 2.1).
def test_one_gpt3():
    assert models.preset("GPT-3 175B").vocab == 50257
    assert sum(1 for n in models.presets() if "175B" in n) == 1


def test_dense_model_is_all_active_and_parts_add_up():
    for cfg in models.presets().values():
        assert sum(cfg.params_breakdown().values()) == cfg.n_params()
        if not cfg.is_moe:
            assert cfg.n_active_params() == cfg.n_params()


def test_replace_makes_a_validated_variant():
    small = models.preset("Llama-3 8B").replace(n_layers=2)
    assert small.n_layers == 2 and small.hidden == 4096
    with pytest.raises(ValueError, match="n_layers"):
        models.preset("Llama-3 8B").replace(n_layers=0)


def test_round_trip_through_dict():
    for cfg in models.presets().values():
        assert models.from_dict(models.as_dict(cfg)) == cfg
    with pytest.raises(ValueError, match="colour"):
        models.from_dict({**models.as_dict(models.preset("Mistral 7B")), "colour": "red"})


BASE = dict(name="x", n_layers=2, hidden=64, n_heads=4, n_kv_heads=4, head_dim=16, ffn_hidden=256, vocab=100)


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"n_layers": 0}, "n_layers"),
        ({"hidden": 1.5}, "hidden"),
        ({"hidden": -64}, "hidden"),
        ({"n_kv_heads": 3}, "n_kv_heads"),
        ({"experts_per_token": 3, "n_experts": 2}, "experts_per_token"),
        ({"norm": "batchnorm"}, "norm"),
        ({"n_layers": 10**6}, "n_layers"),
        ({"vocab": 10**9}, "vocab"),
        ({"n_experts": 10**7}, "n_experts"),
        ({"attention": "mla"}, "kv_lora_rank"),
        ({"attention": "linear"}, "attention"),
        ({"dropout": 1.0}, "dropout"),
        ({"first_dense_layers": 3}, "first_dense_layers"),
        ({"moe_ffn_hidden": -1}, "moe_ffn_hidden"),
        ({"activation": "swish"}, "activation"),
    ],
)
def test_bad_config_names_the_field(kwargs, name):
    with pytest.raises(ValueError, match=name):
        models.ModelConfig(**{**BASE, **kwargs})


def test_unknown_preset_lists_the_known_ones():
    with pytest.raises(ValueError, match="Llama-3 8B"):
        models.preset("GPT-5")


def test_config_is_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        models.preset("Mistral 7B").hidden = 1  # type: ignore[misc]


def test_remembered_parameter_counts_change_nothing_a_model_is_compared_or_copied_by():
    # params_breakdown / n_params are remembered on the (frozen) instance: the same numbers as computed afresh,
    # and equality, hashing, repr, replace() and pickling see only the fields
    import pickle

    from mlcalc import memory

    for name in ("Llama-3 70B", "Mixtral 8x7B", "DeepSeek-V3", "GPT-2 124M"):
        fresh = memory.model_preset(name)
        used = memory.model_preset(name)
        assert used.n_params() == sum(used._params_breakdown().values()) == used.n_params()
        assert dict(used.params_breakdown()) == dict(fresh._params_breakdown())
        assert used == fresh and hash(used) == hash(fresh) and repr(used) == repr(fresh)
        half = used.replace(n_layers=max(1, used.n_layers // 2))
        assert half.n_params() == sum(half._params_breakdown().values()) != used.n_params()
        assert pickle.loads(pickle.dumps(used)) == fresh
        with pytest.raises(TypeError):
            used.params_breakdown()["attention"] = 0  # type: ignore[index]  # read-only, as before


def test_a_models_remembered_hash_is_the_hash_of_its_compared_fields_and_no_copy_or_pickle_carries_it():
    # ModelConfig.__hash__ remembers its value on the instance (the planner's caches hash a model tens of thousands
    # of times): the dataclass's own value (the tuple of the fields equality compares), equal for equal models, and
    # left out of a pickle or a copy (a string's hash differs between processes).
    import copy
    import dataclasses
    import pickle

    from mlcalc import memory

    for name in ("Llama-3 70B", "DeepSeek-V3", "Megatron GPT 1.7B"):
        m = memory.model_preset(name)
        fields = tuple(getattr(m, f.name) for f in dataclasses.fields(m) if (f.compare if f.hash is None else f.hash))
        assert hash(m) == hash(fields) == hash(m.replace(n_layers=m.n_layers))
        assert "_hash_known" in m.__dict__
        for other in (pickle.loads(pickle.dumps(m)), copy.copy(m), copy.deepcopy(m)):
            assert "_hash_known" not in other.__dict__ and other == m and hash(other) == hash(m)
        assert hash(m.replace(n_layers=m.n_layers + 1)) != hash(m)
