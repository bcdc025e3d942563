"""One validation layer for object parameters: every public function of the formula modules that takes a
ModelConfig, a Fabric, an Offer, a list of offers... refuses anything else with an error naming the
parameter, its value and the type allowed (a hostile fuzz found 65 AttributeErrors from such calls)."""

from __future__ import annotations

import inspect

import pytest

from mlcalc import _check
from tests.core.test_properties import MODULES, SKIP

GUARDED = [pytest.param(fn, name, id=f"{mod.__name__.split('.')[-1]}.{fn.__name__}({name})")
           for mod in MODULES for _, fn in inspect.getmembers(mod, inspect.isfunction)
           if not fn.__name__.startswith("_") and fn.__module__ == mod.__name__ and fn.__name__ not in SKIP
           for _, name, _ in _check._object_parameters(inspect.unwrap(fn))]


def test_every_object_parameter_is_guarded():
    assert len(GUARDED) >= 60  # ModelConfig, Fabric, Offer, Layout, ... parameters across the 13 modules
    for p in GUARDED:
        fn = p.values[0]
        assert getattr(fn, "__mlcalc_guarded__", False), fn.__qualname__


@pytest.mark.parametrize("fn,name", GUARDED)
@pytest.mark.parametrize("bad", [8, 2.5, "x", [1, 2]], ids=["int", "float", "str", "list"])
def test_wrong_type_is_refused_naming_the_parameter(fn, name, bad):
    kinds = next(k for _, n, k in _check._object_parameters(inspect.unwrap(fn)) if n == name)
    if isinstance(bad, kinds):
        pytest.skip(f"{name} accepts a {type(bad).__name__}")
    with pytest.raises(_check.ParameterTypeError, match=rf"^{name}=") as e:
        fn(**{name: bad})
    assert isinstance(e.value, ValueError) and isinstance(e.value, TypeError) and "it must be a" in str(e.value)


def test_kinds_of_annotations():
    import collections.abc as abc
    import numbers
    from typing import Iterable, Optional

    from mlcalc.models import ModelConfig

    assert _check._kinds(ModelConfig) == (ModelConfig,)
    assert _check._kinds(Optional[ModelConfig]) == (ModelConfig, type(None))
    assert _check._kinds(ModelConfig | float) == (ModelConfig, numbers.Real)
    assert _check._kinds(Iterable[int]) == (abc.Iterable,)
    assert _check._kinds(list[int]) is None and _check._kinds(int | float) is None and _check._kinds(str) is None
