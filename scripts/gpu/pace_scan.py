"""Which vCPU of this machine runs Python fastest right now: the pace meter's fixed work (``pacemeter.work``) timed on
every vCPU in turn (a thread pinned to it, ``ROUNDS`` windows of ``WINDOW_S`` each, interleaved over the vCPUs), the
median window's runs per second of each. The serve8 call pins each measuring process to the fastest vCPU found just
before it starts (``taskset``), and meters that vCPU's pace all along (``pacemeter.py``). vCPU 0 is skipped where there
are more than two (it takes the machine's interrupts).

    python scripts/gpu/pace_scan.py OUT.json     (prints the chosen vCPU last)
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pacemeter import work  # noqa: E402

WINDOW_S = 0.04
ROUNDS = 3


def window(cpu: int) -> float:
    """Runs of the fixed work per wall-clock second on ``cpu`` over one window."""
    os.sched_setaffinity(0, {cpu})
    time.sleep(0.002)  # let the move happen
    t0 = time.perf_counter()
    n = 0
    while time.perf_counter() - t0 < WINDOW_S:
        work()
        n += 1
    return n / (time.perf_counter() - t0)


def main(argv: list[str]) -> int:
    allowed = sorted(os.sched_getaffinity(0))
    cpus = [c for c in allowed if c != 0] if len(allowed) > 2 else allowed
    rates: dict[int, list[float]] = {c: [] for c in cpus}
    for _ in range(ROUNDS):
        for c in cpus:
            rates[c].append(window(c))
    os.sched_setaffinity(0, set(allowed))
    med = {c: statistics.median(r) for c, r in rates.items()}
    best = max(med, key=lambda c: med[c])
    out = {"time": time.time(), "window_s": WINDOW_S, "rounds": ROUNDS, "runs_per_s": {str(c): r for c, r in rates.items()},
           "median_runs_per_s": {str(c): m for c, m in med.items()}, "chosen": best,
           "chosen_over_slowest": med[best] / min(med.values())}
    with open(argv[0], "w") as fh:
        json.dump(out, fh, indent=1)
    print(" ".join(f"{c}:{med[c] / 1e3:.0f}k" for c in cpus), file=sys.stderr)
    print(best)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
