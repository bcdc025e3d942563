"""The bridge between the static site's widget models and the calculators (standard library only).

The site's Web Worker (book/_static/mlcalc-worker.mjs) runs this module in Pyodide. The page sends
the control values as its embedded ipywidgets models hold them (a dropdown or toggle as the *index*
of its option: the option values live only in Python) and the key of the control that changed;
:func:`run_widgets_json` answers with what :func:`mlcalc.calc.run` computes, plus what the Jupyter
shells would do to the other controls:

- linked controls (a preset that fills in other controls, a control that follows another), and
- controls the current values make irrelevant (shown disabled).

Those rules are the calculators' own, as data or pure functions (``Calc.presets`` and
``Calc.inactive``), applied by the same ``Calc.follow`` and ``Calc.disabled`` as in Jupyter. So the
page does what JupyterLab does, with no rule in JavaScript.

Links that reopen a calculator's values
    The page address holds the values a reader changed, as ``?<calculator key>.<control>=<value>&...``
    (``?plan.train.model=Llama-3+8B&plan.train.deadline_days=30``): only the values that differ from
    the ones the page was built with, a choice as its option's value name (a text value, or a number
    written as below; never its position, so a link survives options being reordered), a number in
    its shortest form that reads back to the same float, a tick box as ``true``/``false``. Several
    calculators on a page each keep their own parameters; the page's other parameters are kept as
    they are. :func:`query_from_values` writes a calculator's part, :func:`values_from_query` reads it
    back (ValueError naming the parameter, its value and what is allowed), :func:`replace_query`
    puts it into the page's query. The page's script only carries these strings.

    Bounds: a query longer than :data:`MAX_QUERY_CHARS` characters or with more than
    :data:`MAX_QUERY_PARAMS` parameters is refused unread; a number longer than
    :data:`MAX_NUMBER_CHARS` characters is refused before it is converted. A pasted text (a ``text``
    control: kilobytes of benchmark output) is not kept in the address.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Mapping
from urllib.parse import quote_plus, unquote_plus

from mlcalc import _check
from mlcalc.calc import Calc, Control, checked_chart_json, error_message, get, run

#: Most characters of a page's query that are read: 8,192, the request-line limit of common web
#: servers (nginx's 8 kB header buffer, Apache's LimitRequestLine of 8,190); a longer one is refused unread.
MAX_QUERY_CHARS = 8192
#: Most parameters of a query that are read (a page's calculators have far fewer controls in all).
MAX_QUERY_PARAMS = 256
#: Most characters of one number in a query (the shortest form of any float has at most 24).
MAX_NUMBER_CHARS = 32
_NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_SAFE = "-._~(),:/"  # kept as they are in a parameter (a space is written as +)

#: Control keys renamed on 2026-11-26, when the calculators took the names the notebooks use (one
#: vocabulary): calculator key -> {old control key: its key now}. Links are public, so one written before
#: still opens; this is only read (:func:`values_from_query`), never written, and grows with no new key.
OLD_LINK_KEYS: dict[str, dict[str, str]] = {
    "accelerators.mfu": {"params": "n_params_billion", "seconds": "iteration_time_s", "tflop": "tflop_per_iteration"},
    "accelerators.offers": {"params": "n_params_billion", "tokens": "n_tokens_billion"},
    "accelerators.peak": {"clock": "clock_mhz"},
    "accelerators.roofline": {"params": "n_params_billion"},
    "accelerators.training_cost": {"params": "n_params_billion", "price": "price_per_gpu_hour",
                                   "tokens": "n_tokens_billion"},
    "failures.goodput": {"params": "n_params_billion"},
    "measured.collective": {"ranks": "n_ranks", "size": "message_bytes"},
    "measured.prediction": {"seq": "seq_len"},
    "memory.bytes_per_param": {"params": "n_params_billion"},
    "memory.cpu": {"ram_per_worker": "ram_per_worker_gb"},
    "memory.gpu_count": {"params": "n_params_billion"},
    "memory.serving": {"context": "context_len"},
    "memory.training_fit": {"stage": "zero_stage"},
    "memory.zero": {"params": "n_params_billion", "stage": "zero_stage"},
    "network.collective": {"gpus": "gpus_per_node", "measured": "measured_busbw_gb_s", "nodes": "n_nodes",
                           "size": "message_bytes"},
    "network.layout": {"batch": "global_batch", "fraction": "state_memory_fraction", "nodes": "n_nodes"},
    "network.step_comm": {"batch": "global_batch"},
    "network.topology": {"hb": "hb_domain", "n": "n_gpus", "ratio": "cost_ratio"},
    "network.units": {"nics": "nics_per_node"},
    "storage.capacity": {"ckpt": "checkpoint_tb", "dataset": "dataset_tb", "kept": "checkpoints_kept",
                         "other": "other_tb", "usable": "usable_fraction"},
    "storage.checkpoint": {"fs": "filesystem_gb_per_s", "node": "node_gbit_per_s", "nodes": "n_nodes",
                           "params": "n_params_billion"},
    "storage.checkpoint_interval": {"ckpt": "checkpoint_s", "interval": "interval_h", "mtbf": "device_mtbf_years",
                                    "restart": "restart_min"},
    "storage.dataloader": {"per_node": "accelerators_per_node", "tflops": "achieved_tflops"},
    "storage.llm_dataloader": {"params": "n_params_billion", "per_node": "accelerators_per_node",
                               "tflops": "achieved_tflops"},
    "storage.startup": {"files": "n_files", "kops": "metadata_kops", "latency": "op_latency_ms", "nodes": "n_nodes",
                        "ops": "ops_per_file", "procs": "processes_per_node"},
}


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
    those values make irrelevant (:meth:`mlcalc.calc.Calc.disabled`)."""
    calc: Calc = get(key)
    values = dict(values)
    if changed:
        values.update(calc.follow(changed, calc.values(values)))
    return values, calc.disabled(calc.values(values))


