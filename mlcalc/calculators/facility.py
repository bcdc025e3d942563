"""Facility calculators: power, racks and cooling of a GPU count; energy, cost and emissions of a run."""

from __future__ import annotations

from typing import Any, Mapping

from mlcalc import _check, charts, facility
from mlcalc.calc import Calc, Control, Presets, Table, View, choice, register
from mlcalc.calculators._common import finite, fixed, money, sig

CUSTOM = "custom"


def _system_control(default: str = "DGX H100") -> Control:
    return choice("system", "System", [(f"{s.key} ({s.gpus} GPUs, {s.power_kw:g} kW)", s.key)
                                       for s in facility.systems().values()], default)


def _pue_control(default: float = 1.58) -> Control:
    names = "; ".join(f"{k}: {v:g}" for k, v in facility.pue_presets().items())
    return Control("pue", "PUE", "number", default, step=0.05, help=f"facility power / IT power ({names})")


def _power_parts(c: facility.ClusterPower) -> list[tuple[str, float]]:
    return [("GPU systems", c.servers_kw), ("storage, switches, optics", c.it_kw - c.servers_kw),
            ("cooling and power losses (PUE)", c.facility_kw - c.it_kw)]


# --------------------------------------------------------------------------- cluster power and racks


def _system_cooling() -> dict[str, dict[str, str]]:
    """Picking a system sets the cooling it ships for (a rack-scale NVL72 is liquid-cooled only)."""
    return {k: {"cooling": s.cooling} for k, s in facility.systems().items()}


def _cluster_compute(v: Mapping[str, Any]) -> facility.ClusterPower:
    return facility.cluster_power(_check.positive_int("GPUs", v["n_gpus"], facility.MAX_GPUS), v["system"],
                                  v["pue"], v["cooling"], v["other"])


def _cluster_view(c: facility.ClusterPower, v: Mapping[str, Any]) -> View:
    s = facility.system(v["system"])
    text = (f"{c.n_systems:,} x {s.key} ({c.n_gpus:,} GPUs): IT {sig(c.it_kw / 1000, 4)} MW, "
            f"facility {sig(c.facility_kw / 1000, 4)} MW at PUE {float(v['pue']):g}\n"
            f"{c.racks:,} racks of {c.systems_per_rack} system(s), {c.rack_kw:,.1f} kW per rack "
            f"({c.cooling} cooling, limit {c.cooling_limit_kw:g} kW); "
            f"{c.facility_kw * 1000 / c.n_gpus:,.0f} W per GPU at the meter")
    parts = _power_parts(c)
    table = Table(("part", "MW", "share"), tuple((name, kw / 1000, f"{kw / c.facility_kw:.0%}") for name, kw in parts))
    rows = [{"bar": "facility", "part": name, "mw": kw / 1000, "order": i} for i, (name, kw) in enumerate(parts)]
    chart = charts.parts(rows, title=f"{c.facility_kw / 1000:,.1f} MW at the meter for {c.n_gpus:,} GPUs",
                         value="mw", value_title="MW (1e6 W)", colors=charts.PALETTE[:3], tip_title="MW")
    return View(text=text, table=table, chart=chart)


CLUSTER = register(Calc(
    key="facility.cluster",
    widget="ClusterPowerWidget",
    title="From a GPU count to IT and facility power, racks and their density (air or liquid cooling).",
    controls=(
        Control("n_gpus", "GPUs", "int", 16384),
        _system_control(),
        choice("cooling", "Cooling", list(facility.COOLING), "air", kind="toggle"),
        _pue_control(),
        Control("other", "Share outside GPU servers", "slider", 0.10, min=0.0, max=0.5, step=0.01,
                help="storage, switches and optics as a share of all IT power (SemiAnalysis: ~10%)"),
    ),
    compute=_cluster_compute,
    view=_cluster_view,
    presets=(Presets("system", _system_cooling()),),
    notes="System power is each vendor's maximum; a rack holds as many systems as its cooling removes.",
))


# --------------------------------------------------------------------------- energy, cost, emissions


