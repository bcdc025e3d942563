"""The facility calculators: defaults, presets that follow, and messages for bad input."""

from __future__ import annotations

import pytest

from mlcalc import calc, facility
from mlcalc.calculators import facility as cf


def test_cluster_defaults_match_the_function():
    result, view = cf.CLUSTER.evaluate()
    direct = facility.cluster_power(16384, "DGX H100", 1.58, "air", 0.10)
    assert result == direct
    assert f"{direct.facility_kw / 1000:,.2f} MW" in view.text
    # the chart's parts add up to the facility power
    assert sum(r[1] for r in view.table.rows) == pytest.approx(direct.facility_kw / 1000)


def test_picking_an_nvl72_switches_to_liquid():
    values = {**cf.CLUSTER.defaults(), "system": "GB200 NVL72"}
    assert cf.CLUSTER.follow("system", values) == {"cooling": "liquid"}
    out = calc.run("facility.cluster", {"system": "GB200 NVL72", "cooling": "air"})
    assert not out["ok"] and "liquid-cooled" in out["error"]


def test_energy_presets_fill_dated_numbers_and_turn_custom():
    c = cf.ENERGY
    v = c.defaults()
    assert v["usd_per_kwh"] == facility.price_presets()[v["price"]]
    assert c.follow("usd_per_kwh", {**v, "usd_per_kwh": 0.2}) == {"price": "custom"}
    assert c.follow("grid", {**v, "grid": "France (BLOOM, Luccioni et al.)"}) == {"kg_per_kwh": 0.057}
    r, view = c.evaluate({"n_gpus": 384, "days": 1.0})
    assert r["run"].energy.it_kwh == pytest.approx(48 * 10.2 * 24 / 0.9)
    assert "t CO2e" in view.text


@pytest.mark.parametrize("key, given, word", [
    ("facility.cluster", {"n_gpus": 0}, "GPUs"),
    ("facility.cluster", {"pue": 0.5}, "pue"),
    ("facility.energy", {"days": -1}, "days"),
    ("facility.energy", {"usd_per_kwh": -0.1}, "usd_per_kwh"),
])
def test_bad_input_gives_a_message(key, given, word):
    out = calc.run(key, given)
    assert not out["ok"] and word in out["error"]


def test_failure_calculators_defaults_match_the_functions():
    from mlcalc import failures, storage
    from mlcalc.calculators import failures as cfl

    r, view = cfl.INTERRUPTIONS.evaluate()
    assert r["i"].unexpected == pytest.approx(419)
    assert r["spares"] == failures.spares_needed(r["away"] / 72, 72, 0.99)
    g, view = cfl.GOODPUT.evaluate()
    ckpt = storage.checkpoint_size(405e9).total_bytes
    assert g == failures.scale_goodput(16384, ckpt / 2e12, failures.restart_time(ckpt, 2e12))
    assert f"goodput {g.fraction:.1%}" in view.text
    # asynchronous: no blocking, a checkpoint as soon as the last write is done
    a, view = cfl.GOODPUT.evaluate({"mode": "asynchronous"})
    assert a.checkpoint_fraction == 0 and a.interval_s == pytest.approx(ckpt / 2e12) and a.fraction > g.fraction
    out = calc.run("failures.goodput", {"n_gpus": -5})
    assert not out["ok"] and "GPUs" in out["error"]


def test_finetune_calculator():
    from mlcalc import finetune, models
    from mlcalc.calculators import finetune as cft

    r, view = cft.MEMORY.evaluate()
    m = models.preset("Llama-3.1 8B")
    assert r["mem"] == finetune.finetune_memory(m, "lora", 16, ("q_proj", "v_proj"), 1, 2048, False)
    assert "fits one H100-SXM" in view.text
    r, view = cft.MEMORY.evaluate({"method": "full"})
    assert "does NOT fit" in view.text and "FLOPs do not count" not in view.text
    out = calc.run("finetune.memory", {"rank": 0})
    assert not out["ok"] and "rank" in out["error"]
