"""Count the bytes transformers' eager prefill moves outside its matmuls and attention, per token and layer.

Runs on the CPU (no GPU needed: the count is of the program, not of a card). For each measured architecture
(serve_archs.ARCHS, the real widths, a 256-token vocabulary so the embedding stays small) a prefill of ``P``
tokens runs under a TorchDispatchMode that sees every ATen operation; each operation that launches a kernel and
is neither a matmul nor attention (norms, rotary, activations, residual adds, casts, copies, cache writes, MoE
routing) is charged the bytes of its tensor inputs and outputs. The count of a 2-layer model less that of a 1-layer
model, over ``P``, is the per-token per-layer traffic. Two prompt lengths show it is linear in tokens.

Usage: python scripts/gpu/count_prefill_bytes.py [--archs llama8b,...] [--prompts 64,128]  (prints JSON)
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import torch
from torch.utils._python_dispatch import TorchDispatchMode

sys.path.insert(0, os.path.dirname(__file__))
import serve_archs  # noqa: E402

MATMUL = {"mm", "addmm", "bmm", "baddbmm", "linear", "_grouped_mm", "matmul", "_scaled_mm", "addbmm"}
ATTENTION = {"_scaled_dot_product_efficient_attention", "_scaled_dot_product_flash_attention",
             "_scaled_dot_product_flash_attention_for_cpu", "_scaled_dot_product_cudnn_attention",
             "scaled_dot_product_attention", "_efficient_attention_forward", "_flash_attention_forward"}
NO_KERNEL = {"view", "_unsafe_view", "t", "transpose", "expand", "slice", "select", "unsqueeze", "squeeze",
             "as_strided", "permute", "detach", "alias", "split", "split_with_sizes", "unbind", "chunk", "narrow",
             "_reshape_alias", "reshape", "lift_fresh", "empty", "empty_like", "empty_strided", "new_empty",
             "sym_size", "sym_stride", "sym_numel", "is_nonzero", "_local_scalar_dense", "item", "diagonal",
             "unflatten", "flatten", "view_as_real", "view_as_complex", "_to_copy_noop", "size", "stride",
             "dim", "set_", "resolve_conj", "resolve_neg"}


def _bytes(x) -> int:
    if isinstance(x, torch.Tensor):
        return min(x.numel(), x.untyped_storage().nbytes() // max(1, x.element_size())) * x.element_size()
    if isinstance(x, (list, tuple)):
        return sum(_bytes(y) for y in x)
    return 0


class Count(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.bytes = 0
        self.ops = {}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        name = func.overloadpacket.__name__
        if name not in MATMUL and name not in ATTENTION and name not in NO_KERNEL:
            b = _bytes(list(args)) + _bytes(list((kwargs or {}).values())) + _bytes(out)
            self.bytes += b
            self.ops[name] = self.ops.get(name, 0) + b
        return out


def count(arch: str, layers: int, prompt: int) -> tuple[int, dict]:
    import transformers
    cfg = serve_archs.config(arch)
    cfg.num_hidden_layers = layers
    cfg.vocab_size = 256
    if hasattr(cfg, "layer_types") and cfg.layer_types is not None:
        cfg.layer_types = cfg.layer_types[:layers]
    if hasattr(cfg, "first_k_dense_replace"):  # keep the 2-layer difference a routed-expert layer
        cfg.first_k_dense_replace = 1
    cfg._attn_implementation = "sdpa"
    torch.manual_seed(0)
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.bfloat16)
    try:
        m = getattr(transformers, serve_archs.ARCHS[arch]["cls"])(cfg).eval()
    finally:
        torch.set_default_dtype(old)
    from transformers import StaticCache
    cache = StaticCache(config=m.config, max_cache_len=prompt)
    ids = torch.randint(1, 256, (1, prompt))
    cp = torch.arange(prompt)
    am = torch.ones(1, prompt, dtype=torch.long)
    with torch.inference_mode():
        m(input_ids=ids, past_key_values=cache, cache_position=cp, attention_mask=am, use_cache=True, logits_to_keep=1)
        serve_archs_set_pos(cache)
        c = Count()
        with c:
            m(input_ids=ids, past_key_values=cache, cache_position=cp, attention_mask=am, use_cache=True,
              logits_to_keep=1)
    return c.bytes, c.ops


def serve_archs_set_pos(cache):
    for lay in cache.layers:
        if isinstance(getattr(lay, "cumulative_length", None), torch.Tensor):
            lay.cumulative_length.fill_(0)
        elif hasattr(lay, "cumulative_length"):
            lay.cumulative_length = 0
        if hasattr(lay, "cumulative_length_int"):
            lay.cumulative_length_int = 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--archs", default=",".join(serve_archs.ARCHS))
    ap.add_argument("--prompts", default="64,128")
    a = ap.parse_args()
    out = {}
    for arch in a.archs.split(","):
        rec = {}
        for p in [int(x) for x in a.prompts.split(",")]:
            b1, ops1 = count(arch, 1, p)
            b2, ops2 = count(arch, 2, p)
            rec[str(p)] = {"bytes_per_token_per_layer": (b2 - b1) / p,
                           "by_op": {k: (v - ops1.get(k, 0)) / p for k, v in sorted(ops2.items(), key=lambda kv: -kv[1])
                                     if abs(v - ops1.get(k, 0)) > 0}}
            print(arch, p, round((b2 - b1) / p), file=sys.stderr, flush=True)
        out[arch] = rec
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