def _price_fills() -> dict[str, dict[str, float]]:
    return {k: {"usd_per_kwh": p} for k, p in facility.price_presets().items()}


def _grid_fills() -> dict[str, dict[str, float]]:
    return {k: {"kg_per_kwh": g} for k, g in facility.intensity_presets().items()}


def _dated(table: str, key: str) -> str:
    return f"{key} [{facility.data()[table][key]['date']}]"


def _energy_compute(v: Mapping[str, Any]) -> dict[str, Any]:
    n = _check.positive_int("GPUs", v["n_gpus"], facility.MAX_GPUS)
    days = finite("the days", _check.positive("days", v["days"], 36500))
    s = facility.system(v["system"])
    t = facility.training_facility(n, days, s.key, v["pue"], v["usd_per_kwh"], v["kg_per_kwh"],
                                   other_it_share=v["other"])
    year = facility.yearly_energy(t.power.it_kw, v["pue"], v["usd_per_kwh"], v["kg_per_kwh"])
    return {"run": t, "year": year, "gpu_hours": n * days * 24.0}


def _energy_view(r: Mapping[str, Any], v: Mapping[str, Any]) -> View:
    t, y = r["run"], r["year"]
    e = t.energy
    text = (f"{r['gpu_hours'] / 1e6:,.3g} M GPU-hours at {sig(t.power.it_kw / 1000, 4)} MW IT, "
            f"{sig(t.power.facility_kw / 1000, 4)} MW at the meter\n"
            f"the run: {e.facility_kwh / 1000:,.0f} MWh, {money(e.cost_usd)} at ${float(v['usd_per_kwh']):g}/kWh, "
            f"{e.emissions_t:,.0f} t CO2e at {float(v['kg_per_kwh']) * 1000:g} g/kWh\n"
            f"a year at full load: {fixed(y.facility_kwh / 1e6)} GWh, {money(y.cost_usd)}, {y.emissions_t:,.0f} t CO2e")
    table = Table(("", "IT (MWh)", "facility (MWh)", "cost (USD)", "t CO2e"),
                  (("this run", e.it_kwh / 1000, e.facility_kwh / 1000, money(e.cost_usd), e.emissions_t),
                   ("one year", y.it_kwh / 1000, y.facility_kwh / 1000, money(y.cost_usd), y.emissions_t)))
    return View(text=text, table=table)


ENERGY = register(Calc(
    key="facility.energy",
    widget="RunEnergyWidget",
    title="Energy of a training run and of a year: MWh, the electricity bill at a dated price, emissions.",
    controls=(
        Control("n_gpus", "GPUs", "int", 16384),
        _system_control(),
        Control("days", "Days", "number", 54.0, step=1.0, help="wall-clock days the cluster runs"),
        _pue_control(),
        Control("other", "Share outside GPU servers", "slider", 0.10, min=0.0, max=0.5, step=0.01,
                help="storage, switches and optics as a share of all IT power"),
        choice("price", "Price", [(_dated("electricity_price", k), k) for k in facility.price_presets()]
               + [(CUSTOM, CUSTOM)], "US industrial, SemiAnalysis 2024", width="100%"),
        Control("usd_per_kwh", "USD per kWh", "number", facility.price_presets()["US industrial, SemiAnalysis 2024"],
                step=0.01),
        choice("grid", "Grid", [(_dated("grid_intensity", k), k) for k in facility.intensity_presets()]
               + [(CUSTOM, CUSTOM)], "Microsoft datacenter (GPT-3, Patterson et al.)", width="100%"),
        Control("kg_per_kwh", "kg CO2e per kWh", "number",
                facility.intensity_presets()["Microsoft datacenter (GPT-3, Patterson et al.)"], step=0.01,
                help="location-based grid intensity"),
    ),
    compute=_energy_compute,
    view=_energy_view,
    presets=(Presets("price", _price_fills(), custom=CUSTOM), Presets("grid", _grid_fills(), custom=CUSTOM)),
    notes="The cluster is counted at its systems' maximum power for every hour: an upper bound.",
))