def run_widgets(key: str, state: Mapping[str, Any], changed: str = "", initial: Mapping[str, Any] | None = None,
                search: str | None = None) -> dict[str, Any]:
    """:func:`mlcalc.calc.run` for widget-model values, with the linked controls' new values
    (``controls``, in widget form) and the irrelevant controls (``inactive``). Never raises.

    Given the page's own values (``initial``, widget form) and its query (``search``), the answer also
    holds ``search``: the page query for the values computed (:func:`replace_query`), left out when
    they cannot be written (then the page keeps its address).
    """
    try:
        values = widget_values(key, state)
        after, inactive = controls_after(key, str(changed or ""), values)
        carried(key, after)
    except Exception as err:  # noqa: BLE001 - a reader's input must never crash the page
        return {"ok": False, "error": error_message(err)}
    try:
        moved = {k: v for k, v in after.items() if k not in values or values[k] != v}
        out = run(key, after)
        out["controls"] = widget_state(key, moved)
        out["inactive"] = inactive
    except Exception as err:  # noqa: BLE001
        return {"ok": False, "error": error_message(err)}
    if initial is not None and search is not None:
        try:
            out["search"] = replace_query(key, search, query_from_values(key, after, widget_values(key, initial)))
        except Exception:  # noqa: BLE001 - values a link cannot hold: the address stays as it is
            pass
    return out


def run_widgets_json(key: str, state_json: str, changed: str = "", initial_json: str = "", search: str = "") -> str:
    """:func:`run_widgets` with JSON in and out (what the site's worker calls); ``initial_json`` "" asks
    for no ``search``."""
    try:
        state = json.loads(state_json)
        initial = json.loads(initial_json) if initial_json else None
        if not isinstance(state, dict) or not (initial is None or isinstance(initial, dict)):
            raise ValueError("the values must be a JSON object")
    except (ValueError, RecursionError) as err:
        return json.dumps({"ok": False, "error": f"bad values: {err}"})
    return _answer_json(run_widgets(key, state, changed, initial, str(search) if initial is not None else None))


def _answer_json(out: Mapping[str, Any]) -> str:
    """``json.dumps(out, allow_nan=False)``, the same text, with its chart's JSON as :func:`mlcalc.calc.check_chart`
    wrote it when it checked that chart (not encoded a second time)."""
    chart = checked_chart_json(out.get("chart"))
    if chart is None:
        return json.dumps(out, allow_nan=False)
    return "{" + ", ".join(json.dumps(k) + ": " + (chart if k == "chart" else json.dumps(v, allow_nan=False))
                           for k, v in out.items()) + "}"


# --------------------------------------------------------------------------- links (the page's query)


def _number_text(x: float) -> str:
    """A number in its shortest form that reads back to the same float (60.0 -> "60", 0.1 -> "0.1")."""
    if not math.isfinite(x):
        raise ValueError(f"{x!r} cannot be written in a link: it is not a finite number")
    return str(int(x)) if x.is_integer() and abs(x) < 1e16 else repr(x)


