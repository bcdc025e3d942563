"""Self-check exercises in JupyterLab: one number box per question, graded as the reader types.

Thin shells over :mod:`mlcalc.calculators.exercises` (which computes the expected answers and
grades); the live site runs the same calculators in the reader's browser.
"""

from __future__ import annotations

from mlcalc.calculators.exercises import CALCS
from mlcalc.widgets._base import CalcWidget


class StartExercises(CalcWidget):
    """Self-check for "How many GPUs"."""

    calc = CALCS["start"]


class AcceleratorExercises(CalcWidget):
    """Self-check for the Accelerators part: FLOPs, time, the roofline, MFU."""

    calc = CALCS["accelerators"]


class MemoryExercises(CalcWidget):
    """Self-check for the Memory part: model states and the KV cache."""

    calc = CALCS["memory"]


class NetworkExercises(CalcWidget):
    """Self-check for the Network part: units, directions, bus bandwidth."""

    calc = CALCS["network"]


class StorageExercises(CalcWidget):
    """Self-check for the Storage part: checkpoint size and interval."""

    calc = CALCS["storage"]


class HardwareExercises(CalcWidget):
    """Self-check for the measured part: nccl-tests rows and measured matmul rates."""

    calc = CALCS["hardware"]


__all__ = ["AcceleratorExercises", "HardwareExercises", "MemoryExercises", "NetworkExercises", "StartExercises",
           "StorageExercises"]
