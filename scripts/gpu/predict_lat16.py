"""The lat16 call's predictions, written BEFORE the call to ``scripts/gpu/lat16_predictions.json``.

The call (``scripts/gpu/run_lat16.sh``, ``lat16_bench.py``) times all-reduce, all-gather and reduce-scatter of 1 KiB to
64 MiB (bf16; the size is nccl-tests' S, the whole buffer) over 4 GPUs of one NVLink/NVSwitch node and over 2 of them,
eager and captured in a CUDA graph, under NCCL's defaults and with NCCL_PROTO forced to LL, LL128 and Simple, and
torch's symmetric-memory one-shot / two-shot all-reduce. Asked as 4 x H100; an H200's NVLink 4 is the H100's, so both
cards are predicted alike (the book's DGX-H100 fabric). Nothing the call measures goes into them.

Two laws, each for every point:
- ``law_s``: today's law, ``mlcalc.network.fabric_collective_time`` (Ring/Simple latency 8.4 us + 3.4 us a step, the
  ring kernel's bus bandwidth on 24 channels);
- ``nccl_s`` / ``nccl_pick``: NCCL 2.28.9's own tuning model with its choice of algorithm and protocol
  (``mlcalc.network.nccl_tuned_pick``, constants in links.json "nccl_tuning"), and ``nccl_proto_s``: the same model's
  time for each protocol alone (what NCCL_PROTO forces).

    python scripts/gpu/predict_lat16.py   (writes scripts/gpu/lat16_predictions.json)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime, timezone

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from mlcalc import network as net  # noqa: E402

SIZES = [2**k for k in range(10, 27)]
COLLS = ("all_reduce", "all_gather", "reduce_scatter")
COUNTS = (4, 2)
TOLERANCE = 0.20
#: The sizes the accuracy page will carry as checked cases (fixed now, before the call).
CASE_SIZES = (2**13, 2**16, 2**19, 2**22, 2**25)

RULE = (
    "lat16, fixed before the call. Observed: for each (collective, GPUs, size) the device time per collective of the "
    "CUDA-graph replay under NCCL's defaults (NCCL_PROTO unset; nccl_eager.json's graph points, taken with NCCL's log "
    "off; the slowest rank's median of 3 blocks). Error = predicted / observed - 1. (1) Score: the points within "
    f"+-{TOLERANCE:.0%} out of 102 (3 collectives x 2 GPU counts x 17 sizes), for law_s and nccl_s; the law with more "
    "points within is the better, a tie to the lower median |error|. (2) The engine's law takes NCCL's protocol choice "
    "(nccl_s) if and only if nccl_s scores more points within than law_s. (3) Stated, not deciding: the same score on "
    "the eager points (host launch included), the share of points where NCCL's logged algorithm/protocol equals "
    "nccl_pick, and for each forced protocol nccl_proto_s against the graph time under that NCCL_PROTO. (4) The "
    "accuracy page's new checked cases are the graph points under NCCL's defaults at "
    + ", ".join(f"{s // 1024} KiB" for s in CASE_SIZES) + " (30 cases, target +-20 %), predicted by whichever law "
    "the engine holds after (2); their committed errors under both laws stay in this file. (5) torch's one-shot and "
    "two-shot all-reduce: no law predicts them; measured and recorded only."
)


def rows() -> list[dict]:
    out = []
    for n in COUNTS:
        fab = net.fabric("DGX-H100", 1, gpus_per_node=n)
        for coll in COLLS:
            for size in SIZES:
                law = net.fabric_collective_time(size, fab, coll).time_s
                pick = net.nccl_tuned_pick(size, n, coll)
                per_proto = {p: net.nccl_tuned_pick(size, n, coll, protocols=(p,)) for p in net.NCCL_PROTOCOLS}
                out.append({"coll": coll, "n": n, "size_bytes": size, "law_s": law, "nccl_s": pick.time_s,
                            "nccl_pick": f"{pick.algorithm}/{pick.protocol}",
                            "nccl_proto_s": {p: r.time_s for p, r in per_proto.items()},
                            "nccl_proto_pick": {p: f"{r.algorithm}/{r.protocol}" for p, r in per_proto.items()}})
    return out


def main() -> None:
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=os.path.dirname(HERE)).stdout.strip()
    doc = {"call": "lat16", "written_utc": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
           "engine_commit": commit, "rule": RULE, "tolerance": TOLERANCE, "case_sizes_bytes": list(CASE_SIZES),
           "fabric": "mlcalc.network.fabric('DGX-H100', 1, gpus_per_node=n)",
           "nccl_model": "mlcalc.network.nccl_tuned_pick (NCCL 2.28.9 tuning.cc at dbc86fd, links.json nccl_tuning)",
           "rows": rows()}
    path = os.path.join(HERE, "lat16_predictions.json")
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    print(f"wrote {path}: {len(doc['rows'])} rows")


if __name__ == "__main__":
    main()