def _choice_text(value: Any, label: str) -> str:
    """How a choice's option is written: its value's name (a string, or a number), else its label."""
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return _number_text(float(value))
    return label


def _choice_texts(c: Control) -> list[str]:
    return [_choice_text(v, label) for label, v in c.options]


def _encode(c: Control, v: Any) -> str:
    """One control's value as the text of its parameter (ValueError if it cannot be one)."""
    if c.kind in ("choice", "toggle"):
        for label, option in c.options:
            if isinstance(option, bool) == isinstance(v, bool) and option == v:
                return _choice_text(option, label)
        raise ValueError(f"{c.key}={v!r} is not one of its options")
    if c.kind == "check":
        if not isinstance(v, bool):
            raise ValueError(f"{c.key}={v!r} is not true or false")
        return "true" if v else "false"
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ValueError(f"{c.key}={v!r} is not a number")
    if c.kind in ("int", "int_slider"):
        if isinstance(v, float) and not v.is_integer():
            raise ValueError(f"{c.key}={v!r} is not a whole number")
        return str(int(v))
    return _number_text(float(v))


def _parse_number(name: str, text: str) -> float:
    allowed = "it must be a number written like 60, 0.5 or 1e-3"
    if len(text) > MAX_NUMBER_CHARS or not _NUMBER.fullmatch(text):
        raise ValueError(f"{name}={_check._fmt(text)} is not allowed: {allowed}, at most {MAX_NUMBER_CHARS} characters")
    x = float(text)  # the digits are checked above; a value beyond the float range becomes inf
    if not math.isfinite(x) or abs(x) > _check.MAX_MAGNITUDE:
        raise ValueError(f"{name}={text!r} is not allowed: it must be a finite number of magnitude at most "
                         f"{_check.MAX_MAGNITUDE:g}")
    return x


def _decode(name: str, c: Control, text: str) -> Any:
    """The text of parameter ``name`` as a value of control ``c`` (ValueError: the parameter, its text, what is allowed)."""
    if c.kind in ("choice", "toggle"):
        texts = _choice_texts(c)
        if text not in texts and text in [label for label, _ in c.options]:  # a label typed by hand
            text = texts[[label for label, _ in c.options].index(text)]
        _check.choice(name, text, texts)
        return c.options[texts.index(text)][1]
    if c.kind == "check":
        if text.lower() in ("true", "1"):
            return True
        if text.lower() in ("false", "0"):
            return False
        raise ValueError(f"{name}={_check._fmt(text)} is not allowed: it must be true or false")
    if c.kind == "text":
        raise ValueError(f"{name} is not allowed in a link: a pasted text is not kept in the page address")
    x = _parse_number(name, text)
    if c.kind in ("int", "int_slider"):
        low = int(c.min) if c.kind == "int_slider" and c.min is not None else -_check.MAX_EXACT_INT
        high = int(c.max) if c.kind == "int_slider" and c.max is not None else _check.MAX_EXACT_INT
        return _check.bounded_int(name, x, low, high)
    if c.kind == "slider" and c.min is not None and c.max is not None:
        return _check.in_range(name, x, c.min, c.max)
    if c.kind == "log_slider" and c.min is not None and c.max is not None:
        # the slider's ends are powers of ten, as the browser computes them (a hair of slack)
        return _check.in_range(name, x, 10.0 ** c.min * (1 - 1e-12), 10.0 ** c.max * (1 + 1e-12))
    return _check.number(name, x)


def _split(query: str) -> list[str]:
    """The raw ``name=value`` parts of a query (with or without its leading ``?``), bounded."""
    if not isinstance(query, str):
        raise ValueError(f"query={_check._fmt(query)} is not allowed: it must be a string")
    if len(query) > MAX_QUERY_CHARS:
        raise ValueError(f"the page address's query is {len(query):,} characters long: at most "
                         f"{MAX_QUERY_CHARS:,} are read")
    parts = [p for p in (query[1:] if query.startswith("?") else query).split("&") if p]
    if len(parts) > MAX_QUERY_PARAMS:
        raise ValueError(f"the page address holds {len(parts):,} parameters: at most {MAX_QUERY_PARAMS} are read")
    return parts


def _clip(text: str) -> str:
    """A name from a query, shortened for a message (a hostile one can be kilobytes)."""
    return text if len(text) <= 60 else text[:40] + "..." + text[-10:]


