"""The ipywidgets shell every calculator shares: controls from data, one observer, inline errors.

A calculator is a :class:`mlcalc.calc.Calc` (controls described as data, and two pure steps,
``compute`` and ``view``). This shell only builds one widget per control, runs the two steps on every
change and shows the view: its text and table as HTML, its chart as a Vega-Lite output (JupyterLab
draws it natively; the static site draws the same spec with vega-embed, and recomputes it in the
reader's browser through the same ``Calc``). No arithmetic happens here.
"""

from __future__ import annotations

import html
import json
from typing import Any, ClassVar

import ipywidgets as widgets
from IPython.display import display

from mlcalc.charts import title_of
from mlcalc.vl import chart_values
from mlcalc.calc import Calc, Control, View, check_chart, error_message, view_html, view_plain

VEGALITE_MIME = "application/vnd.vegalite.v5+json"

# Controls wrap onto new lines instead of shrinking: none can collapse to a bare handle.
_CONTROL_LAYOUT = dict(flex="1 1 260px", min_width="240px", max_width="100%")
_STYLE = {"description_width": "initial"}


def make_control(c: Control, value: Any) -> widgets.Widget:
    """The ipywidget for one control description, set to ``value``."""
    common: dict[str, Any] = dict(description=c.label, style=_STYLE, tooltip=c.help or None,
                                  layout=widgets.Layout(**_CONTROL_LAYOUT, **({"width": c.width} if c.width else {})))
    if c.kind == "number":
        w = widgets.FloatText(value=value, step=c.step, **common)
    elif c.kind == "int":
        w = widgets.IntText(value=value, step=c.step or 1, **common)
    elif c.kind == "slider":
        w = widgets.FloatSlider(value=value, min=c.min, max=c.max, step=c.step or 0.01, continuous_update=False,
                                **common)
    elif c.kind == "int_slider":
        w = widgets.IntSlider(value=value, min=c.min, max=c.max, step=c.step or 1, continuous_update=False, **common)
    elif c.kind == "log_slider":
        # Readout with SI prefixes ("1.07G"), not "1.07e+9".
        w = widgets.FloatLogSlider(value=value, base=10, min=c.min, max=c.max, step=c.step or 0.1,
                                   continuous_update=False, readout_format=".3s", **common)
    elif c.kind == "choice":
        w = widgets.Dropdown(options=list(c.options), value=value, **common)
    elif c.kind == "toggle":
        common.pop("tooltip")
        w = widgets.ToggleButtons(options=list(c.options), value=value, **common)
    elif c.kind == "check":
        w = widgets.Checkbox(value=value, indent=False, **common)
    else:  # text
        w = widgets.Textarea(value=value, rows=8, continuous_update=False, **common)  # a paste: several lines
    w.add_class(f"mlcalc-ctl-{c.key}")
    return w


# Attributes of the shell itself: a control key must not take one of them.
_RESERVED = frozenset({"calc", "message", "view_text", "view_chart", "view_record", "chart", "last_result", "last_view",
                       "last_error", "values", "children", "layout", "keys"})


