"""The facility: power, racks and cooling, energy, electricity cost and emissions of a GPU cluster.

From a GPU count and a system (a DGX-class node or a rack-scale NVL72) to the IT power, the
facility power through the PUE, the racks the cooling can hold, the energy of a run or a year, its
cost at a dated price per kWh and its emissions at a stated grid intensity. Published figures (the
systems' maximum power, PUEs, prices, intensities, and the runs and clusters the model is checked
against) live in ``data/facility.json``, each with its source and date.

Units inside: W and kW as named (1 kW = 1000 W), hours, kWh (1 MWh = 1000 kWh), kg and tonnes of
CO2-equivalent (1 t = 1000 kg), US dollars.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from types import MappingProxyType
from typing import Any, Mapping, NamedTuple

from mlcalc import _check, units

HOURS_PER_YEAR = units.HOURS_PER_365_DAY_YEAR  # 365 days x 24 h (mlcalc.units)
#: Most GPUs the calculators accept (a stated bound: ten million, far above any cluster built).
MAX_GPUS = 10_000_000
COOLING = ("air", "liquid")
#: Largest share of IT power outside the GPU servers the functions accept (a GPU cluster is mostly GPUs).
MAX_OTHER_IT_SHARE = 0.9
# Highest PUE accepted: above the worst industry average on record, 2.5 in 2007 (Andy Lawrence, Uptime
# Institute, quoted in Upsite's "Why has PUE remained flat for so long after years of progress?", 2023-09-13;
# 1.58 in 2023). A facility spending twice its IT power again on cooling and conversion is outside any survey.
MAX_PUE = 3.0


# --------------------------------------------------------------------------- data


@lru_cache(maxsize=None)
def data() -> Mapping[str, Any]:
    """The published facility figures of ``data/facility.json`` (read-only view of the parsed file)."""
    raw = json.loads(resources.files("mlcalc.data").joinpath("facility.json").read_text())
    return MappingProxyType(raw)


def _table(name: str) -> dict[str, Mapping[str, Any]]:
    return {k: v for k, v in data()[name].items() if k != "fields"}


@dataclass(frozen=True)
class System:
    """A unit of GPU hardware that draws power as one: a node or a rack-scale system."""

    key: str  # name, e.g. "DGX H100"
    gpus: int  # accelerators in one system
    power_kw: float  # the system's maximum power, kW (datasheet: GPUs, CPUs, NICs, fans, supply losses)
    board_power_w: float  # one GPU's maximum board power, W
    rack_scale: bool  # True where one system fills a rack (NVL72)
    cooling: str  # what it ships for: "air" or "liquid"
    date: str  # when the figure was published
    source: str  # where it comes from

    @property
    def w_per_gpu(self) -> float:
        """The system's power per GPU, W: the GPU's share of everything in the box."""
        return 1000.0 * self.power_kw / self.gpus


@lru_cache(maxsize=None)
def systems() -> Mapping[str, System]:
    """Every system of the data file, by name, in file order."""
    return MappingProxyType({k: System(k, int(v["gpus"]), float(v["power_kw"]), float(v["board_power_w"]),
                                       bool(v["rack_scale"]), v["cooling"], v["date"], v["source"])
                             for k, v in _table("systems").items()})


def system(key: str) -> System:
    """The system named ``key`` (ValueError listing the known names otherwise)."""
    _check.choice("system", key, systems())
    return systems()[key]


def cooling_limit_kw(cooling: str) -> float:
    """Most kW per rack the cooling method removes in practice (``data/facility.json`` ``cooling``)."""
    _check.choice("cooling", cooling, COOLING)
    return float(data()["cooling"][cooling]["max_rack_kw"])


def pue_presets() -> Mapping[str, float]:
    """Published PUEs by name (facility power / IT power)."""
    return MappingProxyType({k: float(v["value"]) for k, v in _table("pue").items()})


def price_presets() -> Mapping[str, float]:
    """Electricity prices by name, USD per kWh, each with its date in the data file."""
    return MappingProxyType({k: float(v["usd_per_kwh"]) for k, v in _table("electricity_price").items()})


def intensity_presets() -> Mapping[str, float]:
    """Grid carbon intensities by name, kg CO2e per kWh, each with its date in the data file."""
    return MappingProxyType({k: float(v["kg_per_kwh"]) for k, v in _table("grid_intensity").items()})


def runs() -> Mapping[str, Mapping[str, Any]]:
    """Published training runs with their energy and emissions (the checked cases)."""
    return MappingProxyType(_table("runs"))


def clusters() -> Mapping[str, Mapping[str, Any]]:
    """Published cluster power figures (the checked cases)."""
    return MappingProxyType(_table("clusters"))


# --------------------------------------------------------------------------- power


def it_power_kw(n_gpus: int, w_per_gpu: float, other_it_share: float = 0.10) -> float:
    """IT power of a cluster: the GPU servers, plus storage, switches and optics.

    ``P_IT = n_gpus * w_per_gpu / (1 - other_it_share) / 1000``

    Parameters
    ----------
    n_gpus : accelerators in the cluster.
    w_per_gpu : power of the GPU servers per GPU, W: the GPU and its share of the CPUs, NICs, fans
        and power supplies (a system's maximum power over its GPU count).
    other_it_share : share of *all* IT power drawn outside the GPU servers (storage servers, network
        switches, optics); SemiAnalysis puts it at about 10% for a 100k-H100 cluster.
    """
    n = _check.positive_int("n_gpus", n_gpus, MAX_GPUS)
    w = _check.positive("w_per_gpu", w_per_gpu)
    share = _check.in_range("other_it_share", other_it_share, 0.0, MAX_OTHER_IT_SHARE)
    return _check.positive_result("it_power_kw", n * w / (1.0 - share) / 1000.0)


def facility_power_kw(it_kw: float, pue: float) -> float:
    """Power the facility draws from the grid: ``P_facility = PUE * P_IT`` (PUE >= 1)."""
    it = _check.positive("it_kw", it_kw)
    p = _check.at_least("pue", pue, 1.0, MAX_PUE)
    return _check.positive_result("facility_power_kw", it * p)


class ClusterPower(NamedTuple):
    """What a GPU count asks of a building: power, racks and their density."""

    n_gpus: int  # accelerators asked for
    n_systems: int  # systems (nodes or rack-scale systems) that hold them: ceil(n_gpus / gpus per system)
    servers_kw: float  # the systems' maximum power together, kW
    it_kw: float  # servers plus storage, switches and optics, kW
    facility_kw: float  # it_kw x PUE, kW: what the grid connection must deliver
    systems_per_rack: int  # systems one rack holds within its cooling limit
    racks: int  # racks of GPU systems: ceil(n_systems / systems_per_rack)
    rack_kw: float  # power of one full rack of GPU systems, kW
    cooling: str  # "air" or "liquid"
    cooling_limit_kw: float  # the most kW per rack that cooling removes


def cluster_power(n_gpus: int, system_key: str = "DGX H100", pue: float = 1.58, cooling: str = "air",
                  other_it_share: float = 0.10, rack_limit_kw: float | None = None) -> ClusterPower:
    """Power and racks of ``n_gpus`` accelerators in systems of ``system_key``.

    ``systems = ceil(n / g)``; ``P_IT = systems * P_system / (1 - other_it_share)``;
    ``P_facility = PUE * P_IT``; a rack holds ``floor(limit / P_system)`` systems, or one rack-scale
    system, and the rack limit is the cooling method's (``cooling_limit_kw``) unless given.

    A rack-scale system (NVL72) is one rack and ships liquid-cooled: asking for air refuses, as does a
    node whose power exceeds the rack limit.

    DGX H100 datasheet: 10.2 kW at most per 8-GPU system, so 1,024 GPUs draw 128 x 10.2 kW of IT power:

    >>> cluster_power(1024, "DGX H100", pue=1.0, other_it_share=0.0).it_kw
    1305.6
    """
    n = _check.positive_int("n_gpus", n_gpus, MAX_GPUS)
    s = system(system_key)
    _check.choice("cooling", cooling, COOLING)
    limit = cooling_limit_kw(cooling) if rack_limit_kw is None else _check.positive("rack_limit_kw", rack_limit_kw)
    n_sys = math.ceil(n / s.gpus)
    # every system counted whole: a partly filled node still draws its fans, CPUs and NICs
    it = it_power_kw(n_sys * s.gpus, s.w_per_gpu, other_it_share)
    if s.rack_scale:
        if cooling != s.cooling:
            raise ValueError(f"cooling={cooling!r} is not allowed for {s.key}: it is a {s.power_kw:g} kW rack "
                             f"that ships {s.cooling}-cooled")
        if s.power_kw > limit:
            raise ValueError(f"rack_limit_kw={limit!r} is not allowed for {s.key}: one rack draws {s.power_kw:g} kW")
        per_rack = 1
    else:
        per_rack = int(limit // s.power_kw)
        if per_rack < 1:
            raise ValueError(f"rack_limit_kw={limit!r} is not allowed for {s.key}: one system draws "
                             f"{s.power_kw:g} kW, more than a rack of {limit:g} kW removes")
    racks = math.ceil(n_sys / per_rack)
    return _check.fields("cluster_power", ClusterPower(
        n, n_sys, n_sys * s.power_kw, it, facility_power_kw(it, pue), per_rack, racks,
        min(per_rack, n_sys) * s.power_kw, cooling, limit))


def gpus_for_power(facility_kw: float, system_key: str = "DGX H100", pue: float = 1.58,
                   other_it_share: float = 0.10) -> int:
    """Most GPUs (in whole systems) a grid connection of ``facility_kw`` powers: the inverse of the above.

    ``systems = floor(facility_kw / PUE * (1 - other_it_share) / P_system)``, times the GPUs per system.
    """
    fac = _check.positive("facility_kw", facility_kw)
    p = _check.at_least("pue", pue, 1.0, MAX_PUE)
    share = _check.in_range("other_it_share", other_it_share, 0.0, MAX_OTHER_IT_SHARE)
    s = system(system_key)
    n_sys = math.floor(_check.result("systems", fac / p * (1.0 - share) / s.power_kw))
    return min(n_sys * s.gpus, MAX_GPUS)


# --------------------------------------------------------------------------- energy, cost, emissions


class Energy(NamedTuple):
    """Energy of a run or a period, what it costs and what it emits."""

    it_kwh: float  # energy the IT equipment draws, kWh
    facility_kwh: float  # it_kwh x PUE: what the meter counts, kWh
    cost_usd: float  # facility_kwh x price
    emissions_t: float  # facility_kwh x grid intensity / 1000: tonnes CO2e (location-based)


def energy(it_kw: float, hours: float, pue: float = 1.0, usd_per_kwh: float = 0.0,
           kg_per_kwh: float = 0.0) -> Energy:
    """Energy, cost and emissions of an IT load of ``it_kw`` held for ``hours``.

    ``E_IT = P_IT * hours``; ``E = PUE * E_IT``; ``cost = E * price``; ``CO2e = E * intensity``.

    The load is taken at ``it_kw`` throughout: with a system's maximum power it is an upper bound
    (training draws close to it; an idle cluster draws less).

    References
    ----------
    Patterson et al., "Carbon Emissions and Large Neural Network Training" (2021): energy = processor
    hours x average power per processor x PUE; CO2e = energy x kgCO2e/kWh (their Table 4).
    """
    it = _check.non_negative("it_kw", it_kw)
    h = _check.non_negative("hours", hours)
    p = _check.at_least("pue", pue, 1.0, MAX_PUE)
    price = _check.non_negative("usd_per_kwh", usd_per_kwh)
    kg = _check.non_negative("kg_per_kwh", kg_per_kwh)
    it_kwh = _check.result("it_kwh", it * h)
    fac = _check.result("facility_kwh", it_kwh * p)
    return _check.fields("energy", Energy(it_kwh, fac, _check.result("cost_usd", fac * price),
                                          _check.result("emissions_t", fac * kg / 1000.0)))


def run_energy(gpu_hours: float, w_per_gpu: float, pue: float = 1.0, usd_per_kwh: float = 0.0,
               kg_per_kwh: float = 0.0) -> Energy:
    """Energy of a training run from its GPU-hours: ``E = gpu_hours * w_per_gpu / 1000 * PUE``.

    ``w_per_gpu`` is whatever power per GPU the count should hold: the board's TDP (what BLOOM's and
    Llama's reports count), or a system's power per GPU (hosts included), or a measured average.
    """
    gh = _check.non_negative("gpu_hours", gpu_hours)
    w = _check.non_negative("w_per_gpu", w_per_gpu)
    return energy(w / 1000.0, gh, pue, usd_per_kwh, kg_per_kwh)


def yearly_energy(it_kw: float, pue: float = 1.0, usd_per_kwh: float = 0.0, kg_per_kwh: float = 0.0,
                  load: float = 1.0) -> Energy:
    """Energy of one year (8,760 h) of an IT load of ``it_kw`` running at ``load`` of it on average."""
    f = _check.fraction("load", load)
    return energy(_check.non_negative("it_kw", it_kw) * f, HOURS_PER_YEAR, pue, usd_per_kwh, kg_per_kwh)


def implied_intensity(emissions_t: float, kwh: float) -> float:
    """Grid intensity (kg CO2e per kWh) that joins a published energy and a published emission."""
    t = _check.non_negative("emissions_t", emissions_t)
    e = _check.positive("kwh", kwh)
    return _check.result("kg_per_kwh", 1000.0 * t / e)


class Checked(NamedTuple):
    """One published run recomputed: the model's figure beside the source's."""

    name: str  # the run
    model_mwh: float  # energy the model gives from the source's own inputs, MWh
    published_mwh: float | None  # the source's energy, MWh (None where it gives none)
    model_t: float | None  # emissions the model gives, t CO2e (None where the source states no intensity)
    published_t: float | None  # the source's emissions, t CO2e


def checked_runs() -> tuple[Checked, ...]:
    """Every published run of the data file recomputed from its GPU-hours, power, PUE and intensity."""
    out = []
    for name, r in runs().items():
        kg = r["kg_per_kwh"]
        e = run_energy(r["gpu_hours"], r["power_w"], r["pue"], 0.0, kg or 0.0)
        out.append(Checked(name, e.facility_kwh / 1000.0, r["published_mwh"], e.emissions_t if kg else None,
                           r["published_t"]))
    return tuple(out)


class TrainingFacility(NamedTuple):
    """What a training run of ``n_gpus`` for ``days`` asks of the facility (for the planner)."""

    power: ClusterPower  # power and racks while it runs
    energy: Energy  # energy, cost and emissions over its days


def training_facility(n_gpus: int, days: float, system_key: str = "DGX H100", pue: float = 1.58,
                      usd_per_kwh: float = 0.10, kg_per_kwh: float = 0.0, cooling: str | None = None,
                      other_it_share: float = 0.10) -> TrainingFacility:
    """Power, racks, energy, cost and emissions of ``n_gpus`` training for ``days`` (wall clock).

    The cluster runs at its systems' maximum power for the whole time (an upper bound: a training step
    keeps GPUs near their power limit; restarts and checkpoints draw less). ``cooling`` defaults to
    what the system ships for.
    """
    d = _check.non_negative("days", days)
    s = system(system_key)
    c = cluster_power(n_gpus, system_key, pue, cooling or s.cooling, other_it_share)
    return TrainingFacility(c, energy(c.it_kw, 24.0 * d, pue, usd_per_kwh, kg_per_kwh))


__all__ = ["COOLING", "HOURS_PER_YEAR", "MAX_GPUS", "Checked", "ClusterPower", "Energy", "System", "TrainingFacility",
           "checked_runs", "cluster_power", "clusters", "cooling_limit_kw", "data", "energy", "facility_power_kw", "gpus_for_power",
           "implied_intensity", "intensity_presets", "it_power_kw", "price_presets", "pue_presets", "run_energy",
           "runs", "system", "systems", "training_facility", "yearly_energy"]


# Object parameters (a ModelConfig, a Fabric, a list of offers...) are checked by type before each call.
_check.guard(globals())
