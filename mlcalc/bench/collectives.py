"""Collective bus bandwidth against message size, through ``torch.distributed``.

Run one process per GPU, e.g. ``torchrun --nproc_per_node=8 -m mlcalc.bench collectives``.
Sizes and bandwidths follow the nccl-tests conventions (nccl-tests doc/PERFORMANCE.md), so the
numbers can be set beside an ``all_reduce_perf`` run:

* ``size`` is the bytes of the whole buffer: the all-reduce buffer, the all-gather *output*,
  the reduce-scatter *input*;
* algorithm bandwidth ``algbw = size / time``;
* bus bandwidth ``busbw = algbw * 2(n-1)/n`` for all-reduce, ``algbw * (n-1)/n`` for
  all-gather, reduce-scatter and all-to-all, and ``algbw`` for send/recv, n the number of ranks.

All-to-all sends each rank's whole buffer, 1/n to every rank (``all_to_all_single``), like
nccl-tests' ``alltoall_perf``. Send/recv is nccl-tests' ``sendrecv_perf``: every rank sends its
buffer to the next rank and receives one from the previous, at the same time (a pipeline's
stage-to-stage traffic).

The time of one size is the slowest rank's mean time per operation over a batch, median over
batches. GB = 1e9 bytes.
"""

from __future__ import annotations

import os
import statistics
import time
import warnings
from typing import Any, Callable, Sequence

from mlcalc import _check
from mlcalc.bench import _common

OPS = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "send_recv")


def busbw_factor(op: str, n_ranks: int) -> float:
    """nccl-tests bus-bandwidth factor.

    2(n-1)/n for all-reduce; (n-1)/n for all-gather, reduce-scatter and all-to-all; 1 for send/recv.
    """
    _check.choice("op", op, OPS)
    n = _check.positive_int("n_ranks", n_ranks)
    if op == "send_recv":
        return 1.0
    return 2 * (n - 1) / n if op == "all_reduce" else (n - 1) / n


def default_sizes(device_type: str) -> list[int]:
    """Message sizes in bytes: 1 KiB to 1 GiB in factors of 2 on GPUs; 1 KiB to 64 KiB on CPUs."""
    if device_type == "cuda":
        return [2**p for p in range(10, 31)]
    return [2**p for p in range(10, 17, 2)]


def _init_from_env(torch: Any, backend: str | None) -> tuple[Any, bool]:
    """Initialise the default process group from torchrun's variables unless one exists."""
    dist = torch.distributed
    if dist.is_initialized():
        return dist, False
    if "RANK" not in os.environ or "WORLD_SIZE" not in os.environ:
        raise ValueError("no process group: launch with torchrun (RANK and WORLD_SIZE unset)")
    if backend is None:
        backend = "nccl" if torch.cuda.is_available() else "gloo"
    _check.choice("backend", backend, ("nccl", "gloo"))
    if backend == "nccl":
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    dist.init_process_group(backend=backend)
    return dist, True


