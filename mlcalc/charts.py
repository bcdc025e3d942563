"""The calculators' chart kinds, named by what they show; each owns how it fits a column.

A view calls one kind with its data rows and the fields to show (``charts.parts(rows, value="gb", ...)``) and
gets a complete Vega-Lite spec (a dict, standard library only: it runs in Pyodide). How a chart fits the column
it is drawn in lives here and only here, written into the spec as Vega expressions on the chart's own ``width``
signal (the plot's width once Vega has fitted the chart to the width it was given), never as pixel guesses in
a view or in the page's script, which only hands the chart its column's width:

- the chart is fitted to the width it is given (``autosize: fit-x``, padding inside), its height fixed;
- the title (held in the ``mlcalc_title`` parameter, so the page can change it in place) and long axis titles
  wrap at spaces into as many lines as the plot's width needs;
- a legend below the plot goes to one column when the plot is narrow;
- a text label beside a mark goes on the side of it with room for it, inside the plot.

Two measured quirks of Vega 6.4 / Vega-Lite 6.5, rendered headless to SVG, shape these rules: ``autosize: fit``
misplaces the title of a layered chart whose axes and legend take much of its height (it lands above the
canvas, clipped), so charts fit their width only; and a title wider than the column squeezes the plot to
nothing under ``fit-x``, so titles wrap.
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Mapping, Sequence

from mlcalc import _check
from mlcalc.vl import MAX_PIXELS, SCHEMA, clean, rows

WIDTH = 520  # px: the whole chart where the column is wider; the page hands a narrower column its own width
HEIGHT = 220  # px, the plot
PALETTE = ["#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860", "#da8bc3", "#8c8c8c"]

#: The one style of every calculator chart: text at least 11 px, no chart border, legends below the plot.
CONFIG: dict[str, Any] = {
    "font": "system-ui, -apple-system, Segoe UI, Roboto, sans-serif",
    "view": {"stroke": None},
    "axis": {"labelFontSize": 11, "titleFontSize": 12, "labelLimit": 220},
    "legend": {"labelFontSize": 11, "titleFontSize": 12, "orient": "bottom", "direction": "horizontal"},
    "title": {"fontSize": 13, "anchor": "start", "limit": 0},
    "range": {"category": PALETTE},
}

# Characters per line, from the column's width in px (the parameter ``column``, which the page sets to the
# width it draws the chart at; bold 13 px title text takes up to about 8 px a character, 12 px axis titles
# about 7, 11 px labels about 6.6): Vega expressions, evaluated as the chart is drawn.
_TITLE_CHARS = "max(24, floor((column - 10) / 8))"
_AXIS_CHARS = "max(20, floor((column - 90) / 7))"
_LABEL_PX = 6.6  # px per character of an 11 px label, for a label's side (in expressions below)

#: Room on the right for an x-axis label at the plot's end: Vega's fit to a width leaves such a label out.
_PADDING = {"left": 5, "top": 5, "right": 20, "bottom": 5}


def _wrap(text_expr: str, chars_expr: str) -> str:
    """A Vega expression: the string ``text_expr`` as lines of at most ``chars_expr`` characters (at spaces)."""
    return (f"split(trim(replace({text_expr} + ' ', regexp('(.{{1,' + ({chars_expr}) + '}}) +', 'g'), '$1\\n')), "
            f"'\\n')")


def _config() -> dict[str, Any]:
    """The shared style, with the legend's columns and label length following the plot's width."""
    config = dict(CONFIG)
    config["legend"] = {**CONFIG["legend"], "columns": {"expr": "column < 440 ? 1 : 2"},
                        "labelLimit": {"expr": "max(120, column - 60)"}}
    return config


def _frame(title: str, height: int, *, width: int = WIDTH) -> dict[str, Any]:
    """The top of every chart: size, fit to the width, padding, style, and its title wrapped to the plot."""
    height = _check.bounded_int("height", height, 1, MAX_PIXELS)
    spec: dict[str, Any] = {"$schema": SCHEMA, "width": width, "height": height,
                            "autosize": {"type": "fit-x", "contains": "padding"}, "padding": dict(_PADDING),
                            "config": _config()}
    spec["params"] = _params(title, width)
    if title:
        spec["title"] = {"text": {"expr": _wrap("mlcalc_title", _TITLE_CHARS)}}
    return spec


def _params(title: str, width: int) -> list[dict[str, Any]]:
    """The column's width (the page sets it to the width it draws the chart at), and the title's text."""
    out: list[dict[str, Any]] = [{"name": "column", "value": width}]
    if title:
        out.append({"name": "mlcalc_title", "value": title})
    return out


def title_of(spec: Mapping[str, Any]) -> str:
    """A chart's title as one line of plain text (a kind's title parameter, a string or lines)."""
    for param in spec.get("params", []) or []:
        if param.get("name") == "mlcalc_title":
            return str(param.get("value", ""))
    title = spec.get("title", "")
    if isinstance(title, Mapping):
        title = title.get("text", "")
    return " ".join(title) if isinstance(title, list) else str(title or "")


# --------------------------------------------------------------------------- values the page changes in place


def live_axis(spec: dict[str, Any], channel: str, *props: str, layer: int | None = None) -> dict[str, Any]:
    """Properties of a chart's axis that change with the controls (its title, its tick values) moved into the
    chart's parameters ``mlcalc_<channel>_<prop>``: the chart keeps one structure, and the page changes them
    in place instead of drawing a new chart. The axis is the first layer's ``channel`` with a field (``layer``:
    that top layer's, e.g. a second y axis; its parameters are named ``mlcalc_<channel><layer>_<prop>``); the
    drawing is the same. Returns ``spec``."""
    if layer is not None and not 0 <= layer < len(spec.get("layer", [])):
        raise ValueError(f"layer={layer!r} is not allowed: the chart has {len(spec.get('layer', []))} layers")
    enc = _first_channel(spec if layer is None else spec["layer"][layer], channel)
    if enc is None:
        raise ValueError(f"channel={channel!r} is not allowed: the chart has no {channel} channel with a field")
    axis = dict(enc.get("axis") or {})
    for prop in props:
        name = f"mlcalc_{channel}{'' if layer is None else layer}_{prop}"
        # A title is the channel's (an x axis's title is that text wrapped by an expression).
        value = enc.get("title", axis.get("title")) if prop == "title" else axis.get(prop)
        if value is None or isinstance(value, Mapping):
            raise ValueError(f"prop={prop!r} is not allowed: the {channel} axis has no {prop}")
        spec.setdefault("params", []).append({"name": name, "value": value})
        if prop == "title":  # else Vega-Lite writes the text into the marks' descriptions too
            enc.pop("title", None)
        axis[prop] = {"expr": _wrap(name, _AXIS_CHARS) if prop == "title" and channel == "x" else name}
    enc["axis"] = axis
    return spec


def _first_channel(node: Any, channel: str) -> dict[str, Any] | None:
    """The first (depth first, in layer order) encoding channel ``channel`` with a field, in place."""
    if not isinstance(node, dict):
        return None
    enc = node.get("encoding", {}).get(channel)
    if isinstance(enc, dict) and "field" in enc:
        return enc
    for sub in node.get("layer", []):
        found = _first_channel(sub, channel)
        if found is not None:
            return found
    return None


# --------------------------------------------------------------------------- channels


def _x(channel: Mapping[str, Any]) -> dict[str, Any]:
    """An x channel whose axis title wraps to the plot's width (a long one would pass a phone's column)."""
    out = dict(channel)
    title = out.get("title")
    if title and out.get("axis", {}) is not None:
        out["axis"] = {**out.get("axis", {}), "title": {"expr": _wrap(_quote(title), _AXIS_CHARS)}}
    return out


def _quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def q(name: str, title: str | None = None, *, fmt: str | None = None, log: bool | int = False,
      domain: Sequence[float] | None = None, axis: Mapping[str, Any] | None | bool = True, zero: bool | None = None,
      nice: bool | None = None, kind: str = "quantitative", **extra: Any) -> dict[str, Any]:
    """A value channel: field ``name``, its axis title (with units), tick format, log scale (True, or its base)."""
    enc: dict[str, Any] = {"field": name, "type": kind}
    if title is not None:
        enc["title"] = title
    scale: dict[str, Any] = {}
    if log:
        scale.update({"type": "log", "base": 10 if log is True else int(log)})
    if domain is not None:
        scale["domain"] = [clean(d) for d in domain]
    if zero is not None:
        scale["zero"] = zero
    if nice is not None:
        scale["nice"] = nice
    if scale:
        enc["scale"] = scale
    if axis is None or axis is False:
        enc["axis"] = None
    else:
        ax = dict(axis) if isinstance(axis, Mapping) else {}
        if fmt:
            ax.setdefault("format", fmt)
        if ax:
            enc["axis"] = ax
    enc.update(extra)
    return enc


def _nominal(name: str, **extra: Any) -> dict[str, Any]:
    return {"field": name, "type": "nominal", **extra}


def _in_order(channel: dict[str, Any], values: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """A nominal channel whose categories keep the rows' order (``sort: null``), with those categories written
    as its scale's domain: drawn the same, but the page can change them in place (a domain of the data's order
    could not be: Vega keeps the order it first saw). A channel with a domain of its own is left as it is."""
    scale = dict(channel.get("scale") or {})
    if "domain" not in scale:
        scale["domain"] = list(dict.fromkeys(str(r[channel["field"]]) for r in values if channel["field"] in r))
        channel["scale"] = scale
    return channel


def _tip(name: str, title: str | None = None, fmt: str | None = None, kind: str = "quantitative") -> dict[str, Any]:
    enc: dict[str, Any] = {"field": name, "type": kind}
    if title is not None:
        enc["title"] = title
    if fmt is not None:
        enc["format"] = fmt
    return enc


def _colors(colors: Sequence[str] | Mapping[str, str] | None) -> dict[str, Any] | None:
    """A colour scale: a range (in the order the parts come), or each part's own colour by name."""
    if colors is None:
        return None
    if isinstance(colors, Mapping):
        return {"domain": list(colors), "range": list(colors.values())}
    return {"range": list(colors)}


