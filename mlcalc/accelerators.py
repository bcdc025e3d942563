"""The accelerator catalogue: datasheet numbers, each with its source, loaded from ``data/accelerators.json``."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from types import MappingProxyType
from typing import Any, Mapping, NamedTuple

from mlcalc import _check


@dataclass(frozen=True)
class Accelerator:
    """One accelerator's datasheet figures (units as in the field names)."""

    key: str  # short name used across the book, e.g. "H100-SXM"
    vendor: str  # "NVIDIA", "AMD", ...
    name: str  # full product name
    memory_gb: float  # device memory, GB = 1e9 bytes, as the datasheet states it
    memory_bandwidth_tbps: float  # peak device-memory bandwidth, TB/s = 1e12 bytes/s
    dense_tflops: Mapping[str, float]  # dense (not sparse) peak TFLOPS by dtype
    sources: Mapping[str, str]  # field name -> URL of the document it comes from
    notes: str = ""  # how the numbers were read (e.g. dense = sparse / 2)
    extra: Mapping[str, object] = field(default_factory=dict)  # fields later chapters add
    sparse_tflops: Mapping[str, float] = field(default_factory=dict)  # the vendor's 2:4-sparse figures, TFLOPS by dtype (never a peak)

    @property
    def memory_bytes(self) -> float:
        """Device memory a fit may use, in bytes: the measured total where the book measured the card, else
        the datasheet figure read as GiB (``memory_capacity_bytes``; :attr:`memory_capacity_source` says which)."""
        cap = self.extra.get("memory_capacity_bytes")
        return float(cap) if cap is not None else self.datasheet_memory_bytes  # type: ignore[arg-type]

    @property
    def datasheet_memory_bytes(self) -> float:
        """The datasheet's memory figure as decimal bytes: ``memory_gb x 1e9``."""
        return self.memory_gb * 1e9

    @property
    def memory_capacity_source(self) -> str:
        """Where :attr:`memory_bytes` comes from: "measured: ..." or "datasheet: ..."."""
        return str(self.extra.get("memory_capacity_source", "datasheet: memory_gb x 1e9"))

    def capacity_text(self) -> str:
        """:attr:`memory_bytes` as a fit shows it, saying why it is not the datasheet's figure where it differs:
        "85.0 GB (the bytes torch reports; datasheet: 80 GB)", "85.9 GB (the datasheet's 80 GB read as GiB)"."""
        gb = f"{self.memory_bytes / 1e9:,.1f} GB"
        if abs(self.memory_bytes - self.datasheet_memory_bytes) < 0.05e9:
            return gb
        if self.memory_capacity_source.startswith("measured"):
            return f"{gb} (the bytes torch reports; datasheet: {self.memory_gb:g} GB)"
        return f"{gb} (the datasheet's {self.memory_gb:g} GB read as GiB)"

    @property
    def memory_bandwidth_bytes_per_s(self) -> float:
        """Peak device-memory bandwidth in bytes/s."""
        return self.memory_bandwidth_tbps * 1e12

    def peak_flops(self, dtype: str = "bf16") -> float:
        """Dense peak throughput for ``dtype`` in FLOP/s (ValueError if the chip has no such figure)."""
        _check.choice("dtype", dtype, self.dense_tflops)
        return self.dense_tflops[dtype] * 1e12

    @property
    def scale_up_bytes_per_s(self) -> float | None:
        """Scale-up link bandwidth (NVLink, Infinity Fabric, ICI...) in bytes/s, ONE direction; None if unknown."""
        value = self.extra.get("scale_up_gbps_per_direction")
        return None if value is None else float(value) * 1e9  # type: ignore[arg-type]

    @property
    def status(self) -> str:
        """"shipping", or "announced" for a part known only from a vendor's announcement (kept out of defaults)."""
        return str(self.extra.get("status", "shipping"))

    @property
    def sm_count(self) -> int | None:
        """Streaming multiprocessors (NVIDIA GPUs only; None for others)."""
        value = self.extra.get("sm_count")
        return None if value is None else int(value)  # type: ignore[call-overload]

    def has(self, dtype: str) -> bool:
        """Whether the datasheet gives a dense figure for ``dtype``."""
        return dtype in self.dense_tflops

    def sparse_flops(self, dtype: str = "bf16") -> float:
        """The vendor's figure WITH 2:4 structured sparsity for ``dtype``, FLOP/s (ValueError if none is printed).

        Not a peak for dense matmuls: ``peak_flops`` is. Kept so a reader can decode a headline.
        """
        _check.choice("dtype (with a sparse figure)", dtype, self.sparse_tflops)
        return self.sparse_tflops[dtype] * 1e12


