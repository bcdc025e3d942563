"""Tensor-parallel decode and prefill of ``serve_engine.Engine`` on 1, 2 and 4 GPUs, eager and CUDA graph, plus the
decode-sized all-reduces alone.

Run with torchrun (one process per GPU, NCCL; gloo on the CPU):
    torchrun --nproc_per_node 4 bench_serve_tp.py --out tp.json [--quick] [--deadline-s 150]
Every tensor-parallel size that fits the world runs in turn (ranks outside the group wait at a barrier):
tp=1 on rank 0, tp=2 on ranks 0-1, tp=4 on ranks 0-3. Per (model, batch, context): the decode step eager
and replayed from a CUDA graph (the all-reduces inside the graph), the time the slowest rank saw. Rank 0
writes the JSON after each point.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from datetime import datetime, timezone

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import serve_engine  # noqa: E402

T0 = time.perf_counter()
POINTS = [(1, 2048), (8, 2048), (32, 2048), (128, 2048), (8, 8192)]
#: points no earlier call measured (the serve4 call: ``--heldout`` adds them after the others)
HELDOUT = [(64, 1024), (16, 4096)]
PREFILL = [(1, 2048), (4, 2048)]
MODELS = ["llama8b", "llama70b_20l"]


def sync(dev):
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)


def timed(fn, dev, group, n: int, groups: int = 3) -> float:
    """Median over groups of (n back-to-back calls, synchronized) / n; the slowest rank of ``group``."""
    fn()
    fn()
    sync(dev)
    res = []
    for _ in range(groups):
        if group is not None:
            dist.barrier(group=group)
        sync(dev)
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        sync(dev)
        res.append((time.perf_counter() - t0) / n)
    res.sort()
    t = torch.tensor([res[len(res) // 2]], dtype=torch.float64, device=dev if dev.type == "cuda" else "cpu")
    if group is not None:
        dist.all_reduce(t, op=dist.ReduceOp.MAX, group=group)
    return float(t.item())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--deadline-s", type=float, default=float("inf"))
    ap.add_argument("--heldout", action="store_true")
    ap.add_argument("--sizes", default="1,2,4,8", help="tensor-parallel sizes to run (those that fit the world)")
    a = ap.parse_args()
    cuda = torch.cuda.is_available() and not a.quick
    dist.init_process_group("nccl" if cuda else "gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    dev = torch.device(f"cuda:{int(os.environ.get('LOCAL_RANK', rank))}") if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(dev)
    sizes = [t for t in (int(x) for x in a.sizes.split(",") if x) if t <= world]
    groups = {t: (dist.new_group(list(range(t))) if t > 1 else None) for t in sizes}
    models = ["tiny"] if a.quick else MODELS
    points = [(1, 32), (4, 64)] if a.quick else POINTS + (HELDOUT if a.heldout else [])
    prefill_pts = [(1, 16), (2, 32)] if a.quick else PREFILL
    res = {"schema": 1, "tool": "scripts/gpu/bench_serve_tp.py", "world": world,
           "date_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"), "torch": torch.__version__,
           "nccl": ".".join(map(str, torch.cuda.nccl.version())) if cuda else None,
           "device_name": torch.cuda.get_device_name(dev) if cuda else "cpu",
           "backend": dist.get_backend(), "env": {k: v for k, v in os.environ.items()
                                                  if k.startswith(("NCCL_", "TORCH_SYMM", "NVSHMEM_"))},
           "engine": "scripts/gpu/serve_engine.py: Megatron-style TP, 2 all-reduces per layer, vocab-split head",
           "method": "decode: n steps back to back, median of 3 groups / n, slowest rank; graph: one step captured",
           "allreduce": [], "decode": [], "prefill": []}

    def save():
        if rank == 0:
            res["wall_s"] = time.perf_counter() - T0
            with open(a.out + ".tmp", "w") as fh:
                json.dump(res, fh, indent=1)
            os.replace(a.out + ".tmp", a.out)

    def left():
        return a.deadline_s - (time.perf_counter() - T0)

    def agree(ok: bool, grp) -> bool:
        """Every rank of the group takes the same decision (the slowest clock decides): no rank skips alone."""
        if grp is None:
            return ok
        t = torch.tensor([1 if ok else 0], device=dev if cuda else "cpu")
        dist.all_reduce(t, op=dist.ReduceOp.MIN, group=grp)
        return bool(t.item())

    for tp in sizes:
        grp = groups[tp]
        member = rank < tp
        if member:
            # all-reduce of decode-sized messages (b x hidden bf16), eager loop and inside a CUDA graph
            if tp > 1:
                for hidden in (4096, 8192):
                    for b in (1, 8, 32, 128):
                        x = torch.randn(b, hidden, device=dev).to(torch.bfloat16)
                        pt = {"tp": tp, "hidden": hidden, "batch": b, "bytes": x.numel() * 2}
                        try:
                            pt["eager_s"] = timed(lambda: dist.all_reduce(x, group=grp), dev, grp, 50)
                            if cuda:
                                s = torch.cuda.Stream(dev)
                                s.wait_stream(torch.cuda.current_stream(dev))
                                with torch.cuda.stream(s):
                                    for _ in range(3):
                                        dist.all_reduce(x, group=grp)
                                torch.cuda.current_stream(dev).wait_stream(s)
                                sync(dev)
                                g = torch.cuda.CUDAGraph()
                                with torch.cuda.graph(g):
                                    for _ in range(20):
                                        dist.all_reduce(x, group=grp)
                                pt["graph_s"] = timed(g.replay, dev, grp, 10) / 20
                                del g
                        except Exception as exc:  # noqa: BLE001
                            pt["error"] = f"{type(exc).__name__}: {str(exc)[:300]}"
                        if rank == 0:
                            res["allreduce"].append(pt)
                save()
            for mname in models:
                if not agree(left() > 25, grp):
                    if rank == 0:
                        res["decode"].append({"tp": tp, "model": mname, "error": "skipped: out of time"})
                    continue
                cfg = serve_engine.CFGS[mname]
                eng = serve_engine.Engine(cfg, dev, rank, tp, grp)
                with torch.inference_mode():
                    first = True
                    for b, c in points:
                        if not agree(left() > 15, grp):
                            if rank == 0:
                                res["decode"].append({"tp": tp, "model": mname, "batch": b, "context": c,
                                                      "error": "skipped: out of time"})
                            continue
                        pt = {"tp": tp, "model": mname, "batch": b, "context": c,
                              "weight_bytes_per_rank": eng.n_weight_bytes}
                        try:
                            pt["kv_bytes_per_rank"] = eng.alloc_cache(b, c)
                            ids = torch.randint(0, cfg.vocab, (b,), device=dev)
                            dist.broadcast(ids, 0, group=grp) if tp > 1 else None
                            pos = torch.full((b,), c - 1, dtype=torch.long, device=dev)
                            if first:  # the first point of each model in this process, kept apart
                                pt["warmup_discarded_eager_s"] = timed(lambda: eng.decode(ids, pos), dev, grp, 3)
                                first = False
                            pt["eager_s"] = timed(lambda: eng.decode(ids, pos), dev, grp, 8)
                            if cuda:
                                gs = serve_engine.GraphStep(eng, b)
                                if "warmup_discarded_eager_s" in pt:  # the model's first graph, kept apart
                                    pt["warmup_discarded_graph_s"] = timed(lambda: gs(ids, pos), dev, grp, 3)
                                pt["graph_s"] = timed(lambda: gs(ids, pos), dev, grp, 20)
                                del gs
                        except Exception as exc:  # noqa: BLE001
                            pt["error"] = f"{type(exc).__name__}: {str(exc)[:300]}"
                        eng.k = eng.v = None
                        if cuda:
                            torch.cuda.empty_cache()
                        if rank == 0:
                            res["decode"].append(pt)
                            print("tp", tp, mname, b, c, {k: pt.get(k) for k in ("eager_s", "graph_s", "error")},
                                  flush=True)
                        save()
                    for b, p in prefill_pts:
                        if not agree(left() > 10, grp):
                            continue
                        pt = {"tp": tp, "model": mname, "batch": b, "prompt": p}
                        try:
                            eng.alloc_cache(b, p, fill_random=False)
                            ids = torch.randint(0, cfg.vocab, (b, p), device=dev)
                            dist.broadcast(ids, 0, group=grp) if tp > 1 else None
                            pt["prefill_s"] = timed(lambda: eng.prefill(ids, 0), dev, grp, 3)
                        except Exception as exc:  # noqa: BLE001
                            pt["error"] = f"{type(exc).__name__}: {str(exc)[:300]}"
                        eng.k = eng.v = None
                        if rank == 0:
                            res["prefill"].append(pt)
                            print("tp", tp, mname, "prefill", b, p, pt.get("prefill_s", pt.get("error")), flush=True)
                        save()
                del eng
                if cuda:
                    torch.cuda.empty_cache()
        dist.barrier()
    save()
    if rank == 0:
        print("done tp", round(time.perf_counter() - T0, 1), "s", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
