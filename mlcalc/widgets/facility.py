"""Widgets for the facility calculators: ipywidgets shells over :mod:`mlcalc.calculators.facility`."""

from __future__ import annotations

from mlcalc.calculators import facility as calculators_facility
from mlcalc.calculators import failures as calculators_failures
from mlcalc.calculators import finetune as calculators_finetune
from mlcalc.widgets._base import CalcWidget


class ClusterPowerWidget(CalcWidget):
    """From a GPU count to IT and facility power, racks and their density (air or liquid cooling)."""

    calc = calculators_facility.CLUSTER


class RunEnergyWidget(CalcWidget):
    """Energy of a training run and of a year: MWh, the electricity bill at a dated price, emissions."""

    calc = calculators_facility.ENERGY


class InterruptionsWidget(CalcWidget):
    """Interruptions a job should expect at its size (Llama 3's rates, by cause), and the hot spares it needs."""

    calc = calculators_failures.INTERRUPTIONS


class ScaleGoodputWidget(CalcWidget):
    """Goodput at scale: failure rate by GPU count, restart time by part, checkpoints, SDC and stragglers."""

    calc = calculators_failures.GOODPUT


class FineTuneWidget(CalcWidget):
    """Fine-tuning on one GPU: memory and step time of full fine-tuning, LoRA and QLoRA."""

    calc = calculators_finetune.MEMORY
