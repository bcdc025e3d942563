"""Thin ipywidgets front ends to the pure functions of mlcalc (needs the ``widgets`` extra)."""

from mlcalc.widgets.memory import GpuCountWidget
from mlcalc.widgets.storage import (
    CapacityWidget,
    CheckpointIntervalWidget,
    CheckpointWidget,
    DataloaderWidget,
    LlmDataloaderWidget,
    StartupWidget,
)

__all__ = ["GpuCountWidget"]
__all__ += ["CapacityWidget", "CheckpointIntervalWidget", "CheckpointWidget", "DataloaderWidget", "LlmDataloaderWidget", "StartupWidget"]