def _name(part: str) -> str:
    return unquote_plus(part.partition("=")[0])


def query_from_values(key: str, values: Mapping[str, Any], initial: Mapping[str, Any] | None = None) -> str:
    """Calculator ``key``'s part of a page query for ``values`` (the values :func:`mlcalc.calc.run` takes).

    Only the values that differ from ``initial`` (the page's own; None: every value given) are written,
    in the calculator's order of controls: ``plan.train.model=Llama-3+8B&plan.train.deadline_days=30``
    ("" when nothing differs). A value that cannot be written (not an option, not finite) is a ValueError.
    """
    calc = get(key)
    written: set[str] = set()
    for c in calc.controls:
        if c.key not in values or c.kind == "text":
            continue
        if initial is None or c.key not in initial or _encode(c, initial[c.key]) != _encode(c, values[c.key]):
            written.add(c.key)
    # A preset the query names fills in the controls it leaves out when the link is opened
    # (opened_values): a control edited by hand back to the page's own value (V100's clock typed as
    # 1830 MHz, H100's) must then be written too, or the preset would put its own number there.
    # Each pass writes at least one more control or stops: at most one pass per control.
    if initial is not None:
        for _ in range(len(calc.controls)):
            given = {k: values[k] for k in written}
            reopened = _with_presets(calc, given, initial)
            more = {c.key for c in calc.controls if c.key in values and c.kind != "text" and c.key not in written
                    and c.key in reopened and _encode(c, reopened[c.key]) != _encode(c, values[c.key])}
            if not more:
                break
            written |= more
    return "&".join(f"{quote_plus(f'{key}.{c.key}', safe=_SAFE)}={quote_plus(_encode(c, values[c.key]), safe=_SAFE)}"
                    for c in calc.controls if c.key in written)


def _with_presets(calc: Calc, given: Mapping[str, Any], initial: Mapping[str, Any]) -> dict[str, Any]:
    """The values a calculator opens with for the parameters ``given``: the page's own values, the
    controls a named preset fills in (those the link leaves out), then the link's own values."""
    filled = dict(given)
    for p in calc.presets:
        for k, v in (p.values.get(given[p.control], {}) if p.control in given else {}).items():
            filled.setdefault(k, v)
    return {**initial, **filled}


def carried(key: str, values: Mapping[str, Any]) -> None:
    """Refuse a value the page address cannot carry (ValueError naming the control, the value and what is
    allowed): each control's value, active or not, is written as a link writes it and read back as a
    link is read (an integer above 2**53, a number of magnitude above 1e300). The page checks every
    change with it, so such a value is refused where it is typed, not when the link is reopened."""
    calc = get(key)
    for c in calc.controls:
        if c.key not in values or c.kind == "text":
            continue
        try:
            text = _encode(c, values[c.key])
            back = _decode(c.label, c, text)
        except ValueError as err:
            raise ValueError(f"{err} (the value must fit in the page's address, which keeps it for a link)") from None
        if _encode(c, back) != text:
            allowed = (f"a whole number of magnitude at most 2**53 ({_check.MAX_EXACT_INT:,})"
                       if c.kind in ("int", "int_slider") else "a value a link reads back the same")
            raise ValueError(f"{c.label}={text} is not allowed: the page's address (which keeps it for a link) "
                             f"holds {allowed}")


def values_from_query(key: str, query: str) -> dict[str, Any]:
    """The values a page query holds for calculator ``key`` (only those it names; other keys' are ignored).

    ``query`` is the page's query, with or without its ``?``. ValueError names the parameter, its value
    and what is allowed: an unknown control, a parameter given twice, a text that is not a number or
    not an option, a number out of a slider's range; and a query over the bounds (:data:`MAX_QUERY_CHARS`,
    :data:`MAX_QUERY_PARAMS`).
    """
    out, errors = _read_query(key, query)
    if errors:
        raise ValueError(errors[0])
    return out


