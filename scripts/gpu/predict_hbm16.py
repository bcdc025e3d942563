"""Blind predictions for the hbm16 call (scripts/gpu/hbm16.py), written and landed before it ran (issue 24).

Candidate (1) of wave16 (scripts/gpu/wave16_beside.py): the HBM traffic of NCCL's ring slows a memory-bound kernel
beside it. The physics, no fitted constant:

- Bytes NCCL's ring moves through one GPU's HBM per byte it receives. NCCL 2.28.9, Ring/Simple, P2P write on sm90
  (src/transport/p2p.cc p2pUseRead: P2P read is the default only for NVLink on sm80, so on Hopper the sender writes
  into the receiver's FIFO buffer, which lives in the receiver's memory); the kernels' steps as
  mlcalc.network._ring_kernel_steps reads them (src/device/all_gather.h, reduce_scatter.h). Without registered user
  buffers (PyTorch does not register them) each received chunk lands in the NCCL FIFO, is read from it, and goes on.
  Per chunk of M / n bytes on n ranks:
  - all_gather (out of place): directCopySend reads the rank's own shard and writes it to its output (2 chunk
    touches; its write to the next GPU lands in that GPU's HBM); each of the n - 1 received chunks is written into
    the FIFO by the previous GPU (1), read from it (1) and written to the output (1), the onward send again landing
    next door: 3 (n - 1) + 2 touches for n - 1 chunks received.
  - reduce_scatter: every one of the n input chunks is read once (n); each of the n - 1 received chunks is written
    into the FIFO (1) and read for the reduction (1); the last step writes the rank's output chunk (1):
    2 (n - 1) + n + 1 = 3 (n - 1) + 2 as well.
  So both touch HBM (3 + 2 / (n - 1)) times per byte received, and a rank receives bytes at the bus bandwidth
  (nccl-tests' busbw = algbw (n - 1) / n = bytes received per rank per second). The bus bandwidth is the book's
  network model (mlcalc.network.fabric_collective_seconds on DGX-H100 / DGX-H200 for this call's 436,224,000-byte
  message: 260 GB/s on 2 ranks, 320 GB/s on 4; overlap15b measured 239-252 GB/s on 2 x H200). The NCCL rate r is
  then 1.30 TB/s on 2 ranks and 1.17 TB/s on 4. Not counted: L2. The FIFO (4 MiB per channel and peer, 24 channels,
  96 MiB) is larger than the 50 MB L2, but a chunk is read soon after it lands, so part of the FIFO traffic may
  never reach HBM; ``l2_bound`` is the slowdown if none of it does (1 + 2 / (n - 1) touches per byte received).
- The HBM bandwidth the chip sustains: the book's measured read rate (mlcalc.serving.read_bandwidth: H200 4.07
  TB/s measured, H100 the datasheet's 3.35 TB/s at the H200's measured fraction, 2.84 TB/s).
- A memory-bound kernel beside the collective has what the collective leaves, B - r (NCCL's demand is set by
  NVLink, not by the HBM it shares): slowdown B / (B - r) - 1.
- A compute-bound kernel (bf16 GEMM, flash attention) has S - C of S SMs (NCCL's C = 24 blocks, S = 132; overlap15):
  S / (S - C) - 1 = +22.2 %. One rule for both, a roofline beside the collective: each kernel's time is the larger of
  its compute (2 m k n at the book's achievable bf16 rate, on S - C of S SMs) and its memory traffic (at B - r),
  over the larger of the two alone (mlcalc.serving.matmul_rate's achievable bf16 rate; a GEMM's bytes: its three
  bf16 matrices once). The copy and add are memory-bound (no FLOP counted), so they take the HBM rule; the GEMMs
  land on the SM rule (memory_over_compute: their traffic takes at most 0.27 of their compute time), flash
  attention too (compute-bound at 2,048 and 8,192 tokens).
- The collective beside a kernel: predicted unslowed (its blocks hold their SMs; its HBM demand is a third of the
  chip's; NVLink bounds it).

Scoring (fixed here, before the call): a case's measured slowdown is the mean over ranks of (median window beside
the collective / median window alone - 1), each rank's own windows (overlap15's measure). The rule HOLDS when the
memory-bound cases (copy and add, x all_gather and reduce_scatter, x 4 and 2 ranks: 8 cases) are within 5 points of
the prediction on at least 6 of 8. Reported beside it, not part of the decision: GEMM and attention cases within 5
points of +22.2 %, the L2 bound, and the collective's stretch over the compute window (r, from hbm16's timings:
k collectives take T beside a window W of compute that they outlast; the collectives did W rho of their work in W
and the rest at their own pace, so rho = 1 - (T - k c_alone) / W, stretch = 1 / rho - 1) against 0 within 5 points.

    .venv/bin/python scripts/gpu/predict_hbm16.py   (writes scripts/gpu/hbm16_predictions.json)
"""

from __future__ import annotations

import json
import os
import sys

PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "hbm16_predictions.json")
# (name, bytes of each operand, kind): a bf16 copy (reads 1 GiB, writes 1 GiB) and add (reads 2, writes 1)
STREAMS = (("copy-1GiB", 1 << 30, "copy"), ("add-1GiB", 1 << 30, "add"))
# (name, M, K, N) as overlap15: x (M x K) @ w (K x N), bf16; 2,048-row (2-3 waves) and many-wave
GEMMS = (("8B-o-2k", 2048, 4096, 4096), ("8B-up-2k", 2048, 4096, 14336), ("8B-up-8k", 8192, 4096, 14336))
# (name, seq, heads, head_dim, backward): SDPA flash attention, causal, batch 1
ATTENTION = (("attn-fwdbwd-2k", 2048, 32, 128, True), ("attn-fwd-8k", 8192, 32, 128, False))
# one Llama 3 8B decoder layer's bf16 parameters (FSDP's per-layer gather and reduce-scatter), 416 MiB
LAYER_PARAMS = 218_112_000
COLLECTIVES = (("all_gather", LAYER_PARAMS * 2), ("reduce_scatter", LAYER_PARAMS * 2))
WITHIN = 0.05
NEEDED = 6  # of the 8 memory-bound cases


def hbm_touches_per_byte(n: int, l2: bool = False) -> float:
    """HBM bytes NCCL's ring (all_gather or reduce_scatter, out of place, P2P write) moves on one GPU per byte the GPU
    receives; ``l2``: without the FIFO's write and read (both served by L2)."""
    return (1.0 if l2 else 3.0) + 2.0 / (n - 1)


def main() -> None:
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    from mlcalc import network, serving

    blocks = network.nccl_ring_channels(18, 90).channels
    out = {"rule": "kernel beside a ring collective: max(compute x S / (S - C), memory x B / (B - r)) over "
                   "max(compute, memory); r = busbw x (3 + 2 / (n - 1))",
           "scoring": {"within": WITHIN, "memory_bound_needed": NEEDED, "memory_bound_cases": 8},
           "collective_bytes": dict(COLLECTIVES), "cards": {}}
    for card, key, system in (("NVIDIA H100 80GB HBM3", "H100-SXM", "DGX-H100"), ("NVIDIA H200", "H200-SXM", "DGX-H200")):
        s = serving.spec(key).sm_count
        hbm = serving.read_bandwidth(key)
        flops = serving.matmul_rate(key, "bf16")
        sm_rule = s / (s - blocks) - 1
        worlds = {}
        for n in (4, 2):
            fab = network.fabric(system, gpus_per_node=n)
            cases = {}
            for coll, size in COLLECTIVES:
                t = network.fabric_collective_seconds(float(size), fab, coll)
                busbw = size * (n - 1) / n / t
                r = busbw * hbm_touches_per_byte(n)
                r_l2 = busbw * hbm_touches_per_byte(n, l2=True)
                mem = hbm / (hbm - r) - 1
                for name, *_ in STREAMS:
                    cases[f"{name}|{coll}"] = {"slowdown": round(mem, 4), "l2_bound": round(hbm / (hbm - r_l2) - 1, 4),
                                               "class": "memory"}
                for name, m, k, nn in GEMMS:  # the roofline beside the collective: compute or memory, the larger
                    tc, tm = 2.0 * m * k * nn / flops, 2.0 * (m * k + k * nn + m * nn) / hbm
                    beside = max(tc * s / (s - blocks), tm * hbm / (hbm - r))
                    cases[f"{name}|{coll}"] = {"slowdown": round(beside / max(tc, tm) - 1, 4), "class": "compute",
                                               "memory_over_compute": round(tm / tc, 3)}
                for name, *_ in ATTENTION:  # flash attention at 2,048 and 8,192 tokens: compute-bound
                    cases[f"{name}|{coll}"] = {"slowdown": round(sm_rule, 4), "class": "compute"}
                cases[f"comm|{coll}"] = {"slowdown": 0.0, "busbw_GBps": round(busbw / 1e9, 1),
                                         "nccl_hbm_TBps": round(r / 1e12, 3), "nccl_hbm_l2_TBps": round(r_l2 / 1e12, 3),
                                         "priced_ms": round(t * 1e3, 4)}
            worlds[str(n)] = cases
        out["cards"][card] = {"sms": s, "nccl_blocks": blocks, "hbm_TBps": round(hbm / 1e12, 3),
                              "sm_rule": round(sm_rule, 4), "worlds": worlds}
    with open(PATH, "w") as f:
        json.dump(out, f, indent=1, sort_keys=True)
        f.write("\n")
    for card, v in out["cards"].items():
        for n, cases in v["worlds"].items():
            print(card, f"{n} ranks", {k: c["slowdown"] for k, c in cases.items() if k.startswith(("copy", "comm"))},
                  {k: c.get("nccl_hbm_TBps") for k, c in cases.items() if k.startswith("comm")})
    print(f"wrote {PATH}")


if __name__ == "__main__":
    main()
