"""Predictions for the coll9 call, written down BEFORE it ran (issue 24: the 2-GPU all-gather / reduce-scatter miss).

The network model (mlcalc.network.fabric_collective_time on a DGX-H100-style NVLink 4 fabric, 370 GB/s achievable)
puts every ring collective at the link rate. NCCL's 2-GPU all-gather and reduce-scatter measured 268 and 274 GB/s
busbw at 1 GiB (h200x4-2026-11-26-net5-2of4). coll8's lead, not adopted: the out-of-place copy of a rank's own slice
into its output is 1/(n-1) of the bytes it sends; charged at k = 0.36 of a link byte, the bandwidth term of an
out-of-place all-gather grows by (1 + k/(n-1)). k came from those same two points, so it needs a held-out check:

* in-place all-gather (nccl-tests' -i: sendbuff = recvbuff + rank * sendcount) takes NCCL's ``directSend`` branch
  instead of ``directCopySend`` (NVIDIA/nccl src/device/all_gather.h, runRing step 0): no self-copy. H1 (the rule)
  says it reaches the model's link curve (367 GB/s at 1 GiB on 2 GPUs).
* reduce-scatter: NCCL's ring kernel has no in-place branch (src/device/reduce_scatter.h: the last step
  ``recvReduceCopy`` writes the output either way), so a rule that is physics (a cost per locally written byte)
  says in-place = out-of-place; a rule fitted to the number alone would say in-place rises like all-gather.

Hypotheses for in-place all-gather on 2 GPUs at 1 GiB: H1 (rule) ~367; H0 (the kernel, not the copy: no change)
~268; H2 (a cost per byte written locally, all writes: an in-place all-gather writes one byte locally per byte sent,
as NCCL's 2-GPU all-reduce does) ~ all-reduce's measured 329.

Pass (written before): PASS if in-place all-gather busbw at 1 GiB on 2 GPUs is within +-5% of H1's 367 GB/s AND
its ratio to the out-of-place all-gather of the same call is within +-5% of H1's ratio at 256 MiB, 512 MiB and
1 GiB AND in-place reduce-scatter / out-of-place reduce-scatter is 1.00 +- 5% at those sizes AND the out-of-place
all-gather and reduce-scatter at 1 GiB reproduce the earlier call within 3% (268.1, 274.4 GB/s on H200; on H100
NVLink 4 is the same link, the reproduction is then against those numbers all the same). FAIL (rule not
physics) if in-place all-gather at 1 GiB is within 5% of the out-of-place one of the same call (H0) or below
349 GB/s. Anything else: recorded as data, not adopted.

Run: ``python scripts/gpu/predict_coll9.py > scripts/gpu/coll9_predictions.json``.
"""

from __future__ import annotations

import json

from mlcalc import network as net

K = 0.36  # coll8's lead: cost of a self-copied byte in link bytes (from the 2-GPU AG/RS points at 1 GiB)
SIZES = [2**p for p in range(20, 31)]  # 1 MiB .. 1 GiB: the whole buffer (all-gather output, RS input)
EARLIER = {"all_gather": 268.1, "reduce_scatter": 274.4, "all_reduce": 329.0}  # h200x4-2026-11-26-net5-2of4, 1 GiB


def busbw(size: int, n: int, op: str, self_copy: float) -> float:
    """The model's busbw (GB/s) with the bandwidth term grown by (1 + self_copy)."""
    fab = net.fabric("DGX-H100", 1, gpus_per_node=n)
    t = net.fabric_collective_time(size, fab, op)
    time_s = t.latency_s + t.bandwidth_s * (1 + self_copy)
    return size / time_s * net.busbw_factor(op, n) / 1e9


def main() -> None:
    out: dict = {"_about": __doc__.split("Run:")[0].strip(), "k": K, "sizes_bytes": SIZES,
                 "earlier_1gib_gbps_2gpu": EARLIER, "predictions": {}}
    for n in (2, 4):
        p: dict = {}
        ag_ip = [busbw(s, n, "all_gather", 0.0) for s in SIZES]
        ag_oop = [busbw(s, n, "all_gather", K / (n - 1)) for s in SIZES]
        rs_oop = [busbw(s, n, "reduce_scatter", K / (n - 1)) for s in SIZES]
        p["H1_rule"] = {"all_gather_in_place": ag_ip, "all_gather_out_of_place": ag_oop,
                        "ratio_ag_in_over_out": [a / b for a, b in zip(ag_ip, ag_oop)],
                        "reduce_scatter_out_of_place": rs_oop,
                        "reduce_scatter_in_place_if_physics": rs_oop,
                        "reduce_scatter_in_place_if_fitted": [busbw(s, n, "reduce_scatter", 0.0) for s in SIZES],
                        "all_reduce": [busbw(s, n, "all_reduce", K / (2 * (n - 1))) for s in SIZES]}
        p["model_now"] = {op: [busbw(s, n, op, 0.0) for s in SIZES]
                          for op in ("all_gather", "reduce_scatter", "all_reduce")}
        out["predictions"][str(n)] = p
    at = SIZES.index(2**30)
    h1 = out["predictions"]["2"]["H1_rule"]
    out["criterion"] = {
        "in_place_ag_1gib_2gpu_band_gbps": [0.95 * h1["all_gather_in_place"][at], 1.05 * h1["all_gather_in_place"][at]],
        "ratio_sizes_bytes": [2**28, 2**29, 2**30],
        "ratio_ag_band": [[0.95 * r, 1.05 * r] for r in h1["ratio_ag_in_over_out"][-3:]],
        "ratio_rs_band": [0.95, 1.05],
        "reproduce_within": 0.03,
        "fail_if_ag_in_over_out_1gib_below": 1.05,
        "fail_if_in_place_ag_1gib_below_gbps": 0.95 * h1["all_gather_in_place"][at],
    }
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
