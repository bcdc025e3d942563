"""mlcalc: the small, pure calculators behind the book *ML Engineering, Hands On*.

Each area of the book has one module of typed functions (no printing, no widgets,
no I/O beyond reading the package's own data files): ``accelerators``, ``memory``
and more as chapters land. Hardware specs and model presets live in
``mlcalc/data`` as data files, each number with its source. Widgets, which need
ipywidgets and matplotlib, live apart in ``mlcalc.widgets``.
"""

from mlcalc.accelerators import Accelerator, catalogue, spec
from mlcalc.memory import GpuEstimate, gpus_needed

__all__ = ["Accelerator", "GpuEstimate", "catalogue", "gpus_needed", "spec"]
__version__ = "0.1.0"
