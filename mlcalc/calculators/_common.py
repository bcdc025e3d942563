"""Controls and formatting the calculators share (standard library only)."""

from __future__ import annotations

from mlcalc.accelerators import catalogue
from mlcalc.calc import Control, choice

_DECIMAL = ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, ""), (1e-3, "m"), (1e-6, "µ"),
            (1e-9, "n"))
_BINARY = ((2.0**50, "Pi"), (2.0**40, "Ti"), (2.0**30, "Gi"), (2.0**20, "Mi"), (2.0**10, "Ki"), (1.0, ""))


def si(value: float, unit: str = "", binary: bool = False, digits: int = 3) -> str:
    """``value`` with a decimal (k, M, G: 1e3...) or binary (Ki, Mi, Gi: 2**10...) prefix: "1 GB", "4 MiB".

    Prefixes below one (m, µ, n) only for seconds ("10 µs").
    """
    for scale, prefix in _BINARY if binary else _DECIMAL:
        if scale < 1 and unit != "s":
            break
        if abs(value) >= scale * 0.999:
            return f"{value / scale:.{digits}g} {prefix}{unit}".strip()
    return f"{value:.{digits}g} {unit}".strip()


def money(value: float, currency: str = "$") -> str:
    """Money with a currency sign and thousands separators: "$174,401"."""
    return f"{'-' if value < 0 else ''}{currency}{abs(value):,.0f}"


def accelerator_control(default: str = "H100-SXM", key: str = "accelerator", label: str = "Accelerator") -> Control:
    """A dropdown of the catalogue's accelerators, each with its memory."""
    return choice(key, label, [(f"{a.key} ({a.memory_gb:g} GB)", a.key) for a in catalogue().values()], default)


__all__ = ["accelerator_control", "money", "si"]
