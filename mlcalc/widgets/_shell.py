"""A CalcWidget that also takes its older positional arguments, fills presets in at construction, and greys
out controls that the other inputs make irrelevant.

The rules are data of the calculator (``Calc.presets``) or pure functions of the calculator module
(``inactive(values) -> keys``), so the site's script can apply the same rules; this shell applies them
in Jupyter.
"""

from __future__ import annotations

from typing import Any, ClassVar

from mlcalc.widgets._base import CalcWidget

class LinkedCalcWidget(CalcWidget):
    """``positional``: older positional argument names, in order (presets and greyed-out controls are
    applied by :class:`CalcWidget` for every calculator)."""

    positional: ClassVar[tuple[str, ...]] = ()

    def __init__(self, *args: Any, **given: Any) -> None:
        if len(args) > len(self.positional):
            raise TypeError(f"{type(self).__name__} takes at most {len(self.positional)} positional arguments")
        given = {**dict(zip(self.positional, args)), **given}
        keys = {self.aliases.get(k, k): v for k, v in given.items()}
        for p in self.calc.presets:  # a preset given by name fills in what was not given
            for key, value in (p.values.get(keys[p.control], {}) if p.control in keys else {}).items():
                keys.setdefault(key, value)
        super().__init__(**keys)


__all__ = ["LinkedCalcWidget"]
