"""Thin ipywidgets front ends to the pure functions of mlcalc (needs the ``widgets`` extra)."""

from mlcalc.widgets.memory import GpuCountWidget

__all__ = ["GpuCountWidget"]
