"""Units the whole package shares, each defined once: time, bytes, and the bytes of each dtype.

Base units inside mlcalc are seconds, bytes, FLOP and their rates; these constants convert for display
and name the conventions a reader could doubt (a year of 365 or 365.25 days; GB or GiB). The FLOP
conventions (6N per token, PaLM's, Megatron's...) live in :mod:`mlcalc.compute`, each named.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Mapping

# --------------------------------------------------------------------------- time

SECONDS_PER_MINUTE = 60.0
SECONDS_PER_HOUR = 3600.0
SECONDS_PER_DAY = 86400.0
#: A year of 365.25 days in hours (8,766 h): depreciation and commitment terms (mlcalc.plan).
HOURS_PER_YEAR = 8766.0
#: A calendar year of 365 days in hours (8,760 h): energy per year (mlcalc.facility).
HOURS_PER_365_DAY_YEAR = 8760.0

# --------------------------------------------------------------------------- bytes

KB = 1e3  # decimal kilobyte
MB = 1e6  # decimal megabyte
GB = 1e9  # decimal gigabyte, as on datasheets and network links
TB = 1e12  # decimal terabyte
KiB = 2**10
MiB = 2**20
GiB = 2**30  # binary gibibyte, what `du -h` and many training logs print as "G"
TiB = 2**40

# --------------------------------------------------------------------------- dtypes

#: Bytes per stored value of each dtype. tf32 is stored as 32-bit. fp6 and fp4 are 6 and 4 bits an
#: element (OCP Microscaling Formats (MX) Specification v1.0, 2023: FP6 E2M3/E3M2, FP4 E2M1; the shared
#: 8-bit scale per 32 elements is left out). int4 counts the packed nibbles only: group-wise scales (e.g.
#: one fp16 scale per 128 weights: 0.125 bits, about 0.016 bytes, per weight) come on top.
DTYPE_BYTES: Mapping[str, float] = MappingProxyType({
    "fp32": 4.0, "tf32": 4.0, "bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int8": 1.0, "fp6": 0.75, "int4": 0.5,
    "fp4": 0.5,
})


def dtype_table(dtypes: tuple[str, ...]) -> Mapping[str, float]:
    """The sizes of ``dtypes`` only, in that order (a module's choice of dtypes, its sizes from here)."""
    return MappingProxyType({d: DTYPE_BYTES[d] for d in dtypes})


__all__ = ["DTYPE_BYTES", "GB", "GiB", "HOURS_PER_365_DAY_YEAR", "HOURS_PER_YEAR", "KB", "KiB", "MB", "MiB",
           "SECONDS_PER_DAY", "SECONDS_PER_HOUR", "SECONDS_PER_MINUTE", "TB", "TiB", "dtype_table"]
