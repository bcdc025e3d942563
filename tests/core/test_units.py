"""One home per constant and convention: units, dtype sizes and the FLOP conventions are defined once."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mlcalc import accelerators, compute, facility, failures, memory, models, parallel, plan, storage, training_runs, units

PKG = Path(units.__file__).resolve().parent


def test_dtype_sizes_have_one_home():
    # each module's dtype table is a choice of dtypes whose sizes are mlcalc.units'
    for table in (compute.DTYPE_BYTES, memory.DTYPE_BYTES):
        assert all(table[d] == units.DTYPE_BYTES[d] for d in table)
    assert list(compute.DTYPE_BYTES) == list(accelerators.DTYPES)
    # OCP MX v1.0: FP6 and FP4 are 6 and 4 bits an element; bf16 2 bytes, fp8 1
    assert units.DTYPE_BYTES["fp6"] * 8 == 6 and units.DTYPE_BYTES["fp4"] * 8 == 4
    assert units.DTYPE_BYTES["int4"] == units.DTYPE_BYTES["fp4"] == 0.5


def test_time_and_byte_units_have_one_home():
    assert compute.SECONDS_PER_HOUR is units.SECONDS_PER_HOUR and plan.SECONDS_PER_DAY is units.SECONDS_PER_DAY
    assert failures.HOUR == units.SECONDS_PER_HOUR
    assert storage.GB is units.GB and storage.GiB is units.GiB and storage.MiB is units.MiB
    # the two years are named: 365.25 days for terms and depreciation, 365 for energy per year
    assert plan.HOURS_PER_YEAR == 365.25 * 24 and facility.HOURS_PER_YEAR == 365 * 24


def test_no_module_defines_its_own_unit_or_dtype_table():
    # a literal 3600/86400/8760/8766 or 1e9/2**30 bound to a name, or a dtype-size table, outside mlcalc/units.py
    pattern = re.compile(r"^\s*[A-Za-z_]+\s*(?::[^=]+)?=\s*(?:3600\.0|86400\.0|8760\.0|8766\.0|1e9|2\s*\*\*\s*30)\s*(?:#|$)"
                         r"|\"fp32\":\s*4\.0", re.M)
    offenders = [f"{p.relative_to(PKG)}: {m.group(0).strip()}" for p in PKG.rglob("*.py") if p.name != "units.py"
                 for m in pattern.finditer(p.read_text(encoding="utf-8"))]
    assert not offenders, offenders


def test_the_6n_convention_has_one_home():
    # Kaplan et al. 2020: C = 6 N D; Narayanan et al. 2021: 8 N D with full recomputation
    assert compute.training_flops(7e9, 1e12) == 6 * 7e9 * 1e12
    assert compute.training_flops(7e9, 1e12, recompute=True) == 8 * 7e9 * 1e12
    assert parallel.FLOPS_PER_PARAM_PER_TOKEN == compute.FLOPS_PER_PARAM_TOKEN
    assert list(storage.FLOPS_PER_PARAM_PER_TOKEN.values()) == [compute.FLOPS_PER_PARAM_TOKEN,
                                                               compute.FLOPS_PER_PARAM_TOKEN_RECOMPUTE]
    assert training_runs.gpt_neox_flops_per_token is compute.gpt_neox_flops_per_token
    # no module but compute multiplies parameters by a literal 6 (a FLOP convention written twice)
    pattern = re.compile(r"\b6(?:\.0)?\s*\*\s*(?:model\.)?n_(?:active_)?params|\b6(?:\.0)?\s*\*\s*float\(e\[\"n_params")
    offenders = [str(p.relative_to(PKG)) for p in PKG.rglob("*.py") if p.name != "compute.py"
                 and pattern.search(p.read_text(encoding="utf-8"))]
    assert not offenders, offenders


def test_named_conventions_against_published_counts():
    m = models.preset("Llama-3 8B")
    # PaLM (Chowdhery et al. 2022, App. B): 6 N + 12 L H Q T; the executed floor halves the attention term
    s = 4096
    att = 12.0 * m.n_layers * m.n_heads * m.head_dim * s
    assert compute.palm_flops_per_token(m, s) == pytest.approx(6 * m.n_active_params() + att)
    assert compute.executed_flops_per_token(m, s) == pytest.approx(6 * m.n_active_params() + att / 2)
    # GPT-NeoX's get_flops (2021-05 to 2023-09): 6 N + 60 s h l
    assert compute.gpt_neox_flops_per_token(m, 2048) == pytest.approx(
        6 * m.n_params() + 60 * 2048 * m.hidden * m.n_layers)


# Public classes two modules still both define, each a rename still to do (#22 item 3): the list may only shrink.
SHARED_CLASS_NAMES = {"Check", "System", "Workload", "StepTime"}


def test_no_two_modules_define_a_public_class_of_the_same_name():
    import collections
    import importlib
    import inspect
    import pkgutil

    import mlcalc

    where = collections.defaultdict(list)
    for info in pkgutil.walk_packages(mlcalc.__path__, "mlcalc."):
        mod = importlib.import_module(info.name)
        for name, obj in vars(mod).items():
            if inspect.isclass(obj) and obj.__module__ == mod.__name__ and not name.startswith("_"):
                where[name].append(mod.__name__)
    shared = {name for name, mods in where.items() if len(mods) > 1}
    assert shared <= SHARED_CLASS_NAMES, {name: where[name] for name in shared - SHARED_CLASS_NAMES}
    # the offers and layouts are named for what they are
    assert {"ClusterOffer", "Offer", "PlannedLayout", "GridLayout", "Layout"} <= set(where)
    assert where["Offer"] == ["mlcalc.plan"] and where["Layout"] == ["mlcalc.steptime"]


def test_number_formats_keep_small_values_and_drop_spurious_digits():
    from mlcalc.units import duration, fixed, sig

    assert [sig(131.97), sig(0.0013), sig(38095.2), sig(0)] == ["132", "0.00130", "38,095", "0"]
    assert [duration(0.0031), duration(4.2e-5), duration(1.917), duration(0)] == ["3.10 ms", "42.0 µs", "1.92 s", "0 s"]
    assert [fixed(30.64), fixed(1908.6), fixed(120.0, 2), fixed(0.04), fixed(0)] == ["30.6", "1,909", "120.0", "0.040", "0"]

