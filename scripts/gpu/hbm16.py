"""hbm16: a bf16 copy and add, flash attention and bf16 GEMMs timed alone and beside an NCCL all-gather /
reduce-scatter, on 4 and on 2 GPUs: overlap15.py's program (the same timing) with memory-bound cases added.

Run with torchrun --nproc_per_node=4 and =2 (scripts/gpu/run_hbm16.sh). Both ranks run the same program. For each
compute case: its first call timed apart, then 5 trials of n calls alone (CUDA events on the compute stream);
then for each collective, K collectives queued async on the process group's own stream (as FSDP2's are) with n
compute calls launched right after them, timed by events on the compute stream, and the K collectives' wall time
(host clock, synchronised); K is chosen so the collectives outlast the compute window at least 2x. The collectives
alone: 5 trials of K. A profiler trace of one all-gather and one reduce-scatter records their kernels' grids.
Predictions committed before: scripts/gpu/hbm16_predictions.json (scripts/gpu/predict_hbm16.py).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F

import predict_hbm16 as P


def timed(fn, n: int) -> float:
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    for _ in range(n):
        fn()
    b.record()
    b.synchronize()
    return a.elapsed_time(b) / n


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    import faulthandler
    import sys

    faulthandler.dump_traceback_later(240, exit=True, file=sys.stderr)  # a hang prints where each rank stands
    dev = torch.device("cuda", int(os.environ["LOCAL_RANK"]))
    torch.cuda.set_device(dev)
    dist.init_process_group("nccl", device_id=dev)
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(rank)
    cases = {}
    for name, nbytes, kind in P.STREAMS:  # memory-bound: nbytes is each operand's size
        a = torch.randn(nbytes // 2, device=dev, dtype=torch.bfloat16)
        b = torch.randn(nbytes // 2, device=dev, dtype=torch.bfloat16)
        o = torch.empty(nbytes // 2, device=dev, dtype=torch.bfloat16)
        if kind == "copy":
            cases[name] = (lambda a=a, o=o: o.copy_(a), None)
        else:
            cases[name] = (lambda a=a, b=b, o=o: torch.add(a, b, out=o), None)
    for name, m, k, n in P.GEMMS:
        x = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
        w = torch.randn(k, n, device=dev, dtype=torch.bfloat16)
        o = torch.empty(m, n, device=dev, dtype=torch.bfloat16)
        cases[name] = (lambda x=x, w=w, o=o: torch.mm(x, w, out=o), 2 * m * k * n)
    for name, s, h, d, bwd in P.ATTENTION:
        q, kk, v = (torch.randn(1, h, s, d, device=dev, dtype=torch.bfloat16, requires_grad=bwd) for _ in range(3))
        g = torch.randn(1, h, s, d, device=dev, dtype=torch.bfloat16)

        def att(q=q, kk=kk, v=v, g=g, bwd=bwd):
            out = F.scaled_dot_product_attention(q, kk, v, is_causal=True)
            if bwd:
                torch.autograd.backward(out, g)
        cases[name] = (att, None)
    colls = {}
    for cname, nbytes in P.COLLECTIVES:
        numel = nbytes // 2
        if cname == "all_gather":
            src = torch.randn(numel // world, device=dev, dtype=torch.bfloat16)
            dst = torch.empty(numel, device=dev, dtype=torch.bfloat16)
            colls[cname] = lambda src=src, dst=dst: dist.all_gather_into_tensor(dst, src, async_op=True)
        else:
            src = torch.randn(numel, device=dev, dtype=torch.bfloat16)
            dst = torch.empty(numel // world, device=dev, dtype=torch.bfloat16)
            colls[cname] = lambda src=src, dst=dst: dist.reduce_scatter_tensor(dst, src, async_op=True)

    def agree(x: int) -> int:
        """The largest of every rank's ``x``: counts of collectives must be the same on every rank. (The first call,
        2026-11-27, took each rank's own k from its own timings; the ranks queued different numbers of collectives
        and the program hung before its first compute case printed.)"""
        t = torch.tensor([x], device=dev, dtype=torch.int64)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        return int(t.item())

    def run_colls(fn, k: int) -> float:
        torch.cuda.synchronize()
        dist.barrier()
        torch.cuda.synchronize()
        t = time.perf_counter()
        works = [fn() for _ in range(k)]
        for wk in works:
            wk.wait()
        torch.cuda.synchronize()
        return (time.perf_counter() - t) * 1e3 / k

    res = {"world": world, "device": torch.cuda.get_device_name(dev), "torch": torch.__version__,
           "cuda": torch.version.cuda, "nccl": ".".join(map(str, torch.cuda.nccl.version())),
           "sms": torch.cuda.get_device_properties(dev).multi_processor_count, "collectives": {}, "compute": {}}
    # collectives alone (first call apart)
    for cname, fn in colls.items():
        t0 = time.perf_counter()
        fn().wait()
        torch.cuda.synchronize()
        first = (time.perf_counter() - t0) * 1e3
        trials = [run_colls(fn, 20) for _ in range(5)]
        res["collectives"][cname] = {"first_ms": first, "alone_ms": trials, "bytes": dict(P.COLLECTIVES)[cname]}
    for name, (fn, flop) in cases.items():
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        first = (time.perf_counter() - t0) * 1e3
        for _ in range(3):
            fn()
        one = timed(fn, 5)
        n = agree(max(10, min(200, int(40.0 / max(one, 1e-3)))))  # about 40 ms a window
        alone = [timed(fn, n) for _ in range(5)]
        rec = {"first_ms": first, "n": n, "alone_ms": alone, "flop": flop, "beside": {}}
        for cname, cfn in colls.items():
            c_ms = statistics.median(res["collectives"][cname]["alone_ms"])
            k = agree(max(4, int(2.0 * n * statistics.median(alone) / c_ms) + 2))
            withs, cwall = [], []
            for _ in range(3):
                torch.cuda.synchronize()
                dist.barrier()
                torch.cuda.synchronize()
                t = time.perf_counter()
                works = [cfn() for _ in range(k)]
                withs.append(timed(fn, n))
                for wk in works:
                    wk.wait()
                torch.cuda.synchronize()
                cwall.append((time.perf_counter() - t) * 1e3 / k)
            rec["beside"][cname] = {"k": k, "with_ms": withs, "coll_ms_per_op": cwall}
        after = [timed(fn, n) for _ in range(3)]
        rec["alone_after_ms"] = after
        res["compute"][name] = rec
        if rank == 0:
            a = statistics.median(alone)
            print(name, f"alone {a:.4f} ms", {c: round(statistics.median(v['with_ms']) / a - 1, 4)
                                               for c, v in rec["beside"].items()}, flush=True)
    # the NCCL kernels' grids
    if True:
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for cfn in colls.values():
                cfn().wait()
            torch.cuda.synchronize()
        path = os.path.join(args.out, f"trace_w{world}_rank{rank}.json")
        prof.export_chrome_trace(path)
        grids = []
        with open(path) as f:
            tr = json.load(f)
        for ev in tr.get("traceEvents", []):
            if ev.get("cat") == "kernel" and "nccl" in ev.get("name", "").lower():
                grids.append({"name": ev["name"], "grid": ev.get("args", {}).get("grid"),
                              "block": ev.get("args", {}).get("block"), "dur_us": ev.get("dur"),
                              "regs": ev.get("args", {}).get("registers per thread"),
                              "smem": ev.get("args", {}).get("shared memory")})
        os.remove(path)
        res["nccl_kernels"] = grids
    with open(os.path.join(args.out, f"hbm16_w{world}_rank{rank}.json"), "w") as f:
        json.dump(res, f, indent=1)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
