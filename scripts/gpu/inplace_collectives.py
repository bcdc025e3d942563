"""All-gather and reduce-scatter in place and out of place, side by side (issue 24, coll9's held-out check).

Run one process per GPU: ``torchrun --standalone --nproc_per_node=2 scripts/gpu/inplace_collectives.py --out f.json``.
nccl-tests' conventions (doc/PERFORMANCE.md): size = the whole buffer (all-gather output, reduce-scatter input),
algbw = size / time, busbw = algbw (n-1)/n (all-gather, reduce-scatter) or 2(n-1)/n (all-reduce). In place as
nccl-tests' ``-i`` (src/common.cu): the all-gather's input is the rank's own slice of its output
(sendbuff = recvbuff + rank * sendcount, NCCL's in-place test in src/collectives.cc), the reduce-scatter's output
is the rank's own slice of its input (recvbuff = sendbuff + rank * recvcount). PyTorch passes both pointers to
NCCL as they are (``all_gather_into_tensor`` / ``reduce_scatter_tensor``). All-reduce (in place, as PyTorch runs
it) is the control.

At each size every (collective, mode) is timed in turn, the whole round ``--reps`` times, so a drift of the
machine falls on both modes alike. One timing: CUDA events around ``iters`` calls (iters chosen so a batch lasts
about ``--target-s``), the slowest rank's time per call, median of ``--batches`` batches. Each case is checked
for the right values first (poisoned output). Results are written after every size (a killed run keeps them).
GB = 1e9 bytes. The file's "tool" is this script, so mlcalc.measured's loader leaves it alone.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from datetime import datetime, timezone

import torch
import torch.distributed as dist

CASES = (("all_gather", "out_of_place"), ("all_gather", "in_place"), ("reduce_scatter", "out_of_place"),
         ("reduce_scatter", "in_place"), ("all_reduce", "in_place"))


def busbw_factor(op: str, n: int) -> float:
    return 2 * (n - 1) / n if op == "all_reduce" else (n - 1) / n


def make_case(op: str, mode: str, count: int, world: int, rank: int, dev: torch.device, dtype: torch.dtype):
    """(call, check): ``call()`` runs the collective once; ``check()`` fills known values, runs it, and says
    whether every output element is right."""
    c = count // world
    big = torch.empty(count, dtype=dtype, device=dev)
    if op == "all_gather":
        part = big.narrow(0, rank * c, c) if mode == "in_place" else torch.empty(c, dtype=dtype, device=dev)

        def call() -> None:
            dist.all_gather_into_tensor(big, part)

        def check() -> bool:
            big.fill_(-7.0)  # poison
            part.fill_(rank + 1)
            call()
            want = torch.arange(1, world + 1, dtype=dtype, device=dev).repeat_interleave(c)
            return bool(torch.equal(big, want))
    elif op == "reduce_scatter":
        part = big.narrow(0, rank * c, c) if mode == "in_place" else torch.empty(c, dtype=dtype, device=dev)

        def call() -> None:
            dist.reduce_scatter_tensor(part, big)

        def check() -> bool:
            if mode == "out_of_place":
                part.fill_(-7.0)
            # slot j of rank r holds (r + 1) * (j + 1): the reduced slot j is (j + 1) * n(n+1)/2
            big.copy_(torch.arange(1, world + 1, dtype=dtype, device=dev).repeat_interleave(c) * (rank + 1))
            call()
            return bool(torch.all(part == (rank + 1) * world * (world + 1) / 2).item())
    else:
        def call() -> None:
            dist.all_reduce(big)

        def check() -> bool:
            big.fill_(rank + 1)
            call()
            return bool(torch.all(big == world * (world + 1) / 2).item())
    call.offset_bytes = (part.data_ptr() - big.data_ptr()) if op != "all_reduce" else 0  # type: ignore[attr-defined]
    return big, call, check


def time_case(call, dev: torch.device, warmup: int, batches: int, target_s: float) -> tuple[float, list[float], int]:
    cuda = dev.type == "cuda"
    for _ in range(warmup):
        call()
    if cuda:
        torch.cuda.synchronize(dev)
    dist.barrier()
    t0 = time.perf_counter()
    call()
    if cuda:
        torch.cuda.synchronize(dev)
    first = time.perf_counter() - t0
    it = torch.tensor([max(1, min(int(target_s / max(first, 1e-7)), 200))], dtype=torch.float64, device=dev)
    dist.all_reduce(it, op=dist.ReduceOp.MIN)  # every rank runs the same count
    iters = int(it.item())
    per = []
    for _ in range(batches):
        dist.barrier()
        if cuda:
            torch.cuda.synchronize(dev)
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            for _ in range(iters):
                call()
            b.record()
            torch.cuda.synchronize(dev)
            t = a.elapsed_time(b) / 1e3 / iters
        else:
            t0 = time.perf_counter()
            for _ in range(iters):
                call()
            t = (time.perf_counter() - t0) / iters
        tt = torch.tensor([t], dtype=torch.float64, device=dev)
        dist.all_reduce(tt, op=dist.ReduceOp.MAX)  # the slowest rank sets the pace
        per.append(float(tt.item()))
    return statistics.median(per), per, iters


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--min-pow", type=int, default=None, help="smallest size 2**p bytes (GPU 20, CPU 10)")
    ap.add_argument("--max-pow", type=int, default=None, help="largest size 2**p bytes (GPU 30, CPU 16)")
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--batches", type=int, default=3)
    ap.add_argument("--target-s", type=float, default=0.02)
    ap.add_argument("--case-timeout-s", type=float, default=20.0, help="a size's round that runs longer stops the sweep")
    ap.add_argument("--label", default="")
    a = ap.parse_args(argv)
    for name in ("reps", "warmup", "batches"):
        if getattr(a, name) < 1 or getattr(a, name) > 100:
            raise ValueError(f"--{name}={getattr(a, name)!r} is not allowed: 1..100")
    backend = "nccl" if torch.cuda.is_available() else "gloo"
    if backend == "nccl":
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    dist.init_process_group(backend=backend)
    rank, world = dist.get_rank(), dist.get_world_size()
    dev = torch.device("cuda", torch.cuda.current_device()) if backend == "nccl" else torch.device("cpu")
    lo = a.min_pow if a.min_pow is not None else (20 if dev.type == "cuda" else 10)
    hi = a.max_pow if a.max_pow is not None else (30 if dev.type == "cuda" else 16)
    if not 0 <= lo <= hi <= 32:
        raise ValueError(f"--min-pow={lo!r}, --max-pow={hi!r} is not allowed: 0 <= min <= max <= 32")
    dtype, esize = torch.float32, 4
    env = {"date_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"), "torch": torch.__version__,
           "cuda": torch.version.cuda, "backend": backend, "world_size": world, "label": a.label,
           "env_vars": {k: v for k, v in os.environ.items()
                        if k.startswith(("NCCL_", "CUDA_VISIBLE", "TORCH_SYMM", "NVSHMEM"))}}
    if dev.type == "cuda":
        p = torch.cuda.get_device_properties(dev)
        env.update(device_name=p.name, total_memory_bytes=p.total_memory, multiprocessors=p.multi_processor_count,
                   nccl=".".join(map(str, torch.cuda.nccl.version())))
    doc = {"schema": 1, "tool": "scripts/gpu/inplace_collectives.py", "env": env,
           "params": {"sizes_bytes": [2**q for q in range(lo, hi + 1)], "dtype": "fp32", "reps": a.reps,
                      "warmup": a.warmup, "batches": a.batches, "target_s": a.target_s,
                      "conventions": "nccl-tests: size = whole buffer (all-gather output, reduce-scatter input); "
                                     "algbw = size/time; busbw = algbw*(n-1)/n (AG, RS), *2(n-1)/n (AR); GB = 1e9; "
                                     "time = slowest rank, median of batches; in place = nccl-tests -i"},
           "rows": []}
    t_start = time.perf_counter()
    for q in range(lo, hi + 1):
        count = max((2**q) // esize // world * world, world)
        nbytes = count * esize
        t_size = time.perf_counter()
        for rep in range(a.reps):
            for op, mode in CASES:
                row = {"op": op, "mode": mode, "bytes": nbytes, "count": count, "rep": rep}
                try:
                    big, call, check = make_case(op, mode, count, world, rank, dev, dtype)
                    ok = torch.tensor([1.0 if check() else 0.0], device=dev)
                    dist.all_reduce(ok, op=dist.ReduceOp.MIN)
                    row["correct"] = bool(ok.item() == 1.0)
                    row["input_offset_in_output_bytes"] = call.offset_bytes  # in place: rank * size / n
                    torch.manual_seed(rank * 1000 + q)
                    big.uniform_(-1.0, 1.0)  # random data for the timing, not constants
                    t, per, iters = time_case(call, dev, a.warmup, a.batches, a.target_s)
                    algbw = nbytes / t / 1e9
                    row.update(time_s=t, time_s_batches=per, iters=iters, algbw_gbps=algbw,
                               busbw_gbps=algbw * busbw_factor(op, world))
                    del big, call, check
                except Exception as e:  # noqa: BLE001 - recorded per case, the sweep goes on
                    row["error"] = f"{type(e).__name__}: {e}"[:500]
                doc["rows"].append(row)
                if rank == 0:
                    bw = row.get("busbw_gbps")
                    print(f"{nbytes >> 20:6d} MiB rep {rep} {op:14s} {mode:12s} "
                          f"{'%7.1f GB/s' % bw if bw is not None else row.get('error')} ok={row.get('correct')}",
                          flush=True)
        if dev.type == "cuda":
            torch.cuda.empty_cache()
        doc["elapsed_s"] = time.perf_counter() - t_start
        if rank == 0:
            with open(a.out + ".tmp", "w") as f:
                json.dump(doc, f, indent=1)
            os.replace(a.out + ".tmp", a.out)
        if time.perf_counter() - t_size > a.case_timeout_s:
            if rank == 0:
                print(f"size 2**{q} took over {a.case_timeout_s} s: stopping the sweep", flush=True)
            break
    dist.barrier()
    dist.destroy_process_group()
    if rank == 0:
        print("summary (busbw GB/s, median over reps):")
        for op, mode in CASES:
            vals = []
            for q in range(lo, hi + 1):
                v = [r["busbw_gbps"] for r in doc["rows"]
                     if r["op"] == op and r["mode"] == mode and r["bytes"] >> q == 1 and "busbw_gbps" in r]
                vals.append(round(statistics.median(v), 1) if v else None)
            print(f"  {op:14s} {mode:12s} {vals}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
