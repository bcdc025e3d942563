"""Calculators as two pure steps: ``compute(values) -> result`` and ``view(result, values) -> View``.

One code path for every front end. The same ``Calc`` runs in a Jupyter kernel (the ipywidgets
shell in :mod:`mlcalc.widgets`) and in the reader's browser (Pyodide, driven by the site's
worker through :func:`run`). So this module, the calculator definitions in
:mod:`mlcalc.calculators` and everything they import use the standard library alone.

A calculator is described as data:

- ``controls``: what the reader can set (``Control``: a number box, a slider, a dropdown ...), each
  with a key, a label, a default and its allowed range or options;
- ``compute(values)``: only mlcalc functions; raises ``ValueError`` naming the parameter for bad input;
- ``view(result, values)``: what the reader sees, as data (``View``: a short text, an optional table,
  an optional Vega-Lite chart description as a plain dict);
- ``widget``: the name notebooks import its widget by (:mod:`mlcalc.widgets` makes the class), and
  optionally ``inactive(values)``: the keys of the controls the other values make irrelevant.

A control's key is the one name of that input everywhere: the notebook's keyword argument, the widget's
attribute, the parameter in a shared link.

:func:`run` joins the two for a mapping of control values and never raises: it returns a JSON-able
dict with the text, the table as HTML, the chart, or an error message for the reader.
"""

from __future__ import annotations

import json
import math
import re
from collections import abc
from dataclasses import dataclass, field
from typing import AbstractSet, Any, Callable, Mapping

#: Most rows a table in a view may have (a view never grows with a number the reader types).
MAX_TABLE_ROWS = 200
#: Most data rows a chart in a view may carry.
MAX_CHART_ROWS = 2000

CONTROL_KINDS = ("number", "int", "slider", "int_slider", "log_slider", "choice", "toggle", "check", "text")


@dataclass(frozen=True)
class Control:
    """One input of a calculator, described as data (a shell turns it into a widget)."""

    key: str  # name of the value passed to compute()
    label: str  # what the reader sees next to it
    kind: str  # one of CONTROL_KINDS
    default: Any  # starting value
    options: tuple[tuple[str, Any], ...] = ()  # choice / toggle: (label, value) pairs
    min: float | None = None  # sliders: lowest value (log_slider: lowest exponent of 10)
    max: float | None = None  # sliders: highest value (log_slider: highest exponent of 10)
    step: float | None = None  # sliders and number boxes: the step
    help: str = ""  # a short hint (unit, convention) shown as a tooltip
    width: str = ""  # optional CSS width for long dropdowns ("" = the shell's default)

    def __post_init__(self) -> None:
        if self.kind not in CONTROL_KINDS:
            raise ValueError(f"Control {self.key!r}: kind={self.kind!r} is not allowed: choose one of {CONTROL_KINDS}")
        if self.kind in ("choice", "toggle") and self.default not in self.values():
            raise ValueError(f"Control {self.key!r}: default={self.default!r} is not one of its options")
        if self.kind in ("slider", "int_slider", "log_slider") and (self.min is None or self.max is None):
            raise ValueError(f"Control {self.key!r}: a slider needs min and max")

    def values(self) -> list[Any]:
        """The values a choice or toggle allows."""
        return [value for _, value in self.options]


def choice(key: str, label: str, options: Any, default: Any, *, kind: str = "choice",
           help: str = "", width: str = "") -> Control:  # noqa: A002 - Control's own field name
    """A dropdown (or toggle buttons with ``kind="toggle"``) from values or (label, value) pairs."""
    pairs = tuple((str(o[0]), o[1]) if isinstance(o, tuple) else (str(o), o) for o in options)
    return Control(key, label, kind, default, options=pairs, help=help, width=width)