_CORE = {"vendor", "name", "memory_gb", "memory_bandwidth_tbps", "dense_tflops", "sources", "notes", "sparse_tflops"}


STATUSES = ("shipping", "announced")


def catalogue(include_announced: bool = False) -> Mapping[str, Accelerator]:
    """The accelerators of the data file, by key, in file order: the shipping ones.

    Parts a vendor has only announced (``status: "announced"``: figures from a keynote, not a
    datasheet) are kept out of every table and default; ``include_announced=True`` adds them.
    """
    if include_announced:
        return _all()
    return _shipping()


@lru_cache(maxsize=None)
def _shipping() -> Mapping[str, Accelerator]:
    return MappingProxyType({k: a for k, a in _all().items() if a.status == "shipping"})


@lru_cache(maxsize=None)
def _all() -> Mapping[str, Accelerator]:
    """Every entry of the data file, announced ones included."""
    raw = json.loads(resources.files("mlcalc.data").joinpath("accelerators.json").read_text())
    out: dict[str, Accelerator] = {}
    for key, entry in raw["accelerators"].items():
        _check.choice(f"status of {key}", entry.get("status", "shipping"), STATUSES)
        out[key] = Accelerator(
            key=key,
            vendor=entry["vendor"],
            name=entry["name"],
            memory_gb=float(entry["memory_gb"]),
            memory_bandwidth_tbps=float(entry["memory_bandwidth_tbps"]),
            dense_tflops=MappingProxyType({k: float(v) for k, v in entry["dense_tflops"].items()}),
            sources=MappingProxyType(dict(entry["sources"])),
            notes=entry.get("notes", ""),
            extra=MappingProxyType({k: v for k, v in entry.items() if k not in _CORE}),
            sparse_tflops=MappingProxyType({k: float(v) for k, v in entry.get("sparse_tflops", {}).items()}),
        )
    return MappingProxyType(out)


def spec(key: str) -> Accelerator:
    """The catalogue entry named ``key``, announced parts included (ValueError listing the known keys otherwise)."""
    _check.choice("accelerator", key, _all())
    return _all()[key]


def training_dtype(key: str) -> str:
    """The dtype mixed-precision training runs in on accelerator ``key``: bf16 where the chip has it,
    else fp16 with loss scaling (the V100's, Micikevicius et al. 2018, "Mixed Precision Training")."""
    return "bf16" if "bf16" in spec(key).dense_tflops else "fp16"


def peak_flops(key: str, dtype: str = "bf16") -> float:
    """Dense datasheet peak of accelerator ``key`` for ``dtype``, in FLOP/s.

    NVIDIA H100 Tensor Core GPU datasheet: H100 SXM, BF16 1,979 TFLOPS with sparsity, half of it dense:

    >>> peak_flops("H100-SXM") / 1e12
    989.5
    """
    return spec(key).peak_flops(dtype)


# Dtypes in the order the tables show them (widest first). int8 figures are TOPS; fp6 and fp4 are the
# vendors' 6- and 4-bit tensor formats (NVIDIA FP6 / NVFP4, AMD MXFP6 / MXFP4).
DTYPES: tuple[str, ...] = ("fp32", "tf32", "bf16", "fp16", "fp8", "int8", "fp6", "fp4")


def rate_unit(dtype: str) -> str:
    """The unit of a peak rate in ``dtype`` as datasheets print it: integer math is TOPS, floating point TFLOPS."""
    return "TOPS" if dtype.startswith("int") else "TFLOPS"


def with_dtype(dtype: str) -> list[Accelerator]:
    """Catalogue entries that have a dense figure for ``dtype``, in file order."""
    _check.choice("dtype", dtype, DTYPES)
    return [acc for acc in catalogue().values() if acc.has(dtype)]


