"""Small-message collective latency as decode sees it (issue 25, lat16): one process a GPU (torchrun).

Per size (1 KiB - 64 MiB, bf16) and collective (all-reduce, all-gather, reduce-scatter), over 4 GPUs and over 2 of
them (ranks 0-1):
- ``eager``: CUDA events around a loop of eager torch.distributed calls (what the earlier runs measured);
- ``graph``: the same calls captured ``K`` at a time in a CUDA graph, replayed many times (device time per call),
  once per NCCL_PROTO setting (unset, LL, LL128, Simple: NCCL reads the variable when a communicator is made, so each
  setting gets its own process groups);
- ``symm``: torch's symmetric-memory one-shot and two-shot all-reduce kernels in a CUDA graph and eager
  (multicast off: TORCH_SYMM_MEM_DISABLE_MULTICAST=1).
Each rank's time is the median of 3 timed blocks; the record keeps every rank's. Writes one JSON per --part.
"""

import argparse
import ctypes
import json
import os
import statistics
import sys
import time
import traceback

import torch
import torch.distributed as dist

SIZES = [2**k for k in range(10, 27)]
COLLS = ("all_reduce", "all_gather", "reduce_scatter")
PROTOS = ("unset", "LL", "LL128", "Simple")


_LIBC = ctypes.CDLL(None)


def log(*a):
    """Print after flushing C's stdio (NCCL's INFO lines go to C's buffered stdout): the log keeps their order."""
    _LIBC.fflush(None)
    print(*a, flush=True)


def make_groups(proto):
    if proto == "unset":
        os.environ.pop("NCCL_PROTO", None)
    else:
        os.environ["NCCL_PROTO"] = proto
    groups = {n: dist.new_group(list(range(n))) for n in counts()}
    x = torch.ones(1024, device="cuda")
    for n, g in groups.items():  # each communicator is made now, under this NCCL_PROTO
        if dist.get_rank() < n:
            dist.all_reduce(x, group=g)
    torch.cuda.synchronize()
    os.environ.pop("NCCL_PROTO", None)
    return groups


def counts():
    """GPU counts measured: 4 and 2 of them on a 4-GPU machine, 2 on a 2-GPU one."""
    return (4, 2) if dist.get_world_size() >= 4 else (2,)


