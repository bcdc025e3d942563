"""Thin ipywidgets front ends to the pure functions of mlcalc (needs the ``widgets`` extra)."""

from mlcalc.widgets.memory import GpuCountWidget
from mlcalc.widgets.accelerators import (
    CatalogueWidget, CompareWidget, MfuWidget, OffersWidget, PeakWidget, RooflineWidget, ShapeEfficiencyWidget,
    TrainingCostWidget,
)

__all__ = ["GpuCountWidget", "CatalogueWidget", "CompareWidget", "MfuWidget", "OffersWidget", "PeakWidget",
           "RooflineWidget", "ShapeEfficiencyWidget", "TrainingCostWidget"]
