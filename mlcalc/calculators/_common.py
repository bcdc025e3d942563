"""Controls and formatting the calculators share (standard library only)."""

from __future__ import annotations

import math
import re

from mlcalc.accelerators import catalogue
from mlcalc.calc import Control, choice
from mlcalc.units import duration, fixed, sig  # the views' number formats (their one home: mlcalc.units)

_DECIMAL = ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, ""), (1e-3, "m"), (1e-6, "µ"),
            (1e-9, "n"), (1e-12, "p"))
_BINARY = ((2.0**50, "Pi"), (2.0**40, "Ti"), (2.0**30, "Gi"), (2.0**20, "Mi"), (2.0**10, "Ki"), (1.0, ""))


def si(value: float, unit: str = "", binary: bool = False, digits: int = 3) -> str:
    """``value`` with a decimal (k, M, G: 1e3...) or binary (Ki, Mi, Gi: 2**10...) prefix: "1 GB", "4 MiB".

    Prefixes below one (m, µ, n, p) only for seconds ("10 µs", "52 ps").
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


# Author-year for the bibliography keys that data strings carry (book/refs/*.bib; a test checks them),
# so that a calculator never shows a reader a BibTeX key.
AUTHOR_YEAR = {
    "bekman2024battlefield": "Bekman 2024",
    "bekman2024mlengineering": "Bekman 2024",
    "dash2023frontier": "Dash et al. 2023",
    "deepseekai2024v3": "DeepSeek-AI 2024",
    "dettmers2022optimizers": "Dettmers et al. 2022",
    "hf2024anatomy": "Hugging Face 2024",
    "korthikanti2022reducing": "Korthikanti et al. 2023",
    "lockwood2024notes": "Lockwood 2024",
    "rajbhandari2020zero": "Rajbhandari et al. 2020",
}
_KEY = re.compile(r"\b[a-z][a-z-]*\d{4}[a-z0-9]*\b")


def cite(text: str) -> str:
    """``text`` with every known bibliography key replaced by author-year ("Rajbhandari et al. 2020")."""
    return _KEY.sub(lambda m: AUTHOR_YEAR.get(m.group(0), m.group(0)), text)


def cited(text: str) -> str:
    """Only the author-year citations of ``text``, in order: "Dash et al. 2023; Lockwood 2024"."""
    found = [AUTHOR_YEAR[k] for k in _KEY.findall(text) if k in AUTHOR_YEAR]
    return "; ".join(dict.fromkeys(found))


def finite(what: str, value: float) -> float:
    """``value`` if it is a finite number, else a ValueError saying the inputs are too large for ``what``."""
    if not math.isfinite(value):
        raise ValueError(f"{what} overflows ({value!r}) with these inputs: use smaller numbers")
    return value


def geomspace(lo: float, hi: float, n: int) -> list[float]:
    """``n`` points from ``lo`` to ``hi``, evenly spaced on a log scale (a fixed chart grid, no numpy)."""
    if n < 2 or not 0 < lo < hi:
        return [lo]
    step = math.log(hi / lo) / (n - 1)
    return [lo * math.exp(i * step) for i in range(n)]


def decades(lo: float, hi: float, most: int = 8) -> list[float]:
    """Powers of ten from below ``lo`` to above ``hi``, thinned to at most ``most`` (log-axis ticks)."""
    if not (0 < lo <= hi) or not math.isfinite(hi):
        return []
    k0, k1 = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    step = max(1, -(-(k1 - k0 + 1) // most))
    return [10.0**k for k in range(k0, k1 + 1, step)]


def accelerator_control(default: str = "H100-SXM", key: str = "accelerator", label: str = "Accelerator") -> Control:
    """A dropdown of the catalogue's accelerators, each with its memory."""
    return choice(key, label, [(f"{a.key} ({a.memory_gb:g} GB)", a.key) for a in catalogue().values()], default)


__all__ = ["AUTHOR_YEAR", "accelerator_control", "cite", "cited", "decades", "duration", "finite", "fixed", "geomspace", "money",
           "si", "sig"]