# --------------------------------------------------------------------------- parts against a capacity


def parts(data: Iterable[Mapping[str, Any]], *, title: str, value: str, value_title: str, part: str = "part",
          bar: str | None = None, bars: Sequence[str] | None = None, capacity: Mapping[str, Any] | None = None,
          capacity_dash: bool = False, totals: Iterable[Mapping[str, Any]] | None = None, share: bool = False,
          colors: Sequence[str] | Mapping[str, str] | None = None, fmt: str | None = ",.2f",
          tip_title: str | None = None, bar_tip: bool = False, height: int = 110) -> dict[str, Any]:
    """Parts stacked into one bar (or one bar per value of ``bar``), against a capacity.

    ``data``: one row per part, its size in ``value``, its name in ``part``, its place in the stack in
    ``order``; ``bar`` names the field that says which bar a row belongs to (``bars``: their order).
    ``capacity``: one row (its size in ``value``, what it is in ``what`` if given) drawn as a line across the bars.
    ``totals``: rows (``bar``, ``value``, ``label``) labelled at each bar's end. ``share``: the parts as shares
    of their bar (100% wide). ``colors``: a range in the parts' order, or each part's colour by name.
    """
    spec = _frame(title, height)
    spec["layer"] = _parts_layers(data, value, value_title, part, bar, bars, capacity, capacity_dash, totals, share,
                                  colors, fmt, tip_title, bar_tip, vertical=False)
    return spec


