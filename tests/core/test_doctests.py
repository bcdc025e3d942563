"""The examples in the docstrings run, and each formula module's flagship function has one (issue 22, item 4).

Each flagship's example reproduces a published number named beside it (a paper's table, a datasheet, a tool's
documentation or this book's own measured runs), so the first thing a reader tries is also a check.
"""

from __future__ import annotations

import doctest
import importlib
import importlib.util
import pkgutil

import pytest

import mlcalc

# module -> its flagship function: the one call a reader of that part of the book starts from.
FLAGSHIPS = {
    "accelerators": "peak_flops",
    "compute": "training_flops",
    "facility": "cluster_power",
    "failures": "interruptions",
    "finetune": "finetune_memory",
    "memory": "zero_model_state_bytes",
    "models": "preset",
    "network": "collective_time",
    "parallel": "bubble_fraction",
    "plan": "chinchilla_tokens",
    "serving": "decode_step",
    "steptime": "predict_step",
    "storage": "checkpoint_size",
}

# Every module of mlcalc that holds an example (the widgets need ipywidgets, the benchmarks PyTorch: none has one).
WITH_EXAMPLES = sorted(
    m.name for m in pkgutil.walk_packages(mlcalc.__path__, "mlcalc.")
    if not m.name.startswith(("mlcalc.widgets", "mlcalc.bench"))
    and ">>>" in (importlib.util.find_spec(m.name).loader.get_source(m.name) or "")
)


@pytest.mark.parametrize("module, name", sorted(FLAGSHIPS.items()))
def test_each_flagship_function_has_an_example(module, name):
    fn = getattr(importlib.import_module(f"mlcalc.{module}"), name)
    assert ">>>" in (fn.__doc__ or ""), f"mlcalc.{module}.{name} has no example in its docstring"


def test_every_formula_module_names_a_flagship():
    from tests.core.test_properties import MODULES  # the formula modules (and vl, the charts' helper)

    # serving_record: serving's checks against its records, split from serving (whose flagship is decode_step) to keep
    # them out of the site's memory snapshot
    assert {m.__name__.removeprefix("mlcalc.") for m in MODULES} - {"vl", "serving_record"} <= set(FLAGSHIPS)


@pytest.mark.parametrize("module", WITH_EXAMPLES)
def test_examples_run(module):
    mod = importlib.import_module(module)
    result = doctest.testmod(mod, optionflags=doctest.ELLIPSIS, report=True)
    assert result.attempted > 0
    assert result.failed == 0, f"{result.failed} of {module}'s examples failed (printed above)"
