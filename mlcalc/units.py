"""Units the whole package shares, each defined once: time, bytes, and the bytes of each dtype.

Base units inside mlcalc are seconds, bytes, FLOP and their rates; these constants convert for display
and name the conventions a reader could doubt (a year of 365 or 365.25 days; GB or GiB). The FLOP
conventions (6N per token, PaLM's, Megatron's...) live in :mod:`mlcalc.compute`, each named.
"""

from __future__ import annotations

import math
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


# --------------------------------------------------------------------------- display


def sig(value: float, digits: int = 3) -> str:
    """``value`` to ``digits`` significant digits with thousands separators, as a view shows a number: never
    in an exponent, never rounded to a zero it is not, whole digits kept: 131.97 -> "132", 2.214 -> "2.21",
    0.0013 -> "0.00130", 38,095.2 -> "38,095", 0 -> "0"."""
    x = float(f"{float(value):.{digits}g}") + 0.0  # rounded first, so 9.996 gives "10.0", not "10.00"
    if x == 0 or not math.isfinite(x):
        return f"{x:g}"
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(x))))
    return f"{float(value):,.{decimals}f}"


def fixed(value: float, decimals: int = 1) -> str:
    """``value`` with ``decimals`` decimals while that keeps it within 4 significant digits, else as :func:`sig` to 4
    (whole digits kept): fixed(30.64) -> "30.6", fixed(1908.6) -> "1,909", fixed(120.0, 2) -> "120.0"."""
    rounded = abs(float(f"{float(value):.{decimals}f}"))
    if rounded == 0:  # a small positive value is not printed as a zero, and a zero is "0"
        return sig(value, 2)
    if rounded < 10.0 ** (4 - decimals):
        return f"{float(value) + 0.0:,.{decimals}f}"
    return sig(value, 4)


def duration(seconds: float, digits: int = 3) -> str:
    """A time in seconds as a view shows it, in s, ms or µs so that a small one is never printed "0.00 s":
    1.917 -> "1.92 s", 0.0031 -> "3.10 ms", 4.2e-5 -> "42.0 µs", 0 -> "0 s"."""
    x = float(f"{float(seconds):.{digits}g}") + 0.0
    for scale, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs")):
        if abs(x) >= scale:
            return f"{sig(seconds / scale, digits)} {unit}"
    return f"{sig(seconds / 1e-9, digits)} ns" if x else "0 s"


__all__ = ["DTYPE_BYTES", "GB", "GiB", "HOURS_PER_365_DAY_YEAR", "HOURS_PER_YEAR", "KB", "KiB", "MB", "MiB",
           "SECONDS_PER_DAY", "SECONDS_PER_HOUR", "SECONDS_PER_MINUTE", "TB", "TiB", "dtype_table", "duration", "fixed", "sig"]