def run_collectives(
    ops: Sequence[str] = OPS,
    sizes_bytes: Sequence[int] | None = None,
    backend: str | None = None,
    dtype: str = "fp32",
    warmup: int = 5,
    batches: int = 3,
    target_s_per_size: float = 0.03,
    progress: bool = True,
) -> dict[str, Any] | None:
    """Time each collective at each size on every rank; rank 0 returns the result, others None.

    Uses the default process group if one is initialised, else starts one from torchrun's
    environment (NCCL when CUDA is there, else gloo) and destroys it at the end.
    """
    torch = _common.import_torch()
    for op in ops:
        _check.choice("op", op, OPS)
    _check.choice("dtype", dtype, ("fp32", "bf16"))
    _check.positive_int("batches", batches)
    warnings.filterwarnings("ignore", category=FutureWarning, module="torch.distributed")
    dist, owned = _init_from_env(torch, backend)
    try:
        rank, world = dist.get_rank(), dist.get_world_size()
        backend_name = dist.get_backend()
        dev = torch.device("cuda", torch.cuda.current_device()) if backend_name == "nccl" else torch.device("cpu")
        sizes = list(sizes_bytes) if sizes_bytes is not None else default_sizes(dev.type)
        tdt = {"fp32": torch.float32, "bf16": torch.bfloat16}[dtype]
        esize = torch.tensor([], dtype=tdt).element_size()
        env = _common.environment(torch, dev)
        env["world_size"] = world
        env["backend"] = backend_name
        results: dict[str, Any] = {}
        for op in ops:
            bar = _common.Progress(len(sizes), op, enabled=progress and rank == 0)
            rows = []
            for size in sizes:
                count = max(size // esize // world * world, world)  # divisible by the ranks
                nbytes = count * esize
                big = torch.empty(count, dtype=tdt, device=dev)
                part = torch.empty(count // world, dtype=tdt, device=dev)
                fn: Callable[[], None]  # one call of the collective on this size's tensors
                if op == "all_reduce":
                    def all_reduce(big: Any = big) -> None:
                        dist.all_reduce(big)
                    fn = all_reduce
                elif op == "all_gather":
                    def all_gather(big: Any = big, part: Any = part) -> None:
                        dist.all_gather_into_tensor(big, part)
                    fn = all_gather
                elif op == "reduce_scatter":
                    def reduce_scatter(big: Any = big, part: Any = part) -> None:
                        dist.reduce_scatter_tensor(part, big)
                    fn = reduce_scatter
                elif op == "all_to_all":
                    out_a2a = torch.empty(count, dtype=tdt, device=dev)

                    def all_to_all(big: Any = big, out: Any = out_a2a) -> None:
                        dist.all_to_all_single(out, big)
                    fn = all_to_all
                else:  # send_recv: to the next rank, from the previous, at once
                    recv = torch.empty(count, dtype=tdt, device=dev)
                    nxt, prv = (rank + 1) % world, (rank - 1) % world

                    def send_recv(big: Any = big, recv: Any = recv, nxt: int = nxt, prv: int = prv) -> None:
                        reqs = dist.batch_isend_irecv([dist.P2POp(dist.isend, big, nxt),
                                                       dist.P2POp(dist.irecv, recv, prv)])
                        for r in reqs:
                            r.wait()
                    fn = send_recv
                # Correctness: every rank holds rank+1.
                big.fill_(rank + 1)
                part.fill_(rank + 1)
                fn()
                expect = world * (world + 1) / 2 if op != "all_gather" else None
                if op == "all_gather":
                    got = big.view(world, -1)[:, 0].float().cpu().tolist()
                    correct = got == [float(r + 1) for r in range(world)]
                elif op == "all_to_all":
                    got = out_a2a.view(world, -1)[:, 0].float().cpu().tolist()
                    correct = got == [float(r + 1) for r in range(world)]
                elif op == "send_recv":
                    correct = bool(torch.all(recv == float((rank - 1) % world + 1)).item())
                else:
                    out = big if op == "all_reduce" else part
                    correct = bool(torch.all(out == expect).item())
                for _ in range(warmup):
                    fn()
                _common.synchronize(torch, dev)
                dist.barrier()
                t0 = time.perf_counter()
                fn()
                _common.synchronize(torch, dev)
                first = time.perf_counter() - t0
                iters_t = torch.tensor([max(1, min(int(target_s_per_size / max(first, 1e-7)), 200))],
                                       dtype=torch.float64, device=dev)
                dist.all_reduce(iters_t, op=dist.ReduceOp.MIN)  # every rank runs the same count
                iters = int(iters_t.item())
                per_op = []
                for _ in range(batches):
                    dist.barrier()
                    _common.synchronize(torch, dev)
                    if dev.type == "cuda":
                        start = torch.cuda.Event(enable_timing=True)
                        end = torch.cuda.Event(enable_timing=True)
                        start.record()
                        for _ in range(iters):
                            fn()
                        end.record()
                        torch.cuda.synchronize(dev)
                        t = start.elapsed_time(end) / 1e3 / iters
                    else:
                        t0 = time.perf_counter()
                        for _ in range(iters):
                            fn()
                        t = (time.perf_counter() - t0) / iters
                    tt = torch.tensor([t], dtype=torch.float64, device=dev)
                    dist.all_reduce(tt, op=dist.ReduceOp.MAX)  # the slowest rank sets the pace
                    per_op.append(tt.item())
                ok = torch.tensor([1.0 if correct else 0.0], device=dev)
                dist.all_reduce(ok, op=dist.ReduceOp.MIN)
                t_med = statistics.median(per_op)
                algbw = nbytes / t_med / 1e9
                rows.append({"bytes": nbytes, "count": count, "time_s": t_med, "time_s_batches": per_op,
                             "iters": iters, "algbw_gbps": algbw,
                             "busbw_gbps": algbw * busbw_factor(op, world), "correct": bool(ok.item() == 1.0)})
                bar.update(f"{nbytes / 2**20:9.3f} MiB busbw {rows[-1]['busbw_gbps']:.1f} GB/s")
                del big, part
            results[op] = {"sweep": rows, "peak_busbw_gbps": max(r["busbw_gbps"] for r in rows)}
        params = {"ops": list(ops), "sizes_bytes": sizes, "dtype": dtype, "warmup": warmup, "batches": batches,
                  "world_size": world, "backend": backend_name,
                  "conventions": "nccl-tests: size = whole buffer (all-gather output, reduce-scatter input); "
                                 "algbw = size/time; busbw = algbw*2(n-1)/n (all-reduce), algbw*(n-1)/n (others); "
                                 "GB = 1e9 bytes; time = slowest rank, median of batches"}
        out = _common.result("collectives", env, params, results) if rank == 0 else None
        dist.barrier()
        return out
    finally:
        if owned:
            dist.destroy_process_group()
