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