def _parts_layers(data: Iterable[Mapping[str, Any]], value: str, value_title: str, part: str, bar: str | None,
                  bars: Sequence[str] | None, capacity: Mapping[str, Any] | None, capacity_dash: bool,
                  totals: Iterable[Mapping[str, Any]] | None, share: bool,
                  colors: Sequence[str] | Mapping[str, str] | None, fmt: str | None, tip_title: str | None,
                  bar_tip: bool, vertical: bool) -> list[dict[str, Any]]:
    along, across = ("y", "x") if vertical else ("x", "y")
    values = rows(data)
    size = q(value, value_title, stack="normalize" if share else "zero", fmt=".0%" if share else None)
    colour = _nominal(part, title="", sort=None)  # (each colour by name: the domain orders them)
    if colors is not None:
        colour["scale"] = _colors(colors)
    _in_order(colour, values)
    tips = ([_tip(bar, kind="nominal")] if bar_tip and bar else []) + [_tip(part, kind="nominal"),
                                                                       _tip(value, tip_title, fmt)]
    encoding: dict[str, Any] = {along: size if vertical else _x(size), "color": colour, "order": _tip("order"), "tooltip": tips}
    if bar is not None:  # the bars in their order, as the scale's domain (see _in_order)
        encoding[across] = _in_order(_nominal(bar, title="", sort=None, **({"scale": {"domain": list(bars)}} if bars else {})),
                                     values)
    layers: list[dict[str, Any]] = [{"data": {"values": values}, "mark": "bar", "encoding": encoding}]
    if capacity is not None:
        rule: dict[str, Any] = {along: _tip(value)}
        if "what" in capacity:
            rule["tooltip"] = [_tip("what", kind="nominal"), _tip(value, tip_title, fmt)]
        mark = {"type": "rule", "color": "black", **({"strokeDash": [6, 3]} if capacity_dash else {"strokeWidth": 2})}
        layers.append({"data": {"values": rows([capacity])}, "mark": mark, "encoding": rule})
    if totals is not None:
        layers.append({"data": {"values": rows(totals)}, "layer": end_labels(encoding.get(across) or _nominal("bar", title="", sort=None), value)})
    return layers


def parts_panel(data: Iterable[Mapping[str, Any]], *, title: str, value: str, value_title: str,
                capacity: Mapping[str, Any] | None = None, colors: Mapping[str, str] | None = None,
                fmt: str | None = ",.2f", tip_title: str | None = None, part: str = "part") -> dict[str, Any]:
    """:func:`parts` as one standing bar, a narrow panel of :func:`panels` (the capacity a dashed line)."""
    return {**_panel_title(title, PANEL_WIDTH), "width": PANEL_WIDTH, "height": 200,
            "layer": _parts_layers(data, value, value_title, part, None, None, capacity, True, None, False, colors,
                                   fmt, tip_title, False, vertical=True)}


# --------------------------------------------------------------------------- heatmap and panels

