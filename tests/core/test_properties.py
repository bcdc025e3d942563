"""Property-based tests (hypothesis) of every public function of mlcalc's pure modules.

1. Totality: any inputs at all (extreme magnitudes, NaN, inf, 10**400, bool, numpy scalars, text,
   None) give either a result whose numbers are all finite and non-negative, or a ValueError/TypeError
   naming the problem. Never another exception (OverflowError, ZeroDivisionError, KeyError...), never
   a hang (each call is given 2 s), never inf/NaN/negative returned.
2. Refusal: a number parameter given NaN, inf, 10**400, a bool or text is refused with ValueError/TypeError.
3. Physics: monotone where the physics says so (more parameters never less memory, more bandwidth
   never more time, more MTBF never a shorter checkpoint interval...).

The number of generated cases is printed at the end of the run (tests/conftest.py).
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import math
import signal
import typing
from collections.abc import Mapping

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from mlcalc import (accelerators, compute, facility, failures, finetune, memory, models, network, parallel, plan, serving,
                    serving_record, steptime, storage, vl)

CASES = {"n": 0}  # generated cases run (read by tests/conftest.py for the summary line)
SETTINGS = settings(max_examples=20, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])

# Every formula module (the page imports them all): measured, hfruns, distruns and servemeasured read stored runs,
# live and calc are the shells' plumbing, tested in their own files.
MODULES = (accelerators, compute, memory, network, parallel, storage, facility, failures, finetune, models, plan, serving,
           serving_record, steptime, vl)
# Not pure calculators: they register or read tables (tested in their own files).
SKIP = {"register_flops_table", "unregister_flops_table", "flops_sources", "recipes", "nccl_base_latency_s",
        "clean"}  # vl.clean turns any number into one a chart can carry (None for a gap): signed, total by design
# Results that may be negative by meaning (every other number returned is a size, time, count, rate,
# ratio or fraction).
SIGNED_FIELDS: set[str] = {"error", "error_per_query_head", "error_charged"}  # a prediction's relative error against
#   a measurement or a published figure (mlcalc.serving_record.MmhaCheck and MoeAllreduceCheck: two each)

# Valid values of the text parameters, by name.
CHOICES: dict[str, list] = {
    "key": list(accelerators.catalogue()),
    "accelerator": list(accelerators.catalogue()),
    "dtype": ["bf16", "fp16", "fp8", "fp32"],
    "source": ["advertised", "achievable"],
    "sort_by": list(compute.SORT_KEYS),
    "mode": list(memory.MODES),
    "convention": list(memory.CONVENTIONS),
    "recompute": list(memory.RECOMPUTE),
    "weight_dtype": ["bf16", "fp8"],
    "kv_dtype": ["bf16", "fp8"],
    "collective": list(network.COLLECTIVES),
    "algorithm": list(network.ALGORITHMS),
    "unit": list(network.UNITS),
    "direction": list(network.DIRECTIONS),
    "system_key": list(network.systems()),
    "kind": list(parallel.SCHEDULES),
    "strategy": list(parallel.DP_STRATEGIES),
    "dp_strategy": list(parallel.DP_STRATEGIES),
    "contents": list(storage.CHECKPOINT_CONTENTS),
    "baseline": ["V100"],
}
FRACTIONS = {"mfu", "efficiency", "usable_fraction", "overhead_fraction", "backward_share",
             "state_memory_fraction"}

# Hostile values: what a careless or adversarial reader may type, or what numpy hands over.
HOSTILE = st.sampled_from([0, -1, -1e-300, 1e-300, 1e300, -1e300, 10**400, -(10**400), 2**63, float("nan"),
                           float("inf"), float("-inf"), True, False, None, "8", "", [], {}, 1e30, 0.5,
                           np.int64(8), np.float32(0.5), np.float64(1e308), np.int64(-3)])


def _is_int(ann) -> bool:
    return ann is int or ann == "int"


def _is_float(ann) -> bool:
    return ann is float or ann in ("float", "int | float")


def _is_bool(ann) -> bool:
    return ann is bool or ann == "bool"


def _is_str(ann) -> bool:
    return ann is str or ann == "str"


def _hints(fn) -> dict:
    try:
        return typing.get_type_hints(fn)
    except Exception:  # noqa: BLE001 - unresolvable forward references: fall back to the raw annotations
        return {p.name: p.annotation for p in inspect.signature(fn).parameters.values()}


def _param_strategy(name: str, ann, default, hostile: bool, model_ok: bool = False):
    """A strategy for one parameter, or None if the function cannot be driven generically."""
    if (ann is models.ModelConfig or ann == "ModelConfig") and model_ok:
        valid = st.sampled_from([models.preset(k) for k in sorted(models.presets())])
        return st.one_of(valid, st.sampled_from([None, "Llama-3 8B", 7e9])) if hostile else valid
    if _is_bool(ann):
        return st.booleans()
    if _is_str(ann):
        options = CHOICES.get(name) or ([default] if isinstance(default, str) else None)
        if options is None:
            return None
        return st.sampled_from(options + ["not-a-choice"]) if hostile else st.sampled_from(options)
    if _is_int(ann):
        valid = st.one_of(st.integers(1, 64), st.integers(1, 2**16), st.sampled_from([np.int64(8), 1024.0]))
        return st.one_of(valid, HOSTILE, st.integers(-(2**70), 2**70)) if hostile else valid
    if _is_float(ann):
        if name in FRACTIONS:
            valid = st.floats(0.01, 1.0)
        elif name in ("headroom", "buffer_factor"):
            valid = st.floats(1.0, 3.0)
        else:
            valid = st.one_of(st.floats(1e-6, 1e15), st.floats(1e-300, 1e300), st.sampled_from([np.float32(2.0)]))
        if hostile:
            return st.one_of(valid, HOSTILE, st.floats(allow_nan=True, allow_infinity=True))
        return valid
    return None


# Modules whose functions are driven with every model preset too (and hostile non-models).
MODEL_MODULES = {"mlcalc.finetune", "mlcalc.steptime"}


def _drivable(fn):
    sig = inspect.signature(fn)
    hints = _hints(fn)
    strategies = {}
    for p in sig.parameters.values():
        if p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL):
            continue
        s = _param_strategy(p.name, hints.get(p.name, p.annotation), p.default, hostile=False,
                            model_ok=fn.__module__ in MODEL_MODULES)
        if s is None:
            if p.default is inspect.Parameter.empty:
                return None
            continue  # leave it at its default
        strategies[p.name] = p
    return strategies


def _public(mod):
    for name, fn in inspect.getmembers(mod, inspect.isfunction):
        if name.startswith("_") or fn.__module__ != mod.__name__ or name in SKIP:
            continue
        if _drivable(fn) is not None:
            yield pytest.param(fn, id=f"{mod.__name__.split('.')[-1]}.{name}")


FUNCTIONS = [p for mod in MODULES for p in _public(mod)]


class Hang(Exception):
    pass


@contextlib.contextmanager
def time_limit(seconds: float):
    def _raise(signum, frame):
        raise Hang(f"no answer in {seconds} s")

    old = signal.signal(signal.SIGALRM, _raise)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _leaves(value, path="result", depth=0):
    """Every number in a result (NamedTuple, dataclass, mapping, sequence), with where it is."""
    if depth > 6:
        return
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return
    if isinstance(value, (int, float, np.integer, np.floating)):
        yield path, value
    elif hasattr(value, "_asdict"):
        for k, v in value._asdict().items():
            yield from _leaves(v, f"{path}.{k}", depth + 1)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            yield from _leaves(getattr(value, f.name), f"{path}.{f.name}", depth + 1)
    elif isinstance(value, Mapping):
        for k, v in list(value.items())[:200]:
            yield from _leaves(v, f"{path}[{k!r}]", depth + 1)
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value[:200]):
            yield from _leaves(v, f"{path}[{i}]", depth + 1)


def check_result(fn, kwargs, out):
    for where, x in _leaves(out):
        x = float(x)
        assert math.isfinite(x), f"{fn.__name__}({kwargs}) returned {where} = {x}"
        if where.rsplit(".", 1)[-1] not in SIGNED_FIELDS:
            assert x >= 0, f"{fn.__name__}({kwargs}) returned negative {where} = {x}"


def _call(fn, kwargs):
    CASES["n"] += 1
    with time_limit(10.0):
        return fn(**kwargs)


def _kwargs_strategy(fn, hostile: bool):
    sig = inspect.signature(fn)
    hints = _hints(fn)
    parts = {}
    for p in sig.parameters.values():
        if p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL):
            continue
        s = _param_strategy(p.name, hints.get(p.name, p.annotation), p.default, hostile,
                            model_ok=fn.__module__ in MODEL_MODULES)
        if s is not None:
            parts[p.name] = s
    return st.fixed_dictionaries(parts)


@pytest.mark.parametrize("fn", FUNCTIONS)
@SETTINGS
@given(data=st.data())
def test_total(fn, data):
    """Any inputs: a finite non-negative result, or ValueError/TypeError; nothing else, no hang."""
    kwargs = data.draw(_kwargs_strategy(fn, hostile=True))
    try:
        out = _call(fn, kwargs)
    except (ValueError, TypeError) as exc:
        assert str(exc), f"{fn.__name__}({kwargs}) raised {type(exc).__name__} without a message"
        return
    check_result(fn, kwargs, out)


NUMBER_PARAMS = [
    pytest.param(fn.values[0], p.name, id=f"{fn.id}:{p.name}")
    for fn in FUNCTIONS
    for p in inspect.signature(fn.values[0]).parameters.values()
    if (_is_int(_hints(fn.values[0]).get(p.name, p.annotation)) or _is_float(_hints(fn.values[0]).get(p.name, p.annotation)))
]
INVALID_NUMBERS = [float("nan"), float("inf"), -float("inf"), 10**400, True, "8", None]


@pytest.mark.parametrize("fn, name", NUMBER_PARAMS)
@settings(SETTINGS, max_examples=4)
@given(data=st.data(), bad=st.sampled_from(INVALID_NUMBERS))
def test_refuses_invalid_numbers(fn, name, data, bad):
    """A number parameter given NaN, inf, 10**400, a bool, text or None is refused (ValueError/TypeError)."""
    kwargs = data.draw(_kwargs_strategy(fn, hostile=False))
    kwargs[name] = bad
    with pytest.raises((ValueError, TypeError)):
        _call(fn, kwargs)


# ------------------------------------------------------------------------- physics: monotone

pos = st.floats(1e-3, 1e12)
big = st.floats(1.0, 1e13)


def _grow(a: float, f: float) -> float:
    return a * (1.0 + f)


@SETTINGS
@given(n=st.floats(1e6, 1e13), f=st.floats(0.01, 10), mem=st.floats(1e9, 2e11), mode=st.sampled_from(memory.MODES))
def test_more_parameters_never_fewer_gpus(n, f, mem, mode):
    CASES["n"] += 1
    assert memory.gpus_needed(_grow(n, f), mem, mode).n_gpus >= memory.gpus_needed(n, mem, mode).n_gpus


@SETTINGS
@given(flops=st.floats(1e15, 1e26), gpus=st.integers(1, 100000), peak=st.floats(1e12, 1e16), f=st.floats(0.01, 10))
def test_more_flops_per_s_never_more_time(flops, gpus, peak, f):
    CASES["n"] += 1
    assert compute.training_time_s(flops, gpus, _grow(peak, f)) <= compute.training_time_s(flops, gpus, peak)
    assert compute.training_time_s(flops, gpus + 1, peak) <= compute.training_time_s(flops, gpus, peak)


@SETTINGS
@given(size=st.floats(1, 1e12), n=st.integers(2, 4096), bw=st.floats(1e8, 1e13), f=st.floats(0.01, 10),
       coll=st.sampled_from(network.COLLECTIVES))
def test_more_bandwidth_never_more_collective_time(size, n, bw, f, coll):
    CASES["n"] += 1
    slow = network.collective_time(size, n, bw, coll)
    fast = network.collective_time(size, n, _grow(bw, f), coll)
    assert fast.time_s <= slow.time_s


@SETTINGS
@given(delta=st.floats(1.0, 1e5), m=st.floats(1.0, 1e8), f=st.floats(1e-6, 10))
def test_more_mtbf_never_shorter_checkpoint_interval(delta, m, f):
    CASES["n"] += 1
    assert storage.daly_interval_s(delta, _grow(m, f)) >= storage.daly_interval_s(delta, m)
    assert storage.young_interval_s(delta, _grow(m, f)) >= storage.young_interval_s(delta, m)
    # The interval never exceeds the MTBF itself (Daly 2006: it tends to M as delta grows).
    assert storage.daly_interval_s(delta, m) <= m


@SETTINGS
@given(m=st.floats(1.0, 1e8))
def test_daly_continuous_across_the_old_switch(m):
    """The estimate used to jump from 8M/9 to M at delta = 2M; the optimum is continuous there."""
    CASES["n"] += 1
    below = storage.daly_interval_s(2 * m * (1 - 1e-9), m)
    above = storage.daly_interval_s(2 * m * (1 + 1e-9), m)
    assert above == pytest.approx(below, rel=1e-6)


@SETTINGS
@given(size=st.floats(1e6, 1e15), fs=st.floats(1e8, 1e13), nodes=st.integers(1, 4096), node=st.floats(1e8, 1e12),
       f=st.floats(0.01, 10))
def test_more_storage_bandwidth_never_slower_checkpoint(size, fs, nodes, node, f):
    CASES["n"] += 1
    base = storage.checkpoint_write_time(size, fs, nodes, node).seconds
    assert storage.checkpoint_write_time(size, _grow(fs, f), nodes, node).seconds <= base
    assert storage.checkpoint_write_time(size, fs, nodes, _grow(node, f)).seconds <= base
    assert storage.checkpoint_write_time(_grow(size, f), fs, nodes, node).seconds >= base


@SETTINGS
@given(n=st.floats(1e6, 1e12), bw=st.floats(1e9, 1e13), peak=st.floats(1e12, 1e16), batch=st.integers(1, 1024),
       f=st.floats(0.01, 10))
def test_more_memory_bandwidth_never_slower_decode(n, bw, peak, batch, f):
    CASES["n"] += 1
    slow = compute.decode_bound(n, bw, peak, batch)
    fast = compute.decode_bound(n, _grow(bw, f), peak, batch)
    assert fast.tokens_per_s >= slow.tokens_per_s


@SETTINGS
@given(i=st.floats(1e-3, 1e5), peak=st.floats(1e12, 1e16), bw=st.floats(1e9, 1e13), f=st.floats(0.01, 10))
def test_roofline_monotone_and_capped(i, peak, bw, f):
    CASES["n"] += 1
    lo, hi = compute.roofline(i, peak, bw), compute.roofline(_grow(i, f), peak, bw)
    assert hi.attainable_flops >= lo.attainable_flops
    assert hi.attainable_flops <= peak * (1 + 1e-12)


@SETTINGS
@given(layers=st.integers(1, 200), kv=st.integers(1, 128), hd=st.integers(1, 512), f=st.integers(1, 10))
def test_more_layers_never_smaller_kv_cache(layers, kv, hd, f):
    CASES["n"] += 1
    assert memory.kv_cache_bytes_per_token(layers + f, kv, hd) >= memory.kv_cache_bytes_per_token(layers, kv, hd)


@SETTINGS
@given(seq=st.integers(1, 32768), mb=st.integers(1, 64), f=st.integers(1, 8),
       recompute=st.sampled_from(memory.RECOMPUTE), flash=st.booleans())
def test_more_tokens_never_fewer_activation_bytes(seq, mb, f, recompute, flash):
    CASES["n"] += 1
    base = memory.activation_bytes_per_layer(seq, mb, 4096, 32, recompute=recompute, flash_attention=flash)
    assert memory.activation_bytes_per_layer(seq * (1 + f), mb, 4096, 32, recompute=recompute,
                                             flash_attention=flash) >= base
    assert memory.activation_bytes_per_layer(seq, mb + f, 4096, 32, recompute=recompute,
                                             flash_attention=flash) >= base


@SETTINGS
@given(data=st.floats(0, 1e16), ck=st.floats(0, 1e14), kept=st.integers(0, 100), f=st.floats(0.01, 10))
def test_more_data_never_less_storage_to_buy(data, ck, kept, f):
    CASES["n"] += 1
    assume(data + ck * kept > 0)
    base = storage.storage_capacity(data, ck, kept).to_buy_bytes
    assert storage.storage_capacity(_grow(data, f) + 1, ck, kept).to_buy_bytes >= base


@SETTINGS
@given(preset=st.sampled_from(sorted(memory.model_presets())), mb=st.integers(1, 8), f=st.integers(1, 8))
def test_bigger_micro_batch_never_less_training_memory(preset, mb, f):
    CASES["n"] += 1
    model = memory.model_preset(preset)
    base = memory.training_memory(model, 80e9, micro_batch=mb)
    more = memory.training_memory(model, 80e9, micro_batch=mb + f)
    check_result(memory.training_memory, {"micro_batch": mb}, base)
    assert more.total_bytes >= base.total_bytes


@SETTINGS
@given(preset=st.sampled_from(sorted(memory.model_presets())), batch=st.integers(1, 256), ctx=st.integers(1, 65536),
       f=st.integers(1, 8))
def test_longer_context_never_less_serving_memory(preset, batch, ctx, f):
    CASES["n"] += 1
    model = memory.model_preset(preset)
    base = memory.serving_memory(model, batch, ctx, 80e9)
    more = memory.serving_memory(model, batch, ctx * (1 + f), 80e9)
    check_result(memory.serving_memory, {"batch": batch}, base)
    assert more.total_bytes >= base.total_bytes


@SETTINGS
@given(n=st.integers(1, 100000), T=st.floats(1, 1e9), fails=st.floats(1, 1e6), m=st.floats(1, 1e9))
def test_more_devices_never_longer_system_mtbf(n, T, fails, m):
    CASES["n"] += 1
    assert storage.system_mtbf_s(m, n + 1) <= storage.system_mtbf_s(m, n)
    assert storage.device_mtbf_from_observation(n + 1, T, fails) >= storage.device_mtbf_from_observation(n, T, fails)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.dictionaries(st.sampled_from(["a", "b", "s", "x"]),
                                st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(), st.booleans(),
                                          st.none(), st.text(max_size=3)), max_size=4), max_size=5))
def test_chart_rows_clean_every_float_as_clean_does(records):
    """vl.rows writes clean() out (a chart's rows are most of its view's Python in the browser): the same rows, each
    float as clean() makes it (finite to 6 significant digits, else None), every other value as it is."""
    got = vl.rows(records)
    assert got == [{k: vl.clean(v) if isinstance(v, float) else v for k, v in r.items()} for r in records]
    for r, g in zip(records, got):
        assert list(g) == list(r)
        assert all(type(g[k]) is type(v) for k, v in r.items() if not isinstance(v, float))