def theoretical_peak_flops(clock_hz: float, n_units: int, fma_per_unit_per_clock: float) -> float:
    """Peak FLOP/s from first principles: clock x units x FMA per unit per clock x 2.

    One fused multiply-add (FMA) counts as two floating-point operations.

    Parameters
    ----------
    clock_hz : the compute clock in Hz (the boost clock a vendor used for its peak).
    n_units : how many compute units run in parallel (SMs, tensor cores, Matrix Cores, MMEs).
    fma_per_unit_per_clock : FMA each unit completes per clock for the dtype in question.

    References
    ----------
    NVIDIA, GPU Performance Background User's Guide (A100: 108 SMs at 1.41 GHz give 312 fp16
    TFLOPS); S. Bekman, ML Engineering Open Book, "How to calculate theoretical TFLOPS".
    """
    clock_hz = _check.positive("clock_hz", clock_hz)
    n_units = _check.positive_int("n_units", n_units)
    fma = _check.positive("fma_per_unit_per_clock", fma_per_unit_per_clock)
    return _check.result("peak FLOP/s", clock_hz * n_units * fma * 2.0)


@dataclass(frozen=True)
class DtypeRecipe:
    """How one dtype reaches its peak: units x FMA per unit per clock at a clock (see ``PeakRecipe``)."""

    dtype: str  # the dtype
    clock_mhz: float  # the clock this dtype's datasheet figure assumes, MHz
    units: int  # compute units that run it (SMs, Matrix Cores, CUs, MMEs, MXUs)
    unit_name: str  # what the units are
    fma_per_unit_per_clock: float  # FMA per unit per clock (int8: multiply-adds)
    note: str  # where the figures come from

    def flops(self, clock_mhz: float | None = None) -> float:
        """Peak FLOP/s (int8: OP/s) at the recipe's clock or at ``clock_mhz``."""
        clock = self.clock_mhz if clock_mhz is None else _check.positive("clock_mhz", clock_mhz, 10_000)
        return theoretical_peak_flops(clock * 1e6, self.units, self.fma_per_unit_per_clock)


@dataclass(frozen=True)
class PeakRecipe:
    """The ingredients of one accelerator's datasheet peak, as stored in its ``peak_recipe``."""

    key: str  # catalogue key
    dtype: str  # the dtype the recipe reproduces
    clock_mhz: float  # compute clock in MHz
    units: int  # number of compute units
    unit_name: str  # what the units are ("SMs", "Matrix Cores", "MMEs")
    fma_per_unit_per_clock: float  # FMA per unit per clock for ``dtype``
    source: str  # URL of the clock and unit figures
    note: str  # how the figures were read
    per_dtype: Mapping[str, DtypeRecipe] = field(default_factory=dict)  # every dtype the recipe covers, ``dtype`` included

    def flops(self, clock_mhz: float | None = None) -> float:
        """Peak FLOP/s by the recipe, at its own clock or at ``clock_mhz`` (e.g. a throttled clock)."""
        clock = self.clock_mhz if clock_mhz is None else _check.positive("clock_mhz", clock_mhz)
        return theoretical_peak_flops(clock * 1e6, self.units, self.fma_per_unit_per_clock)

    def flops_for(self, dtype: str, clock_mhz: float | None = None) -> float:
        """Peak FLOP/s of ``dtype`` at its own clock or at ``clock_mhz`` (ValueError for a dtype the recipe lacks)."""
        _check.choice("dtype (with a peak recipe)", dtype, self.per_dtype)
        return self.per_dtype[dtype].flops(clock_mhz)


def recipes() -> Mapping[str, PeakRecipe]:
    """Peak recipes of the catalogue entries that have one, by key."""
    return _recipes()


