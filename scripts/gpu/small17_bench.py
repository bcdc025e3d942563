"""small17's blind check of the protocol law (mlcalc.network.nccl_protocol_time): lat16's harness (lat16_bench.py, its
buffers, graph timing and NCCL log markers, imported unchanged) on points lat16 did not run, under NCCL's defaults.

- blind: sizes 3 x 2**k (12 KiB - 24 MiB, which lat16's powers of two never hit) over 2, 3 and 4 GPUs (3 GPUs: a
  ring lat16 never ran);
- baseline: lat16's own case sizes (8 KiB, 64 KiB, 512 KiB, 4 MiB, 32 MiB) over 2 and 4 GPUs, in the same call.
Each point: 32 calls captured in a CUDA graph, replayed; the slowest rank's median of 3 blocks (lat16's rule).
"""

import argparse
import importlib.util
import json
import os
import statistics
import sys
import time
import traceback

import torch
import torch.distributed as dist

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location("lat16_bench", os.path.join(HERE, "lat16_bench.py"))
lat = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(lat)

BLIND = [3 * 2**k for k in (12, 13, 15, 17, 19, 20, 21, 23)]  # 12, 24, 96, 384 KiB, 1.5, 3, 6, 24 MiB
BASELINE = [2**13, 2**16, 2**19, 2**22, 2**25]
COLLS = lat.COLLS


def counts():
    return (4, 3, 2) if dist.get_world_size() >= 4 else (2,)


def sizes(n):
    return sorted(BLIND + ([] if n == 3 else BASELINE))


def run(args, out):
    lat.counts = counts  # make_groups builds a communicator for each count
    rank = dist.get_rank()
    deadline = time.time() + args.budget_s
    groups = lat.make_groups("unset")
    for n in counts():
        if rank >= n:
            continue
        for coll in COLLS:
            for size in sizes(n):
                if time.time() > deadline:
                    lat.log("DEADLINE", n, coll, size)
                    return
                a, b = lat.buffers(coll, size, n)
                fn = lat.call(coll, groups[n], a, b)
                if rank == 0:
                    lat.log(f"MARK graph proto=unset n={n} coll={coll} size={size}")
                try:
                    t, err = lat.graph_time(fn, size, groups[n]), ""
                except Exception as e:  # noqa: BLE001 - record and go on
                    t, err = [], f"{type(e).__name__}: {e}"
                    lat.log("ERROR", n, coll, size, err)
                every = lat.gather_times(t, groups[n], n)
                if rank == 0:
                    out["points"].append({"mode": "graph", "proto": "unset", "n": n, "coll": coll, "size_bytes": size,
                                          "blind": size in BLIND, "rank_block_s": every, "error": err,
                                          "time_s": max(statistics.median(x) for x in every) if all(every) else None})
                del a, b
        if rank == 0:
            json.dump(out, open(args.out, "w"), indent=1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--budget-s", type=float, default=150.0)
    args = ap.parse_args()
    torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    dist.init_process_group("nccl")
    out = {"tool": "scripts/gpu/small17_bench.py", "dtype": "bf16", "blind_sizes": BLIND, "baseline_sizes": BASELINE,
           "torch": torch.__version__, "nccl": ".".join(map(str, torch.cuda.nccl.version())),
           "device_name": torch.cuda.get_device_name(), "world_size": dist.get_world_size(),
           "env": {k: v for k, v in os.environ.items() if k.startswith(("NCCL_", "TORCH_SYMM", "NVSHMEM_", "CUDA_"))},
           "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "points": []}
    t0 = time.time()
    try:
        run(args, out)
    except Exception:  # noqa: BLE001
        out["fatal"] = traceback.format_exc()
        lat.log(out["fatal"])
    out["wall_s"] = time.time() - t0
    if dist.get_rank() == 0:
        json.dump(out, open(args.out, "w"), indent=1)
    try:
        dist.barrier()
        dist.destroy_process_group()
    except Exception:  # noqa: BLE001
        pass


if __name__ == "__main__":
    sys.exit(main())