@dataclass(frozen=True)
class Table:
    """A small table: column titles and rows of plain values (at most MAX_TABLE_ROWS rows)."""

    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]

    def __post_init__(self) -> None:
        if len(self.rows) > MAX_TABLE_ROWS:
            raise ValueError(f"a table may have at most {MAX_TABLE_ROWS} rows, not {len(self.rows)}")


@dataclass(frozen=True)
class View:
    """What the reader sees: a short text, an optional table, an optional Vega-Lite chart."""

    text: str = ""  # plain text, one finding per line
    table: Table | None = None  # a small table under the text
    chart: dict | None = None  # a Vega-Lite v5 spec as a plain dict (data inline), built by a kind of mlcalc.charts


@dataclass(frozen=True)
class Presets:
    """A choice control whose options fill in other controls (a workload, a model, a chip), as data.

    Picking an option that has an entry in ``values`` sets those controls; editing one of them by
    hand afterwards turns the choice to ``custom`` (when given), so the controls never claim a
    preset their numbers no longer match. :meth:`Calc.follow` applies it, for every shell.
    """

    control: str  # key of the choice control
    values: Mapping[Any, Mapping[str, Any]]  # option value -> {other control's key: its value}
    custom: Any = None  # the option meaning "my own numbers" (None: the choice is left as it is)

    def filled(self) -> set[str]:
        """Keys of the controls the presets fill in."""
        return {k for v in self.values.values() for k in v}


def none_inactive(values: Mapping[str, Any]) -> frozenset[str]:
    """The :attr:`Calc.inactive` of a calculator whose controls all count, whatever the values."""
    return frozenset()


