"""Vega-Lite chart descriptions as plain dicts: the calculators' charts, with one shared style.

A chart is data (a dict that ``json.dumps`` accepts), so it renders the same in JupyterLab (which
ships a Vega-Lite renderer for ``application/vnd.vegalite.v5+json``), on the static site (vega-embed,
served from the site) and live in the reader's browser, and a test can read its numbers. Standard
library only: these run in Pyodide. The style lives here and only here.
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Mapping, Sequence

from mlcalc import _check

SCHEMA = "https://vega.github.io/schema/vega-lite/v5.json"  # an identifier only: nothing is fetched
WIDTH = 520  # px, the plot area; charts shrink to the column on narrow screens (autosize fit)
HEIGHT = 220  # px
PALETTE = ["#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860", "#da8bc3", "#8c8c8c"]

#: Padding with room on the right for an x-axis label at the plot's end: Vega's fit to a width leaves such a
#: label out (the site script gives every chart narrowed to a phone's column the same).
PAD_RIGHT = {"left": 5, "top": 5, "right": 20, "bottom": 5}

#: The one style of every calculator chart: text at least 11 px, no chart border.
CONFIG: dict[str, Any] = {
    "font": "system-ui, -apple-system, Segoe UI, Roboto, sans-serif",
    "view": {"stroke": None},
    "axis": {"labelFontSize": 11, "titleFontSize": 12, "labelLimit": 220},
    "legend": {"labelFontSize": 11, "titleFontSize": 12, "orient": "bottom", "direction": "horizontal",
               "columns": 2, "labelLimit": 260},
    "title": {"fontSize": 13, "anchor": "start", "limit": 0},
    "range": {"category": PALETTE},
}


def clean(value: float) -> float | None:
    """A number a chart can carry: finite values rounded to 6 significant digits, else None (a gap)."""
    if value is None or not math.isfinite(value):
        return None
    return float(f"{value:.6g}")


def rows(records: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Data rows with every float cleaned (finite, rounded), so specs are deterministic and JSON-safe."""
    out = []
    for rec in records:
        out.append({k: clean(v) if isinstance(v, float) else v for k, v in rec.items()})
    return out


#: The largest chart side in pixels a spec may ask for (a bound: a drawing sized by a reader's number).
MAX_PIXELS = 10_000


def chart(data: Iterable[Mapping[str, Any]] | None = None, *, mark: Any = None, encoding: Mapping | None = None,
          layer: Sequence[Mapping] | None = None, title: str = "", width: int = WIDTH, height: int = HEIGHT,
          **extra: Any) -> dict[str, Any]:
    """A complete Vega-Lite spec: data rows, a mark and encodings (or layers), the shared style.

    ``width`` and ``height`` are pixels, 1 to :data:`MAX_PIXELS` (ValueError naming the one that is not).
    """
    width = _check.bounded_int("width", width, 1, MAX_PIXELS)
    height = _check.bounded_int("height", height, 1, MAX_PIXELS)
    spec: dict[str, Any] = {"$schema": SCHEMA, "width": width, "height": height,
                            "autosize": {"type": "fit", "contains": "padding"}, "config": CONFIG}
    if title:
        spec["title"] = title
    if data is not None:
        spec["data"] = {"values": rows(data)}
    if layer is not None:
        spec["layer"] = list(layer)
    else:
        spec["mark"] = mark
        spec["encoding"] = dict(encoding or {})
    spec.update(extra)
    return spec


def field(name: str, kind: str = "quantitative", title: str | None = None, **extra: Any) -> dict[str, Any]:
    """An encoding channel: ``field("gb", title="GB (1e9 bytes)")``."""
    enc: dict[str, Any] = {"field": name, "type": kind}
    if title is not None:
        enc["title"] = title
    enc.update(extra)
    return enc


def log_scale(**extra: Any) -> dict[str, Any]:
    """A base-10 log scale."""
    return {"type": "log", "base": 10, **extra}


def series_lines(values: Iterable[Mapping[str, Any]], x: Mapping[str, Any], y: Mapping[str, Any], series: str,
                 mark: str | Mapping[str, Any] = "line") -> dict[str, Any]:
    """A sweep's curves: one line per value of the nominal field ``series``, told apart by colour and dash."""
    return {"data": {"values": rows(values)}, "mark": mark if isinstance(mark, str) else dict(mark),
            "encoding": {"x": x, "y": y, "color": field(series, "nominal", title="", sort=None),
                         "strokeDash": field(series, "nominal", title="", sort=None)}}


def marker(row: Mapping[str, Any], x: Mapping[str, Any], y: Mapping[str, Any], *, size: int = 80,
           color: str = "black", tooltip: Sequence[Mapping[str, Any]] | None = None) -> dict[str, Any]:
    """The reader's point on a sweep: one filled dot at ``row`` (with a tooltip if given)."""
    encoding: dict[str, Any] = {"x": x, "y": y}
    if tooltip is not None:
        encoding["tooltip"] = list(tooltip)
    return {"data": {"values": rows([row])}, "mark": {"type": "point", "filled": True, "size": size, "color": color},
            "encoding": encoding}


def grouped_bars(x: Mapping[str, Any], offset: Mapping[str, Any], y: Mapping[str, Any], group: str,
                 y2: Mapping[str, Any] | None = None, text: str = "label") -> list[dict[str, Any]]:
    """Bars side by side within each ``x`` category (``offset``, coloured by the nominal field ``group``), each
    labelled on top with its ``text``: two layers that draw their parent's data."""
    bars: dict[str, Any] = {"x": x, "xOffset": offset, "y": y}
    if y2 is not None:
        bars["y2"] = y2
    bars["color"] = field(group, "nominal", title="", sort=None)
    return [{"mark": "bar", "encoding": bars},
            {"mark": {"type": "text", "baseline": "bottom", "dy": -2},
             "encoding": {"x": x, "xOffset": offset, "y": y, "text": field(text, "nominal")}}]


def bar_end_labels(y: Mapping[str, Any], x: str, text: str = "label", inside_from: float = 0.5) -> list[dict[str, Any]]:
    """Two text layers that label horizontal bars at their ends, never past the plot's right edge.

    They label the rows of their parent's data: each row a bar, its length in field ``x``, its label in
    ``text``; ``y`` is the bars' y encoding. A bar at least ``inside_from`` of the longest is labelled inside
    its end (white text), a shorter one just after its end, where at least half the plot is free.
    """
    longest = {"joinaggregate": [{"op": "max", "field": x, "as": "longest"}]}
    inside = f"datum['{x}'] >= {inside_from:g} * datum.longest"
    encoding = {"y": dict(y), "x": field(x), "text": field(text, "nominal")}
    return [{"transform": [longest, {"filter": f"!({inside})"}],
             "mark": {"type": "text", "align": "left", "dx": 4}, "encoding": encoding},
            {"transform": [longest, {"filter": inside}],
             "mark": {"type": "text", "align": "right", "dx": -4, "color": "white"}, "encoding": dict(encoding)}]


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


__all__ = ["CONFIG", "HEIGHT", "PAD_RIGHT", "PALETTE", "SCHEMA", "WIDTH", "bar_end_labels", "chart", "chart_values",
           "clean", "field", "grouped_bars", "log_scale", "marker", "rows", "series_lines"]


# Object parameters (a ModelConfig, a Fabric, a list of offers...) are checked by type before each call.
_check.guard(globals())
