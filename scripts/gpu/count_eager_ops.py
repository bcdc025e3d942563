"""ATen operations one transformers eager decode step dispatches, counted on the CPU (no GPU needed): the five
serving architectures' tiny 2- and 8-layer models (scripts/gpu/serve_archs.py, batch 1, cache 64, as the GPU calls
time them), each operation by name, and the attention implementation transformers chose.

The GPU calls record the same counts (``aten_ops`` of every ``tiny`` record): the sequence is the program's, so a
floor per architecture is its operation count times the host's time per operation.

    PYTHONPATH=<transformers 5.17> python scripts/gpu/count_eager_ops.py OUT.json
"""

from __future__ import annotations

import collections
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_serve  # noqa: E402
import serve_archs  # noqa: E402


def count(arch: str, layers: int) -> tuple[int, dict[str, int], str]:
    from torch.utils._python_dispatch import TorchDispatchMode
    from transformers import StaticCache

    hist: collections.Counter = collections.Counter()

    class Count(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            hist[str(func.overloadpacket.__name__)] += 1
            return func(*args, **(kwargs or {}))

    dev = torch.device("cpu")
    torch.manual_seed(0)
    m = serve_archs.build(arch, dev, tiny_layers=layers)
    cache = StaticCache(config=m.config, max_cache_len=64)
    ids, cp = torch.randint(1, 200, (1, 1)), torch.tensor([63])
    pos, am = torch.full((1, 1), 63), torch.ones(1, 64, dtype=torch.long)

    def step():
        return m(input_ids=ids, past_key_values=cache, cache_position=cp, position_ids=pos, attention_mask=am,
                 use_cache=True).logits[:, -1].argmax(-1)

    with torch.inference_mode():
        step()
        bench_serve.set_pos(cache, 60)
        with Count():
            step()
    return sum(hist.values()), dict(hist), str(m.config._attn_implementation)


def main() -> None:
    import transformers
    out = {"tool": "scripts/gpu/count_eager_ops.py", "torch": torch.__version__,
           "transformers": transformers.__version__, "device": "cpu", "archs": {}}
    for arch in serve_archs.ARCHS:
        n2, h2, attn = count(arch, 2)
        n8, h8, _ = count(arch, 8)
        per = {k: (h8.get(k, 0) - h2.get(k, 0)) / 6 for k in sorted(set(h2) | set(h8))}
        out["archs"][arch] = {"attn_implementation": attn, "aten_ops_2_layers": n2, "aten_ops_8_layers": n8,
                              "per_layer": (n8 - n2) / 6, "per_layer_by_op": {k: v for k, v in per.items() if v}}
        print(arch, attn, n2, n8, (n8 - n2) / 6, flush=True)
    with open(sys.argv[1], "w") as fh:
        json.dump(out, fh, indent=1)


if __name__ == "__main__":
    main()