@dataclass(frozen=True)
class Calc:
    """A calculator: its controls and its two pure steps."""

    key: str  # unique name, "<area>.<name>", e.g. "memory.gpu_count"
    title: str  # one line saying what it answers
    widget: str  # the name notebooks import its widget by (``from mlcalc.widgets import GpuCountWidget``)
    controls: tuple[Control, ...]
    compute: Callable[[Mapping[str, Any]], Any]  # values -> result (raises ValueError on bad input)
    view: Callable[[Any, Mapping[str, Any]], View]  # (result, values) -> View
    notes: str = field(default="")  # optional: conventions and sources, shown under the title
    presets: tuple[Presets, ...] = ()  # optional: choices that fill in other controls
    # optional: values -> keys of the controls the other values make irrelevant (shells show them disabled)
    inactive: Callable[[Mapping[str, Any]], AbstractSet[str]] = none_inactive

    def follow(self, changed: str, values: Mapping[str, Any]) -> dict[str, Any]:
        """Controls that follow a change of ``changed``: {key: new value} (empty if none).

        Picking a preset fills in its controls; editing a filled-in control by hand so that it no
        longer matches turns the choice to its ``custom`` option.
        """
        updates: dict[str, Any] = {}
        for p in self.presets:
            if changed == p.control:
                updates.update(p.values.get(values.get(p.control), {}))
            elif changed in p.filled() and p.custom is not None:
                preset = p.values.get(values.get(p.control))
                if preset is not None and any(values.get(k) != v for k, v in preset.items()):
                    updates[p.control] = p.custom
        return updates

    def disabled(self, values: Mapping[str, Any]) -> list[str]:
        """:attr:`inactive` for ``values``, sorted (what the shells and the page grey out)."""
        return sorted(self.inactive(values))

    def defaults(self) -> dict[str, Any]:
        """The starting value of every control."""
        return {c.key: c.default for c in self.controls}

    def control(self, key: str) -> Control:
        for c in self.controls:
            if c.key == key:
                return c
        raise ValueError(f"{self.key}: no control named {key!r}: choose one of {[c.key for c in self.controls]}")

    def values(self, given: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The defaults overridden by ``given``: unknown keys and values outside a choice are refused."""
        values = self.defaults()
        for key, value in (given or {}).items():
            c = self.control(key)
            if c.kind in ("choice", "toggle") and value not in c.values():
                raise ValueError(f"{key}={value!r} is not allowed: choose one of {', '.join(map(repr, c.values()))}")
            values[key] = value
        return values

    def evaluate(self, given: Mapping[str, Any] | None = None) -> tuple[Any, View]:
        """compute + view for ``given`` values (raises ValueError for bad input)."""
        values = self.values(given)
        result = self.compute(values)
        check_finite(result)
        view = self.view(result, values)
        if not isinstance(view, View):
            raise TypeError(f"{self.key}: view() must return a View, not {type(view).__name__}")
        check_view(view)
        return result, view


#: Most nested levels :func:`check_finite` looks into.
_MAX_DEPTH = 8
_NOT_FINITE = re.compile(r"(?<![\w.])-?(inf|nan)(?![\w])", re.IGNORECASE)
_OVERFLOW_HINT = ("these inputs give a result that is not a finite number{where}: check the largest and smallest "
                  "values you entered")


_LEAVES = frozenset((str, bytes, bool, int, type(None)))  # exact types holding no float (subclasses: isinstance)


def _first_not_finite(result: Any, depth: int) -> tuple[tuple[str, ...], float] | None:
    """The path (``[key]``, ``.field``, ``[i]`` parts) and value of the first infinite or NaN number in ``result``,
    or None. A part's name is written only on the way back from a bad value (a finite result names nothing), and
    a container's floats and plain values are looked at in its own loop (no call per number): a chart's sweep
    of a few hundred rows is checked in a fraction of a millisecond, also in the reader's browser."""
    if depth > _MAX_DEPTH:
        return None
    if isinstance(result, float):
        return None if math.isfinite(result) else ((), result)
    if isinstance(result, (str, bytes, bool, int)) or result is None:
        return None
    keys: Any = None
    values: Any
    if isinstance(result, abc.Mapping):
        keys, values = zip(*list(result.items())[:MAX_CHART_ROWS]) if result else ((), ())
    elif isinstance(result, (tuple, list)):
        values = result[:MAX_CHART_ROWS]
    elif hasattr(result, "__dataclass_fields__"):
        keys = tuple(result.__dataclass_fields__)
        values = tuple(getattr(result, f, None) for f in keys)
    else:
        return None
    inline = depth < _MAX_DEPTH  # a child's float is looked at only where its own depth is looked into
    for i, v in enumerate(values):
        t = type(v)
        bad: tuple[tuple[str, ...], float] | None
        if inline and t is float:
            if math.isfinite(v):
                continue
            bad = ((), v)
        elif inline and t in _LEAVES:
            continue
        else:
            bad = _first_not_finite(v, depth + 1)
            if bad is None:
                continue
        return (_part_name(result, keys, i), *bad[0]), bad[1]
    return None


def _part_name(result: Any, keys: Any, i: int) -> str:
    """The name of part ``i`` of a container in a path: ``[key]`` (a mapping), ``.field`` (a named tuple or a
    dataclass), ``[i]`` (a sequence)."""
    if isinstance(result, abc.Mapping):
        return f"[{keys[i]!r}]"
    if keys is not None:
        return f".{keys[i]}"
    fields = getattr(result, "_fields", None)
    return f".{fields[i]}" if fields else f"[{i}]"


def check_finite(result: Any, name: str = "result", depth: int = 0) -> None:
    """Refuse a result holding an infinite or NaN number (inputs at the edge of the float range).

    Looks into tuples (NamedTuples included), lists, dicts and dataclasses, a few levels deep: every
    size, time, count or rate a calculator returns must be finite, or the reader gets a message.
    """
    bad = _first_not_finite(result, depth)
    if bad is not None:
        raise ValueError(_OVERFLOW_HINT.format(where=f" ({name}{''.join(bad[0])} = {bad[1]})"))


def check_view(view: View) -> None:
    """A view shows no "inf" or "nan": a number the reader would read as a result."""
    cells = [view.text] + [str(c) for row in (view.table.rows if view.table else ()) for c in row]
    for cell in cells:
        if _NOT_FINITE.search(cell):
            raise ValueError(_OVERFLOW_HINT.format(where=""))


REGISTRY: dict[str, Calc] = {}


def register(calc: Calc) -> Calc:
    """Add a calculator to the registry (its key must be new)."""
    if calc.key in REGISTRY and REGISTRY[calc.key] is not calc:
        raise ValueError(f"calculator key {calc.key!r} is registered twice")
    if not calc.widget.isidentifier() or not calc.widget[:1].isupper():
        raise ValueError(f"{calc.key}: widget={calc.widget!r} is not allowed: a class name (GpuCountWidget)")
    twin = next((c.key for c in REGISTRY.values() if c.widget == calc.widget and c is not calc), None)
    if twin is not None:
        raise ValueError(f"{calc.key}: widget={calc.widget!r} is not allowed: {twin} has that name")
    REGISTRY[calc.key] = calc
    return calc


def get(key: str) -> Calc:
    """The registered calculator named ``key`` (importing mlcalc.calculators registers them all)."""
    if not REGISTRY:
        import mlcalc.calculators  # noqa: F401  (registers every calculator)
    if key not in REGISTRY:
        raise ValueError(f"calculator={key!r} is not allowed: choose one of {', '.join(sorted(REGISTRY))}")
    return REGISTRY[key]


def error_message(err: BaseException) -> str:
    """What the reader is told when a calculation fails: a ValueError's own words, else a short note."""
    if isinstance(err, ValueError):
        return str(err)
    if isinstance(err, TypeError):
        return f"this input has the wrong type: {err}"
    return f"this input could not be computed ({type(err).__name__}: {err}); please report it"


_ESCAPES = {ord("&"): "&amp;", ord("<"): "&lt;", ord(">"): "&gt;", ord('"'): "&quot;", ord("'"): "&#x27;"}
_NEEDS_ESCAPE = re.compile("[&<>\"']")


def _escape(text: str) -> str:
    """``html.escape(text)`` (quotes too), without importing :mod:`html`: that imports html.entities, whose table of
    2,231 named characters this never needs and which compiled took about 1 MB of the site's memory snapshot heap
    (30 MiB: scripts/make_snapshot.mjs). A text with nothing to escape (most table cells) is returned as it is."""
    return text.translate(_ESCAPES) if _NEEDS_ESCAPE.search(text) else text


def table_html(table: Table) -> str:
    """A table as escaped HTML (numbers right-aligned)."""
    head = "".join(f"<th>{_escape(str(c))}</th>" for c in table.columns)
    body = []
    for row in table.rows:
        cells = []
        for v in row:
            numeric = isinstance(v, (int, float)) and not isinstance(v, bool)
            cells.append(f'<td style="text-align:{"right" if numeric else "left"}">{_escape(_cell(v))}</td>')
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f'<table class="mlcalc-table"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'


def _cell(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:,.4g}" if abs(v) < 1e4 else f"{v:,.0f}"
    return str(v)


def view_html(view: View) -> str:
    """The text and table of a view as escaped HTML (the chart is drawn separately)."""
    parts = []
    if view.text:
        parts.append(f'<pre class="mlcalc-text">{_escape(view.text)}</pre>')
    if view.table is not None:
        parts.append(f'<div class="mlcalc-table-wrap">{table_html(view.table)}</div>')
    return "".join(parts)


def view_plain(view: View) -> str:
    """The text and table of a view as plain text (what nbval compares and a test can read)."""
    lines = [view.text] if view.text else []
    if view.table is not None:
        lines.append(" | ".join(map(str, view.table.columns)))
        lines.extend(" | ".join(_cell(v) for v in row) for row in view.table.rows)
    return "\n".join(lines)


def check_chart(chart: dict | None) -> None:
    """A chart must be JSON with finite numbers and at most MAX_CHART_ROWS data rows."""
    global _checked_chart
    if chart is None:
        return
    rows = _chart_rows(chart)
    if rows > MAX_CHART_ROWS:
        raise ValueError(f"a chart may carry at most {MAX_CHART_ROWS} data rows, not {rows}")
    _checked_chart = (chart, json.dumps(chart, allow_nan=False))  # raises ValueError on inf / NaN


# The last chart check_chart passed and its JSON text: the site's worker writes a result's chart with it
# (checked_chart_json) rather than encoding it a second time (a sixth of a chart-heavy change's Python).
_checked_chart: tuple[Any, str] | None = None


def checked_chart_json(chart: Any) -> str | None:
    """``json.dumps(chart, allow_nan=False)`` if ``chart`` (this very object, unchanged since) is the last chart
    :func:`check_chart` passed, else None."""
    last = _checked_chart
    return last[1] if last is not None and last[0] is chart else None


def _chart_rows(spec: Any) -> int:
    if isinstance(spec, dict):
        n = len(spec["data"]["values"]) if isinstance(spec.get("data"), dict) and "values" in spec["data"] else 0
        return n + sum(_chart_rows(v) for k, v in spec.items() if k in ("layer", "hconcat", "vconcat", "concat"))
    if isinstance(spec, list):
        return sum(_chart_rows(v) for v in spec)
    return 0


def run(key: str, values: Mapping[str, Any] | None = None, changed: str | None = None) -> dict[str, Any]:
    """compute + view for the site's worker and the shells: a JSON-able dict, never an exception.

    ``changed`` names the control the reader just changed: controls that follow it (presets) are
    updated first and returned under ``"set"``. ``{"ok": True, "text", "html", "chart", "set",
    "inactive"}`` or ``{"ok": False, "error": message for the reader, "set", "inactive"}``.
    """
    updates: dict[str, Any] = {}
    inactive: list[str] = []
    try:
        calc = get(key)
        given = _plain(values or {})
        if changed is not None:
            updates = calc.follow(str(changed), calc.values(given))
            given.update(updates)
        inactive = calc.disabled(calc.values(given))
        _, view = calc.evaluate(given)
        check_chart(view.chart)
        return {"ok": True, "text": view_plain(view), "html": view_html(view), "chart": view.chart,
                "set": updates, "inactive": inactive}
    except Exception as err:  # noqa: BLE001 - a reader's input must never crash the page
        return {"ok": False, "error": error_message(err), "set": updates, "inactive": inactive}


def run_json(key: str, values_json: str, changed: str | None = None) -> str:
    """:func:`run` with JSON in and out (what the browser's worker calls)."""
    try:
        values = json.loads(values_json)
        if not isinstance(values, dict):
            raise ValueError("the values must be a JSON object")
    except (ValueError, RecursionError) as err:
        return json.dumps({"ok": False, "error": f"bad values: {err}", "set": {}, "inactive": []})
    try:
        return json.dumps(run(key, values, changed), allow_nan=False)
    except ValueError as err:  # a value that JSON cannot carry (inf in "set")
        return json.dumps({"ok": False, "error": error_message(err), "set": {}, "inactive": []})


def _plain(values: Mapping[str, Any]) -> dict[str, Any]:
    """Floats that are whole numbers arrive from JavaScript as floats: keep them as given (compute checks)."""
    out = {}
    for k, v in values.items():
        if isinstance(v, float) and not math.isfinite(v):
            raise ValueError(f"{k}={v!r} is not allowed: it must be a finite number")
        out[str(k)] = v
    return out


__all__ = ["CONTROL_KINDS", "Calc", "Control", "Presets", "MAX_CHART_ROWS", "MAX_TABLE_ROWS", "REGISTRY", "Table",
           "View", "none_inactive",
           "checked_chart_json", "choice", "check_chart", "check_finite", "check_view", "error_message", "get", "register", "run", "run_json", "table_html",
           "view_html", "view_plain"]
