"""Thin ipywidgets front ends to the calculators of mlcalc (needs the ``widgets`` extra).

One class per registered calculator (:data:`mlcalc.calc.REGISTRY`), made here from its ``Calc`` and
named by its ``Calc.widget``: ``from mlcalc.widgets import GpuCountWidget`` works for all of them, and a
new calculator needs no code here. Keyword arguments are the calculator's control keys
(``GpuCountWidget(n_params_billion=80, mode="train")``). The area modules (``mlcalc.widgets.accelerators``,
``.network``, ``.measured``) hold the chapters' static helpers (tables, printed budgets, figures).
"""

from __future__ import annotations

import mlcalc.calculators  # noqa: F401  (registers every calculator)
from mlcalc.calc import REGISTRY, Calc
from mlcalc.widgets._base import CalcWidget


def widget_class(calc: Calc) -> type[CalcWidget]:
    """The ipywidgets shell of ``calc``: a :class:`CalcWidget` subclass named ``calc.widget``."""
    return type(calc.widget, (CalcWidget,), {"calc": calc, "__doc__": calc.title, "__module__": __name__,
                                             "__qualname__": calc.widget})


__all__: list[str] = ["CalcWidget", "widget_class"]
for _calc in REGISTRY.values():
    globals()[_calc.widget] = widget_class(_calc)
    __all__.append(_calc.widget)
