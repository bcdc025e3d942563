"""Widgets for the accelerators part: catalogue, compare, peak, training cost, FLOPs, offers, MFU, roofline, shapes.

Each widget is the ipywidgets shell over a calculator of :mod:`mlcalc.calculators.accelerators`
(controls, compute and view live there); ``html_table`` formats the chapters' static tables.
"""

from __future__ import annotations

import html
from typing import Any, Sequence

from IPython.display import HTML

from mlcalc import compute
from mlcalc.calculators import accelerators as calcs
from mlcalc.widgets._shell import LinkedCalcWidget


def html_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> HTML:
    """A small HTML table (numbers right-aligned) for the chapters' static tables."""
    head = "".join(f"<th style='text-align:left;padding:2px 8px'>{html.escape(h)}</th>" for h in headers)
    body = []
    for row in rows:
        cells = []
        for v in row:
            numeric = isinstance(v, (int, float)) or (isinstance(v, str) and (v[:1].isdigit() or v in ("n/a", "-")))
            align = "right" if numeric else "left"
            cells.append(f"<td style='text-align:{align};padding:2px 8px'>{html.escape(str(v))}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return HTML(f"<table style='border-collapse:collapse;font-size:90%'><tr>{head}</tr>{''.join(body)}</table>")


class CatalogueWidget(LinkedCalcWidget):
    """Explore the catalogue: pick a dtype and a FLOPS source, sort the table, see compute against bandwidth."""

    calc = calcs.CATALOGUE
    positional = ("dtype", "source", "sort_by")


class CompareWidget(LinkedCalcWidget):
    """Two accelerators side by side, with the ratio of every figure."""

    calc = calcs.COMPARE
    positional = ("a", "b", "source")


class PeakWidget(LinkedCalcWidget):
    """Clock x units x FMA per clock x 2: check a vendor's peak, or see what a lower clock costs."""

    calc = calcs.PEAK
    positional = ("accelerator", "clock_mhz")
    aliases = {"clock_mhz": "clock"}

    def __init__(self, *args: Any, **given: Any) -> None:
        if given.get("clock_mhz", 0) is None:  # None: the accelerator's own clock
            given.pop("clock_mhz")
        super().__init__(*args, **given)


class TrainingCostWidget(LinkedCalcWidget):
    """FLOPs of a run (6ND or 8ND), then time, GPU-hours and cost on G accelerators at an MFU and price."""

    calc = calcs.TRAINING_COST
    positional = ("n_params_billion", "n_tokens_billion", "accelerator", "n_gpus", "mfu", "price_per_gpu_hour",
                  "source")
    aliases = {"n_params_billion": "params", "n_tokens_billion": "tokens", "price_per_gpu_hour": "price"}


class FlopsWidget(LinkedCalcWidget):
    """FLOPs of one iteration of a GPT model (Megatron-LM eq. 3), against the 6N / 8N rules."""

    calc = calcs.FLOPS
    positional = ("preset", "recompute")


class OffersWidget(LinkedCalcWidget):
    """The same run on three offers: accelerator, count, price, MFU each (``rows``: the controls of each offer)."""

    calc = calcs.OFFERS
    positional = ("n_params_billion", "n_tokens_billion", "offers", "source")
    aliases = {"n_params_billion": "params", "n_tokens_billion": "tokens"}

    def __init__(self, *args: Any, **given: Any) -> None:
        given = {**dict(zip(self.positional, args)), **given}
        offers: Sequence[compute.ClusterOffer] = given.pop("offers", None) or ()
        if len(offers) > calcs.N_OFFERS:
            raise ValueError(f"offers has {len(offers)} entries: at most {calcs.N_OFFERS} are allowed")
        for i, o in enumerate(offers, 1):
            given.update({f"accelerator_{i}": o.accelerator, f"n_gpus_{i}": o.n_gpus,
                          f"price_{i}": o.price_per_gpu_hour, f"mfu_{i}": o.mfu})
        super().__init__(**given)
        self.rows = [tuple(self._controls[f"{name}_{i}"] for name in ("accelerator", "n_gpus", "price", "mfu"))
                     for i in range(1, calcs.N_OFFERS + 1)]


class MfuWidget(LinkedCalcWidget):
    """MFU from FLOP per iteration and its time, or from tokens per second; and what it does to the days."""

    calc = calcs.MFU
    positional = ("tflop_per_iteration", "iteration_time_s", "accelerator", "n_gpus")
    aliases = {"tflop_per_iteration": "tflop", "iteration_time_s": "seconds"}


class RooflineWidget(LinkedCalcWidget):
    """A matmul (M, N, K) or an LLM decoding step (batch) on an accelerator's roofline."""

    calc = calcs.ROOFLINE
    positional = ("accelerator", "dtype", "mode")


class ShapeEfficiencyWidget(LinkedCalcWidget):
    """Tile and wave quantization: efficiency of a GEMM against N on a GPU's SM count."""

    calc = calcs.SHAPE_EFFICIENCY
    positional = ("accelerator", "m", "k", "n_center")


__all__ = [
    "CatalogueWidget",
    "CompareWidget",
    "FlopsWidget",
    "MfuWidget",
    "OffersWidget",
    "PeakWidget",
    "RooflineWidget",
    "ShapeEfficiencyWidget",
    "TrainingCostWidget",
    "html_table",
]
