"""Charts that keep one structure whatever their controls say, so the live page updates them in place.

On the site a change whose chart has the structure of the one on screen (the same Vega-Lite spec once its data
rows, its parameters ``mlcalc_*`` and its literal scale domains and ranges are set aside) is written into that
chart; any other change draws a new chart, 20-50 ms more in the reader's browser (book/_static/mlcalc-live.js,
``splitVega``). These calculators' charts used to change structure with a control (a layer per label slot, an
axis title, a sort list, a height, tick values, where bars start, a panel's title): what changes is now data or
parameters.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import mlcalc.calculators  # noqa: F401 - registers the calculators
from mlcalc import charts
from mlcalc.calc import get

# Calculator -> controls left out: a log-scale box changes the scale's type, which Vega cannot change in place.
KEPT = {
    "accelerators.catalogue": (),
    "accelerators.compare": (),
    "accelerators.offers": (),
    "accelerators.roofline": (),
    "accelerators.training_cost": (),
    "failures.interruptions": (),
    "memory.bytes_per_param": (),
    "memory.training_fit": (),
    "storage.startup": (),
    "network.generations": ("log_scale",),
    "network.topology": (),
    "network.layout": (),
    "network.step_comm": (),
    "network.pipeline": (),
    "storage.checkpoint_interval": (),
}


def structure(node: Any, key: str = "") -> Any:
    """A spec with what the page changes in place blanked: data rows, mlcalc_* parameters' values, literal
    scale domains and ranges."""
    if isinstance(node, dict):
        out = {}
        for k, v in node.items():
            if k == "values" and key == "data":
                out[k] = "<rows>"
            elif key == "scale" and k in ("domain", "range") and isinstance(v, list):
                out[k] = "<list>"
            else:
                out[k] = structure(v, k)
        return out
    if isinstance(node, list):
        if key == "params":
            return [{"name": p["name"]} if str(p.get("name", "")).startswith("mlcalc_") else structure(p) for p in node]
        return [structure(x, key) for x in node]
    return node


def _cases(key: str) -> list[dict[str, Any]]:
    calc = get(key)
    base = calc.defaults()
    out = [base]
    for c in calc.controls:
        if c.key in KEPT[key]:
            continue
        v = base[c.key]
        if c.kind in ("choice", "toggle"):
            alts = [o for o in c.values() if o != v]
        elif c.kind == "check":
            alts = [not v]
        elif c.kind in ("int", "int_slider"):
            alts = [x for x in (v * 2, v // 2, v + 1, v - 1) if x >= 1 and (c.max is None or x <= c.max)]
        else:
            alts = [x for x in (v * 2, v / 2) if (c.max is None or x <= c.max) and (c.min is None or x >= c.min)]
        out += [{**base, c.key: a} for a in alts]
    return out


@pytest.mark.parametrize("key", sorted(KEPT))
def test_the_chart_keeps_one_structure_across_its_controls(key):
    calc = get(key)
    shapes: dict[str, dict[str, Any]] = {}
    for values in _cases(key):
        try:
            _, view = calc.evaluate(values)
        except ValueError:
            continue  # a value the calculator refuses (its message is tested elsewhere)
        shapes.setdefault(json.dumps(structure(view.chart), sort_keys=True), values)
    assert len(shapes) == 1, f"{key}: {len(shapes)} structures, first values of each: {list(shapes.values())}"


def test_structure_sees_a_changed_axis_title():
    a = charts.grouped("t", [{"g": "a", "w": "x", "v": 1, "label": "1"}], x="g", group="w", y=charts.q("v", "over A"))
    b = charts.grouped("t", [{"g": "a", "w": "x", "v": 2, "label": "2"}], x="g", group="w", y=charts.q("v", "over B"))
    assert structure(a) != structure(b)
    assert structure(charts.live_axis(a, "y", "title")) == structure(charts.live_axis(b, "y", "title"))
    assert {"name": "mlcalc_y_title", "value": "over A"} in a["params"]
    assert a["layer"][0]["encoding"]["y"]["axis"]["title"] == {"expr": "mlcalc_y_title"}


def test_live_axis_refuses_what_the_axis_lacks():
    spec = charts.grouped("t", [{"g": "a", "w": "x", "v": 1, "label": "1"}], x="g", group="w", y=charts.q("v"))
    with pytest.raises(ValueError, match="no title"):
        charts.live_axis(spec, "y", "title")
    with pytest.raises(ValueError, match="channel='size'"):
        charts.live_axis(spec, "size", "title")
