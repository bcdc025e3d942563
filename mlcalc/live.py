"""The bridge between the static site's widget models and the calculators (standard library only).

The site's Web Worker (book/_static/mlcalc-worker.mjs) runs this module in Pyodide. The page sends
the control values as its embedded ipywidgets models hold them (a dropdown or toggle as the *index*
of its option: the option values live only in Python) and the key of the control that changed;
:func:`run_widgets_json` answers with what :func:`mlcalc.calc.run` computes, plus what the Jupyter
shells would do to the other controls:

- linked controls (a preset that fills in other controls, a control that follows another), and
- controls the current values make irrelevant (shown disabled).

Those rules are the calculators' own, as data or pure functions (``Calc.presets``, and the
``INACTIVE`` rules of :mod:`mlcalc.calculators`), applied by the same ``Calc.follow`` and
``Calc.inactive`` as in Jupyter. So the page does what JupyterLab does, with no rule in JavaScript.
"""

from __future__ import annotations

import json
from typing import Any, Mapping

from mlcalc.calc import Calc, error_message, get, run


def widget_values(key: str, state: Mapping[str, Any]) -> dict[str, Any]:
    """Control values as the site's widget models hold them -> the values :func:`mlcalc.calc.run` takes.

    A dropdown or toggle model holds the index of its option; JSON from the browser turns a whole
    float into an int (80.0 -> 80). Unknown keys and option numbers that do not exist are refused
    (ValueError naming the control).
    """
    calc = get(key)
    out: dict[str, Any] = {}
    for name, v in state.items():
        c = calc.control(str(name))
        if c.kind in ("choice", "toggle"):
            if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < len(c.options):
                raise ValueError(f"{c.label}: option number {v!r} does not exist: choose 0 to {len(c.options) - 1}")
            v = c.options[v][1]
        elif c.kind in ("number", "slider", "log_slider") and isinstance(v, int) and not isinstance(v, bool):
            v = float(v)
        elif c.kind in ("int", "int_slider") and isinstance(v, float) and v.is_integer():
            v = int(v)
        out[c.key] = v
    return out


def widget_state(key: str, values: Mapping[str, Any]) -> dict[str, Any]:
    """The inverse of :func:`widget_values`: a choice's value as its option's index."""
    calc = get(key)
    out: dict[str, Any] = {}
    for name, v in values.items():
        c = calc.control(name)
        if c.kind in ("choice", "toggle"):
            v = c.values().index(v)
        out[name] = v
    return out


def controls_after(key: str, changed: str, values: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The control values after the reader changed ``changed`` (the calculator's presets applied by
    :meth:`mlcalc.calc.Calc.follow`, as the Jupyter shell applies them), and the keys of the controls
    those values make irrelevant (:meth:`mlcalc.calc.Calc.inactive`)."""
    calc: Calc = get(key)
    values = dict(values)
    if changed:
        values.update(calc.follow(changed, calc.values(values)))
    return values, calc.inactive(calc.values(values))


def run_widgets(key: str, state: Mapping[str, Any], changed: str = "") -> dict[str, Any]:
    """:func:`mlcalc.calc.run` for widget-model values, with the linked controls' new values
    (``controls``, in widget form) and the irrelevant controls (``inactive``). Never raises."""
    try:
        values = widget_values(key, state)
        after, inactive = controls_after(key, str(changed or ""), values)
        moved = {k: v for k, v in after.items() if k not in values or values[k] != v}
        out = run(key, after)
        out["controls"] = widget_state(key, moved)
        out["inactive"] = inactive
        return out
    except Exception as err:  # noqa: BLE001 - a reader's input must never crash the page
        return {"ok": False, "error": error_message(err)}


def run_widgets_json(key: str, state_json: str, changed: str = "") -> str:
    """:func:`run_widgets` with JSON in and out (what the site's worker calls)."""
    try:
        state = json.loads(state_json)
        if not isinstance(state, dict):
            raise ValueError("the values must be a JSON object")
    except (ValueError, RecursionError) as err:
        return json.dumps({"ok": False, "error": f"bad values: {err}"})
    return json.dumps(run_widgets(key, state, changed), allow_nan=False)


__all__ = ["controls_after", "run_widgets", "run_widgets_json", "widget_state", "widget_values"]
