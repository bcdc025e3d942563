"""The calculator core: every registered calculator runs with its defaults, and run() never raises."""

import json
import re
from dataclasses import replace

import pytest

from mlcalc import calc
from mlcalc.calculators import REGISTRY


@pytest.mark.parametrize("key", sorted(REGISTRY))
def test_every_calculator_runs_with_its_defaults(key):
    out = calc.run(key, {})
    assert out["ok"], out
    json.dumps(out, allow_nan=False)  # JSON with finite numbers only: what the browser's worker returns
    assert out["text"] or out["html"] or out["chart"]


@pytest.mark.parametrize("key", sorted(REGISTRY))
def test_hostile_values_give_a_message_not_an_exception(key):
    c = REGISTRY[key]
    for control in c.controls:
        for bad in (-1e308, 1e308, 10**400, "x", None, [], {"a": 1}, float("nan")):
            out = calc.run(key, {control.key: bad})
            if not out["ok"]:
                assert out["error"] and "Traceback" not in out["error"]


def test_run_json_round_trip():
    given = {"n_params_billion": 405, "accelerator": "H200-SXM"}
    out = json.loads(calc.run_json("memory.gpu_count", json.dumps(given)))
    # 405e9 params x 18 bytes x 1.25 headroom / 150.1e9 bytes (an H200's measured capacity) = 60.7 -> 61
    # (Bekman's instant math with 141e9 gives 65)
    assert out["ok"] and out["text"].startswith("At least 61 x H200-SXM")
    assert json.loads(calc.run_json("memory.gpu_count", "[1, 2]"))["ok"] is False
    assert json.loads(calc.run_json("memory.gpu_count", "{" * 100000))["ok"] is False


def test_unknown_choice_and_control_are_refused():
    assert "accelerator" in calc.run("memory.gpu_count", {"accelerator": "H900"})["error"]
    assert "nope" in calc.run("memory.gpu_count", {"nope": 1})["error"]
    assert "calculator" in calc.run("no.such", {})["error"]


def test_greyed_out_controls_come_with_the_result():
    # the shells and the site's worker get the same rule: serving needs no bytes/param convention
    out = calc.run("memory.gpu_count", {"mode": "inference"})
    c = REGISTRY["memory.gpu_count"]
    assert out["ok"] and out["inactive"] == c.disabled(c.values({"mode": "inference"}))
    assert out["inactive"] and calc.run("memory.gpu_count", {"mode": "train"})["inactive"] == []


def test_a_calculator_names_its_widget_once_and_greys_nothing_by_default():
    # register() refuses a widget name that is not a class name, or one another calculator has
    c = REGISTRY["memory.gpu_count"]
    with pytest.raises(ValueError, match="widget='gpu count'"):
        calc.register(replace(c, key="test.bad_name", widget="gpu count"))
    with pytest.raises(ValueError, match="memory.gpu_count has that name"):
        calc.register(replace(c, key="test.twin", widget=c.widget))
    assert "test.bad_name" not in REGISTRY and "test.twin" not in REGISTRY
    # a calculator without an inactive rule greys out nothing, whatever the values
    plain = REGISTRY["memory.bytes_per_param"]
    assert plain.inactive(plain.defaults()) == frozenset() and plain.disabled(plain.defaults()) == []
    assert c.disabled(c.values({"mode": "inference"})) == ["convention"]