def _read_query(key: str, query: str) -> tuple[dict[str, Any], list[str]]:
    """The values a query holds for calculator ``key``, and a message for each of its parameters that
    is refused (:func:`values_from_query` refuses the first; a page opened from a link drops only the
    bad ones). A query over the bounds raises ValueError: none of it is read."""
    calc = get(key)
    prefix = f"{key}."
    out: dict[str, Any] = {}
    errors: list[str] = []
    seen: set[str] = set()
    known = [c.key for c in calc.controls if c.kind != "text"]
    for part in _split(query):
        name = _name(part)
        if not name.startswith(prefix):
            continue
        text = unquote_plus(part.partition("=")[2])
        control = OLD_LINK_KEYS.get(key, {}).get(name[len(prefix):], name[len(prefix):])
        if control not in [c.key for c in calc.controls]:
            errors.append(f"{_clip(name)}={_check._fmt(text)} is not allowed: {key} has no control "
                          f"{_check._fmt(control)}; choose one of {', '.join(known)}")
            continue
        if control in seen:
            errors.append(f"{name}={_check._fmt(text)} is not allowed: {name} is given more than once; give it once")
            out.pop(control, None)  # neither of the two is taken
            continue
        seen.add(control)
        try:
            out[control] = _decode(name, calc.control(control), text)
        except ValueError as err:
            errors.append(str(err))
    return out, errors


def replace_query(key: str, query: str, part: str) -> str:
    """The page query with calculator ``key``'s parameters replaced by ``part`` (from :func:`query_from_values`).

    Other parameters stay as they are, in their order; ``key``'s new part takes the place of its first
    old parameter (else it goes last). Returns ``"?..."``, or ``""`` when nothing is left. A query over
    the bounds is not kept (it was refused when the page opened).
    """
    prefix = f"{key}."
    try:
        old = _split(query)
    except ValueError:
        old = []
    kept: list[str] = []
    at = None
    for raw in old:
        if _name(raw).startswith(prefix):
            at = len(kept) if at is None else at
        else:
            kept.append(raw)
    if part:
        kept.insert(len(kept) if at is None else at, part)
    return "?" + "&".join(kept) if kept else ""


def opened_values(key: str, query: str, initial: Mapping[str, Any]) -> dict[str, Any]:
    """The values a calculator opens with: the page's own (``initial``), then what the query holds; a
    preset the query names fills in the controls it leaves out (as the Jupyter shell does for a preset
    given by name)."""
    return _with_presets(get(key), values_from_query(key, query), initial)


def open_widgets(key: str, search: str, initial: Mapping[str, Any]) -> dict[str, Any]:
    """A calculator opened from a link: :func:`run_widgets`' answer for the values the page query holds
    (``initial``: the page's own values in widget form), with ``controls`` the ones to set. A bad
    parameter answers ``{"ok": False, "error": ...}`` naming it; the page then keeps its own values.
    Never raises."""
    try:
        start = widget_values(key, initial)
        given, errors = _read_query(key, search)
        values = _with_presets(get(key), given, start)
        moved = {k: v for k, v in values.items() if k not in start or start[k] != v}
        out = run(key, values)
        out["controls"] = widget_state(key, moved)
        out["inactive"] = get(key).disabled(get(key).values(values))
        if errors:
            # Only the bad parameters are dropped: the page says which, and shows the rest of the link.
            out["notice"] = ("In the page address, " + "; ".join(error_message(ValueError(e)) for e in errors[:5])
                             + (f"; and {len(errors) - 5} more" if len(errors) > 5 else "")
                             + (". That parameter was left out; " if len(errors) == 1 else ". Those parameters were left out; ")
                             + "the link's other values are shown.")
        return out
    except Exception as err:  # noqa: BLE001 - a link must never crash the page
        return {"ok": False, "error": f"In the page address, {error_message(err)} (the values shown are the page's own)"}


def open_widgets_json(key: str, search: str, initial_json: str) -> str:
    """:func:`open_widgets` with JSON in and out (what the site's worker calls when the page opens from a link)."""
    try:
        initial = json.loads(initial_json)
        if not isinstance(initial, dict):
            raise ValueError("the values must be a JSON object")
    except (ValueError, RecursionError) as err:
        return json.dumps({"ok": False, "error": f"bad values: {err}"})
    try:
        return json.dumps(open_widgets(key, search, initial), allow_nan=False)
    except ValueError as err:
        return json.dumps({"ok": False, "error": error_message(err)})


__all__ = ["MAX_NUMBER_CHARS", "MAX_QUERY_CHARS", "MAX_QUERY_PARAMS", "OLD_LINK_KEYS", "carried", "controls_after",
           "open_widgets",
           "open_widgets_json", "opened_values", "query_from_values", "replace_query", "run_widgets",
           "run_widgets_json", "values_from_query", "widget_state", "widget_values"]
