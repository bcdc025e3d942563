"""Does the Qwen3 8B shape cost the host more per layer than the Mistral 7B and Llama 3 8B shapes in
``train_dist.py``'s tensor-parallel program? (issue 24: its TP 4 steps took 33-35 ms a layer against 25-31 for the
Mistral 7B case on the same 4 x H200 hosts, where the engine's host work per layer is the same.)

One GPU, one process: the program's model (``train_dist.build_model_classes``) at each shape's real widths and
vocabulary, at 2 and 6 layers, under the same DTensor plan as ``train_dist.Runner.build`` (sequence parallel,
loss parallel, checkpoint_wrapper on every block) over a mesh of one rank, fp32 parameters, bf16 autocast, fused
AdamW, 1 x 2,048 tokens: the DTensor dispatch the host pays is the TP program's; the collectives are over one rank.
Per model: warm-up, then timed steps (each: issue time when Python returns, step time after a sync) and the
forward and backward passes issued and finished apart; the shapes in turn, twice (A B C, A B C), so the host's
drift shows. Each shape's time per layer is the difference over the 4 layers.

    torchrun --nproc_per_node 1 scripts/gpu/tp_shape_host.py --out tp_shape_host.json [--cpu-tiny]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import time
from datetime import timedelta
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, HERE)

from mlcalc import models  # noqa: E402

SHAPES = {"Mistral 7B": ("Mistral 7B", {}), "Qwen3-8B-noqknorm": ("Qwen3 8B", {"qk_norm": False}),
          "Llama-3 8B": ("Llama-3 8B", {})}
LAYERS = (2, 6)


def shape(short: str, n_layers: int, tiny: bool) -> models.ModelConfig:
    name, over = SHAPES[short]
    m = models.preset(name).replace(**over)
    m = m.replace(name=f"{short} {n_layers}L", n_layers=n_layers, tied_embeddings=False, published_params=0.0)
    if tiny:
        m = m.replace(hidden=64, n_heads=4, n_kv_heads=1, head_dim=16, ffn_hidden=m.ffn_hidden // 64,
                      vocab=m.vocab // 64)
    return m


def build(torch: Any, Llama: Any, m: models.ModelConfig, mesh: Any, dev: Any, rc: bool) -> tuple[Any, Any]:
    """train_dist.Runner.build's tensor-parallel branch, over ``mesh``."""
    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import CheckpointImpl, checkpoint_wrapper
    from torch.distributed.tensor import Replicate, Shard
    from torch.distributed.tensor.parallel import (ColwiseParallel, PrepareModuleInput, RowwiseParallel,
                                                   SequenceParallel, parallelize_module)
    with torch.device("meta"):
        model = Llama(m)
    parallelize_module(model, mesh, {
        "tok_embeddings": RowwiseParallel(input_layouts=Replicate(), output_layouts=Shard(1)),
        "norm": SequenceParallel(),
        "output": ColwiseParallel(input_layouts=Shard(1), output_layouts=Shard(-1), use_local_output=False)})
    for block in model.layers.values():
        parallelize_module(block, mesh, {
            "attention_norm": SequenceParallel(),
            "attention": PrepareModuleInput(input_layouts=(Shard(1),), desired_input_layouts=(Replicate(),)),
            "attention.wq": ColwiseParallel(), "attention.wk": ColwiseParallel(),
            "attention.wv": ColwiseParallel(), "attention.wo": RowwiseParallel(output_layouts=Shard(1)),
            "ffn_norm": SequenceParallel(),
            "feed_forward": PrepareModuleInput(input_layouts=(Shard(1),), desired_input_layouts=(Replicate(),)),
            "feed_forward.w1": ColwiseParallel(), "feed_forward.w3": ColwiseParallel(),
            "feed_forward.w2": RowwiseParallel(output_layouts=Shard(1)),
        })
    if rc:
        for i in list(model.layers.keys()):
            model.layers[i] = checkpoint_wrapper(model.layers[i], checkpoint_impl=CheckpointImpl.NO_REENTRANT,
                                                 preserve_rng_state=False)
    model.to_empty(device=dev)
    torch.manual_seed(0)
    with torch.no_grad():
        for p in model.parameters():
            if p.ndim >= 2:
                p.normal_(0.0, 0.02)
            else:
                p.fill_(1.0)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5, weight_decay=0.1, fused=dev.type == "cuda")
    return model, opt


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--cpu-tiny", action="store_true")
    ap.add_argument("--seq", type=int, default=2048)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--plain-too", action="store_true", help="also without checkpointing (default: checkpointed only)")
    args = ap.parse_args(argv)
    import torch
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor.parallel import loss_parallel

    import train_dist

    cpu = args.cpu_tiny
    if cpu:
        dev = torch.device("cpu")
        dist.init_process_group("gloo", timeout=timedelta(seconds=120))
    else:
        torch.cuda.set_device(0)
        dev = torch.device("cuda", 0)
        dist.init_process_group("nccl", timeout=timedelta(seconds=120), device_id=dev)
    mesh = init_device_mesh(dev.type, (1,), mesh_dim_names=("tp",))
    Llama = train_dist.build_model_classes(torch)
    F = torch.nn.functional
    seq = 32 if cpu else args.seq

    def sync() -> None:
        if not cpu:
            torch.cuda.synchronize(dev)

    res: dict[str, Any] = {"torch": torch.__version__, "device": "cpu" if cpu else torch.cuda.get_device_name(0),
                           "seq_len": seq, "rows": []}
    for rnd in range(args.rounds):
        for rc in ((True, False) if args.plain_too else (True,)):
            for short in SHAPES:
                for n_layers in LAYERS:
                    m = shape(short, n_layers, cpu)
                    t_b = time.time()
                    model, opt = build(torch, Llama, m, mesh, dev, rc)
                    tokens = torch.randint(0, m.vocab, (1, seq), device=dev)

                    def step(phases: bool = False) -> tuple[float, ...]:
                        t0 = time.perf_counter()
                        with loss_parallel():
                            with torch.autocast(device_type=dev.type, dtype=torch.bfloat16):
                                logits = model(tokens)
                            loss = F.cross_entropy(logits.flatten(0, 1).float(), tokens.flatten(0, 1))
                            del logits
                            t1 = time.perf_counter()
                            if phases:
                                sync()
                            t2 = time.perf_counter()
                            loss.backward()
                        t3 = time.perf_counter()
                        if phases:
                            sync()
                        t4 = time.perf_counter()
                        opt.step()
                        opt.zero_grad(set_to_none=True)
                        t5 = time.perf_counter()
                        sync()
                        t6 = time.perf_counter()
                        return t1 - t0, t2 - t0, t3 - t2, t4 - t2, t5 - t4, t6 - t0

                    for _ in range(2):
                        step()
                    whole = [step() for _ in range(args.steps)]
                    split = [step(True) for _ in range(args.steps)]
                    med = lambda rows, i: statistics.median(r[i] for r in rows)  # noqa: E731
                    row = {"round": rnd, "shape": short, "n_layers": n_layers, "recompute": rc,
                           "step_s": med(whole, 5), "issue_s": med(whole, 4) + med(whole, 2) + med(whole, 0),
                           "fwd_issue_s": med(split, 0), "fwd_s": med(split, 1), "bwd_issue_s": med(split, 2),
                           "bwd_s": med(split, 3), "opt_issue_s": med(split, 4),
                           "steps_s": [round(r[5], 5) for r in whole], "build_s": round(time.time() - t_b, 2),
                           "epoch_s": round(time.time(), 2)}
                    res["rows"].append(row)
                    print(json.dumps({k: (round(v * 1e3, 2) if k.endswith("_s") and k not in ("build_s", "epoch_s")
                                          else v) for k, v in row.items() if k != "steps_s"}), flush=True)
                    del model, opt, step
                    if not cpu:
                        torch.cuda.empty_cache()
                    with open(args.out, "w") as f:
                        json.dump(res, f, indent=1)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
