"""Planning widgets: the ipywidgets shells of mlcalc.calculators.plan (no arithmetic here)."""

from __future__ import annotations

from mlcalc.calculators import plan as calculators_plan
from mlcalc.widgets._base import CalcWidget


class TrainingPlanWidget(CalcWidget):
    """Plan a training run: model, tokens, deadline and budget to GPUs, layout, days and dollars."""

    calc = calculators_plan.TRAIN


class PlanCompareWidget(CalcWidget):
    """Two plans side by side."""

    calc = calculators_plan.COMPARE


class RentHpcBuyWidget(CalcWidget):
    """Rent, HPC allocation or buy: cost of a useful GPU-hour, break-even utilization."""

    calc = calculators_plan.TCO


class ServingPlanWidget(CalcWidget):
    """Serve a model within latency targets: GPUs, batch, tokens/s and dollars per million tokens."""

    calc = calculators_plan.SERVE
