"""The training planner's first search, made faster, answers the same: the memory model's parts remembered without
the data-parallel degree (memory._held_shape, _held_acts), the matmul results read from the files that can hold
them (measured._bundled_matmuls). scripts/planner_equality.py checks every preset, chip and count."""

from __future__ import annotations

import random

from mlcalc import measured, memory


def test_the_bundled_matmul_results_are_those_of_every_bundled_run():
    # the same results in the same order (matmul() takes the first of the fastest: the order matters)
    every = tuple(r for r in measured.bundled() if isinstance(r, measured.MatmulResult))
    assert every and measured._bundled_matmuls() == every


def _args(rng: random.Random) -> tuple:
    model = memory.model_preset(rng.choice(("DeepSeek-V3", "Llama-3 70B", "Mixtral 8x7B", "Qwen3 30B-A3B",
                                            "Gemma-2 9B", "GPT-3 175B")))
    tp = rng.choice([t for t in (1, 2, 4, 8) if model.n_heads % t == 0])
    schedule = rng.choice(("1f1b", "interleaved", "dualpipe", "gpipe"))
    pp = rng.choice([p for p in (1, 2, 4, 8, 16) if p <= model.n_layers
                     and (model.n_layers % p == 0 or schedule in ("interleaved", "dualpipe"))
                     and not (schedule == "dualpipe" and p % 2)])
    v = rng.choice((1, 2)) if schedule == "interleaved" and pp > 1 and 2 * pp <= model.n_layers else 1
    ep = rng.choice((1, 2, 4)) if model.is_moe else 1
    m = rng.choice((0, 1, 3, pp, 2 * pp + 1, 64)) if schedule != "gpipe" else rng.choice((1, 4, 16))
    return (model, rng.choice((1, 2)), rng.choice((2048, 4096)), tp, pp, rng.choice((0, 1, 2, 3)),
            rng.choice(("zero-mixed-adam", "fp32-adam")), rng.choice(("selective", "full", "none")), rng.random() < 0.7,
            True, 0.1, False, rng.choice(("korthikanti", "architecture")), rng.choice(("fp32-logits", "hf")), ep,
            schedule, v, m, rng.random() < 0.2, rng.choice(("hf", "megatron")), False)


def test_the_memory_split_by_data_parallel_degree_answers_as_computed_fresh():
    # _held_bytes at many dp from its remembered dp-free parts, against each computed with every cache empty
    rng = random.Random(32)
    caches = (memory._held_bytes, memory._held_shape, memory._held_acts, memory._moe_layers_per_rank,
              memory.pipeline_in_flight, memory.zero_model_state_bytes, memory._layer_activation_parts_of)
    checked = 0
    for _ in range(40):
        model, b, s, tp, pp, zero, conv, rc, sp, flash, over, off, acts, loss, ep, sched, v, m, bal, prog, fp8 = \
            _args(rng)
        rows = []
        for dp in (ep, 2 * ep, 8 * ep, 64 * ep):
            args = (model, b, s, dp, tp, pp, zero, conv, rc, sp, flash, over, off, acts, loss, ep, sched, v, m, bal,
                    prog, fp8)
            try:
                warm = repr(memory._held_bytes(*args))
            except ValueError as err:
                warm = f"ValueError: {err}"
            rows.append((args, warm))
        for args, warm in rows:
            for cache in caches:
                cache.cache_clear()
            try:
                fresh = repr(memory._held_bytes(*args))
            except ValueError as err:
                fresh = f"ValueError: {err}"
            assert warm == fresh, args[1:]
            checked += not warm.startswith("ValueError")
    assert checked > 60
