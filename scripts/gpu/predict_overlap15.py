"""Blind predictions for the overlap15 call (scripts/gpu/overlap15.py), written before it ran.

The physics, no fitted constant: NCCL runs one CUDA block (thread block, CTA) per channel (NCCL user guide,
"Environment Variables": NCCL_NTHREADS is the threads of each block, one block per channel; NCCL_MAX_NCHANNELS
"reduces the number of CUDA blocks used for communication, hence the impact on GPU computing resources"). On an
H100 or H200 node (18 NVLinks, sm90, ring: NVLink multicast is off on the lent machines) NCCL 2.28.9 runs 24 ring
channels (:func:`mlcalc.network.nccl_ring_channels`; NCCL's INFO log of 2 H200s said "24 coll channels",
mlcalc/data/measured/h200x2-2026-11-27-coll10). A Hopper bf16 GEMM block of cuBLAS (warp-specialised, 128 x 256
tile) takes the SM's registers and most of its shared memory, so a GEMM block and an NCCL block do not share an SM:
while a collective runs, a compute-bound kernel beside it has S - C of S SMs (S = 132 on both cards,
mlcalc/data/accelerators.json; C = 24). The kernel's time is then S / (S - C) of its time alone: +22.2 % for every
bf16 GEMM and every flash-attention pass (forward and backward are compute-bound at these lengths), for an
all-gather and a reduce-scatter alike (both run 24 blocks). The collective is predicted unslowed (its blocks hold
their SMs; NVLink, not the SMs, bounds it). Not counted: the collective's HBM traffic (a 2-rank out-of-place
ring all-gather stores each byte twice on its way: network._ring_kernel_steps), which a compute-bound kernel does
not feel; wave quantisation (a kernel whose blocks are one wave of 132 would take two waves on 108 SMs: up to +100 %;
the fluid share is the prediction, the quantised bound is stated beside it).

Scoring (fixed here): a case's measured slowdown is median time per kernel beside the collective / median alone - 1
(same call, same process); a prediction is right when within 5 points of it. Comm's slowdown likewise, right
within 5 points of 0.

    .venv/bin/python scripts/gpu/predict_overlap15.py   (writes scripts/gpu/overlap15_predictions.json)
"""

from __future__ import annotations

import json
import math
import os
import sys

PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "overlap15_predictions.json")
# (name, M, K, N): the book's training products at their tokens per GPU (Llama 3 8B and Llama 2 7B at 1 x 2,048 and
# 1 x 8,192, Llama 3.2 3B at 1 x 16,384), x (M x K) @ w (K x N)
GEMMS = (("8B-qkv-2k", 2048, 4096, 6144), ("8B-o-2k", 2048, 4096, 4096), ("8B-up-2k", 2048, 4096, 14336),
         ("8B-down-2k", 2048, 14336, 4096), ("7B-up-2k", 2048, 4096, 11008), ("8B-up-8k", 8192, 4096, 14336),
         ("3B-up-16k", 16384, 3072, 8192))
# (name, seq, heads, head_dim, backward): SDPA flash attention, causal, batch 1
ATTENTION = (("attn-fwd-2k", 2048, 32, 128, False), ("attn-fwdbwd-2k", 2048, 32, 128, True),
             ("attn-fwd-8k", 8192, 32, 128, False), ("attn-fwdbwd-8k", 8192, 32, 128, True))
# FSDP2's per-layer collectives on 2 ranks: one Llama 3 8B decoder layer, 218,112,000 parameters, bf16
LAYER_PARAMS = 218_112_000
COLLECTIVES = (("all_gather", LAYER_PARAMS * 2), ("reduce_scatter", LAYER_PARAMS * 2))
TILE = (128, 256)


def main() -> None:
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    from mlcalc import network, serving

    ch = network.nccl_ring_channels(18, 90)
    out = {"rule": "compute-bound kernel beside a collective: S / (S - C) of its time alone", "cards": {}}
    for card, key in (("NVIDIA H100 80GB HBM3", "H100-SXM"), ("NVIDIA H200", "H200-SXM")):
        s = serving.spec(key).sm_count
        c = ch.channels
        fluid = s / (s - c) - 1
        cases = {}
        for name, m, _k, n in GEMMS:
            tiles = math.ceil(m / TILE[0]) * math.ceil(n / TILE[1])
            quant = math.ceil(tiles / (s - c)) / math.ceil(tiles / s) - 1
            for coll, _ in COLLECTIVES:
                cases[f"{name}|{coll}"] = {"slowdown": round(fluid, 4), "wave_quantised_bound": round(quant, 4)}
        for name, *_ in ATTENTION:
            for coll, _ in COLLECTIVES:
                cases[f"{name}|{coll}"] = {"slowdown": round(fluid, 4)}
        for coll, _ in COLLECTIVES:
            cases[f"comm|{coll}"] = {"slowdown": 0.0}
        out["cards"][card] = {"sms": s, "nccl_blocks": c, "cases": cases}
    out["collective_bytes"] = dict(COLLECTIVES)
    with open(PATH, "w") as f:
        json.dump(out, f, indent=1, sort_keys=True)
        f.write("\n")
    print(f"C = {ch.channels} blocks, S = 132: +{fluid:.1%} per compute kernel; wrote {PATH}")


if __name__ == "__main__":
    main()
