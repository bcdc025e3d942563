"""A small serving engine in plain PyTorch: a Llama-shaped decoder with a static per-slot KV cache,
tensor parallel over a process group (Megatron-style: attention heads and FFN columns split, two
all-reduces per layer, the output projection split over the vocabulary), one decode step capturable
in a CUDA graph.

Used by ``bench_serve_tp.py`` (tensor-parallel decode on 1, 2 and 4 GPUs) and by the load test of
``bench_serve.py`` (continuous batching). Random bf16 weights: only the shapes matter.

Attention in decode reads each slot's whole cache (``max_len`` positions) with a boolean mask of the
positions written so far, and handles grouped query heads without copying K and V (the query heads of
a group are laid out as the query "length" of one KV head): the cache is read once per step, as in a
GQA-aware serving kernel, but over the allocated length, not the filled one (no paging).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F

try:
    import torch.distributed as dist
except ImportError:  # pragma: no cover
    dist = None


@dataclass(frozen=True)
class Cfg:
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    ffn: int
    vocab: int
    rope_theta: float = 500000.0


# Llama 3 8B (Dubey et al. 2024, Table 3); Llama 3 70B's layer shape with 20 of its 80 layers.
CFGS = {
    "llama8b": Cfg(4096, 32, 32, 8, 128, 14336, 128256),
    "llama70b_20l": Cfg(8192, 20, 64, 8, 128, 28672, 128256),
    "tiny": Cfg(128, 2, 8, 4, 16, 256, 1024),
}


def _rms(x: torch.Tensor, w: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


def _rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """x (..., hd); cos/sin broadcastable to (..., hd/2): rotate-half form, as in Llama."""
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)


class Engine:
    def __init__(self, cfg: Cfg, device: torch.device, tp_rank: int = 0, tp_size: int = 1, group=None,
                 seed: int = 0):
        if cfg.heads % tp_size or cfg.kv_heads % tp_size or cfg.ffn % tp_size or cfg.vocab % tp_size:
            raise ValueError(f"tp_size={tp_size} does not divide heads/kv_heads/ffn/vocab of {cfg}")
        self.cfg, self.dev, self.rank, self.tp, self.group = cfg, device, tp_rank, tp_size, group
        self.h = cfg.heads // tp_size
        self.kvh = cfg.kv_heads // tp_size
        self.g = cfg.heads // cfg.kv_heads
        self.ffn = cfg.ffn // tp_size
        self.vloc = cfg.vocab // tp_size
        gen = torch.Generator(device=device).manual_seed(seed + 1000 * tp_rank)
        s = 0.02
        bf = torch.bfloat16

        def rnd(*shape):
            return (torch.randn(*shape, generator=gen, device=device, dtype=torch.float32) * s).to(bf)

        hd = cfg.head_dim
        self.emb = rnd(cfg.vocab, cfg.hidden)
        self.layers = []
        for _ in range(cfg.layers):
            self.layers.append(dict(
                n1=torch.ones(cfg.hidden, device=device, dtype=bf),
                wqkv=rnd(cfg.hidden, (self.h + 2 * self.kvh) * hd),
                wo=rnd(self.h * hd, cfg.hidden),
                n2=torch.ones(cfg.hidden, device=device, dtype=bf),
                wgu=rnd(cfg.hidden, 2 * self.ffn),
                wd=rnd(self.ffn, cfg.hidden)))
        self.norm = torch.ones(cfg.hidden, device=device, dtype=bf)
        self.head = rnd(cfg.hidden, self.vloc)
        self.inv_freq = 1.0 / (cfg.rope_theta ** (torch.arange(0, hd, 2, device=device, dtype=torch.float32) / hd))
        self.k = self.v = None
        self.n_weight_bytes = sum(t.numel() * t.element_size() for L in self.layers for t in L.values()) + \
            (self.emb.numel() + self.head.numel() + self.norm.numel()) * 2  # (the 2026-11-26 run left out the norm)

    # ------------------------------------------------------------------ cache
    def alloc_cache(self, max_batch: int, max_len: int, fill_random: bool = True) -> int:
        self.k = self.v = None
        if self.dev.type == "cuda":
            torch.cuda.empty_cache()
        shape = (self.cfg.layers, max_batch, self.kvh, max_len, self.cfg.head_dim)
        self.k = torch.empty(shape, device=self.dev, dtype=torch.bfloat16)
        self.v = torch.empty(shape, device=self.dev, dtype=torch.bfloat16)
        if fill_random:  # never time on zeros
            self.k.normal_()
            self.v.normal_()
        self.max_batch, self.max_len = max_batch, max_len
        self.pos_grid = torch.arange(max_len, device=self.dev)
        return 2 * self.k.numel() * 2

    # ------------------------------------------------------------------ collectives
    def _allreduce(self, x: torch.Tensor) -> torch.Tensor:
        if self.tp > 1:
            dist.all_reduce(x, group=self.group)
        return x

    def _argmax(self, logits_local: torch.Tensor) -> torch.Tensor:
        """Greedy token over the vocabulary split across ranks: local max, gathered (b, tp) values."""
        val, idx = logits_local.float().max(dim=-1)
        if self.tp == 1:
            return idx
        idx = idx + self.rank * self.vloc
        both = torch.stack((val, idx.float()), dim=-1)  # (b, 2); vocab ids < 2**24 are exact in fp32
        out = torch.empty((self.tp * both.shape[0], 2), device=both.device, dtype=both.dtype)
        dist.all_gather_into_tensor(out, both.contiguous(), group=self.group)
        out = out.view(self.tp, -1, 2)
        best = out[..., 0].argmax(dim=0)  # (b,)
        return out[..., 1].gather(0, best[None]).squeeze(0).long()

    # ------------------------------------------------------------------ decode
    def decode(self, ids: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        """One token for each of the first ``b = len(ids)`` slots at positions ``pos`` (b,); returns (b,) ids."""
        cfg, hd = self.cfg, self.cfg.head_dim
        b = ids.shape[0]
        slots = torch.arange(b, device=ids.device)
        x = self.emb[ids]  # (b, hidden)
        ang = pos[:, None].float() * self.inv_freq  # (b, hd/2)
        cos, sin = ang.cos()[:, None, :].to(x.dtype), ang.sin()[:, None, :].to(x.dtype)
        mask = (self.pos_grid[None, :] <= pos[:, None])[:, None, None, :]  # (b, 1, 1, L)
        for li, L in enumerate(self.layers):
            h = _rms(x, L["n1"])
            qkv = h @ L["wqkv"]
            q = qkv[:, : self.h * hd].view(b, self.h, hd)
            k = qkv[:, self.h * hd: (self.h + self.kvh) * hd].view(b, self.kvh, hd)
            v = qkv[:, (self.h + self.kvh) * hd:].view(b, self.kvh, hd)
            q, k = _rope(q, cos, sin), _rope(k, cos, sin)
            self.k[li][slots, :, pos] = k
            self.v[li][slots, :, pos] = v
            o = F.scaled_dot_product_attention(q.view(b, self.kvh, self.g, hd), self.k[li, :b], self.v[li, :b],
                                               attn_mask=mask)
            x = x + self._allreduce(o.reshape(b, self.h * hd) @ L["wo"])
            h = _rms(x, L["n2"])
            gu = h @ L["wgu"]
            x = x + self._allreduce((F.silu(gu[:, : self.ffn]) * gu[:, self.ffn:]) @ L["wd"])
        return self._argmax(_rms(x, self.norm) @ self.head)

    # ------------------------------------------------------------------ prefill
    def prefill(self, ids: torch.Tensor, slot0: int = 0) -> torch.Tensor:
        """Prompts ``ids`` (b, p) into slots slot0..slot0+b-1 from position 0; returns the first new token (b,)."""
        cfg, hd = self.cfg, self.cfg.head_dim
        b, p = ids.shape
        x = self.emb[ids]  # (b, p, hidden)
        ang = torch.arange(p, device=ids.device).float()[:, None] * self.inv_freq  # (p, hd/2)
        cos, sin = ang.cos()[None, None].to(x.dtype), ang.sin()[None, None].to(x.dtype)
        for li, L in enumerate(self.layers):
            h = _rms(x, L["n1"])
            qkv = h @ L["wqkv"]
            q = qkv[..., : self.h * hd].view(b, p, self.h, hd).transpose(1, 2)
            k = qkv[..., self.h * hd: (self.h + self.kvh) * hd].view(b, p, self.kvh, hd).transpose(1, 2)
            v = qkv[..., (self.h + self.kvh) * hd:].view(b, p, self.kvh, hd).transpose(1, 2)
            q, k = _rope(q, cos, sin), _rope(k, cos, sin)
            self.k[li, slot0: slot0 + b, :, :p] = k
            self.v[li, slot0: slot0 + b, :, :p] = v
            o = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
            x = x + self._allreduce(o.transpose(1, 2).reshape(b, p, self.h * hd) @ L["wo"])
            h = _rms(x, L["n2"])
            gu = h @ L["wgu"]
            x = x + self._allreduce((F.silu(gu[..., : self.ffn]) * gu[..., self.ffn:]) @ L["wd"])
        return self._argmax(_rms(x[:, -1], self.norm) @ self.head)


class GraphStep:
    """One decode step of batch ``b`` captured in a CUDA graph (static ids/pos buffers); eager on the CPU."""

    def __init__(self, eng: Engine, b: int, pool=None):
        self.eng, self.b = eng, b
        self.ids = torch.zeros(b, dtype=torch.long, device=eng.dev)
        self.pos = torch.zeros(b, dtype=torch.long, device=eng.dev)
        self.graph = None
        if eng.dev.type == "cuda":
            s = torch.cuda.Stream(eng.dev)
            s.wait_stream(torch.cuda.current_stream(eng.dev))
            with torch.cuda.stream(s):
                for _ in range(3):
                    self.out = eng.decode(self.ids, self.pos)
            torch.cuda.current_stream(eng.dev).wait_stream(s)
            torch.cuda.synchronize(eng.dev)
            self.graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(self.graph, pool=pool):
                self.out = eng.decode(self.ids, self.pos)

    def __call__(self, ids: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        self.ids.copy_(ids)
        self.pos.copy_(pos)
        if self.graph is None:
            return self.eng.decode(self.ids, self.pos)
        self.graph.replay()
        return self.out


def weight_bytes(cfg: Cfg, tp: int = 1) -> float:
    """bf16 bytes one rank holds (embedding replicated, output projection split)."""
    per_layer = cfg.hidden * (cfg.heads + 2 * cfg.kv_heads) * cfg.head_dim / tp + cfg.heads * cfg.head_dim * cfg.hidden / tp \
        + 3 * cfg.hidden * cfg.ffn / tp + 2 * cfg.hidden
    return 2 * (cfg.layers * per_layer + cfg.vocab * cfg.hidden * (1 + 1 / tp) + cfg.hidden)


def _selfcheck() -> None:  # CPU: decode after prefill equals prefill of the longer prompt (same function)
    torch.manual_seed(0)
    eng = Engine(CFGS["tiny"], torch.device("cpu"))
    eng.alloc_cache(2, 32, fill_random=True)
    ids = torch.randint(0, 1024, (2, 9))
    first = eng.prefill(ids[:, :8])
    nxt = eng.decode(ids[:, 8], torch.tensor([8, 8]))
    eng2 = Engine(CFGS["tiny"], torch.device("cpu"))
    eng2.alloc_cache(2, 32)
    ref = eng2.prefill(ids)
    assert torch.equal(nxt, ref), (nxt, ref)
    assert first.shape == (2,)
    assert math.isfinite(weight_bytes(CFGS["llama8b"]))


if __name__ == "__main__":
    _selfcheck()
    print("ok")
