"""The training planner's shortcuts change no answer: the micro-batch bound of the layout search, its caches,
and the warm-up the site's snapshot runs (scripts/planner_equality.py checks every preset, chip and count)."""

from __future__ import annotations

import math

import pytest

from mlcalc import memory, plan
from mlcalc.calc import REGISTRY, get, run


def _every_layout(m, chip, n, s, batch):
    """The fastest layout by trying every candidate in the search's own order (ties: the first found)."""
    best = None
    cands = sorted((plan.step_time_floor(m, chip, n, tp, pp, dp, mb, "selective", s), tp, pp, dp, mb)
                   for tp, pp, dp, mb in plan.layout_candidates(m, chip, n, s, batch))
    for _, tp, pp, dp, mb in cands:
        # as the layout runs: selective, else full; each with the most interleaved chunks that fit, else 1F1B
        fit = next(((rc, v, mem) for rc in ("selective", "full") for v in plan._virtuals(pp, mb, m.n_layers)
                    for mem in (plan.layout_memory(m, chip, tp, pp, dp, s, rc, mb, v),) if mem.fits), None)
        if fit is not None:
            rc, v, mem = fit
            t = plan.step_time(m, chip, n, tp, pp, dp, mb, rc, s, virtual_stages=v)
            if best is None or t.step_s < best.step_s:
                best = plan.PlannedLayout(tp, pp, dp, 1, mb, rc, mem.total_bytes, t.compute_s, t.bubble_s, t.comm_s,
                                          t.step_s, v)
    return best


@pytest.mark.parametrize("name,chip", [("Llama-2 7B", "H100-SXM"), ("GPT-2 124M", "A100-80GB"), ("Llama-3 8B", "B200")])
def test_the_layout_search_finds_exactly_the_layout_that_trying_every_one_finds(name, chip):
    # the same layout, every number equal (not approximately): the bound only skips layouts that cannot win
    m = memory.model_preset(name)
    for n in (8, 16, 24, 64, 96, 128):
        assert plan.best_layout(m, chip, n, 4096, 2**21) == _every_layout(m, chip, n, 4096, 2**21)


def test_a_micro_batch_bound_that_overshoots_is_caught_and_the_search_redone_without_it(monkeypatch):
    # An engine whose micro-batch would take longer at some GPU counts than at others breaks the bound: here the
    # bound is made 10x too large. The search notices (a layout's step below its bound), switches the bound off
    # and answers as trying every layout does.
    real = plan._micro_s
    monkeypatch.setattr(plan, "_micro_s", lambda p, m: real(p, m) * 10)
    monkeypatch.setattr(plan, "_micro_bound_on", True)
    monkeypatch.setattr(plan, "_MICRO", {})
    plan._best_layout.cache_clear()
    plan._run_cached.cache_clear()
    try:
        m = memory.model_preset("Llama-3.2 1B")
        got = [plan.best_layout(m, "H100-SXM", n, 2048, 2**20) for n in (8, 16, 32, 64)]
        assert not plan._micro_bound_on
        assert got == [_every_layout(m, "H100-SXM", n, 2048, 2**20) for n in (8, 16, 32, 64)]
    finally:
        plan._best_layout.cache_clear()
        plan._run_cached.cache_clear()


def test_the_search_caches_are_bounded():
    for cached in (plan._best_layout, plan._run_cached, plan._price_of, plan._owned_rate_of, plan._counts,
                   plan._needs_fixed):
        assert cached.cache_info().maxsize is not None and cached.cache_info().maxsize <= 10_000
    assert 0 < plan._MICRO_MAX <= 100_000


def test_a_repeated_search_answers_the_same_plans():
    # the second search is served from the caches (layouts, runs, prices): every plan equal to the first's
    m = memory.model_preset("Llama-2 7B")
    args = (m, list(plan.offers()), 2e11, 60.0, 5e6)
    first = plan.search(*args, max_gpus=256)
    again = plan.search(*args, max_gpus=256)
    assert first == again and first.cheapest is not None
    other = plan.search(m, list(plan.offers()), 2e11, 20.0, 5e6, max_gpus=256)  # another deadline: priced again
    assert all(p.deadline_days == 20.0 for p in other.plans)


def test_warm_runs_every_calculator_and_changes_no_answer():
    import mlcalc.warm

    before = {k: run(k, get(k).defaults()) for k in ("plan.train", "plan.serve", "memory.gpu_count")}
    took = mlcalc.warm.warm()
    assert set(took) == set(REGISTRY)
    assert all(math.isfinite(t) and t >= 0 for t in took.values())
    assert {k: run(k, get(k).defaults()) for k in before} == before


