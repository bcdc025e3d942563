"""mlcalc.facility: cluster power, racks, energy, cost and emissions, checked on published figures."""

from __future__ import annotations

import math

import pytest

from mlcalc import facility


def _run(name: str) -> facility.Energy:
    r = facility.runs()[name]
    return facility.run_energy(r["gpu_hours"], r["power_w"], r["pue"], 0.0, r["kg_per_kwh"] or 0.0)


def test_bloom_energy_and_emissions():
    # Luccioni, Viguier and Ligozat, "Estimating the Carbon Footprint of BLOOM" (JMLR 2023), section 4:
    # 1,082,990 GPU hours x 400 W = 433,196 kWh ("433 MWh"); at 57 gCO2eq/kWh, 24.69 tonnes.
    e = _run("BLOOM 176B")
    assert e.facility_kwh / 1000 == pytest.approx(433.0, rel=0.001)
    assert e.emissions_t == pytest.approx(24.69, rel=0.001)


def test_gpt3_energy_and_emissions():
    # Patterson et al., "Carbon Emissions and Large Neural Network Training" (2021), Table 4, GPT-3:
    # 10,000 V100 x 14.8 days, 330 W per processor, PUE 1.10 -> 1,287 MWh; x 0.429 kgCO2e/kWh -> 552 tCO2e.
    e = _run("GPT-3 175B")
    assert e.facility_kwh / 1000 == pytest.approx(1287.0, rel=0.005)
    assert e.emissions_t == pytest.approx(552.0, rel=0.005)
    assert e.facility_kwh == pytest.approx(1.1 * e.it_kwh)


def test_100k_h100_cluster_power_and_bill():
    # SemiAnalysis, "100,000 H100 Clusters" (June 2024): 700 W per H100 + ~575 W per GPU for CPUs, NICs and
    # power supplies, storage and network ~10% of the total: ">150MW" for 100,000 GPUs (two significant
    # figures: our sum must round to 1.5e2 MW within 10%); 1.59 TWh a year at $0.078/kWh = $123.9 million.
    c = facility.clusters()["100k H100 (SemiAnalysis 2024)"]
    it = facility.it_power_kw(c["gpus"], c["gpu_w"] + c["server_w_per_gpu"], c["other_it_share"])
    assert it / 1000 == pytest.approx(c["published_it_mw"], rel=0.10)
    bill = c["published_twh_per_year"] * 1e9 * c["usd_per_kwh"]
    assert bill == pytest.approx(c["published_usd_per_year"], rel=0.002)
    # the yearly energy of a load that draws 1.59 TWh: a 181 MW average, i.e. a PUE of about 1.28 over our IT
    # power (the article states no PUE: a derived figure, not a check)
    avg_kw = c["published_twh_per_year"] * 1e9 / facility.HOURS_PER_YEAR
    y = facility.yearly_energy(avg_kw, 1.0, c["usd_per_kwh"])
    assert y.cost_usd == pytest.approx(bill)
    assert 1.2 < avg_kw / it < 1.35


def test_dgx_h100_racks_air_vs_gb200_liquid():
    # DGX H100 datasheet: 10.2 kW max per 8-GPU system; four fill a 40 kW air-cooled rack (40.8 kW > 40: three).
    c = facility.cluster_power(1024, "DGX H100", pue=1.0, cooling="air", other_it_share=0.0)
    assert c.n_systems == 128 and c.systems_per_rack == 3 and c.racks == math.ceil(128 / 3)
    assert c.it_kw == pytest.approx(128 * 10.2)
    # A GB200 NVL72 is one liquid-cooled rack of ~120 kW for 72 GPUs: 1024 GPUs need 15 racks.
    g = facility.cluster_power(1024, "GB200 NVL72", pue=1.0, cooling="liquid", other_it_share=0.0)
    assert g.racks == g.n_systems == 15 and g.rack_kw == pytest.approx(120.0)
    # kW per GPU: the NVL72 packs 1.67 kW per GPU in the rack, against 1.275 for a DGX H100
    assert facility.system("GB200 NVL72").w_per_gpu == pytest.approx(1666.7, rel=1e-3)
    assert facility.system("DGX H100").w_per_gpu == pytest.approx(1275.0)
    with pytest.raises(ValueError, match="cooling='air' is not allowed for GB200 NVL72"):
        facility.cluster_power(72, "GB200 NVL72", cooling="air")
    with pytest.raises(ValueError, match="rack_limit_kw"):
        facility.cluster_power(8, "DGX B200", rack_limit_kw=10.0)