def test_check_finite_names_the_first_value_that_is_not_finite_and_passes_finite_results():
    import math as _math
    from typing import NamedTuple

    from mlcalc.calc import check_finite

    class Part(NamedTuple):
        seconds: float
        rows: list

    ok = {"a": Part(1.5, [1, 2.0, "x", None, (3.0, {"b": 4.0})]), "c": True}
    check_finite(ok)  # nothing to refuse
    for bad, where in ((float("inf"), "result['a'].rows[4][1]['b']"), (float("nan"), "result['a'].rows[4][1]['b']"),
                       (-_math.inf, "result['a'].rows[4][1]['b']")):
        res = {"a": Part(1.5, [1, 2.0, "x", None, (3.0, {"b": bad})]), "c": float("inf")}
        with pytest.raises(ValueError, match=re.escape(f"({where} = {bad})")):
            check_finite(res)
    deep: object = float("inf")
    for _ in range(12):  # beyond the levels it looks into: not looked at, as before
        deep = [deep]
    check_finite(deep)
    with pytest.raises(ValueError, match=re.escape("(result[0][0] = inf)")):
        check_finite([[float("inf")]])


def _walk_before(result, depth=0):
    """check_finite's walk as it was written before 2026-11-27 (one call per value, a name per part): the
    reference the faster walk must agree with, path and value."""
    import math as _math
    from collections.abc import Mapping

    from mlcalc.calc import _MAX_DEPTH, MAX_CHART_ROWS

    if depth > _MAX_DEPTH:
        return None
    if isinstance(result, float):
        return None if _math.isfinite(result) else ((), result)
    if isinstance(result, (str, bytes, bool, int)) or result is None:
        return None
    if isinstance(result, Mapping):
        named = ((f"[{k!r}]", v) for k, v in list(result.items())[:MAX_CHART_ROWS])
    elif isinstance(result, (tuple, list)):
        fields = getattr(result, "_fields", None)
        named = ((f".{fields[i]}" if fields else f"[{i}]", v) for i, v in enumerate(result[:MAX_CHART_ROWS]))
    elif hasattr(result, "__dataclass_fields__"):
        named = ((f".{f}", getattr(result, f, None)) for f in result.__dataclass_fields__)
    else:
        return None
    for part, v in named:
        bad = _walk_before(v, depth + 1)
        if bad is not None:
            return (part, *bad[0]), bad[1]
    return None


def test_check_finite_walk_agrees_with_the_walk_it_replaced():
    import math as _math
    from dataclasses import dataclass as _dc
    from typing import NamedTuple

    from hypothesis import given, settings
    from hypothesis import strategies as st

    from mlcalc.calc import _first_not_finite

    class Pair(NamedTuple):
        a: object
        b: object

    @_dc(frozen=True)
    class Box:
        x: object
        y: object

    leaf = st.one_of(st.floats(), st.integers(), st.booleans(), st.none(), st.text(max_size=3),
                     st.sampled_from([_math.inf, -_math.inf, _math.nan, 0.0, 1e308]))
    tree = st.recursive(leaf, lambda kids: st.one_of(
        st.lists(kids, max_size=4), st.lists(kids, max_size=4).map(tuple),
        st.dictionaries(st.one_of(st.text(max_size=2), st.integers()), kids, max_size=3),
        st.tuples(kids, kids).map(lambda t: Pair(*t)), st.tuples(kids, kids).map(lambda t: Box(*t))), max_leaves=30)

    def same(x, y):
        if x is None or y is None:
            return x is y
        return x[0] == y[0] and (x[1] == y[1] or (_math.isnan(x[1]) and _math.isnan(y[1])))

    @settings(max_examples=400, deadline=None)
    @given(tree, st.integers(0, 9))
    def check(value, depth):
        assert same(_first_not_finite(value, depth), _walk_before(value, depth))

    check()
    deep: object = [1.0, float("nan")]
    for _ in range(9):  # at the edge of the depth looked into
        deep = [deep]
        assert same(_first_not_finite(deep, 0), _walk_before(deep, 0))


@pytest.mark.parametrize("text", ["", "plain", "a < b & c > d", "<script>alert('x')</script>", 'say "hi" & \'bye\'',
                                  "&amp; already", "ünïcode ≥ 1 GB/s", "\n\t&<>\"'"])
def test_escape_is_html_escape(text):
    import html  # the standard library's, which calc does not import (html.entities: heap of the site's snapshot)

    assert calc._escape(text) == html.escape(text)
