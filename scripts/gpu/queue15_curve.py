"""The launch queue across the crossing (queue15, issue 24): one GPU, a fixed host delay added to every op.

Two one-GPU configurations of ``train_dist.py`` (its model, optimizer and step, world size 1) are trained while a
``TorchDispatchMode`` spins ``N`` microseconds of the host (a busy loop on ``time.perf_counter_ns``) before every aten
op it dispatches, forward, backward (the autograd thread carries the mode) and optimizer alike. ``N`` takes
:data:`SPINS` values from 0 to well past where the host's time reaches the device's; a point "plain" runs without
the mode (the mode's own Python costs host time per op: the point at N = 0 with the mode measures it). Each point is
visited twice, going up the list and coming back down (drift shows as a difference between the two visits): one
step after switching is discarded, then :data:`STEPS` timed steps, each between two ``torch.cuda.synchronize``, with
its host issue time (until ``step()`` returns) and the ops the mode counted. The first steps of the process (the
warm-up) are kept apart. Before the points, :data:`train_dist.PROBE_STEPS` plain steps under ``torch.profiler``
give the device's busy time, its kernels and how far it ran behind the host (``train_dist.profile_steps``).

The process runs pinned to one vCPU (``taskset``, all its threads), with ``pacemeter.py`` on the same vCPU: the pace
the engine's host constants are scaled by (``mlcalc.distruns.paced_machine``).

    taskset -c CPU python scripts/gpu/queue15_curve.py OUT.json [--cpu-tiny]
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, HERE)

import train_dist as td  # noqa: E402


#: Host microseconds spun before every op ("plain": no mode at all).
SPINS: tuple[Any, ...] = ("plain", 0, 5, 10, 15, 20, 25, 30, 40, 60, 90)
STEPS = 4  # timed steps per visit of a point
WARMUP = 3  # first steps of a configuration's process life, kept apart


def configs() -> list[dict[str, Any]]:
    """Llama-3.2 1B (untied, as train_dist.py's record) on one GPU at 4 x 2,048 and at 1 x 8,192, no checkpointing:
    the record's w1-single-1B-s2048-mb4 and w1-single-1B-s8192-mb1."""
    b1 = td._untied("Llama-3.2 1B")
    return [td.case(b1, 1, 2048, 4, False), td.case(b1, 1, 8192, 1, False)]


def tiny_configs() -> list[dict[str, Any]]:
    return td.tiny_cases(configs())


def main(argv: list[str]) -> int:
    import torch
    import torch.distributed as dist
    from torch.utils._python_dispatch import TorchDispatchMode

    out = argv[0]
    cpu = "--cpu-tiny" in argv
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29611")
    os.environ.setdefault("RANK", "0")
    os.environ.setdefault("WORLD_SIZE", "1")
    if cpu:
        dev = torch.device("cpu")
        dist.init_process_group("gloo")
    else:
        torch.cuda.set_device(0)
        dev = torch.device("cuda", 0)
        dist.init_process_group("nccl", device_id=dev)
    runner = td.Runner(torch, dev, cpu)

    class Spin(TorchDispatchMode):
        def __init__(self, ns: int) -> None:
            super().__init__()
            self.ns, self.count = ns, 0

        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            self.count += 1
            if self.ns:
                end = time.perf_counter_ns() + self.ns
                while time.perf_counter_ns() < end:
                    pass
            return func(*args, **(kwargs or {}))

    def one(step: Any, spin: Any) -> dict[str, Any]:
        runner.sync()
        e0, t0 = time.time(), time.perf_counter()
        if spin == "plain":
            step()
            n = None
        else:
            mode = Spin(int(spin) * 1000)
            with mode:
                step()
            n = mode.count
        t1 = time.perf_counter()
        runner.sync()
        t2 = time.perf_counter()
        return {"epoch_s": e0, "step_s": t2 - t0, "issue_s": t1 - t0, "ops": n}

    result: dict[str, Any] = {"benchmark": "queue15_curve", "environment": td.environment(torch, dev),
                              "spins_us": list(SPINS), "steps_per_visit": STEPS, "configs": []}
    for c in (tiny_configs() if cpu else configs()):
        row: dict[str, Any] = {"id": c["id"], "case": c}
        try:
            t_b = time.time()
            model, opt, step, mesh, notes = runner.build(c)
            row.update(build_s=time.time() - t_b, notes=notes)
            row["warmup"] = [one(step, "plain") for _ in range(WARMUP)]
            try:
                row["probe"] = td.profile_steps(torch, runner, step, c, "")
            except Exception as e:  # noqa: BLE001 - the probe is extra
                row["probe"] = {"error": f"{type(e).__name__}: {e}"[:800]}
            order = list(SPINS) + list(reversed(SPINS))
            visits = []
            for k, spin in enumerate(order):
                discard = one(step, spin)
                visits.append({"spin_us": spin, "visit": 0 if k < len(SPINS) else 1, "discarded": discard,
                               "steps": [one(step, spin) for _ in range(STEPS)]})
                print(c["id"], spin, [round(s["step_s"] * 1e3, 1) for s in visits[-1]["steps"]],
                      [round(s["issue_s"] * 1e3, 1) for s in visits[-1]["steps"]], flush=True)
            row["visits"] = visits
            if not cpu:
                row["peak_allocated_bytes"] = torch.cuda.max_memory_allocated(dev)
            del model, opt, step
        except Exception as e:  # noqa: BLE001 - record and go on to the next configuration
            row["error"] = f"{type(e).__name__}: {e}"[:800]
        result["configs"].append(row)
        with open(out, "w") as f:
            json.dump(result, f, indent=1)
        if not cpu:
            torch.cuda.empty_cache()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