def test_pue_and_other_share_scale_power():
    c = facility.cluster_power(16384, "DGX H100", pue=1.5, other_it_share=0.1)
    assert c.facility_kw == pytest.approx(1.5 * c.it_kw)
    assert c.it_kw == pytest.approx(2048 * 10.2 / 0.9)
    # the inverse: the GPUs a grid connection of that size powers is the same count
    assert facility.gpus_for_power(c.facility_kw * 1.000001, "DGX H100", 1.5, 0.1) == 16384


def test_llama31_intensity_is_derived_not_checked():
    # Llama 3.1 model card: 30.84M H100 GPU hours at 700 W TDP, 8,930 tCO2eq (location-based). The card
    # gives no energy: at TDP the GPUs drew 21.6 GWh, which makes the intensity ~0.41 kg/kWh.
    r = facility.runs()["Llama 3.1 405B"]
    e = facility.run_energy(r["gpu_hours"], r["power_w"])
    assert e.it_kwh == pytest.approx(21.588e6)
    assert facility.implied_intensity(r["published_t"], e.it_kwh) == pytest.approx(0.4137, rel=1e-3)


def test_every_figure_has_a_source_and_date():
    for s in facility.systems().values():
        assert s.source.startswith("http") and s.date
    for table in ("pue", "electricity_price", "grid_intensity", "cooling"):
        for key, row in facility.data()[table].items():
            if key != "fields":
                assert row["source"] and row["notes"], (table, key)
    for table in ("electricity_price", "grid_intensity", "pue"):
        assert all("date" in row for k, row in facility.data()[table].items() if k != "fields")


@pytest.mark.parametrize("call, match", [
    (lambda: facility.cluster_power(0), "n_gpus"),
    (lambda: facility.cluster_power(facility.MAX_GPUS + 1), "n_gpus"),
    (lambda: facility.cluster_power(8, pue=0.9), "pue"),
    (lambda: facility.cluster_power(8, pue=1580), "pue"),  # a typo for 1.58 is refused, not a 2,000 MW answer
    (lambda: facility.energy(1, 10, pue=3.01), "pue"),
    (lambda: facility.cluster_power(8, "TPU"), "system"),
    (lambda: facility.cluster_power(8, cooling="immersion"), "cooling"),
    (lambda: facility.it_power_kw(8, 700, 0.95), "other_it_share"),
    (lambda: facility.energy(-1, 10), "it_kw"),
    (lambda: facility.energy(1, 10, usd_per_kwh=-0.1), "usd_per_kwh"),
    (lambda: facility.yearly_energy(1, load=0), "load"),
    (lambda: facility.gpus_for_power(0), "facility_kw"),
])
def test_bad_input_names_the_parameter(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_training_facility_for_the_planner():
    t = facility.training_facility(16384, 54, "DGX H100", pue=1.1, usd_per_kwh=0.1, kg_per_kwh=0.4)
    assert t.energy.it_kwh == pytest.approx(t.power.it_kw * 54 * 24)
    assert t.energy.cost_usd == pytest.approx(0.1 * 1.1 * t.energy.it_kwh)
    assert t.power.cooling == "air"
    assert facility.training_facility(72, 1, "GB200 NVL72").power.cooling == "liquid"
