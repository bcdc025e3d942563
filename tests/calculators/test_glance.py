"""Answers a reader believes at a glance: every calculator, at the extremes of each of its controls,
shows shares within 0-100%, no signed zero, no negative money (issue: "lost work 1613%" was printed),
offers no option that never gives a result, and never shows a BibTeX key.

Each control is moved alone to its ends (sliders), to each option (choices), and to 1000x, 1/1000x and 0
of its default (number boxes); what a calculator refuses is fine (a message), what it shows must be
believable.
"""

from __future__ import annotations

import functools
import re

import pytest

import mlcalc.calculators  # noqa: F401  (registers every calculator)
from mlcalc import calc

# A percentage that is a share of a whole (of the step, of the peak, of wall time...) when one of these
# words stands just before it. Ratios that may pass 100% (errors, over-budget, speed-ups) are not shares.
SHARE = re.compile(r"\b(goodput|MFU|HFU|lost work|restarts|checkpoints|usable|idle|utili[sz]ation|busy|"
                   r"efficiency|share|of (?:the )?peak)\b[^%\n]{0,20}?(-?\d[\d,]*(?:\.\d+)?)%", re.I)
SIGNED_ZERO = re.compile(r"(?<![\w.])-0(?:\.0+)?(?![\d.])")
NEGATIVE_MONEY = re.compile(r"-\s?\$|\$\s?-")
MAX_STATES = 400  # states tried per calculator (a bound)


@functools.lru_cache(maxsize=None)
def _run(key: str, state: tuple) -> dict:
    out = calc.run(key, dict(state))
    return {"ok": out.get("ok"), "text": out.get("text", ""), "error": out.get("error", ""),
            "chart_title": str((out.get("chart") or {}).get("title", ""))}


def run(key: str, state: dict) -> dict:
    """What calc.run shows for one whole state (ok, text, error, the chart's title), computed once per state
    in this process: the tests below move the same controls to the same values, and calc.run is pure (a
    training-plan state is a planner search, most of make check's time)."""
    return _run(key, tuple(sorted(state.items())))
MAX_OPTIONS = 8  # options tried per choice: the first, the last and evenly spaced ones between


def states(c: calc.Calc) -> list[dict]:
    base = {ct.key: ct.default for ct in c.controls}
    out = [dict(base)]
    for ct in c.controls:
        if ct.kind in ("choice", "toggle"):
            values = ct.values()
            if len(values) > MAX_OPTIONS:
                step = (len(values) - 1) / (MAX_OPTIONS - 1)
                values = [values[round(i * step)] for i in range(MAX_OPTIONS)]
        elif ct.kind in ("slider", "int_slider", "log_slider"):
            values = [ct.min, ct.max]
        elif ct.kind in ("number", "int") and isinstance(ct.default, (int, float)) and not isinstance(ct.default, bool):
            d = ct.default or 1
            values = [d * 1000, d / 1000 if ct.kind == "number" else 1, 0]
        else:
            values = []
        for v in values:
            s = dict(base)
            s[ct.key] = v
            out.append(s)
    return out[:MAX_STATES]


def shown(key: str):
    """(state, text) of each state the calculator answers; a state it refuses must get a message, not a traceback."""
    for s in states(calc.REGISTRY[key]):
        out = run(key, s)
        if not out.get("ok"):
            assert out.get("error") and "Traceback" not in out["error"], out
            continue
        yield s, out["text"]


@pytest.mark.parametrize("key", sorted(calc.REGISTRY))
def test_shares_in_range_and_no_signed_zero(key):
    problems = []
    for s, text in shown(key):
        for m in SHARE.finditer(text):
            x = float(m.group(2).replace(",", ""))
            if not 0.0 <= x <= 100.0:
                problems.append(f"{m.group(0)!r} at {s}")
        if SIGNED_ZERO.search(text) or NEGATIVE_MONEY.search(text):
            problems.append(f"signed zero or negative money in {text[:160]!r}")
    assert not problems, problems[:5]


# A number a view prints with a unit after it (GB, s, days...): a true zero is "0" and a small positive value keeps
# its digits ("0.00 s of pipeline bubble" was printed for 3 ms and for none alike), and no such number claims more
# than 4 significant digits ("120.00 GB", "1,516.5 GiB", "400.00 GB/s" were printed).
_UNIT = r"(?:GB/s|TB/s|MB/s|kB/s|GB|GiB|TB|TiB|MB|MiB|kB|KiB|ms|µs|ns|s|h|min|days|kW|MW|GWh|MWh)(?![\w/])"
ZERO_WITH_DECIMALS = re.compile(r"(?<![\d.,])0\.0+\s?" + _UNIT)
NUMBER_WITH_UNIT = re.compile(r"(?<![\d.,])(\d[\d,]*\.\d+)\s?" + _UNIT)