@lru_cache(maxsize=None)  # read once
def _recipes() -> Mapping[str, PeakRecipe]:
    out: dict[str, PeakRecipe] = {}
    for key, acc in catalogue().items():
        raw = acc.extra.get("peak_recipe")
        if isinstance(raw, Mapping):
            clock, units, unit_name = float(raw["clock_mhz"]), int(raw["units"]), str(raw["unit_name"])
            base = DtypeRecipe(str(raw["dtype"]), clock, units, unit_name, float(raw["fma_per_unit_per_clock"]),
                               str(raw.get("note", "")))
            per: dict[str, DtypeRecipe] = {base.dtype: base}
            if base.dtype in ("bf16", "fp16") and acc.has("bf16") and acc.has("fp16") \
                    and acc.dense_tflops["bf16"] == acc.dense_tflops["fp16"]:
                other = "fp16" if base.dtype == "bf16" else "bf16"
                per[other] = DtypeRecipe(other, clock, units, unit_name, base.fma_per_unit_per_clock, base.note)
            for dtype, d in dict(raw.get("per_dtype", {})).items():
                per[dtype] = DtypeRecipe(dtype, float(d.get("clock_mhz", clock)), int(d.get("units", units)),
                                         str(d.get("unit_name", unit_name)), float(d["fma_per_unit_per_clock"]),
                                         str(d.get("note", "")))
            out[key] = PeakRecipe(
                key=key,
                dtype=base.dtype,
                clock_mhz=clock,
                units=units,
                unit_name=unit_name,
                fma_per_unit_per_clock=base.fma_per_unit_per_clock,
                source=str(raw["source"]),
                note=base.note,
                per_dtype=MappingProxyType(per),
            )
    return MappingProxyType(out)


def _recipe_of(key: str, what: str, known: Mapping[str, Any]) -> Any:
    """``known[key]`` for a catalogue accelerator (ValueError listing those that have ``what``)."""
    spec(key)
    _check.choice(f"accelerator (with {what})", key, known)
    return known[key]


def recipe(key: str) -> PeakRecipe:
    """The peak recipe of accelerator ``key`` (ValueError listing those that have one)."""
    return _recipe_of(key, "a peak recipe", recipes())


def peak_at_clock(key: str, dtype: str = "bf16", clock_mhz: float | None = None) -> float:
    """Peak FLOP/s of ``key`` for ``dtype`` from cores x FMA per core per clock x 2 x clock.

    At the clock the datasheet's figure assumes, or at ``clock_mhz`` (e.g. a clock measured under load).
    """
    return recipe(key).flops_for(dtype, clock_mhz)


# --------------------------------------------------------------------------- sparse headlines


class SparseRow(NamedTuple):
    """One dtype of a chip: the vendor's sparse headline beside the dense peak."""

    dtype: str  # dtype
    dense_tflops: float | None  # dense peak, TFLOPS (None if the vendor prints none)
    sparse_tflops: float | None  # the vendor's 2:4-sparse figure, TFLOPS (None if it prints none)
    ratio: float | None  # sparse / dense (2 for a plain 2:4 doubling; None where either is missing)


def sparsity_rows(key: str) -> list[SparseRow]:
    """Dense and sparse figures of accelerator ``key`` side by side, in ``DTYPES`` order."""
    acc = spec(key)
    rows = []
    for dtype in DTYPES:
        d, sp = acc.dense_tflops.get(dtype), acc.sparse_tflops.get(dtype)
        if d is not None or sp is not None:
            rows.append(SparseRow(dtype, d, sp, None if d is None or sp is None else sp / d))
    return rows


def decode_headline(key: str, dtype: str, headline_tflops: float, rel: float = 0.01) -> str:
    """Which column a vendor's headline figure comes from: "dense", "sparse" or "neither".

    ``rel`` is the relative tolerance for the vendor's rounding (H100's 1,979 is 2 x 989.5 rounded).
    """
    acc = spec(key)
    _check.choice("dtype", dtype, DTYPES)
    x = _check.positive("headline_tflops", headline_tflops, 1e9)
    rel = _check.in_range("rel", rel, 0.0, 0.1)
    if dtype in acc.dense_tflops and abs(x - acc.dense_tflops[dtype]) <= rel * acc.dense_tflops[dtype]:
        return "dense"
    if dtype in acc.sparse_tflops and abs(x - acc.sparse_tflops[dtype]) <= rel * acc.sparse_tflops[dtype]:
        return "sparse"
    return "neither"


# --------------------------------------------------------------------------- memory bandwidth from the interface


