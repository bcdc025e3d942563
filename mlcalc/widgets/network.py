"""Widgets for the network chapters (units, generations, collectives, parallelism, pipelines, topology).

Each widget is the ipywidgets shell over a calculator of :mod:`mlcalc.calculators.network` (controls,
compute and view live there). ``print_budget`` prints a step budget for the chapters' static cells.
"""

from __future__ import annotations

from mlcalc import parallel as par
from mlcalc.calculators import network as calcs
from mlcalc.calculators._common import si
from mlcalc.widgets._shell import LinkedCalcWidget


def print_budget(b: par.Budget) -> None:
    """A step budget as a small printed table (bytes in GB = 1e9 bytes)."""
    print(f"{'parallelism':12s} {'link':11s} {'bytes/GPU/step':>15s} {'time':>10s}")
    for parallelism, link, nbytes, time in calcs.budget_rows(b):
        print(f"{parallelism:12s} {link:11s} {nbytes:>15s} {time:>10s}")
    print(f"compute {si(b.compute_s, 's')}; data-parallel traffic "
          f"{'hides behind' if b.dp_overlap.hidden else 'overflows'} the backward pass "
          f"({si(b.dp_overlap.comm_s, 's')} vs {si(b.dp_overlap.window_s, 's')})")


class BandwidthUnitsWidget(LinkedCalcWidget):
    """Gb/s or GB/s, one direction or both, NICs per node, and the 80% rule."""

    calc = calcs.UNITS
    positional = ("value", "unit", "direction", "nics_per_node", "efficiency")
    aliases = {"nics_per_node": "nics"}


class GenerationsWidget(LinkedCalcWidget):
    """Speed-ups of compute and NVLink across GPU generations, over a chosen baseline."""

    calc = calcs.GENERATIONS
    positional = ("baseline", "log")
    aliases = {"log": "log_scale"}


class CollectiveWidget(LinkedCalcWidget):
    """Time and bus bandwidth of a collective: message size, GPUs, nodes and the links between them."""

    calc = calcs.COLLECTIVE
    positional = ("system", "collective", "algorithm", "n_nodes", "gpus_per_node", "message_bytes", "efficiency",
                  "measured_busbw_gb_s")
    aliases = {"n_nodes": "nodes", "gpus_per_node": "gpus", "message_bytes": "size", "measured_busbw_gb_s": "measured"}


class StepCommWidget(LinkedCalcWidget):
    """Communication against compute for one step of a tp x pp x dp layout you choose."""

    calc = calcs.STEP_COMM
    positional = ("model", "system", "accelerator", "tp", "pp", "dp", "global_batch", "mfu")
    aliases = {"global_batch": "batch"}


class LayoutWidget(LinkedCalcWidget):
    """Suggest tensor x pipeline x data parallel for a model on a cluster, and show its budget."""

    calc = calcs.LAYOUT
    positional = ("model", "system", "accelerator", "n_nodes", "global_batch", "mfu", "state_memory_fraction")
    aliases = {"n_nodes": "nodes", "global_batch": "batch", "state_memory_fraction": "fraction"}


class PipelineWidget(LinkedCalcWidget):
    """Draw a pipeline schedule (GPipe, 1F1B, interleaved 1F1B) and its bubble as p, m and v change."""

    calc = calcs.PIPELINE
    positional = ("kind", "p", "m", "v")


class TopologyWidget(LinkedCalcWidget):
    """Switches and transceivers of a fat tree and a Rail-only network for N GPUs."""

    calc = calcs.TOPOLOGY
    positional = ("n_gpus", "radix", "hb_domain", "cost_ratio")
    aliases = {"n_gpus": "n", "hb_domain": "hb", "cost_ratio": "ratio"}


__all__ = [
    "BandwidthUnitsWidget", "CollectiveWidget", "GenerationsWidget", "LayoutWidget", "PipelineWidget",
    "StepCommWidget", "TopologyWidget", "print_budget",
]