def buffers(coll, size, n):
    el = size // 2
    if coll == "all_reduce":
        return torch.zeros(el, dtype=torch.bfloat16, device="cuda"), None
    if coll == "all_gather":
        return torch.zeros(el // n, dtype=torch.bfloat16, device="cuda"), torch.zeros(el, dtype=torch.bfloat16, device="cuda")
    return torch.zeros(el, dtype=torch.bfloat16, device="cuda"), torch.zeros(el // n, dtype=torch.bfloat16, device="cuda")


def call(coll, group, a, b):
    if coll == "all_reduce":
        return lambda: dist.all_reduce(a, group=group)
    if coll == "all_gather":
        return lambda: dist.all_gather_into_tensor(b, a, group=group)
    return lambda: dist.reduce_scatter_tensor(b, a, group=group)


def sync(group):
    torch.cuda.synchronize()
    dist.barrier(group=group, device_ids=[torch.cuda.current_device()])
    torch.cuda.synchronize()


def blocks(run, calls_per_block, group):
    out = []
    for _ in range(3):
        sync(group)
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        run()
        e.record()
        e.synchronize()
        out.append(s.elapsed_time(e) * 1e-3 / calls_per_block)
    return out


def reps(size, floor_s=20e-6):
    """Calls a block: about 8 ms of the slowest expected pace, 64 to 1,024."""
    est = max(floor_s, size / 50e9)
    return int(min(1024, max(64, 8e-3 / est)))


def eager_time(fn, size, group):
    for _ in range(5):
        fn()
    n = reps(size)

    def run():
        for _ in range(n):
            fn()
    return blocks(run, n, group)


def graph_time(fn, size, group, k=32):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(k):
            fn()
    torch.cuda.synchronize()
    g.replay()
    torch.cuda.synchronize()
    r = max(2, reps(size) // k)

    def run():
        for _ in range(r):
            g.replay()
    return blocks(run, r * k, group)


def gather_times(t, group, n):
    """Every rank's list of block times (ranks of ``group`` only)."""
    obj = [None] * n
    dist.all_gather_object(obj, t, group=group)
    return obj


def part_nccl(args, out):
    rank = dist.get_rank()
    modes = args.modes.split(",")
    protos = args.protos.split(",")
    deadline = time.time() + args.budget_s
    for proto in protos:
        groups = make_groups(proto)
        for n in counts():
            if rank >= n:
                continue
            group = groups[n]
            for coll in COLLS:
                for size in SIZES:
                    if time.time() > deadline:
                        log("DEADLINE", proto, n, coll, size)
                        return
                    a, b = buffers(coll, size, n)
                    fn = call(coll, group, a, b)
                    for mode in modes:
                        if rank == 0:
                            log(f"MARK {mode} proto={proto} n={n} coll={coll} size={size}")
                        try:
                            t = eager_time(fn, size, group) if mode == "eager" else graph_time(fn, size, group)
                            err = ""
                        except Exception as e:  # noqa: BLE001 - record and go on
                            t, err = [], f"{type(e).__name__}: {e}"
                            log("ERROR", mode, proto, n, coll, size, err)
                        every = gather_times(t, group, n)
                        if rank == 0:
                            out["points"].append({"mode": mode, "proto": proto, "n": n, "coll": coll,
                                                  "size_bytes": size, "rank_block_s": every, "error": err,
                                                  "time_s": max(statistics.median(x) for x in every) if all(every) else None})
                    del a, b
            if rank == 0:
                json.dump(out, open(args.out, "w"), indent=1)


def part_symm(args, out):
    import torch.distributed._symmetric_memory as symm_mem
    rank = dist.get_rank()
    deadline = time.time() + args.budget_s
    for n in counts():
        group = dist.new_group(list(range(n)))
        if rank >= n:
            continue
        name = group.group_name
        try:
            if hasattr(symm_mem, "enable_symm_mem_for_group"):
                symm_mem.enable_symm_mem_for_group(name)
        except Exception as e:  # noqa: BLE001
            log("enable_symm_mem_for_group", e)
        buf = symm_mem.empty(SIZES[-1] // 2, dtype=torch.bfloat16, device="cuda")
        buf.zero_()
        symm_mem.rendezvous(buf, group=name)
        for kind in ("one_shot", "two_shot"):
            for size in SIZES:
                if time.time() > deadline:
                    log("DEADLINE symm", n, kind, size)
                    return
                x = buf[: size // 2]
                if kind == "one_shot":
                    fn = lambda x=x, name=name: torch.ops.symm_mem.one_shot_all_reduce(x, "sum", name)  # noqa: E731
                else:
                    fn = lambda x=x, name=name: torch.ops.symm_mem.two_shot_all_reduce_(x, "sum", name)  # noqa: E731
                for mode in ("graph", "eager"):
                    try:
                        t = eager_time(fn, size, group) if mode == "eager" else graph_time(fn, size, group)
                        err = ""
                    except Exception as e:  # noqa: BLE001
                        t, err = [], f"{type(e).__name__}: {e}"
                        log("ERROR symm", kind, mode, n, size, err)
                        torch.cuda.synchronize()
                    every = gather_times(t, group, n)
                    if rank == 0:
                        out["points"].append({"mode": mode, "kernel": kind, "n": n, "coll": "all_reduce",
                                              "size_bytes": size, "rank_block_s": every, "error": err,
                                              "time_s": max(statistics.median(x) for x in every) if all(every) else None})
                if rank == 0:
                    json.dump(out, open(args.out, "w"), indent=1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--part", choices=("nccl", "symm"), required=True)
    ap.add_argument("--modes", default="graph")
    ap.add_argument("--protos", default=",".join(PROTOS))
    ap.add_argument("--out", required=True)
    ap.add_argument("--budget-s", type=float, default=150.0)
    args = ap.parse_args()
    rank = int(os.environ["RANK"])
    torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    dist.init_process_group("nccl")
    out = {"part": args.part, "modes": args.modes, "protos": args.protos, "dtype": "bf16", "sizes_bytes": SIZES,
           "torch": torch.__version__, "nccl": ".".join(map(str, torch.cuda.nccl.version())),
           "device_name": torch.cuda.get_device_name(), "world_size": dist.get_world_size(),
           "env": {k: v for k, v in os.environ.items() if k.startswith(("NCCL_", "TORCH_SYMM", "NVSHMEM_", "CUDA_"))},
           "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "points": []}
    t0 = time.time()
    try:
        (part_nccl if args.part == "nccl" else part_symm)(args, out)
    except Exception:  # noqa: BLE001
        out["fatal"] = traceback.format_exc()
        log(out["fatal"])
    out["wall_s"] = time.time() - t0
    if rank == 0:
        json.dump(out, open(args.out, "w"), indent=1)
    try:
        dist.barrier()
        dist.destroy_process_group()
    except Exception:  # noqa: BLE001
        pass


if __name__ == "__main__":
    sys.exit(main())