def memory_bandwidth_from_bus(bus_width_bits: int, memory_clock_mhz: float, transfers_per_clock: int = 2) -> float:
    """Peak memory bandwidth, bytes/s: bus width x memory clock x transfers per clock / 8.

    HBM moves data on both clock edges (``transfers_per_clock`` 2), so the data rate per pin is twice
    the memory clock; each stack is 1024 bits wide (H100 SXM: 5 stacks = 5120 bits at 2,619 MHz = 3.35 TB/s).

    References
    ----------
    NVIDIA Ampere white paper, Table 1 (A100: 5120-bit HBM2 at 1215 MHz DDR = 1555 GB/s).
    """
    width = _check.positive_int("bus_width_bits", bus_width_bits, 1_000_000)
    clock = _check.positive("memory_clock_mhz", memory_clock_mhz, 100_000)
    transfers = _check.bounded_int("transfers_per_clock", transfers_per_clock, 1, 16)
    return _check.result("memory bandwidth", width * clock * 1e6 * transfers / 8.0)


@dataclass(frozen=True)
class MemoryRecipe:
    """An accelerator's memory interface, as stored in its ``memory_recipe``."""

    key: str  # catalogue key
    bus_width_bits: int  # total memory bus width, bits (stacks x 1024 for HBM)
    memory_clock_mhz: float  # memory clock, MHz
    transfers_per_clock: int  # 2 for double data rate
    source: str  # where the clock and width come from
    note: str  # how they were read

    @property
    def gbps_per_pin(self) -> float:
        """Data rate of one pin, Gb/s."""
        return self.memory_clock_mhz * self.transfers_per_clock / 1000.0

    def bytes_per_s(self) -> float:
        """Peak bandwidth by the recipe, bytes/s."""
        return memory_bandwidth_from_bus(self.bus_width_bits, self.memory_clock_mhz, self.transfers_per_clock)


def memory_recipes() -> Mapping[str, MemoryRecipe]:
    """Memory recipes of the catalogue entries that have one, by key."""
    return _memory_recipes()


@lru_cache(maxsize=None)  # read once
def _memory_recipes() -> Mapping[str, MemoryRecipe]:
    out: dict[str, MemoryRecipe] = {}
    for key, acc in catalogue().items():
        raw = acc.extra.get("memory_recipe")
        if isinstance(raw, Mapping):
            out[key] = MemoryRecipe(key, int(raw["bus_width_bits"]), float(raw["memory_clock_mhz"]),
                                    int(raw["transfers_per_clock"]), str(raw["source"]), str(raw.get("note", "")))
    return MappingProxyType(out)


def memory_recipe(key: str) -> MemoryRecipe:
    """The memory recipe of accelerator ``key`` (ValueError listing those that have one)."""
    return _recipe_of(key, "a memory recipe", memory_recipes())


# --------------------------------------------------------------------------- scale-up counting

DIRECTIONS = ("per direction", "bidirectional")
LINK_COUNTS = ("scale_up", "all")


class ScaleUpLinks(NamedTuple):
    """How an accelerator's scale-up figure is counted."""

    all: int  # links (ports) the chip has
    scale_up: int  # those that join accelerators of one node / scale-up domain
    gbps_per_link_per_direction: float  # one link, one direction, GB/s (1e9 bytes/s)


def scale_up_links(key: str) -> ScaleUpLinks | None:
    """Link counts behind ``key``'s scale-up figure (None where the catalogue has none)."""
    raw = spec(key).extra.get("scale_up_links")
    if not isinstance(raw, Mapping):
        return None
    return ScaleUpLinks(int(raw["all"]), int(raw["scale_up"]), float(raw["gbps_per_link_per_direction"]))


def scale_up_bandwidth(key: str, links: str = "scale_up", direction: str = "per direction") -> float | None:
    """Scale-up bandwidth of ``key`` in bytes/s under a named counting convention.

    links : "scale_up" counts the links that join peers (Gaudi 3: 21 of 24 ports; MI300X: 7 of 8),
        "all" every link the chip has (what some spec sheets add up).
    direction : "per direction" (what one GPU can send while it receives as much) or "bidirectional"
        (the sum of both directions: NVIDIA's "900 GB/s" for H100).
    None where the catalogue has no figure for the convention.
    """
    _check.choice("links", links, LINK_COUNTS)
    _check.choice("direction", direction, DIRECTIONS)
    acc = spec(key)
    factor = 2.0 if direction == "bidirectional" else 1.0
    if links == "scale_up":
        one = acc.scale_up_bytes_per_s
        return None if one is None else one * factor
    counted = scale_up_links(key)
    if counted is None:
        return None
    return counted.all * counted.gbps_per_link_per_direction * 1e9 * factor


