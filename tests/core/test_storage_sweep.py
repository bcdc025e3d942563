"""storage.goodput_fractions: the goodput curve's points, the same model as storage.goodput checked once per curve."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mlcalc import storage

HOUR = 3600.0

_positive = st.floats(min_value=1e-6, max_value=1e12, allow_nan=False, allow_infinity=False)
_non_negative = st.floats(min_value=0.0, max_value=1e12, allow_nan=False, allow_infinity=False)


def _pointwise(intervals, delta, mtbf, restart):
    return [storage.goodput(t, delta, mtbf, restart).fraction for t in intervals]


@settings(max_examples=300, deadline=None)
@given(st.lists(_positive, min_size=0, max_size=12), _non_negative, _positive, _non_negative)
def test_each_point_is_goodput_s_fraction_bit_for_bit(intervals, delta, mtbf, restart):
    assert storage.goodput_fractions(intervals, delta, mtbf, restart) == _pointwise(intervals, delta, mtbf, restart)


def test_the_checkpoint_interval_curve_is_unchanged():
    # the calculator's curve: 120 points around Young's interval, Llama 3's job (16,384 GPUs, 5.8 years a GPU)
    mtbf = storage.system_mtbf_s(5.8 * 365.25 * 86400, 16384)
    young = storage.young_interval_s(60.0, mtbf)
    grid = [young / 30 * (900 ** (i / 119)) for i in range(120)]
    got = storage.goodput_fractions(grid, 60.0, mtbf, 600.0)
    assert got == _pointwise(grid, 60.0, mtbf, 600.0)
    assert max(got) == pytest.approx(storage.goodput(storage.daly_interval_s(60.0, mtbf), 60.0, mtbf, 600.0).fraction,
                                     rel=1e-3)


def test_past_the_exponential_limit_goodput_is_zero_as_pointwise():
    intervals = [1.0, 10.0 * HOUR, 1e6 * HOUR]
    assert storage.goodput_fractions(intervals, 60.0, HOUR, 0.0) == _pointwise(intervals, 60.0, HOUR, 0.0)
    assert storage.goodput_fractions(intervals, 60.0, HOUR, 0.0)[-1] == 0.0


@pytest.mark.parametrize("bad", [0.0, -1.0, math.nan, math.inf, "1", None, 1e301])
def test_a_bad_interval_is_refused_with_goodput_s_message(bad):
    with pytest.raises(ValueError) as expected:
        storage.goodput(bad, 60.0, HOUR, 0.0)
    with pytest.raises(ValueError) as got:
        storage.goodput_fractions([HOUR, bad], 60.0, HOUR, 0.0)
    assert str(got.value) == str(expected.value)


def test_an_int_interval_is_taken_as_goodput_takes_it():
    assert storage.goodput_fractions([3600], 60, 7200, 0) == [storage.goodput(3600, 60, 7200, 0).fraction]


@pytest.mark.parametrize("name, args", [("checkpoint_s", (-1.0, HOUR, 0.0)), ("mtbf_s", (60.0, 0.0, 0.0)),
                                        ("restart_s", (60.0, HOUR, math.nan))])
def test_bad_shared_inputs_are_refused_by_name(name, args):
    with pytest.raises(ValueError, match=name):
        storage.goodput_fractions([HOUR], *args)