class CalcWidget(widgets.VBox):
    """The ipywidgets shell of one calculator (``calc``); :mod:`mlcalc.widgets` makes one subclass per
    registered calculator, named by its ``Calc.widget``.

    Keyword arguments set controls by key (``GpuCountWidget(n_params_billion=405)``); a preset given by
    name fills in the controls it sets that are not given (``TrainingCostWidget(model="Llama-3 70B")``).
    Each control is an attribute named by its key (``w.n_params_billion.value = 7``). Any exception from
    compute or view becomes an inline message; the last good result stays, marked stale, and the
    calculator keeps working.
    """

    calc: ClassVar[Calc]

    def __init__(self, **given: Any) -> None:
        calc = self.calc
        given = dict(given)
        for p in calc.presets:  # a preset given by name fills in what was not given
            for key, value in (p.values.get(given[p.control], {}) if p.control in given else {}).items():
                given.setdefault(key, value)
        values = calc.values(given)
        self._controls = {c.key: make_control(c, values[c.key]) for c in calc.controls}
        for key, w in self._controls.items():
            if key in _RESERVED or key.startswith("_"):
                raise ValueError(f"{calc.key}: a control may not be named {key!r} (the shell uses that name)")
            setattr(self, key, w)
        self.message = widgets.HTML(value="")  # the inline error message ("" when all is well)
        self.message.add_class("mlcalc-message")
        # The view's text and table, and its chart (Vega-Lite). Named view_* so that no control key
        # ("text" for a paste box) can hide them.
        self.view_text = widgets.HTML(value="")
        self.view_text.add_class("mlcalc-view-text")
        self.view_chart = widgets.Output()
        self.view_chart.add_class("mlcalc-view-chart")
        self.last_result: Any = None  # what compute() returned last time it succeeded
        self.last_view: View | None = None  # what view() returned last time it succeeded
        self.last_error: str = ""  # the last error message shown, "" if none
        box = widgets.Box(list(self._controls.values()),
                          layout=widgets.Layout(display="flex", flex_flow="row wrap", width="100%"))
        box.add_class("mlcalc-controls")
        # The calculator's own record against measured and published cases (mlcalc.accuracy), one line.
        self.view_record = widgets.HTML(value=f'<div class="mlcalc-record">{html.escape(_record(calc.key))}</div>')
        self.view_record.add_class("mlcalc-record")
        super().__init__([box, self.message, self.view_text, self.view_chart, self.view_record],
                         layout=widgets.Layout(width="100%"))
        self.add_class("mlcalc-calculator")
        self.add_class(f"mlcalc-calc-{calc.key}")
        self._following = False  # True while controls that follow a change are being set
        for w in self._controls.values():
            w.observe(self._changed, names="value")
        self._update()

    def _changed(self, change: Any) -> None:
        """A control changed: set the controls that follow it (presets), then update once."""
        if self._following:
            return
        key = next((k for k, w in self._controls.items() if w is change["owner"]), None)
        updates = self.calc.follow(key, self.values()) if key is not None else {}
        self._following = True
        try:
            for k, value in updates.items():
                self._controls[k].value = value
        except Exception:  # noqa: BLE001 - a preset value a control refuses: the update shows the error
            pass
        finally:
            self._following = False
        self._update()

    @property
    def chart(self) -> widgets.Output:
        """The view's chart (Vega-Lite in an Output widget); ``view_chart`` under its older name."""
        return self.view_chart

    # Kept for the calculators' tests and the notebooks: compute/view of the current values.
    def values(self) -> dict[str, Any]:
        """The current value of every control, by key."""
        return {key: w.value for key, w in self._controls.items()}

    def _update(self, change: object = None) -> None:
        try:
            off = set(self.calc.inactive(self.values()))
            for k, w in self._controls.items():
                w.disabled = k in off
        except Exception:  # noqa: BLE001 - the rule failing must not stop the calculator
            pass
        try:
            result, view = self.calc.evaluate(self.values())
            check_chart(view.chart)
            text = view_html(view)
        except Exception as err:  # noqa: BLE001 - a reader never sees a traceback
            self.last_error = error_message(err)
            self.message.value = (f'<div class="mlcalc-error" role="alert"><b>Check the input:</b> '
                                  f'{html.escape(self.last_error)}</div>')
            self.view_text.add_class("mlcalc-stale")
            self.view_chart.add_class("mlcalc-stale")
            return
        self.last_error = ""
        self.message.value = ""
        self.view_text.remove_class("mlcalc-stale")
        self.view_chart.remove_class("mlcalc-stale")
        self.last_result, self.last_view = result, view
        self.view_text.value = text
        # The chart goes straight into the Output widget's state (no display message): JupyterLab
        # draws it from there, the site's script reads and rewrites the same state.
        self.view_chart.outputs = () if view.chart is None else (
            {"output_type": "display_data", "data": {VEGALITE_MIME: view.chart}, "metadata": {}},)

    def _repr_mimebundle_(self, **kwargs: Any) -> dict:
        """The live widget; its view as plain text with the chart's data (what nbval compares); and a
        readable HTML snapshot, which JupyterLab shows where the widget cannot be drawn (a notebook
        opened before it is run, or not trusted)."""
        data = super()._repr_mimebundle_(**kwargs)
        data["text/plain"] = plain_summary(self.calc.key, self.last_view, self.last_error)
        data["text/html"] = html_snapshot(self.calc.title, self.last_view, self.last_error)
        return data


def _record(key: str) -> str:
    """The calculator's accuracy record (mlcalc.accuracy.record); never breaks the widget."""
    try:
        from mlcalc import accuracy

        return accuracy.record(key)
    except Exception:  # noqa: BLE001 - a missing record must not stop the calculator
        return ""


def html_snapshot(title: str, view: View | None, error: str = "") -> str:
    """A calculator's last view as escaped HTML: its title, text and table, and where its chart is."""
    parts = [f'<div class="mlcalc-snapshot"><p><strong>{html.escape(title)}</strong> '
             "<em>(a snapshot: run the cell to make it live)</em></p>"]
    if view is not None:
        parts.append(view_html(view))
        if view.chart is not None:
            text = title_of(view.chart)
            parts.append(f"<p><em>Chart{': ' + html.escape(text) if text else ''} (drawn when the cell runs).</em></p>")
    if error:
        parts.append(f"<p><strong>{html.escape(error)}</strong></p>")
    parts.append("</div>")
    return "".join(parts)


def plain_summary(key: str, view: View | None, error: str = "") -> str:
    """A calculator's view as deterministic plain text: its text, table, chart title and data rows."""
    lines = [f"[{key}]"]
    if view is not None:
        lines.append(view_plain(view))
        if view.chart is not None:
            lines.append(f"chart: {title_of(view.chart)}")
            lines.extend(json.dumps(row, sort_keys=True, ensure_ascii=False) for row in chart_values(view.chart))
    if error:
        lines.append(f"(error shown: {error})")
    return "\n".join(lines)

# Older imports (notebooks, tests) still find the figure helpers here; they live in mlcalc.figures, which imports
# matplotlib: loaded on first use (PEP 562), not with every calculator. 26 of the 31 notebooks draw no matplotlib
# figure, and each of their kernels (nbval's, JupyterLab's) imported matplotlib with mlcalc.widgets.
# (Not in __all__: a star import would load them.)
from mlcalc.calculators._common import si as si_label  # noqa: E402

_FIGURE_HELPERS = ("figure_png", "plain_log_ticks")


def __getattr__(name: str) -> Any:
    if name in _FIGURE_HELPERS:
        from mlcalc import figures

        return getattr(figures, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["CalcWidget", "VEGALITE_MIME", "display", "make_control", "si_label"]
