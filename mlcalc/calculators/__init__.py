"""Every calculator of the book as two pure steps (``compute`` and ``view``), registered by key.

One module per area (``memory``, ``accelerators``, ``network``, ``storage``, ``measured``); each
defines ``Calc`` objects with :func:`mlcalc.calc.register`. Standard library only: the same code runs
in a Jupyter kernel (behind the ipywidgets shell) and in the reader's browser (Pyodide).
"""

from __future__ import annotations

import importlib
import pkgutil

from mlcalc.calc import REGISTRY, get, run

for _info in pkgutil.iter_modules(__path__):
    if not _info.name.startswith("_"):
        importlib.import_module(f"{__name__}.{_info.name}")  # registers its calculators

__all__ = ["REGISTRY", "get", "run"]
