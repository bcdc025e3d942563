"""The memory model's speed-ups change no answer: training_memory's device-independent parts, a layer's
activations and the pipeline's in-flight counts, remembered (memory._held_bytes, _layer_activation_parts_of,
pipeline_in_flight), give what a fresh computation gives, on any device."""

from __future__ import annotations

import random

import pytest

from mlcalc import memory


def _cases(rng: random.Random, n: int) -> list[tuple]:
    out = []
    for _ in range(n):
        model = memory.model_preset(rng.choice(("Llama-3 8B", "Llama-3 70B", "Mixtral 8x7B", "DeepSeek-V3",
                                                "Megatron GPT 1.7B", "Gemma-2 9B")))
        tp = rng.choice([t for t in (1, 2, 4, 8) if model.n_heads % t == 0])
        pp = rng.choice([p for p in (1, 2, 4, 8) if model.n_layers % p == 0])
        ep = rng.choice((1, 2)) if model.is_moe else 1
        schedule = rng.choice(("1f1b", "interleaved", "gpipe")) if pp > 1 else "1f1b"
        kw = dict(micro_batch=rng.choice((1, 2)), seq_len=rng.choice((2048, 4096)), dp=ep * rng.choice((1, 2, 8)),
                  tp=tp, pp=pp, zero_stage=rng.choice((0, 1, 2, 3)),
                  convention=rng.choice(("zero-mixed-adam", "fp32-adam")),
                  recompute=rng.choice(("none", "selective", "full")), sequence_parallel=rng.random() < 0.5,
                  activations=rng.choice(("korthikanti", "architecture")), ep=ep, schedule=schedule,
                  virtual_stages=2 if schedule == "interleaved" else 1, n_micro=rng.choice((0, 1, 4, 32)),
                  program=rng.choice(("hf", "megatron")))
        out.append((model, kw))
    return out


def test_training_memory_remembered_gives_the_fresh_answer_on_every_device():
    rng = random.Random(11)
    cases = _cases(rng, 60)
    devices = (24e9, 80e9, 141e9, 192e9)
    fresh = []
    for model, kw in cases:
        row = []
        for dev in devices:
            for cache in (memory._held_bytes, memory._layer_activation_parts_of, memory.pipeline_in_flight,
                          memory.zero_model_state_bytes):
                cache.cache_clear()
            try:
                row.append(repr(memory.training_memory(model, dev, **kw)))
            except ValueError as err:
                row.append(f"ValueError: {err}")
        fresh.append(row)
    for i in rng.sample(range(len(cases)), len(cases)):  # now with every case remembered, in another order
        model, kw = cases[i]
        for dev, want in zip(devices[::-1], fresh[i][::-1]):
            try:
                got = repr(memory.training_memory(model, dev, **kw))
            except ValueError as err:
                got = f"ValueError: {err}"
            assert got == want, (model.name, kw, dev)
    assert memory._held_bytes.cache_info().maxsize == 2048


def test_a_remembered_answer_does_not_answer_an_input_of_another_type():
    m = memory.model_preset("Llama-3 8B")
    fine = memory.training_memory(m, 80e9, micro_batch=2, seq_len=4096, dp=8)
    with pytest.raises(ValueError, match="micro_batch"):
        memory.training_memory(m, 80e9, micro_batch=2.5, seq_len=4096, dp=8)
    try:
        as_float = repr(memory.training_memory(m, 80e9, micro_batch=2.0, seq_len=4096, dp=8))
    except ValueError as err:
        as_float = f"ValueError: {err}"
    memory._held_bytes.cache_clear()
    try:
        fresh = repr(memory.training_memory(m, 80e9, micro_batch=2.0, seq_len=4096, dp=8))
    except ValueError as err:
        fresh = f"ValueError: {err}"
    assert as_float == fresh and fine.dp == 8


def test_the_held_memory_depends_on_the_micro_batch_count_only_through_the_in_flight_count():
    # memory._held_of keys a layout's memory on in_flight_micro_batches(n_micro) instead of n_micro (the schedules'
    # steady state, proved in its docstring): on a grid of schedules, depths, chunks and counts, and for a dense, a
    # mixed dense/expert and an expert model, the answer is the one computed with the count itself
    models = [memory.model_preset(n) for n in ("Llama-3 8B", "DeepSeek-V3", "Mixtral 8x7B")]
    checked = moved = 0
    for model in models:
        for pp in (1, 2, 3, 4, 8):
            for schedule, vs in (("1f1b", (1,)), ("interleaved", (1, 2, 4)), ("dualpipe", (1,)), ("gpipe", (1,))):
                for v in vs:
                    if schedule == "dualpipe" and pp % 2 or v * pp > model.n_layers:
                        continue
                    for m in (1, 2, 3, pp, pp + 1, 2 * pp, 5 * pp + 3, 64, 1000):
                        args = (model, 1, 2048, 8, 2, pp, 1, "zero-mixed-adam", "selective", True, True, 0.1, False,
                                "architecture", "fp32-logits", 1, schedule, v, m, False, "megatron", False)
                        try:
                            want = repr(memory._held_bytes.__wrapped__(*args))
                        except ValueError as err:
                            want = f"ValueError: {err}"
                        memory._held_bytes.cache_clear()
                        try:
                            got = repr(memory._held_of(*args))
                        except ValueError as err:
                            got = f"ValueError: {err}"
                        assert got == want, (model.name, pp, schedule, v, m)
                        checked += 1
                        moved += memory.in_flight_micro_batches(pp, schedule if pp > 1 else "1f1b", v, m) != m
    assert checked > 300 and moved > 100
