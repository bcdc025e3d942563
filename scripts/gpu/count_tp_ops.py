"""Count the ATen operations one training step of ``train_dist.py``'s tensor-parallel program dispatches (DTensor
tensor parallel over every rank, sequence parallel, loss parallel; with and without activation checkpointing), per
layer and outside the layers, by phase (forward, backward, optimizer), by operation and by kind (with a DTensor
argument or plain), for model shapes narrowed in width but with their own layer structure and vocabulary: what the
step-time engine's ``TP_*_OPS_*`` tables count, checked per shape (issue 24: is the Qwen3 8B shape's TP 4 step a
different program from the Mistral 7B and Llama 3 8B ones?).

Runs on the CPU with gloo (the count is of the program, not of a card):

    torchrun --nproc_per_node 4 scripts/gpu/count_tp_ops.py --out counts.json

Per shape: the counts at 2 and 4 layers (and the DTensor sharding-propagation cache's misses in the counted step) (their difference over 2 is one layer; 2 layers less 2 of those is what
runs outside the layers), and the collectives each pass issues (``_c10d_functional`` operations).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter
from datetime import timedelta
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

from mlcalc import models  # noqa: E402

# The shapes of the blind11 call's TP 4 cases and the record's Llama 3 8B TP 4 case, narrowed (hidden 256, 16 heads of 16,
# the MLP at the same ratio to the hidden width, heads and KV heads in the model's own ratio): the program's operations
# do not depend on widths; the vocabulary is kept (the embedding and the loss are sharded by it).
SHAPES = {
    "Mistral 7B": ("Mistral 7B", {}),
    "Qwen3-8B-noqknorm": ("Qwen3 8B", {"qk_norm": False}),
    "Llama-3 8B": ("Llama-3 8B", {}),
}
SEQ = 64


def narrow(name: str, over: dict[str, Any], n_layers: int) -> models.ModelConfig:
    p = models.preset(name).replace(**over)
    ratio = p.ffn_hidden / p.hidden
    heads_per_kv = p.n_heads // p.n_kv_heads
    return p.replace(name=f"{name} narrow {n_layers}L", n_layers=n_layers, hidden=256, n_heads=16,
                     n_kv_heads=max(4, 16 // heads_per_kv), head_dim=16, ffn_hidden=int(256 * ratio) // 32 * 32,
                     tied_embeddings=False, published_params=0.0)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--shapes", default=",".join(SHAPES))
    args = ap.parse_args(argv)
    import torch
    import torch.distributed as dist
    from torch.distributed.tensor import DTensor
    from torch.utils._python_dispatch import TorchDispatchMode

    import train_dist

    dist.init_process_group("gloo", timeout=timedelta(seconds=300))
    rank, world = dist.get_rank(), dist.get_world_size()
    dev = torch.device("cpu")
    runner = train_dist.Runner(torch, dev, True)
    F = torch.nn.functional

    class Count(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.by: Counter[str] = Counter()

        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            kwargs = kwargs or {}
            leaves = torch.utils._pytree.tree_leaves((args, kwargs))
            kind = "dtensor" if any(isinstance(a, DTensor) for a in leaves) else "plain"
            self.by[f"{kind}:{func.overloadpacket._qualified_op_name}"] += 1
            return func(*args, **kwargs)

    out: dict[str, Any] = {"torch": torch.__version__, "world": world, "seq_len": SEQ, "shapes": {}}
    from torch.distributed.tensor.parallel import loss_parallel
    for short in args.shapes.split(","):
        name, over = SHAPES[short]
        per: dict[str, Any] = {}
        for rc in (False, True):
            for n_layers in (2, 4):
                m = narrow(name, over, n_layers)
                c = train_dist.case(m, world, SEQ, 1, rc, tp=world)
                model, opt, step, mesh, notes = runner.build(c)
                for _ in range(2):
                    step()
                tokens = torch.randint(0, m.vocab, (1, SEQ), generator=torch.Generator().manual_seed(1))
                cf, cb, co = Count(), Count(), Count()
                prop = DTensor._op_dispatcher.sharding_propagator.propagate_op_sharding.cache
                miss0 = prop.cache_info().misses
                with loss_parallel():
                    with cf:
                        with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
                            logits = model(tokens)
                        loss = F.cross_entropy(logits.flatten(0, 1).float(), tokens.flatten(0, 1))
                    del logits
                    with cb:
                        loss.backward()
                with co:
                    opt.step()
                    opt.zero_grad(set_to_none=True)
                per[f"{'rc' if rc else 'plain'}-{n_layers}L"] = {"forward": dict(cf.by), "backward": dict(cb.by),
                                                                  "optimizer": dict(co.by),
                                                                  "n_params": len(list(model.parameters())),
                                                                  "sharding_cache_misses": prop.cache_info().misses - miss0}
                del model, opt, step
        out["shapes"][short] = {"model": models.as_dict(narrow(name, over, 2)), "counts": per}
    if rank == 0:
        with open(args.out, "w") as f:
            json.dump(out, f, indent=1, sort_keys=True)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