def test_the_remembered_needs_of_a_count_are_needs_at_any_token_rate():
    # _needs_at keeps what does not depend on the token rate (switches, checkpoint, failures, goodput) per count:
    # every field equal to needs' own at each rate, so no plan changes
    for name in ("Llama-3 70B", "GPT-2 124M"):
        m = memory.model_preset(name)
        for n, gpn in ((8, 8), (160, 8), (4096, 8), (72, 72)):
            for tps in (1.0, 3.3e4, 1.7e6, 9.1e8):
                for restart in (None, 600.0):
                    assert plan._needs_at(m, n, gpn, tps, 2e12, 5e10, 2e9, restart) == plan.needs(
                        m, n, gpn, tps, 2e12, 5e10, 2e9, restart)


@pytest.mark.parametrize("name,chip", [("Llama-3 70B", "H100-SXM"), ("Mixtral 8x7B", "A100-80GB"), ("GPT-2 124M", "B200"),
                                       ("Gemma-2 9B", "H200-SXM"), ("Qwen3 30B-A3B", "H100-SXM"),
                                       ("DeepSeek-V3", "B200")])
def test_the_micro_batch_bound_carried_to_other_stage_depths_never_exceeds_the_true_micro_batch(name, chip, monkeypatch):
    # _carried bounds a micro-batch of (tp, pp, recompute) from one known at another pipeline depth: k(l) >= k(l') l / l'
    # for l <= l' layers per stage, >= k(l') for l >= l', selective bounding full. Every pair of depths, both
    # recomputations, against the engine's own micro-batch (plan._micro_s of a predicted step): never above it.
    import random

    rng = random.Random(7)
    m = memory.model_preset(name)
    system = plan.chip_info(chip)["system"]
    depths = plan._pipeline_sizes(m)
    monkeypatch.setattr(plan, "_DEPTHS", {})
    monkeypatch.setattr(plan, "_CARRIED", {})
    checked, useful = 0, 0
    for tp in (1, 2, 8):
        if m.n_heads % tp:
            continue
        true = {}
        for pp in depths:
            for rc in ("selective", "full"):
                mb = rng.choice((1, 4, 16, 64))
                dp = rng.choice((1, 2, 8))
                p = plan._predict(m, chip, plan.engine_layout(tp, pp, dp, mb, rc, m.n_layers), 4096)
                true[(pp, rc)] = plan._micro_s(p, mb)
        for (pp, rc), k in true.items():
            plan._DEPTHS.clear()
            plan._CARRIED.clear()
            plan._DEPTHS[(m, chip, system, 4096, tp)] = {key: v for key, v in true.items() if key != (pp, rc)}
            carried = plan._carried((m, chip, system, 4096, tp, pp, rc), m.n_layers)
            assert carried <= k * (1 + 1e-12), (tp, pp, rc, carried, k)
            checked += 1
            useful += carried > 0.5 * k
    assert checked >= 20
    if m.n_moe_layers not in (0, m.n_layers):  # a mix of dense and expert layers: nothing carried
        assert useful == 0
    else:  # and it bounds something: most carried bounds are over half the true micro-batch
        assert useful > checked / 2


def test_the_remembered_engine_layout_is_the_layout_built_afresh_and_refuses_alike():
    # engine_layout is remembered per its arguments (typed): the same Layout as one built afresh, and an argument of
    # another type or value is refused as before (a remembered answer never stands in for it)
    args = [(8, 4, 16, 32, "selective", 80, 1, 0), (8, 4, 16, 32, "full", 80, 1, 2), (1, 1, 64, 8, "selective", 32, 1, 0),
            (2, 8, 2, 16, "selective", 126, 1, 1), (4, 3, 5, 7, "full", 30, 2, 0)]
    for a in args:
        plan._engine_layout_of.cache_clear()
        fresh = plan.engine_layout(*a)
        assert plan.engine_layout(*a) is fresh and fresh == plan._engine_layout_of.__wrapped__(*a)
    def outcome(f, a):
        try:
            return repr(f(*a))
        except ValueError as err:
            return f"ValueError: {err}"

    for odd in [(8, 4, 16, 32.0, "selective", 80, 1, 0), (8, 4, 16, 32, "selective", 80, 1, 3),
                (8, 4, 16, 0, "selective", 80, 1, 0), (8, 4, 16, 32, "selective", 80, 1, 2.0),
                (8, 4, 16, 32, "selective", 80, 1, True)]:
        plan.engine_layout(*odd[:-1], 2) if odd[-1] is True else None  # a remembered neighbour (True == 1 as a key)
        assert outcome(plan.engine_layout, odd) == outcome(plan._engine_layout_of.__wrapped__, odd)
    with pytest.raises(ValueError):
        plan.engine_layout(8, 4, 16, 0, "selective", 80)
    assert plan._engine_layout_of.cache_info().maxsize == 8192
