"""Which vCPUs of this machine share a physical core: a spinner pinned to one vCPU is timed alone and with a second
spinner (another process) pinned to another vCPU (the better of two tries each). Where the pair shares a core (SMT siblings that the VM does not
show: lscpu says one thread per core), the first runs markedly slower with the partner busy.

Tests, for every vCPU i, the partners i xor 1 and i + n/2 (the two usual numberings of siblings), and for vCPU 1
every other vCPU. Writes JSON: each test's rate over the same vCPU's rate alone, and the sibling groups found
(ratio under ``THRESHOLD``), which ``train_dist.py``'s placement variants read (``SMT_MAP``).

    python scripts/gpu/smt_map.py OUT.json
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time

WINDOW_S = 0.03
THRESHOLD = 0.8  # a partner that leaves less than this share of the rate shares the core


def work() -> int:
    s = 0
    for i in range(200):
        s += i * i
    return s


def rate(cpu: int) -> float:
    os.sched_setaffinity(0, {cpu})
    t0 = time.perf_counter()
    n = 0
    while time.perf_counter() - t0 < WINDOW_S:
        work()
        n += 1
    return n / (time.perf_counter() - t0)


def with_partner(cpu: int, partner: int) -> float:
    pid = os.fork()
    if pid == 0:  # the partner: spin until killed (at most 1 s)
        try:
            os.sched_setaffinity(0, {partner})
            t_end = time.perf_counter() + 1.0
            while time.perf_counter() < t_end:
                work()
        finally:
            os._exit(0)
    time.sleep(0.005)
    r = rate(cpu)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return r


def main(out: str) -> int:
    cpus = sorted(os.sched_getaffinity(0))
    n = len(cpus)
    t0 = time.time()
    alone = {c: rate(c) for c in cpus}
    alone = {c: max(v, rate(c)) for c, v in alone.items()}  # the better of two: a vCPU alone, as fast as it goes
    tests = []
    pairs = {(c, c ^ 1) for c in cpus if c ^ 1 in alone} | {(c, cpus[(i + n // 2) % n]) for i, c in enumerate(cpus)}
    if len(cpus) > 1:
        pairs |= {(cpus[1], c) for c in cpus if c != cpus[1]}
    for a, b in sorted(pairs):
        if a == b:
            continue
        r = max(with_partner(a, b), with_partner(a, b))  # the better of two: a sibling is slow every time
        tests.append({"cpu": a, "partner": b, "ratio": round(r / alone[a], 3)})
    sib: dict[int, set[int]] = {c: {c} for c in cpus}
    for t in tests:
        if t["ratio"] < THRESHOLD:
            sib[t["cpu"]].add(t["partner"])
            sib[t["partner"]].add(t["cpu"])
    groups, seen = [], set()
    for c in cpus:
        if c in seen:
            continue
        g = sorted(sib[c])
        seen |= set(g)
        groups.append(g)
    res = {"about": __doc__.splitlines()[0], "window_s": WINDOW_S, "threshold": THRESHOLD,
           "alone_runs_per_s": {str(c): round(v) for c, v in alone.items()}, "tests": tests, "groups": groups,
           "wall_s": round(time.time() - t0, 2)}
    with open(out, "w") as f:
        json.dump(res, f, indent=0)
    shared = [g for g in groups if len(g) > 1]
    print(f"smt map: {n} vCPUs, {len(shared)} groups sharing a core, e.g. {shared[:4]}; "
          f"lowest ratio {min((t['ratio'] for t in tests), default=1):.2f} ({res['wall_s']} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
