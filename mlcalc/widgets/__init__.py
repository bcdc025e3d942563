"""Thin ipywidgets front ends to the pure functions of mlcalc (needs the ``widgets`` extra)."""

from mlcalc.widgets.memory import GpuCountWidget
from mlcalc.widgets.memory import (ActivationWidget, BytesPerParamWidget, CpuWidget, MoeWidget, ServingWidget,
                                   TrainingFitWidget, ZeroWidget)

__all__ = ["GpuCountWidget"]
__all__ += ["ActivationWidget", "BytesPerParamWidget", "CpuWidget", "MoeWidget", "ServingWidget",
            "TrainingFitWidget", "ZeroWidget"]
