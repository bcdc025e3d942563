"""The network chapters' static cells: ``print_budget`` prints a step budget (their calculators' widgets
are made in :mod:`mlcalc.widgets` from :mod:`mlcalc.calculators.network`)."""

from __future__ import annotations

from mlcalc import parallel as par
from mlcalc.calculators import network as calcs
from mlcalc.calculators._common import si


def print_budget(b: par.Budget) -> None:
    """A step budget as a small printed table (bytes in GB = 1e9 bytes)."""
    print(f"{'parallelism':12s} {'link':11s} {'bytes/GPU/step':>15s} {'time':>10s}")
    for parallelism, link, nbytes, time in calcs.budget_rows(b):
        print(f"{parallelism:12s} {link:11s} {nbytes:>15s} {time:>10s}")
    print(f"compute {si(b.compute_s, 's')}; data-parallel traffic "
          f"{'hides behind' if b.dp_overlap.hidden else 'overflows'} the backward pass "
          f"({si(b.dp_overlap.comm_s, 's')} vs {si(b.dp_overlap.window_s, 's')})")


__all__ = ["print_budget"]
