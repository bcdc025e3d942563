"""The accelerator catalogue: datasheet numbers, each with its source, loaded from ``data/accelerators.json``."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from types import MappingProxyType
from typing import Mapping

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

    @property
    def memory_bytes(self) -> float:
        """Device memory in bytes."""
        return self.memory_gb * 1e9

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
    def sm_count(self) -> int | None:
        """Streaming multiprocessors (NVIDIA GPUs only; None for others)."""
        value = self.extra.get("sm_count")
        return None if value is None else int(value)  # type: ignore[call-overload]

    def has(self, dtype: str) -> bool:
        """Whether the datasheet gives a dense figure for ``dtype``."""
        return dtype in self.dense_tflops


_CORE = {"vendor", "name", "memory_gb", "memory_bandwidth_tbps", "dense_tflops", "sources", "notes"}


@lru_cache(maxsize=None)
def catalogue() -> Mapping[str, Accelerator]:
    """All accelerators in the data file, by key, in file order."""
    raw = json.loads(resources.files("mlcalc.data").joinpath("accelerators.json").read_text())
    out: dict[str, Accelerator] = {}
    for key, entry in raw["accelerators"].items():
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
        )
    return MappingProxyType(out)


def spec(key: str) -> Accelerator:
    """The catalogue entry named ``key`` (ValueError listing the known keys otherwise)."""
    _check.choice("accelerator", key, catalogue())
    return catalogue()[key]


def peak_flops(key: str, dtype: str = "bf16") -> float:
    """Dense datasheet peak of accelerator ``key`` for ``dtype``, in FLOP/s."""
    return spec(key).peak_flops(dtype)


# Dtypes in the order the tables show them (widest first). int8 figures are TOPS.
DTYPES: tuple[str, ...] = ("fp32", "tf32", "bf16", "fp16", "fp8", "int8", "fp4")


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

    def flops(self, clock_mhz: float | None = None) -> float:
        """Peak FLOP/s by the recipe, at its own clock or at ``clock_mhz`` (e.g. a throttled clock)."""
        clock = self.clock_mhz if clock_mhz is None else _check.positive("clock_mhz", clock_mhz)
        return theoretical_peak_flops(clock * 1e6, self.units, self.fma_per_unit_per_clock)


def recipes() -> dict[str, PeakRecipe]:
    """Peak recipes of the catalogue entries that have one, by key."""
    out: dict[str, PeakRecipe] = {}
    for key, acc in catalogue().items():
        raw = acc.extra.get("peak_recipe")
        if isinstance(raw, Mapping):
            out[key] = PeakRecipe(
                key=key,
                dtype=str(raw["dtype"]),
                clock_mhz=float(raw["clock_mhz"]),
                units=int(raw["units"]),
                unit_name=str(raw["unit_name"]),
                fma_per_unit_per_clock=float(raw["fma_per_unit_per_clock"]),
                source=str(raw["source"]),
                note=str(raw.get("note", "")),
            )
    return out


def recipe(key: str) -> PeakRecipe:
    """The peak recipe of accelerator ``key`` (ValueError listing those that have one)."""
    spec(key)
    known = recipes()
    _check.choice("accelerator (with a peak recipe)", key, known)
    return known[key]
