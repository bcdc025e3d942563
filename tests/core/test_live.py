"""Links that reopen a plan: the page address holds the inputs a reader changed (issue 17, item 5).

Python writes and reads the query (mlcalc.live.query_from_values / values_from_query / replace_query /
open_widgets); the site's script only carries the strings. These tests check those functions for every
registered calculator and for hostile addresses; tests/site/test_live_url.py drives the built site.
"""

from __future__ import annotations

import json
import time
from urllib.parse import parse_qsl, quote_plus

import pytest

from mlcalc import calc as calcmod
from mlcalc.calc import REGISTRY, get, run
from mlcalc.live import (MAX_QUERY_CHARS, MAX_QUERY_PARAMS, open_widgets, open_widgets_json, opened_values, query_from_values,
                         replace_query, run_widgets, run_widgets_json, values_from_query, widget_state, widget_values)

import mlcalc.calculators  # noqa: F401  (registers every calculator)

KEYS = sorted(REGISTRY)


def _changed(key: str) -> dict:
    """Every control of ``key`` moved away from its default (a choice to its last option, a number
    scaled, a box flipped; a slider to a point inside its range). Text controls are never in a link."""
    out = {}
    for c in get(key).controls:
        d = c.default
        if c.kind in ("choice", "toggle"):
            out[c.key] = c.options[-1][1] if c.options[-1][1] != d else c.options[0][1]
        elif c.kind == "check":
            out[c.key] = not d
        elif c.kind == "number":
            out[c.key] = d * 1.1 + 0.3
        elif c.kind == "int":
            out[c.key] = d * 3 + 1
        elif c.kind == "slider":
            out[c.key] = (c.min + c.max) / 3
        elif c.kind == "int_slider":
            out[c.key] = int(c.min + (c.max - c.min) // 3)
        elif c.kind == "log_slider":
            out[c.key] = 10 ** ((c.min + c.max) / 2 + 0.123)
    return out


@pytest.mark.parametrize("key", KEYS)
def test_defaults_and_changed_values_round_trip(key):
    calc = get(key)
    defaults = calc.defaults()
    linkable = {k: v for k, v in defaults.items() if calc.control(k).kind != "text"}
    # Nothing differs from the page's own values: nothing is written.
    assert query_from_values(key, defaults, defaults) == ""
    # Every value written (no page values given) reads back to itself, exactly (floats included).
    assert values_from_query(key, "?" + query_from_values(key, defaults)) == linkable
    changed = _changed(key)
    query = query_from_values(key, {**defaults, **changed}, defaults)
    back = values_from_query(key, query)
    assert back == {k: v for k, v in changed.items() if v != defaults[k]}
    for k, v in back.items():
        assert type(v) is type(changed[k]) or calc.control(k).kind in ("number", "slider", "log_slider")
    # Each parameter is named <key>.<control>, once, in the calculator's order of controls.
    names = [n for n, _ in parse_qsl(query)]
    assert names == [f"{key}.{c.key}" for c in calc.controls if c.key in back]


@pytest.mark.parametrize("key", KEYS)
def test_a_choice_is_written_by_name_not_position(key):
    """Each option of every choice has its own written form (so a link survives options being reordered)."""
    for c in get(key).controls:
        if c.kind not in ("choice", "toggle"):
            continue
        written = [query_from_values(key, {c.key: v}).split("=", 1)[1] for _, v in c.options]
        assert len(set(written)) == len(written), f"{key}.{c.key}: two options are written alike"
        for (label, v), text in zip(c.options, written):
            assert text != str(c.options.index((label, v))) or str(v) == text  # a name, not an index
            assert values_from_query(key, f"{key}.{c.key}={text}") == {c.key: v}


def test_the_query_is_readable_and_numbers_are_shortest():
    d = get("plan.train").defaults()
    q = query_from_values("plan.train", {**d, "model": "Llama-3 8B", "deadline_days": 30.0, "budget_m": 0.1,
                                         "seq_len": 8192, "rent": False}, d)
    assert q == ("plan.train.model=Llama-3+8B&plan.train.seq_len=8192&plan.train.deadline_days=30"
                 "&plan.train.budget_m=0.1&plan.train.rent=false")
    # a long option label is not written: its value's name is (engine "hf-eager", not "plain Hugging Face: ...")
    assert query_from_values("plan.serve", {"engine": "hf-eager"}) == "plan.serve.engine=hf-eager"
    # the label itself, typed by hand, is read too
    label = get("plan.serve").control("engine").options[1][0]
    assert values_from_query("plan.serve", "plan.serve.engine=" + quote_plus(label)) == {"engine": "hf-eager"}
    assert values_from_query("plan.train", "plan.train.budget_m=1e-3&plan.train.tokens_b=1.5E%2B3") == {
        "budget_m": 0.001, "tokens_b": 1500.0}


def test_other_parameters_are_left_as_they_are():
    q = "?utm_source=x&plan.compare.gpus_a=64&plan.train.model=GPT-2+124M&plan.train.rent=false&z=%C3%A9"
    assert values_from_query("plan.train", q) == {"model": "GPT-2 124M", "rent": False}
    assert values_from_query("plan.compare", q) == {"gpus_a": 64}
    assert values_from_query("plan.tco", q) == {}
    new = replace_query("plan.train", q, "plan.train.deadline_days=30")
    assert new == "?utm_source=x&plan.compare.gpus_a=64&plan.train.deadline_days=30&z=%C3%A9"
    assert replace_query("plan.train", "?plan.train.rent=false", "") == ""
    assert replace_query("plan.tco", "?a=1", "plan.tco.pue=1.2") == "?a=1&plan.tco.pue=1.2"
    # an address over the bounds is not kept: only the calculator's own part is written
    assert replace_query("plan.tco", "?a=" + "x" * MAX_QUERY_CHARS, "plan.tco.pue=1.2") == "?plan.tco.pue=1.2"


HOSTILE = [
    ("plan.train.deadline_days=1e400", "plan.train.deadline_days='1e400'", "finite"),
    ("plan.train.deadline_days=nan", "plan.train.deadline_days='nan'", "number"),
    ("plan.train.deadline_days=inf", "plan.train.deadline_days='inf'", "number"),
    ("plan.train.deadline_days=0x10", "plan.train.deadline_days='0x10'", "number"),
    ("plan.train.deadline_days=1_000", "plan.train.deadline_days='1_000'", "number"),
    ("plan.train.deadline_days=" + "9" * 500, "plan.train.deadline_days='999", "at most 32 characters"),
    ("plan.train.model=Llama-3+71B", "plan.train.model='Llama-3 71B'", "choose one of"),
    ("plan.train.model=%F0%9F%A6%99%E2%80%AE", "plan.train.model=", "choose one of"),
    ("plan.train.model=%FF%FE", "plan.train.model=", "choose one of"),
    ("plan.train.model=0", "plan.train.model='0'", "choose one of"),  # an index is not an option
    ("plan.train.rent=yes", "plan.train.rent='yes'", "true or false"),
    ("plan.train.nope=1", "plan.train.nope='1'", "choose one of model, tokens_b"),
    ("plan.train.=1", "plan.train.=", "no control"),
    ("plan.train.rent=true&plan.train.rent=true", "plan.train.rent='true'", "more than once"),
    ("plan.tco.utilization=-1", "plan.tco.utilization=-1", "in [0.05, 1]"),
    ("plan.tco.utilization=1.5", "plan.tco.utilization=1.5", "in [0.05, 1]"),
    ("plan.serve.prompt=1.5", "plan.serve.prompt=1.5", "whole number"),
    ("plan.serve.prompt=1e30", "plan.serve.prompt=1e+30", "whole number"),
    ("plan.serve.prompt=1e400", "plan.serve.prompt='1e400'", "finite"),
]


@pytest.mark.parametrize("query, names, allowed", HOSTILE)
def test_hostile_parameters_are_refused_naming_the_parameter_its_value_and_what_is_allowed(query, names, allowed):
    key = query.split("=")[0].rsplit(".", 1)[0]
    with pytest.raises(ValueError) as err:
        values_from_query(key, query)
    assert names in str(err.value) and allowed in str(err.value) and "is not allowed" in str(err.value)
    # The page's answer for the same link: the bad parameter is dropped and named, the page's own
    # values computed (never an exception).
    page = widget_state(key, get(key).defaults())
    out = open_widgets(key, "?" + query, page)
    assert out["ok"] and out["notice"].startswith("In the page address, ") and names in out["notice"], out.get("notice")
    assert out["controls"] == {} and out["html"] == run(key, get(key).defaults())["html"]


def test_one_bad_parameter_drops_only_itself_and_says_which():
    key = "plan.train"
    page = widget_state(key, get(key).defaults())
    out = open_widgets(key, "?plan.train.model=Llama-3+8B&plan.train.deadline_days=nan&plan.train.rent=false", page)
    assert out["ok"] and "plan.train.deadline_days='nan'" in out["notice"] and "left out" in out["notice"]
    assert "plan.train.model" not in out["notice"] and "plan.train.rent" not in out["notice"]
    assert out["controls"] == widget_state(key, {"model": "Llama-3 8B", "rent": False})
    assert out["html"] == run(key, {"model": "Llama-3 8B", "rent": False})["html"]
    # a duplicated parameter: neither copy is taken
    out = open_widgets(key, "?plan.train.rent=false&plan.train.rent=true&plan.train.model=Llama-3+8B", page)
    assert out["ok"] and "more than once" in out["notice"]
    assert out["controls"] == widget_state(key, {"model": "Llama-3 8B"})
    # a good link has no notice
    assert "notice" not in open_widgets(key, "?plan.train.model=Llama-3+8B", page)


def test_a_link_written_before_the_keys_took_the_notebooks_names_still_opens():
    """Control keys were renamed once (``params`` -> ``n_params_billion`` ...): an old link reads as the new one,
    and every old name maps to a control its calculator has."""
    from mlcalc.live import OLD_LINK_KEYS

    for key, renamed in OLD_LINK_KEYS.items():
        controls = [c.key for c in get(key).controls]
        assert all(new in controls and old not in controls for old, new in renamed.items()), key
    old = values_from_query("memory.gpu_count", "?memory.gpu_count.params=405&memory.gpu_count.mode=inference")
    new = "?memory.gpu_count.n_params_billion=405&memory.gpu_count.mode=inference"
    assert old == values_from_query("memory.gpu_count", new)
    assert old == {"n_params_billion": 405.0, "mode": "inference"}
    # the new name is what a link is written with
    assert query_from_values("memory.gpu_count", {**get("memory.gpu_count").defaults(), "n_params_billion": 405.0},
                             get("memory.gpu_count").defaults()) == "memory.gpu_count.n_params_billion=405"


def test_a_preset_with_a_hand_edited_value_round_trips():
    """The peak calculator: pick V100 (its clock 1530 MHz is filled in), type 1830 MHz (H100's, the page's
    own value) back in: the link must hold the clock, or reopening it puts V100's 1530 MHz back."""
    key = "accelerators.peak"
    calc = get(key)
    page = calc.defaults()
    assert page["clock_mhz"] == 1830 and calc.control("accelerator").kind in ("choice", "toggle")
    v100 = next(v for _, v in calc.control("accelerator").options if "V100" in str(v))
    values = {**page, "accelerator": v100, "clock_mhz": page["clock_mhz"]}
    query = "?" + query_from_values(key, values, page)
    assert f"{key}.clock_mhz=1830" in query, query
    out = open_widgets(key, query, widget_state(key, page))
    assert out["ok"] and out["html"] == run(key, values)["html"]
    reopened = {**page, **widget_values(key, {**widget_state(key, page), **out["controls"]})}
    assert reopened == values


@pytest.mark.parametrize("key", KEYS)
def test_every_reachable_state_round_trips_through_the_address(key):
    """Each preset option, then each filled control edited back to the page's own value: reopened equal."""
    calc = get(key)
    page = calc.defaults()
    states = [dict(page)]
    for p in calc.presets:
        for option, filled in p.values.items():
            after = {**page, p.control: option, **filled}
            states.append(after)
            for k in filled:
                states.append({**after, k: page[k]})
    for values in states[:60]:
        query = "?" + query_from_values(key, values, page)
        reopened = opened_values(key, query, page)
        assert {k: reopened[k] for k in values if calc.control(k).kind != "text"} == \
            {k: values[k] for k in values if calc.control(k).kind != "text"}, query


@pytest.mark.parametrize("key, control, value, allowed", [
    ("plan.serve", "prompt", 2**53 + 1, "2**53"),
])
def test_a_value_the_address_cannot_carry_is_refused_where_it_is_typed(key, control, value, allowed):
    page = widget_state(key, get(key).defaults())
    out = run_widgets(key, {**page, control: value}, control, page, "")
    assert out["ok"] is False and get(key).control(control).label in out["error"] and allowed in out["error"], out
    assert "address" in out["error"]


def test_a_huge_number_in_an_inactive_control_is_refused_where_it_is_typed():
    """A number box that the other values make irrelevant (shown disabled) is still written in the link."""
    for key in KEYS:
        calc = get(key)
        numbers = [c for c in calc.controls if c.kind == "number"]
        if not numbers:
            continue
        c = numbers[0]
        page = widget_state(key, calc.defaults())
        out = run_widgets(key, {**page, c.key: 1e301}, c.key, page, "")
        assert out["ok"] is False and c.label in out["error"], (key, out)
        return
    pytest.fail("no calculator has a number box")


def test_a_negative_number_box_reaches_compute_and_gets_its_usual_message():
    """A number box has no range of its own: -1 is read, set and refused by compute, as when typed."""
    assert values_from_query("plan.train", "plan.train.deadline_days=-1") == {"deadline_days": -1.0}
    out = open_widgets("plan.train", "?plan.train.deadline_days=-1", widget_state("plan.train", get("plan.train").defaults()))
    assert out["ok"] is False and "deadline (days)=-1.0 is not allowed" in out["error"]
    assert out["controls"] == {"deadline_days": -1.0}  # the control shows what the link holds


@pytest.mark.parametrize("query", [
    "?" + "a=1&" * (MAX_QUERY_CHARS // 4 + 1),  # too long
    "?" + "&".join(f"p{i}=1" for i in range(MAX_QUERY_PARAMS + 1)),  # too many parameters
    "?plan.train.model=" + "x" * 100_000,  # 100 kB
    "?" + "&" * 100_000,
])
def test_oversized_addresses_are_refused_quickly(query):
    start = time.perf_counter()
    with pytest.raises(ValueError, match="at most"):
        values_from_query("plan.train", query)
    out = json.loads(open_widgets_json("plan.train", query, "{}"))
    assert out["ok"] is False and "at most" in out["error"]
    assert time.perf_counter() - start < 1.0


def test_the_bounds_are_above_what_a_page_needs():
    """Every calculator's every value written at once fits the bounds (a page holds a few calculators)."""
    total = [query_from_values(k, {**get(k).defaults(), **_changed(k)}) for k in KEYS]
    assert max(len(q) for q in total) < MAX_QUERY_CHARS / 4
    assert max(len(q.split("&")) for q in total) < MAX_QUERY_PARAMS / 8


def test_the_page_gets_the_new_query_with_each_result():
    key = "plan.tco"
    page = widget_state(key, get(key).defaults())
    state = {**page, "pue": 1.2}
    out = run_widgets(key, state, "pue", page, "?x=1&plan.tco.pue=1.4")
    assert out["ok"] and out["search"] == "?x=1&plan.tco.pue=1.2"
    # back to the page's own values: the calculator's parameters leave the address
    assert run_widgets(key, page, "pue", page, "?plan.tco.pue=1.2")["search"] == ""
    # no page values given (tests, the benchmark): no query
    assert "search" not in run_widgets(key, state, "pue")
    out = json.loads(run_widgets_json(key, json.dumps(state), "pue", json.dumps(page), ""))
    assert out["search"] == "?plan.tco.pue=1.2"
    assert "search" not in json.loads(run_widgets_json(key, json.dumps(state), "pue"))


def test_a_link_opens_with_its_values_and_the_same_result_as_cpython():
    key = "plan.train"
    page = widget_state(key, get(key).defaults())
    out = open_widgets(key, "?plan.train.model=Llama-3+8B&plan.train.deadline_days=30&plan.tco.pue=9", page)
    want = run(key, {"model": "Llama-3 8B", "deadline_days": 30.0})
    assert out["ok"] and out["html"] == want["html"] and out["chart"] == want["chart"]
    assert out["controls"] == widget_state(key, {"model": "Llama-3 8B", "deadline_days": 30.0})
    # no parameter for this calculator: the page's own values, nothing to set
    assert open_widgets(key, "?plan.tco.pue=9", page)["controls"] == {}


def test_a_preset_named_in_a_link_fills_in_what_the_link_leaves_out():
    """As the Jupyter shell does for a preset given by name (CalcWidget)."""
    with_presets = [(k, p) for k in KEYS for p in get(k).presets if p.values]
    assert with_presets, "some calculator has presets"
    key, p = with_presets[0]
    option, filled = next(iter(p.values.items()))
    page = widget_state(key, get(key).defaults())
    text = query_from_values(key, {p.control: option})
    out = open_widgets(key, "?" + text, page)
    values = {**get(key).defaults(), **{p.control: option}, **filled}
    assert out["controls"] == widget_state(key, {k: v for k, v in values.items() if v != get(key).defaults()[k]})


def test_the_plan_export_carries_the_query_that_reopens_it():
    for how in ("Markdown", "JSON"):
        out = calcmod.run("plan.train", {"model": "Llama-2 7B", "export": how})
        assert out["ok"]
        query = "?" + query_from_values("plan.train", {**get("plan.train").defaults(), "model": "Llama-2 7B",
                                                       "export": how})
        assert query in out["text"]
        assert values_from_query("plan.train", query)["model"] == "Llama-2 7B"


@pytest.mark.parametrize("key", KEYS)
def test_the_worker_s_answer_is_json_dumps_of_the_answer(key):
    """run_widgets_json writes a result's chart with the JSON check_chart wrote when it checked that chart (not
    encoded twice): its text is json.dumps of the same answer, byte for byte, at the defaults and with every control
    changed (a chart that fails its check, none or another chart: encoded as it is)."""
    page = widget_state(key, get(key).defaults())
    for values in (page, widget_state(key, {**get(key).defaults(), **_changed(key)})):
        text = run_widgets_json(key, json.dumps(values), "", json.dumps(page), "?x=1")
        assert text == json.dumps(run_widgets(key, values, "", page, "?x=1"), allow_nan=False)
    # a chart other than the one last checked is encoded afresh
    out = run_widgets(key, page)
    if out.get("chart") is not None:
        assert calcmod.checked_chart_json(out["chart"]) == json.dumps(out["chart"], allow_nan=False)
        assert calcmod.checked_chart_json(json.loads(json.dumps(out["chart"]))) is None
