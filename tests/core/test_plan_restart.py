"""The planner's restart time and goodput come from the failure model (mlcalc.failures), not a fixed guess."""

from __future__ import annotations

import pytest

from mlcalc import failures, models, plan, storage

HOUR, DAY = 3600.0, 86400.0


def _needs(n_gpus: int, restart_s: float | None = None) -> plan.Needs:
    return plan.needs(models.preset("Llama-3 8B"), n_gpus, 8, 1e6, 1e12, 100e9, 25e9, restart_s)


def test_a_plans_restart_is_the_failure_models_parts_for_its_checkpoint_and_storage():
    nd = _needs(512)
    r = nd.restart
    assert r is not None and nd.restart_s == r.total_s
    # the checkpoint read back at the rate the run writes it (its filesystem, capped by its nodes' links)
    assert r == failures.restart_time(nd.checkpoint_bytes, nd.write_bytes_per_s)
    assert r.load_s == pytest.approx(nd.checkpoint_bytes / nd.write_bytes_per_s)
    d = failures.restart_defaults()
    assert r.total_s == pytest.approx(d["detect_s"] + d["replace_s"] + d["reschedule_s"] + d["warmup_s"] + r.load_s)
    # the goodput is the storage part's first-order model with that restart
    assert nd.goodput == pytest.approx(storage.goodput(nd.interval_s, nd.checkpoint_write_s, nd.mtbf_s,
                                                       r.total_s).fraction)


def test_a_given_restart_time_replaces_the_failure_model():
    given = _needs(512, restart_s=600.0)
    assert given.restart is None and given.restart_s == 600.0
    assert given.goodput > _needs(512).goodput  # 10 minutes is shorter than the model's parts (15 and more)


def test_a_bigger_checkpoint_or_a_smaller_job_loads_longer():
    # the load grows with the checkpoint, and falls where more nodes' links feed the filesystem
    small, big = models.preset("Llama-3 8B"), models.preset("Llama-3 70B")
    nd_small = plan.needs(small, 64, 8, 1e6, 1e12, 1e15, 1e9)
    nd_big = plan.needs(big, 64, 8, 1e6, 1e12, 1e15, 1e9)
    nd_wide = plan.needs(big, 512, 8, 1e6, 1e12, 1e15, 1e9)
    assert nd_big.restart.load_s > nd_small.restart.load_s
    assert nd_wide.restart.load_s == pytest.approx(nd_big.restart.load_s / 8)


def test_llama3_405b_plan_reproduces_the_published_interruptions_and_goodput():
    # Dubey et al. 2024, "The Llama 3 Herd of Models", 3.3.4: 419 unexpected interruptions in a 54-day snapshot
    # on 16,384 H100s; "higher than 90% effective training time". Checkpoints go to Tectonic at 2 TB/s (3.3.1).
    rec = failures.record("Llama 3 405B")
    check = plan.check_run("Llama 3 405B")
    e = plan.published_runs()["Llama 3 405B"]
    model = plan.run_model(e)
    nd = plan.needs(model, rec["gpus"], rec["gpus_per_node"], 1e6, float(e["n_tokens"]),
                    float(e["filesystem_write_gbps"]) * 1e9, plan.default("storage_gbps_per_node") * 1e9)
    assert rec["days"] * DAY / nd.mtbf_s == pytest.approx(rec["unexpected"], rel=0.01)
    assert check.goodput == pytest.approx(rec["published_goodput"], rel=0.15)
    # the 405B model's checkpoint (14 bytes per parameter, about 5.7 TB) reads back at 2 TB/s in a few seconds:
    # the restart is the minutes of detection, replacement, rescheduling and warm-up
    assert nd.restart.load_s == pytest.approx(nd.checkpoint_bytes / 2e12, rel=0.01)
    assert 10 * 60 < nd.restart_s < 20 * 60


def test_the_explanation_states_the_restart_and_its_parts():
    res = plan.search(models.preset("Llama-3 8B"), ["H100 rent on demand (AWS p5)"], 1e12, 60, 5e6, max_gpus=512)
    assert res.cheapest is not None
    text = plan.explain(res.cheapest, models.preset("Llama-3 8B"), 1e12)
    r = res.cheapest.needs.restart
    assert f"a restart of {r.total_s / 60:,.1f} min" in text
    for part in ("detect", "replace", "reschedule", "load the checkpoint", "warm up", "mlcalc.failures.restart_time"):
        assert part in text
    assert plan.plan_numbers(res.cheapest)["restart"]["value"] == pytest.approx(r.total_s / 60, rel=1e-5)
