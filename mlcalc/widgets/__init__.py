"""Thin ipywidgets front ends to the pure functions of mlcalc (needs the ``widgets`` extra).

Every calculator widget of every area module (``mlcalc.widgets.memory``, ``.network``, ...)
is re-exported here, so ``from mlcalc.widgets import GpuCountWidget`` works for all of them.
"""

from __future__ import annotations

import importlib
import pkgutil

from mlcalc.widgets._base import CalcWidget

__all__: list[str] = []
for _info in pkgutil.iter_modules(__path__):
    if _info.name.startswith("_"):
        continue
    _module = importlib.import_module(f"{__name__}.{_info.name}")
    for _name, _obj in vars(_module).items():
        if isinstance(_obj, type) and issubclass(_obj, CalcWidget) and _obj.__module__ == _module.__name__:
            globals()[_name] = _obj
            __all__.append(_name)
__all__.sort()
