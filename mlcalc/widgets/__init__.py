"""Thin ipywidgets front ends to the pure functions of mlcalc (needs the ``widgets`` extra)."""

from mlcalc.widgets.memory import (
    ActivationWidget,
    BytesPerParamWidget,
    CpuWidget,
    GpuCountWidget,
    MoeWidget,
    ServingWidget,
    TrainingFitWidget,
    ZeroWidget,
)
from mlcalc.widgets.network import (
    BandwidthUnitsWidget,
    CollectiveWidget,
    GenerationsWidget,
    LayoutWidget,
    PipelineWidget,
    StepCommWidget,
    TopologyWidget,
)

__all__ = [
    "ActivationWidget",
    "BandwidthUnitsWidget",
    "BytesPerParamWidget",
    "CollectiveWidget",
    "CpuWidget",
    "GenerationsWidget",
    "GpuCountWidget",
    "LayoutWidget",
    "MoeWidget",
    "PipelineWidget",
    "ServingWidget",
    "StepCommWidget",
    "TopologyWidget",
    "TrainingFitWidget",
    "ZeroWidget",
]
