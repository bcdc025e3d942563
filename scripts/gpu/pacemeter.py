"""The pace of one vCPU while a training rank runs on it: a fixed piece of pure Python timed in its own CPU time.

Pinned to ``CPU`` (the vCPU where ``train_dist.py``'s "meter" condition puts a rank's main and autograd threads, or
where ``taskset`` puts a whole program), it sleeps :data:`PERIOD_S`, then runs the fixed work :data:`RUNS` times and
writes one line: epoch seconds at the end, the runs, and the CPU seconds they took (``time.thread_time``: time on the
vCPU, not time waiting for it). Runs per CPU second is the vCPU's pace at that moment: a vCPU that shares its physical
core with a busy neighbour (the dist5 calls found 15 of 32 vCPUs at 0.57 of the others' pace, changing within
seconds) runs the same work slower. It takes about 1 to 2 % of the vCPU (the rank's threads wait that long).

    python scripts/gpu/pacemeter.py OUT_FILE CPU MAX_SECONDS
"""

from __future__ import annotations

import os
import sys
import time

PERIOD_S = 0.02  # sleep between samples
RUNS = 30  # fixed work per sample: about 0.2 ms at the fast pace, 0.4 ms at the slow one


def work() -> int:
    """The same fixed work as ``speedometer.py`` and ``train_dist.spin_pace``: 200 integer multiply-adds."""
    s = 0
    for i in range(200):
        s += i * i
    return s


def sample(runs: int = RUNS) -> tuple[int, float]:
    """(runs, CPU seconds) of one sample."""
    t0 = time.thread_time()
    for _ in range(runs):
        work()
    return runs, time.thread_time() - t0


def main(argv: list[str]) -> int:
    out, cpu, max_s = argv[0], int(argv[1]), float(argv[2])
    if hasattr(os, "sched_setaffinity") and cpu in os.sched_getaffinity(0):
        os.sched_setaffinity(0, {cpu})
    stop = os.path.join(os.path.dirname(os.path.abspath(out)), "pacemeter.stop")
    t_end = time.time() + max_s
    with open(out, "w") as f:
        f.write(f"# vCPU {cpu}: epoch_s runs cpu_s (runs of 200 integer multiply-adds in a Python loop, "
                f"every {PERIOD_S} s; pace = runs / cpu_s)\n")
        n = 0
        while time.time() < t_end and not os.path.exists(stop):
            time.sleep(PERIOD_S)
            r, c = sample()
            f.write(f"{time.time():.4f} {r} {c:.7f}\n")
            n += 1
            if n % 50 == 0:
                f.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
