"""The training planner's first search, made faster, answers the same: the memory model's parts remembered without
the data-parallel degree (memory._held_shape, _held_acts), the matmul results read from the files that can hold
them (measured._bundled_matmuls). scripts/planner_equality.py checks every preset, chip and count."""

from __future__ import annotations

import math
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


def _pace_by_loop(samples, start, end):
    # distruns.pace_over's rule written as the pass over every sample it was (the reference)
    runs_, cpu = 0, 0.0
    for e, r, c in samples:
        if start < e <= end:
            runs_ += r
            cpu += c
    return runs_ / cpu if cpu > 0 else 0.0


def test_a_pace_found_by_bisection_is_the_pace_of_every_sample_in_the_window():
    # distruns.pace_over takes the samples ending in (start, end] as one slice of time-ordered samples: the same
    # samples in the same order, so the same sums, on a run's own meters and windows at and between the samples
    from mlcalc import distruns

    rng = random.Random(5)
    run = distruns.CHECKPOINT_RUN
    for samples in distruns.pace_samples(run).values():
        ends = [e for e, _, _ in samples]
        for _ in range(300):
            a, b = sorted(rng.choice(ends) + rng.choice((0.0, -1e-3, 1e-3, 0.5, -7.0)) for _ in range(2))
            assert distruns.pace_over(samples, a, b) == _pace_by_loop(samples, a, b)
        assert distruns.pace_over(samples, ends[0], ends[0]) == 0.0
        assert distruns.pace_over(samples, -math.inf, math.inf) == _pace_by_loop(samples, -math.inf, math.inf)
        assert distruns.pace_over(samples, math.nan, ends[-1]) == _pace_by_loop(samples, math.nan, ends[-1])
        assert distruns.pace_over(samples, ends[0], math.nan) == _pace_by_loop(samples, ends[0], math.nan)
    shuffled = ((3.0, 10, 1.0), (1.0, 20, 2.0), (2.0, 5, 0.5))  # out of time order: the pass over every sample
    assert distruns.pace_over(shuffled, 1.5, 3.0) == _pace_by_loop(shuffled, 1.5, 3.0) == 15 / 1.5
    assert distruns.checkpoint_calibration.__wrapped__() == distruns.checkpoint_calibration()


def test_the_nearest_measured_shape_found_outwards_in_the_second_coordinate_is_the_nearest():
    # steptime._nearest_pruned walks each group outwards from the key in the rows' second coordinate and stops a side
    # where the first two coordinates alone are too far: the row _nearest picks, on the reference machine's matmul and
    # attention rows, at random keys, at each row's own shape and half-way between rows
    import json

    from mlcalc import hfruns, steptime

    data = json.loads(hfruns._folder("h200x2-2026-11-26-train-hf-run2").joinpath("rates.json").read_text())
    tables = ([((float(r["m"]), float(r["n"]), float(r["k"])), float(r["tflops"])) for r in data["matmul"]],
              [((float(r["head_dim"]), float(r["seq_len"])), float(r["fwd_bwd_tflops"])) for r in data["attention"]])
    rng = random.Random(21)
    for rows in tables:
        groups = steptime._log_rows(rows)
        assert groups is not None
        shapes = [s for s, _ in rows]
        keys = [tuple(rng.uniform(1, 3e5) for _ in shapes[0]) for _ in range(400)] + shapes
        keys += [tuple((a + b) / 2 for a, b in zip(rng.choice(shapes), rng.choice(shapes))) for _ in range(200)]
        for key in keys:
            assert steptime._nearest_pruned(rows, groups, key) == steptime._nearest(rows, key), key
