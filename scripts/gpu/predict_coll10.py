"""coll10 (issue 24): the channel rule's predictions for a 2-GPU channel sweep, written before the GPU call.

Rule: mlcalc.network.nccl_ring_busbw_bytes_per_s (NCCL 2.28.9's ring kernel steps, channels sending together),
with the DGX-H100 fabric's NVLink (370 GB/s achievable) and the channel copy rate stored in links.json (38.4 GB/s,
measured on 2 H200s with 8 channels, coll9b). Predicted: bus bandwidth at 1 GiB over 2 GPUs of all-gather (out of
place, in place), reduce-scatter and all-reduce at NCCL_MIN_NCHANNELS = NCCL_MAX_NCHANNELS = C, and NCCL's default
channel count from its search (mlcalc.network.nccl_ring_channels: 24).
Run: .venv/bin/python scripts/gpu/predict_coll10.py > scripts/gpu/coll10_predictions.json
coll10b (the same rule over 4 GPUs, NCCL's default and 8, 16, 32 channels):
.venv/bin/python scripts/gpu/predict_coll10.py 4 > scripts/gpu/coll10b_predictions.json
"""

from __future__ import annotations

import json
import sys
from datetime import datetime, timezone

from mlcalc import network as net

CHANNELS = (1, 2, 4, 8, 12, 16, 24, 32)
BAND = 0.15


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    channels = CHANNELS if n == 2 else (8, 16, 24, 32)
    fab = net.fabric("DGX-H100", 1, gpus_per_node=n)
    link, copy = fab.intra_bytes_per_s, fab.channel_copy_bytes_per_s
    rows = []
    for c in channels:
        for op, in_place in (("all_gather", False), ("all_gather", True), ("reduce_scatter", False),
                             ("all_reduce", True)):
            bw = net.nccl_ring_busbw_bytes_per_s(op, n, c, link, copy, in_place) / 1e9
            rows.append({"channels": c, "op": op, "mode": "in_place" if in_place else "out_of_place",
                         "predicted_busbw_GBps": round(bw, 1), "band": [round(bw * (1 - BAND), 1),
                                                                         round(bw * (1 + BAND), 1)]})
    doc = {"written_utc": datetime.now(timezone.utc).isoformat(timespec="minutes"),
           "rule": "mlcalc.network.nccl_ring_busbw_bytes_per_s", "n_gpus": n, "link_GBps": link / 1e9,
           "channel_copy_GBps": copy / 1e9, "default_channels": net.nccl_ring_channels(18, 90).channels,
           "pass": ("every case with 16 or more channels within +-15% at 1 GiB, and NCCL's INFO log shows 24 channels "
                    "by default (its search: 18 NVLinks x 20.6 GB/s to the NVSwitch, as on 2 GPUs); on 8 channels the "
                    "rule's full count of each step's second write is expected to under-predict the all-gather, as "
                    "on 2 GPUs") if n != 2 else
                   "every case with 12 or more channels within +-15% at 1 GiB; NCCL's INFO log shows 24 channels "
                   "by default; with 8 or fewer channels the rule's one copy rate is expected to miss the "
                   "out-of-place all-gather by about -12% (its first step writes twice) and reduce-scatter by about "
                   "+9% (coll9b's H200 numbers), which the rule does not model beyond counting stores",
           "rows": rows}
    print(json.dumps(doc, indent=1))


if __name__ == "__main__":
    main()
