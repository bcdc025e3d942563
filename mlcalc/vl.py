"""Vega-Lite chart data: rows a chart can carry, and every row of a spec (for tests and parity checks).

A chart is data (a dict that ``json.dumps`` accepts), so it renders the same in JupyterLab (which ships a
Vega-Lite renderer for ``application/vnd.vegalite.v5+json``), on the static site (vega-embed, served from the
site) and live in the reader's browser, and a test can read its numbers. The calculators' charts are built by
the kinds of :mod:`mlcalc.charts`, which own the style and how a chart fits its column. Standard library only:
this runs in Pyodide.
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Mapping

from mlcalc import _check

SCHEMA = "https://vega.github.io/schema/vega-lite/v5.json"  # an identifier only: nothing is fetched

#: The largest chart side in pixels a spec may ask for (a bound: a drawing sized by a reader's number).
MAX_PIXELS = 10_000


def clean(value: float) -> float | None:
    """A number a chart can carry: finite values rounded to 6 significant digits, else None (a gap)."""
    if value is None or not math.isfinite(value):
        return None
    return float(f"{value:.6g}")


def rows(records: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Data rows with every float cleaned (finite, rounded), so specs are deterministic and JSON-safe."""
    out = []
    isfinite = math.isfinite
    for rec in records:
        row = {}
        for k, v in rec.items():
            if isinstance(v, float):  # clean(v), written out: a chart's rows are most of its view's Python
                v = float(f"{v:.6g}") if isfinite(v) else None
            row[k] = v
        out.append(row)
    return out


def chart_values(spec: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every data row of a spec, its layers' too (for tests and parity checks)."""
    out: list[dict[str, Any]] = []
    data = spec.get("data")
    if isinstance(data, Mapping):
        out.extend(data.get("values", []))
    for part in ("layer", "hconcat", "vconcat", "concat"):
        for sub in spec.get(part, []) or []:
            out.extend(chart_values(sub))
    return out


__all__ = ["MAX_PIXELS", "SCHEMA", "chart_values", "clean", "rows"]


# Object parameters (a ModelConfig, a Fabric, a list of offers...) are checked by type before each call.
_check.guard(globals())
