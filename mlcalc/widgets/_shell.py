"""A CalcWidget that also takes its older positional arguments and keeps linked controls in step.

Some calculators have a control that follows another (a peak recipe's clock follows the chosen
accelerator; a model preset fills in its layers and widths). The rule is a pure function of the
calculator module (``links(changed_key, values) -> {key: new value}``), so the site's script can apply
the same rule; this shell applies it in Jupyter.
"""

from __future__ import annotations

from typing import Any, Callable, ClassVar, Mapping

from mlcalc.widgets._base import CalcWidget

Links = Callable[[str, Mapping[str, Any]], Mapping[str, Any]]
Inactive = Callable[[Mapping[str, Any]], "set[str]"]


class LinkedCalcWidget(CalcWidget):
    """``positional``: older positional argument names, in order; ``links``: a rule for linked controls;
    ``inactive``: which controls the current values make irrelevant (shown disabled)."""

    positional: ClassVar[tuple[str, ...]] = ()
    links: ClassVar[Links | None] = None
    inactive: ClassVar[Inactive | None] = None

    def __init__(self, *args: Any, **given: Any) -> None:
        if len(args) > len(self.positional):
            raise TypeError(f"{type(self).__name__} takes at most {len(self.positional)} positional arguments")
        given = {**dict(zip(self.positional, args)), **given}
        keys = {self.aliases.get(k, k): v for k, v in given.items()}
        rule = type(self).links
        if rule is not None:  # a linked control not given follows the control that was given
            values = self.calc.values(keys)
            for key in list(keys):
                for target, value in rule(key, values).items():
                    if target not in keys:
                        keys[target] = value
                        values[target] = value
        self._following = False
        super().__init__(**keys)
        if rule is not None:
            for key, w in self._controls.items():
                w.observe(lambda change, key=key: self._follow(key), names="value")
        if type(self).inactive is not None:
            for w in self._controls.values():
                w.observe(self._grey, names="value")
            self._grey()

    def _grey(self, change: object = None) -> None:
        rule = type(self).inactive
        off = rule(self.values()) if rule is not None else set()
        for key, w in self._controls.items():
            w.disabled = key in off

    def _follow(self, key: str) -> None:
        if self._following:
            return
        rule = type(self).links
        try:
            updates = rule(key, self.values()) if rule is not None else {}
        except ValueError:
            return  # the calculator itself shows the message
        self._following = True
        try:
            for target, value in updates.items():
                self._controls[target].value = value
        finally:
            self._following = False


__all__ = ["LinkedCalcWidget"]
