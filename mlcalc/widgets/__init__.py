"""Thin ipywidgets front ends to the pure functions of mlcalc (needs the ``widgets`` extra)."""

from mlcalc.widgets.memory import GpuCountWidget
from mlcalc.widgets.network import (
    BandwidthUnitsWidget, CollectiveWidget, GenerationsWidget, LayoutWidget, PipelineWidget, StepCommWidget,
    TopologyWidget,
)

__all__ = ["GpuCountWidget"]
__all__ += ["BandwidthUnitsWidget", "CollectiveWidget", "GenerationsWidget", "LayoutWidget", "PipelineWidget",
            "StepCommWidget", "TopologyWidget"]
