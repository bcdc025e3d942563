"""The host's pace while a call runs: a fixed piece of pure Python timed over and over on one pinned core.

Writes one line per window of about 10 ms: epoch seconds at the window's end and how many times the fixed work ran
in it (``run_train_dist5.sh`` starts it beside the training launches and reads it against each step's start time).
A host that slows (a lower clock, another tenant on the core, the hypervisor taking the vCPU) shows as fewer runs.

    python scripts/gpu/speedometer.py OUT_FILE CPU MAX_SECONDS
"""

from __future__ import annotations

import os
import sys
import time


def work() -> int:
    s = 0
    for i in range(200):
        s += i * i
    return s


def main(argv: list[str]) -> int:
    out, cpu, max_s = argv[0], int(argv[1]), float(argv[2])
    if hasattr(os, "sched_setaffinity") and cpu in os.sched_getaffinity(0):
        os.sched_setaffinity(0, {cpu})
    stop = os.path.join(os.path.dirname(os.path.abspath(out)), "speedometer.stop")
    t_end = time.time() + max_s
    with open(out, "w") as f:
        f.write("# epoch_s runs_per_window (window about 10 ms; work = 200 integer multiply-adds in a Python loop)\n")
        n_lines = 0
        while time.time() < t_end and not os.path.exists(stop):
            t0 = time.perf_counter()
            n = 0
            while time.perf_counter() - t0 < 0.01:
                work()
                n += 1
            f.write(f"{time.time():.3f} {n} {time.perf_counter() - t0:.5f}\n")
            n_lines += 1
            if n_lines % 100 == 0:
                f.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