PANEL_WIDTH = 120  # px: a standing bar's panel
HEAT_WIDTH = 240  # px: a heatmap's panel (the widest panel: two fit a laptop's column, one a phone's)


def heatmap(data: Iterable[Mapping[str, Any]], *, title: str, x: str, x_title: str, y: str, value: str,
            value_title: str, domain: Sequence[float], tip: Sequence[tuple[str, str | None, str | None]] = (),
            text: str = "label", share: bool = True) -> dict[str, Any]:
    """A grid of cells (``x`` by ``y`` categories, both in the rows' order), coloured by ``value`` from green
    (low) to red (high) over ``domain``, each labelled with its ``text``: a panel of :func:`panels`.

    ``tip``: the tooltip's (field, title, format) after ``y`` and ``x``.
    """
    tooltip = [_tip(y, kind="nominal"), _tip(x, kind="ordinal")] + [_tip(f, t, fm) for f, t, fm in tip]
    legend = {"format": ".0%"} if share else {}
    return {**_panel_title(title, HEAT_WIDTH), "width": HEAT_WIDTH, "height": 160, "data": {"values": rows(data)},
            "encoding": {"x": _x({"field": x, "type": "ordinal", "title": x_title, "axis": {"labelAngle": 0}}),
                         "y": {"field": y, "type": "ordinal", "title": ""}},
            "layer": [{"mark": "rect", "encoding": {
                "color": {"field": value, "type": "quantitative", "title": value_title,
                          "scale": {"scheme": "redyellowgreen", "reverse": True, "domain": [clean(d) for d in domain]},
                          "legend": legend},
                "tooltip": tooltip}},
                {"mark": {"type": "text", "fontSize": 11}, "encoding": {"text": _tip(text, kind="nominal")}}]}


def _panel_title(text: str, width: int) -> dict[str, Any]:
    """A panel's title, wrapped to the panel's width (a panel keeps its width); its text also under the key
    ``mlcalc_title``, which :func:`panels` turns into a parameter of the chart."""
    return {"title": {"text": {"expr": _wrap(_quote(text), _panel_chars(width))}}, "mlcalc_title": text} if text else {}


def _panel_chars(width: int) -> str:
    return f"max(16, floor({width} / 8))"