# --------------------------------------------------------------------------- link generations (PCIe, NVLink)


@lru_cache(maxsize=None)
def _interconnects() -> Mapping:
    return json.loads(resources.files("mlcalc.data").joinpath("interconnects.json").read_text())


class PcieGeneration(NamedTuple):
    """One PCIe generation (see mlcalc/data/interconnects.json)."""

    name: str  # "PCIe 5"
    year: int  # year of the specification
    gt_per_s: float  # raw rate per lane, one direction, GT/s
    encoding: str  # line code
    encoding_efficiency: float  # data bits / raw bits
    source: str  # URL


class NvlinkGeneration(NamedTuple):
    """One NVLink generation (see mlcalc/data/interconnects.json)."""

    name: str  # "NVLink 4"
    year: int  # year of the GPU that introduced it
    gpu: str  # that GPU
    links_per_gpu: int  # links of that GPU
    lanes_per_link: int  # lanes per direction per link
    gbps_per_lane: float  # data rate per lane, one direction, Gb/s
    gbytes_per_link_per_direction: float  # NVIDIA's per-link figure, one direction, GB/s
    source: str  # URL


def pcie_generations() -> dict[str, PcieGeneration]:
    """PCIe 1 to 6, oldest first."""
    return {k: PcieGeneration(k, int(e["year"]), float(e["gt_per_s"]), str(e["encoding"]),
                              float(e["encoding_efficiency"]), str(e["source"]))
            for k, e in _interconnects()["pcie"].items()}


def nvlink_generations() -> dict[str, NvlinkGeneration]:
    """NVLink 1 to 5, oldest first."""
    return {k: NvlinkGeneration(k, int(e["year"]), str(e["gpu"]), int(e["links_per_gpu"]), int(e["lanes_per_link"]),
                                float(e["gbps_per_lane"]), float(e["gbytes_per_link_per_direction"]), str(e["source"]))
            for k, e in _interconnects()["nvlink"].items()}


PCIE_LANES = (1, 2, 4, 8, 16, 32)


def pcie_bytes_per_s(generation: str, lanes: int = 16, direction: str = "per direction",
                     encoded: bool = True) -> float:
    """Bandwidth of a PCIe link, bytes/s: GT/s x lanes x encoding efficiency / 8 (x 2 for both directions).

    ``encoded=False`` gives the raw figure that datasheets often print (PCIe 5 x16: 64 GB/s each way,
    63.0 after 128b/130b). Packet headers (TLP/DLLP) are not subtracted: payloads see less.
    """
    gens = pcie_generations()
    _check.choice("generation", generation, gens)
    _check.choice("lanes", lanes, PCIE_LANES)
    _check.choice("direction", direction, DIRECTIONS)
    g = gens[generation]
    eff = g.encoding_efficiency if encoded else 1.0
    factor = 2.0 if direction == "bidirectional" else 1.0
    return _check.result("PCIe bandwidth", g.gt_per_s * 1e9 * lanes * eff / 8.0 * factor)


def nvlink_link_bytes_per_s(generation: str) -> float:
    """One NVLink link, one direction, bytes/s: lanes x lane rate / 8."""
    gens = nvlink_generations()
    _check.choice("generation", generation, gens)
    g = gens[generation]
    return g.lanes_per_link * g.gbps_per_lane * 1e9 / 8.0


def nvlink_bytes_per_s(generation: str, links: int | None = None, direction: str = "per direction") -> float:
    """NVLink bandwidth of a GPU, bytes/s: links x lanes per link x lane rate / 8 (x 2 for both directions).

    ``links`` defaults to the links of the GPU that introduced the generation (NVLink 4, H100: 18).
    """
    gens = nvlink_generations()
    _check.choice("generation", generation, gens)
    _check.choice("direction", direction, DIRECTIONS)
    n = gens[generation].links_per_gpu if links is None else _check.positive_int("links", links, 64)
    factor = 2.0 if direction == "bidirectional" else 1.0
    return n * nvlink_link_bytes_per_s(generation) * factor


# Object parameters (a ModelConfig, a Fabric, a list of offers...) are checked by type before each call.
_check.guard(globals())
