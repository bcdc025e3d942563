"""Count and time what ``train_dist.py``'s tensor-parallel program dispatches on the host per layer (host17, issue 24):
tensor parallel over every rank with and without sequence parallel, with and without activation checkpointing, beside
the one-GPU program on every rank, each at 2 and 6 layers of the floors' narrow model (64 tokens: the device idles).

Per program: the ATen operations of one forward and one backward pass by name, with a DTensor argument or plain
(a TorchDispatchMode, as the floors count them); and the host seconds of each pass (synchronized), every program
timed once a round in turn, for ``--rounds`` rounds or until ``--budget-s`` (so a drift of the host's speed falls
on every program alike). Then the host cost of single operations on this rank's tensor-parallel mesh, in turn:
``detach`` and ``add`` of a DTensor and of a plain tensor, a DTensor ``view``: what a DTensor ``detach`` (the
operation ``torch.utils.checkpoint``'s saved-tensor hook adds for every tensor a recomputed layer saves) costs in
plain operations.

    torchrun --nproc_per_node 2 scripts/gpu/count_tp_host.py --out tp2.json
    torchrun --nproc_per_node 4 scripts/gpu/count_tp_host.py --out tp4.json
    torchrun --nproc_per_node 2 scripts/gpu/count_tp_host.py --out c.json --cpu --rounds 2   (gloo: counts only)
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import statistics
import sys
import time
from collections import Counter
from datetime import timedelta
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

#: (program, recompute): the one-GPU program (the unit), tensor parallel with sequence parallel (as every measured
#: case ran it) and without.
PROGRAMS = (("plain", False), ("plain", True), ("tp", False), ("tp", True), ("tpnosp", False), ("tpnosp", True))
#: The single operations timed (:func:`micro`).
MICRO = ("plain_add", "plain_detach", "dt_detach", "dt_add", "dt_view")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--cpu", action="store_true", help="gloo on the CPU (the counts; the times mean little)")
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--budget-s", type=float, default=60.0, help="stop the rounds after this many seconds")
    ap.add_argument("--micro-n", type=int, default=2000, help="calls per timed block of one operation")
    args = ap.parse_args(argv)
    import torch
    import torch.distributed as dist
    from torch.distributed.tensor import DTensor, Shard, distribute_tensor
    from torch.distributed.tensor.parallel import loss_parallel
    from torch.utils._python_dispatch import TorchDispatchMode

    import train_dist

    if args.cpu:
        dist.init_process_group("gloo", timeout=timedelta(seconds=600))
        dev = torch.device("cpu")
    else:
        local = int(os.environ.get("LOCAL_RANK", "0"))
        torch.cuda.set_device(local)
        dev = torch.device("cuda", local)
        dist.init_process_group("nccl", timeout=timedelta(seconds=600), device_id=dev)
    rank, world = dist.get_rank(), dist.get_world_size()
    runner = train_dist.Runner(torch, dev, args.cpu)
    F = torch.nn.functional

    class Count(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.by: Counter[str] = Counter()

        def __torch_dispatch__(self, func: Any, types: Any, args_: Any = (), kwargs: Any = None) -> Any:
            kwargs = kwargs or {}
            leaves = torch.utils._pytree.tree_leaves((args_, kwargs))
            kind = "dtensor" if any(isinstance(a, DTensor) for a in leaves) else "plain"
            self.by[f"{kind}:{func.overloadpacket._qualified_op_name}"] += 1
            return func(*args_, **kwargs)

    built: dict[str, Any] = {}
    for prog, rc in PROGRAMS:
        for n_layers in train_dist.FLOOR_LAYERS:
            m = train_dist.floor_model(n_layers)
            if prog == "plain":
                c = train_dist.case(m, 1, train_dist.FLOOR_TOKENS, 1, rc)
            else:
                c = {**train_dist.case(m, world, train_dist.FLOOR_TOKENS, 1, rc, tp=world),
                     "sequence_parallel": prog == "tp"}
            model, opt, _, _, _ = runner.build(c)
            if prog == "tpnosp":  # its norms' weights stay plain tensors: a fused AdamW refuses the mix (not timed)
                opt = torch.optim.AdamW(model.parameters(), lr=1e-5, foreach=False)
            tokens = torch.randint(0, m.vocab, (1, train_dist.FLOOR_TOKENS), device=dev,
                                   generator=torch.Generator(device=dev).manual_seed(1))
            built[f"{prog}-{'rc' if rc else 'plain'}-{n_layers}L"] = (prog, model, opt, tokens)

    def one(key: str, count: bool = False) -> Any:
        prog, model, opt, tokens = built[key]
        lossctx = loss_parallel if prog != "plain" else contextlib.nullcontext
        cf, cb = Count(), Count()
        runner.sync()
        dist.barrier()
        t0 = time.perf_counter()
        with lossctx():
            with (cf if count else contextlib.nullcontext()):
                with torch.autocast(device_type=dev.type, dtype=torch.bfloat16):
                    logits = model(tokens)
                loss = F.cross_entropy(logits.flatten(0, 1).float(), tokens.flatten(0, 1))
            del logits
            runner.sync()
            t1 = time.perf_counter()
            with (cb if count else contextlib.nullcontext()):
                loss.backward()
        runner.sync()
        t2 = time.perf_counter()
        opt.step()
        opt.zero_grad(set_to_none=True)
        runner.sync()
        if count:
            return {"forward": dict(cf.by), "backward": dict(cb.by)}
        return t1 - t0, t2 - t1

    for key in built:  # warm-up (the DTensor sharding cache, the autograd thread, cuDNN's plans)
        for _ in range(3):
            one(key)
    counts = {key: one(key, count=True) for key in built}
    times: dict[str, list[list[float]]] = {key: [] for key in built}
    keys = list(built)
    gc.collect()
    start = time.perf_counter()
    rounds = 0
    for r in range(args.rounds):
        order = keys[r % len(keys):] + keys[:r % len(keys)]  # each round starts one program later
        for key in order:
            times[key].append([round(x, 7) for x in one(key)])
        rounds += 1
        flag = torch.tensor([1.0 if time.perf_counter() - start > args.budget_s else 0.0], device=dev)
        dist.all_reduce(flag)  # every rank stops after the same round
        if flag.item() > 0:
            break
    rounds_s = time.perf_counter() - start
    built.clear()
    gc.collect()

    # single operations on this rank's slice of a sequence-sharded activation (1 x 64 x 256)
    mesh = runner.mesh((("tp", world),))
    x = torch.randn(1, train_dist.FLOOR_TOKENS, 256, device=dev)
    dt = distribute_tensor(x, mesh, [Shard(1)])
    xl = dt.to_local()
    fns = {"plain_add": lambda: xl.add(xl), "plain_detach": lambda: xl.detach(), "dt_detach": lambda: dt.detach(),
           "dt_add": lambda: dt.add(dt), "dt_view": lambda: dt.view(1, train_dist.FLOOR_TOKENS, 8, 32)}
    micro: dict[str, list[float]] = {k: [] for k in MICRO}
    for k in MICRO:
        for _ in range(200):
            fns[k]()
    runner.sync()
    for _ in range(7):
        for k in MICRO:
            runner.sync()
            t0 = time.perf_counter()
            for _ in range(args.micro_n):
                fns[k]()
            micro[k].append((time.perf_counter() - t0) / args.micro_n)  # host seconds a call (issue only)
            runner.sync()
    mine = {"rank": rank, "times": times, "micro_s": micro,
            "micro_median_s": {k: statistics.median(v) for k, v in micro.items()}}
    every: list[Any] = [None] * world
    dist.all_gather_object(every, mine)
    if rank == 0:
        out = {"torch": torch.__version__, "device": (torch.cuda.get_device_name(dev) if not args.cpu else "cpu"),
               "world": world, "tokens": train_dist.FLOOR_TOKENS, "layers": list(train_dist.FLOOR_LAYERS),
               "model": train_dist.models.as_dict(train_dist.floor_model(train_dist.FLOOR_LAYERS[0])),
               "programs": [f"{p}-{'rc' if rc else 'plain'}" for p, rc in PROGRAMS], "rounds": rounds,
               "rounds_s": round(rounds_s, 3), "micro_n": args.micro_n, "counts_rank0": counts, "per_rank": every,
               "env": {k: v for k, v in os.environ.items() if k.startswith(("NCCL_", "TORCH_SYMM", "NVSHMEM_"))}}
        with open(args.out, "w") as f:
            json.dump(out, f, indent=1, sort_keys=True)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