def panels(title: str, charts: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Panels one above the other (each its own size and colours), under one title: they fit a phone's
    column as they fit a laptop's."""
    spec: dict[str, Any] = {"$schema": SCHEMA, "config": _config(), "padding": dict(_PADDING),
                            "params": _params(title, WIDTH)}
    if title:
        spec["title"] = {"text": {"expr": _wrap("mlcalc_title", _TITLE_CHARS)}}
    spec["vconcat"] = []
    for i, chart in enumerate(charts):
        panel = dict(chart)
        text = panel.pop("mlcalc_title", None)
        if text:  # a panel's title is a parameter of the chart (the page changes it in place)
            spec["params"].append({"name": f"mlcalc_panel{i}_title", "value": text})
            panel["title"] = {"text": {"expr": _wrap(f"mlcalc_panel{i}_title", _panel_chars(int(panel["width"])))}}
        spec["vconcat"].append(panel)
    spec["resolve"] = {"scale": {"color": "independent"}}
    return spec


def end_labels(y: Mapping[str, Any], x: str, text: str = "label") -> list[dict[str, Any]]:
    """A text layer that labels horizontal bars at their ends, each on the side with room, inside the plot.

    It labels its parent's rows: a bar's length in field ``x``, its label in ``text``; ``y`` is the bars' y
    channel. A label goes just past its bar's end where the plot has room for it there, else inside the bar's
    end in white.
    """
    fits = f"scale('x', datum['{x}']) + 8 + {_LABEL_PX} * length(datum['{text}']) <= width"
    return [{"mark": {"type": "text", "align": {"expr": f"{fits} ? 'left' : 'right'"},
                      "dx": {"expr": f"{fits} ? 4 : -4"}, "color": {"expr": f"{fits} ? 'black' : 'white'"}},
             "encoding": {"y": dict(y), "x": _tip(x), "text": _tip(text, kind="nominal")}}]


# --------------------------------------------------------------------------- layers a kind adds


def tip(name: str, title: str | None = None, fmt: str | None = None, kind: str = "quantitative") -> dict[str, Any]:
    """One tooltip line: field ``name`` (its ``title`` and number format if given; ``kind="nominal"`` for text)."""
    return _tip(name, title, fmt, kind)


def line(values: Iterable[Mapping[str, Any]], *, along: str, field: str, color: str = "black",
         dash: Sequence[float] | None = None, width: float | None = None, what: str | None = None,
         fmt: str | None = None, dash_by: str | None = None) -> dict[str, Any]:
    """Reference lines across the plot, one per row of ``values``: at the row's ``field`` on the axis ``along``
    ("x": an upright line, "y": a level one). ``what``: the field telling what a line is (its tooltip);
    ``dash_by``: a field whose values get their own dashes and a legend."""
    mark: dict[str, Any] = {"type": "rule", "color": color}
    if dash is not None:
        mark["strokeDash"] = list(dash)
    if width is not None:
        mark["strokeWidth"] = width
    values = rows(values)
    encoding: dict[str, Any] = {along: _tip(field)}
    if dash_by is not None:  # the lines' names in order are the scale's domain (the page changes it in place)
        names = list(dict.fromkeys(str(r[dash_by]) for r in values))
        encoding["strokeDash"] = _nominal(dash_by, title="", sort=None, scale={"domain": names})
    if what is not None:
        encoding["tooltip"] = [_tip(what, kind="nominal")] + ([] if dash_by else [_tip(field, None, fmt)])
    return {"data": {"values": values}, "mark": mark, "encoding": encoding}


def _lines_of(text: str) -> str:
    """A Vega expression: characters in the longest of a label's first two lines (``text`` its expression)."""
    return f"max(indexof({text}, '\\n'), length({text}) - indexof({text}, '\\n') - 1)"


def _room(x: str, text: str, gap: float) -> str:
    """A Vega expression: whether the label ``text`` goes right of the point at ``x``: where it fits inside the
    plot there, or does not fit on the left either."""
    at, size = f"scale('x', datum['{x}'])", f"{gap:g} + {_LABEL_PX} * {_lines_of(f'datum[{_quote(text)}]')}"
    return f"({at} + {size} <= width || {at} - ({size}) < 0)"


def point(row: Mapping[str, Any], x: Mapping[str, Any], y: Mapping[str, Any], *, color: str = "black",
          size: int = 80, label: str | None = None, below: bool = False, by: str | None = None,
          colors: Mapping[str, str] | None = None, tooltip: Sequence[Mapping[str, Any]] | None = None) -> dict[str, Any]:
    """The reader's point: one filled dot at ``row``, its label (the row's field ``label``) beside it on the side
    with room inside the plot (``below``: under the dot, else above it); ``by``: a field colouring the dot
    (``colors``: each value's colour, with a legend)."""
    encoding: dict[str, Any] = {"x": _strip(x), "y": _strip(y)}  # the sweep's axes (their titles merge badly)
    if tooltip is not None:
        encoding["tooltip"] = list(tooltip)
    mark: dict[str, Any] = {"type": "point", "filled": True, "size": size}
    if by is not None:
        encoding["color"] = _nominal(by, title="", **({"scale": _colors(colors)} if colors else {}))
    else:
        mark["color"] = color
    dot = {"mark": mark, "encoding": encoding}
    if label is None:
        return {"data": {"values": rows([row])}, **dot}
    fits = _room(x["field"], label, 7)
    text = {"mark": {"type": "text", "lineBreak": "\n", "baseline": "top" if below else "bottom",
                     "align": {"expr": f"{fits} ? 'left' : 'right'"}, "dx": {"expr": f"{fits} ? 7 : -7"},
                     "dy": 6 if below else -6},
            "encoding": {"x": _strip(x), "y": _strip(y), "text": _tip(label, kind="nominal")}}
    return {"data": {"values": rows([row])}, "layer": [dot, text]}


def _strip(channel: Mapping[str, Any]) -> dict[str, Any]:
    """A channel for a second layer on the same scale: no axis or title of its own (Vega-Lite 5 joins the
    titles of layers that share an axis), except an axis the layer hides."""
    out = {k: v for k, v in channel.items() if k not in ("axis", "title")}
    if "axis" in channel and channel["axis"] is None:
        out["axis"] = None
    return out


def marker_text(values: Iterable[Mapping[str, Any]], x: Mapping[str, Any], *, text: str = "label",
                foot: bool = True) -> dict[str, Any]:
    """Upright dotted lines at ``x`` with their label at the plot's foot, on the side of the line with room."""
    fits = _room(x["field"], text, 4)
    return {"data": {"values": rows(values)}, "layer": [
        {"mark": {"type": "rule", "color": "#8c8c8c", "strokeDash": [3, 3]}, "encoding": {"x": x}},
        {"mark": {"type": "text", "baseline": "bottom", "dy": -4, "y": {"expr": "height"} if foot else 0,
                  "align": {"expr": f"{fits} ? 'left' : 'right'"}, "dx": {"expr": f"{fits} ? 4 : -4"}},
         "encoding": {"x": _strip(x), "text": _tip(text, kind="nominal")}}]}


# --------------------------------------------------------------------------- a sweep with the reader's point


def sweep(title: str, data: Iterable[Mapping[str, Any]], *, x: Mapping[str, Any], y: Mapping[str, Any],
          series: str | None = None, colors: Mapping[str, str] | None = None, color: str | None = None,
          points: bool = False, dashes: bool = True, clip: bool = False, width: float | None = None,
          tooltip: Sequence[Mapping[str, Any]] | None = None, legend_columns: int | None = None,
          twin: Mapping[str, Any] | None = None, extra: Sequence[Mapping[str, Any]] = (),
          height: int = HEIGHT) -> dict[str, Any]:
    """Curves against a swept input: one line per value of ``series`` (colour and dash), or one line
    (``color``), then ``extra`` layers (:func:`point`, :func:`line`, :func:`marker_text`).

    ``twin``: a second y channel for the same curve on another scale (an axis on the right: cost = days x
    price), drawn as an invisible line whose domain the caller keeps proportional to the first.
    """
    values = rows(data)
    mark: dict[str, Any] = {"type": "line"}
    if points:
        mark["point"] = True
    if clip:
        mark["clip"] = True
    if width is not None:
        mark["strokeWidth"] = width
    if color is not None:
        mark["color"] = color
    encoding: dict[str, Any] = {"x": _x(x), "y": dict(y)}
    if series is not None:
        legend = {"legend": {"columns": legend_columns}} if legend_columns else {}
        encoding["color"] = _in_order(_nominal(series, title="", sort=None, **legend,
                                               **({"scale": _colors(colors)} if colors else {})), values)
        if dashes:
            encoding["strokeDash"] = _in_order(_nominal(series, title="", sort=None), values)
    if tooltip is not None:
        encoding["tooltip"] = list(tooltip)
    layers: list[dict[str, Any]] = [{"data": {"values": values}, "mark": mark, "encoding": encoding}]
    spec = _frame(title, height)
    if twin is not None:
        layers.append({"data": {"values": values}, "mark": {"type": "line", "opacity": 0},
                       "encoding": {"x": _strip(x), "y": dict(twin)}})
        spec["resolve"] = {"scale": {"y": "independent"}}
    layers.extend(dict(e) for e in extra)
    spec["layer"] = layers
    return spec


# --------------------------------------------------------------------------- bars


BAR_ROW = 30  # px of plot per bar (50 with the bar's name above it), at least 60 in all


def bars(title: str, data: Iterable[Mapping[str, Any]], *, name: str, x: Mapping[str, Any],
         sort: Sequence[str] | None = None, color_by: str | None = None, colors: Mapping[str, str] | None = None,
         legend: bool = True, bar_color: str | None = None, labels: str | None = None, names_above: bool = False,
         start: float | None = None, bar_px: int | None = None, tooltip: Sequence[Mapping[str, Any]] = (),
         extra: Sequence[Mapping[str, Any]] = (), rows_vary: bool = False) -> dict[str, Any]:
    """One horizontal bar per row, named by its field ``name`` (in the rows' order, or ``sort``), its length
    the channel ``x``.

    ``color_by``: a field colouring the bars (``colors``: each value's colour; ``legend``: whether to show
    them). ``labels``: ``"end"`` labels each bar at its end (:func:`end_labels`), ``"start"`` inside it from
    the axis (a label past a bar's end would squeeze the plot). ``names_above``: each bar's name above it
    inside the plot instead of on an axis (long names would squeeze the plot on a phone). ``start``: where
    bars start on a log axis (it has no 0). ``extra``: more layers (:func:`line`). ``rows_vary``: which bars
    there are changes with the controls: their names in order are the scale's domain and the height follows
    their count (Vega's step), so the chart keeps one structure and the page updates it in place.
    """
    values = rows(data)
    if rows_vary:
        names = list(sort) if sort is not None else list(dict.fromkeys(str(r[name]) for r in values))
        y = _nominal(name, title="", sort=None, scale={"domain": names})
    else:
        y = _nominal(name, title="", sort=list(sort) if sort is not None else None)
    if names_above:  # a bar with its name above it
        y["axis"] = None
        bar_px = bar_px or 20
    mark: dict[str, Any] = {"type": "bar"}
    if bar_color is not None:
        mark["color"] = bar_color
    if start is not None:
        mark["clip"] = True
    if bar_px is not None:
        mark["size"] = bar_px
    encoding: dict[str, Any] = {"y": y, "x": _x(x)}
    if start is not None:
        encoding["x2"] = {"datum": clean(start)}
    if color_by is not None:
        encoding["color"] = _nominal(color_by, title="", sort=None, **({} if legend else {"legend": None}),
                                     **({"scale": _colors(colors)} if colors else {}))
    if tooltip:
        encoding["tooltip"] = list(tooltip)
    layers: list[dict[str, Any]] = [{"mark": mark if len(mark) > 1 else "bar", "encoding": encoding}]
    if labels == "end":
        layers.extend(end_labels(y, x["field"]))
    elif labels == "start":
        layers.append({"mark": {"type": "text", "align": "left", "dx": 4, "x": 0},
                       "encoding": {"y": y, "text": _tip("label", kind="nominal")}})
    if names_above:
        layers.append({"mark": {"type": "text", "align": "left", "baseline": "bottom", "x": 0,
                                "dy": -((bar_px or 12) // 2 + 1)},
                       "encoding": {"y": y, "text": _tip(name, kind="nominal")}})
    spec = _frame(title, max(60, (50 if names_above else BAR_ROW) * len(values)))
    if rows_vary:
        spec["height"] = {"step": 50 if names_above else BAR_ROW}
    spec["layer"] = [{"data": {"values": values}, "layer": layers}] + [dict(e) for e in extra]
    return spec


def grouped(title: str, data: Iterable[Mapping[str, Any]], *, x: str, group: str, y: Mapping[str, Any],
            from_foot: bool = False, height: int = HEIGHT) -> dict[str, Any]:
    """Bars side by side within each category ``x`` (one per value of ``group``, coloured), each labelled on
    top with its field ``label``. ``from_foot``: the bars start at the plot's foot (a log axis has no 0: its
    domain's lowest value; the foot, not that value, so the spec does not change with it)."""
    cat = _nominal(x, title="", sort=None, axis={"labelAngle": 0})
    offset = _nominal(group, sort=None)
    encoding: dict[str, Any] = {"x": cat, "xOffset": offset, "y": dict(y)}
    if from_foot:  # (not stacked: a stack would start at 0)
        encoding["y"]["stack"] = None
        encoding["y2"] = {"value": {"expr": "height"}}
    encoding["color"] = _nominal(group, title="", sort=None)
    spec = _frame(title, height)
    spec["data"] = {"values": rows(data)}
    spec["layer"] = [{"mark": "bar", "encoding": encoding},
                     {"mark": {"type": "text", "baseline": "bottom", "dy": -2},
                      "encoding": {"x": cat, "xOffset": offset, "y": _strip(y), "text": _tip("label", kind="nominal")}}]
    return spec


# --------------------------------------------------------------------------- scatter and timeline


def scatter(title: str, data: Iterable[Mapping[str, Any]], *, x: Mapping[str, Any], y: Mapping[str, Any],
            color_by: str, colors: Mapping[str, str] | None = None, shape_by: str | None = None, size: int = 60,
            tooltip: Sequence[Mapping[str, Any]] = (), extra: Sequence[Mapping[str, Any]] = (),
            height: int = HEIGHT) -> dict[str, Any]:
    """Labelled dots: one per row at (``x``, ``y``), coloured by ``color_by`` (a legend of one column below the
    plot), shaped by ``shape_by`` (its legend above the plot: beside the colours' it would pass the edge)."""
    encoding: dict[str, Any] = {"x": _x(x), "y": dict(y),
                                "color": _nominal(color_by, title="", legend={"columns": 1},
                                                  **({"scale": _colors(colors)} if colors else {}))}
    if shape_by is not None:
        encoding["shape"] = _nominal(shape_by, title="", legend={"orient": "top"})
    if tooltip:
        encoding["tooltip"] = list(tooltip)
    mark = {"type": "point", "filled": True, "size": size, **({"opacity": 1} if colors else {})}
    spec = _frame(title, height)
    spec["layer"] = [{"data": {"values": rows(data)}, "mark": mark, "encoding": encoding}] + [dict(e) for e in extra]
    return spec


# Labels of a labelled scatter: vertical offsets (px) tried in turn for a dot's label, the width of one
# character and the height of one line at 11 px, the gap between a dot and its label, and the plot's width on a
# 390 px phone (a 350 px chart less its y axis), which the labels must fit.
LABEL_SLOTS = (-5, 9, -19, 23, -33, 37)
_LINE_PX = 12
_LABEL_GAP = 6
_PHONE_PLOT_PX = 270


def _place_labels(data: list[dict[str, Any]], x: str, y: str, x_dom: Sequence[float], y_dom: Sequence[float],
                  width: float, height: float) -> list[tuple[str, int, str]]:
    """Where each dot's label goes (log axes), so that it stays inside the plot and labels do not overlap.

    For each dot: the side of the dot its label is on ("left" or "right", the side with room for it even on a
    phone's narrow plot), a vertical offset (greedy, the first free slot at ``width`` x ``height`` px) and the
    label's text: several names at one dot (" / ") stack one per line where one line would not fit.
    """

    def frac(v: float, lo: float, hi: float) -> float:
        return math.log(v / lo) / math.log(hi / lo)

    placed: list[tuple[float, float, float, float]] = []
    out = []
    for d in data:
        fx = frac(d[x], *x_dom)
        room = {"right": (1 - fx) * _PHONE_PLOT_PX - _LABEL_GAP, "left": fx * _PHONE_PLOT_PX - _LABEL_GAP}
        text = d["label"]
        side = "right" if room["right"] >= _LABEL_PX * len(text) or room["right"] >= room["left"] else "left"
        if _LABEL_PX * len(text) > room[side]:
            text = "\n".join(text.split(" / "))
        lines = text.split("\n")
        w = _LABEL_PX * max(len(ln) for ln in lines)
        h = _LINE_PX * len(lines)
        x0 = fx * width + _LABEL_GAP if side == "right" else fx * width - _LABEL_GAP - w
        yc = height * (1 - frac(d[y], *y_dom))
        chosen = LABEL_SLOTS[0]
        x1 = x0 + w
        for dy in LABEL_SLOTS:  # (loops, not any() over a generator: a fifth of the catalogue's Python in Pyodide)
            top, bottom = yc + dy - h / 2, yc + dy + h / 2
            for b in placed:
                if x0 < b[2] and b[0] < x1 and top < b[3] and b[1] < bottom:
                    break
            else:
                chosen = dy
                break
        placed.append((x0, yc + chosen - h / 2, x0 + w, yc + chosen + h / 2))
        out.append((side, chosen, text))
    return out


def labelled_scatter(title: str, data: Iterable[Mapping[str, Any]], *, x: Mapping[str, Any], y: Mapping[str, Any],
                     color_by: str, colors: Mapping[str, str], tooltip: Sequence[Mapping[str, Any]] = (),
                     height: int = 300) -> dict[str, Any]:
    """:func:`scatter` on two log axes with explicit domains, each dot labelled with its field ``label`` where
    it fits inside the plot and clear of the other labels."""
    values = rows(data)
    spec = scatter(title, values, x=x, y=y, color_by=color_by, colors=colors, tooltip=tooltip, height=height)
    spec["layer"][0]["encoding"]["color"].pop("legend")  # a few vendors: the shared style's legend
    places = _place_labels(values, x["field"], y["field"], x["scale"]["domain"], y["scale"]["domain"],
                           width=WIDTH - 120, height=height)
    # One layer of labels whatever their places (each row says its side and offset): one structure for any data.
    right = "datum.side == 'right'"
    spec["layer"].append(
        {"mark": {"type": "text", "lineBreak": "\n", "align": {"expr": f"{right} ? 'left' : 'right'"},
                  "dx": {"expr": f"{right} ? {_LABEL_GAP} : {-_LABEL_GAP}"}, "dy": {"expr": "datum.dy"}},
         "data": {"values": rows({**d, "label": text, "side": side, "dy": dy} for d, (side, dy, text) in zip(values, places))},
         "encoding": {"x": _strip(x), "y": _strip(y), "text": _tip("label", kind="nominal")}})
    return spec


def timeline(title: str, data: Iterable[Mapping[str, Any]], *, lane: str, start: str, end: str, phase: str,
             colors: Mapping[str, str], span: float, x_title: str, solid: str | None = None,
             numbers: str | None = None, tooltip: Sequence[Mapping[str, Any]] = (), lane_px: int = 26) -> dict[str, Any]:
    """Boxes on lanes over time (a schedule): each row a box on lane ``lane`` from ``start`` to ``end``,
    coloured by ``phase``; ``solid``: a Vega test for the boxes drawn solid (the others lighter); ``numbers``: a
    field written inside each box where the box is wide enough for it. The lanes, in the rows' order, are the
    scale's domain and the height follows their count (``lane_px`` each): one structure for any lanes."""
    values = rows(data)
    y = _nominal(lane, title="", sort=None, scale={"domain": list(dict.fromkeys(str(r[lane]) for r in values))})
    x = _x(q(start, x_title, domain=[0, span], nice=False))
    encoding: dict[str, Any] = {"y": y, "x": x, "x2": _tip(end),
                                "color": _nominal(phase, title="", sort=list(colors), scale=_colors(colors))}
    if solid is not None:
        encoding["opacity"] = {"condition": {"test": solid, "value": 1}, "value": 0.45}
    if tooltip:
        encoding["tooltip"] = list(tooltip)
    layers: list[dict[str, Any]] = [{"mark": {"type": "bar", "stroke": "white", "strokeWidth": 0.5},
                                     "encoding": encoding}]
    if numbers is not None:
        wide = f"scale('x', datum['{end}']) - scale('x', datum['{start}']) >= {_LABEL_PX} * length(datum['{numbers}'] + '') + 4"
        layers.append({"mark": {"type": "text", "color": "white", "opacity": {"expr": f"{wide} ? 1 : 0"}},
                       "transform": [{"calculate": f"(datum['{start}'] + datum['{end}']) / 2", "as": "mid"}],
                       "encoding": {"y": y, "x": _tip("mid"), "text": _tip(numbers)}})
    spec = _frame(title, lane_px)
    spec["height"] = {"step": lane_px}
    spec["data"] = {"values": values}
    spec["layer"] = layers
    return spec


__all__ = ["CONFIG", "HEIGHT", "PALETTE", "WIDTH", "bars", "clean", "end_labels", "grouped", "heatmap", "labelled_scatter", "line",
           "live_axis", "marker_text",
           "panels", "parts", "parts_panel", "point", "q", "scatter", "sweep", "timeline", "tip", "title_of"]


# Object parameters (a ModelConfig, a Fabric, a list of offers...) are checked by type before each call.
_check.guard(globals())