def _significant(number: str) -> int:
    return len(number.replace(",", "").replace(".", "").lstrip("0"))


@pytest.mark.parametrize("key", sorted(calc.REGISTRY))
def test_numbers_with_units_keep_sensible_digits(key):
    problems = []
    for _, text in shown(key):
        for line in text.splitlines():
            problems += [f"{m.group(0)!r} in {line[:160]!r}" for m in ZERO_WITH_DECIMALS.finditer(line)]
            problems += [f"{m.group(0)!r} in {line[:160]!r}" for m in NUMBER_WITH_UNIT.finditer(line)
                         if _significant(m.group(1)) > 4]
    assert not problems, problems[:5]


MAX_COMBOS = 400  # combinations of the other controls tried per option (a bound)
INT_LADDER = (1, 2, 3, 4, 5, 7, 8, 9, 16, 32, 35, 64, 70, 72, 128, 140, 256, 280, 315, 576, 1024)


def _alternatives(ct: calc.Control) -> list:
    """Values of a control to combine with an option under test (choices: all; counts: a ladder)."""
    if ct.kind in ("choice", "toggle"):
        return [v for v in ct.values() if v != ct.default]
    if ct.kind in ("int", "int_slider"):
        lo = ct.min if ct.min is not None else 0
        hi = ct.max if ct.max is not None else float("inf")
        return [v for v in INT_LADDER if lo <= v <= hi and v != ct.default]
    return []


def dead_options(c: calc.Calc) -> list[str]:
    """Options of a choice control that give no result with the defaults, with any one other control
    changed, or with any two changed (at most MAX_COMBOS tries per option)."""
    import itertools

    base = {ct.key: ct.default for ct in c.controls}
    dead = []
    for ct in (ct for ct in c.controls if ct.kind in ("choice", "toggle")):
        singles = [(o.key, v) for o in c.controls if o is not ct for v in _alternatives(o)]
        for value in ct.values():
            for change in itertools.islice(
                    itertools.chain([()], ((x,) for x in singles),
                                    ((a, b) for a, b in itertools.combinations(singles, 2) if a[0] != b[0])),
                    MAX_COMBOS):
                s = dict(base)
                s[ct.key] = value
                s.update(dict(change))
                if run(c.key, s).get("ok"):
                    break
            else:
                dead.append(f"{ct.key}={value!r}")
    return dead


# A pasted log makes every kind live: its options depend on the text, not on the other choices.
FREE_TEXT = {k for k, c in calc.REGISTRY.items() if any(ct.kind == "text" for ct in c.controls)}


@pytest.mark.parametrize("key", sorted(k for k in calc.REGISTRY if not k.startswith("plan.") and k not in FREE_TEXT))
def test_no_dead_options(key):
    # every option a control offers gives a result for some combination of the others (else it is not offered)
    assert dead_options(calc.REGISTRY[key]) == []


@pytest.mark.parametrize("key", sorted(calc.REGISTRY))
def test_no_bibtex_key_is_shown(key):
    # the defaults and every option of every choice alone: text, message and chart title cite by author and year
    from tests.calculators.test_memory import _bib_entries

    keys = set(_bib_entries())
    c = calc.REGISTRY[key]
    base = {ct.key: ct.default for ct in c.controls}
    cases = [{}] + [{ct.key: value} for ct in c.controls if ct.kind in ("choice", "toggle") for value in ct.values()]
    for values in cases:
        out = run(key, {**base, **values})
        words = set(re.findall(r"[\w-]+", " ".join([c.title, out["text"], out["error"], out["chart_title"]])))
        assert not words & keys, (values, words & keys)


def test_a_fit_says_why_the_card_holds_more_than_its_datasheet_figure():
    # the catalogue lists the datasheet's 80 GB; fits use the bytes torch reports (H100) or 80 GiB (A100)
    h100 = calc.run("memory.training_fit", {"accelerator": "H100-SXM"})["text"]
    a100 = calc.run("memory.zero", {"accelerator": "A100-80GB"})["text"]
    assert "85.0 GB (the bytes torch reports; datasheet: 80 GB)" in h100
    assert "85.9 GB (the datasheet's 80 GB read as GiB)" in a100


def test_a_plan_above_the_checked_mfu_says_so():
    # plan.compare's default: 512 x A100 at 74.8% MFU, above every published A100 run the engine is checked on
    # (the highest by the planner's count is torchtitan's Llama 2 13B on 64 A100, 61%); 256 x H100 at 59% is inside
    text = calc.run("plan.compare", {})["text"]
    a, b = text.split("\nA: ")[1].split("\nB: ")
    assert "Inside the checked range" in a and "Outside the checked range" in b
    assert "torchtitan Llama 2 13B" in b
