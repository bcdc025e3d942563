"""Rank 0's NCCL INFO log of lat16_bench.py --part nccl -> tuning.json: which algorithm and protocol NCCL ran for each
measured point (its per-call 'Bytes -> Algo' lines between the script's MARK lines) and its tuning tables."""

import collections
import json
import re
import sys

MARK = re.compile(r"MARK (\w+) proto=(\w+) n=(\d+) coll=(\w+) size=(\d+)")
CALL = re.compile(r"(AllReduce|AllGather|ReduceScatter): (\d+) Bytes -> Algo (\w+) proto (\w+) channel\{Lo\.\.Hi\}=\{(\d+)\.\.(\d+)\}")


def main(log_path, out_path, tables_path):
    points, key, tables = [], None, []
    seen = collections.Counter()
    for line in open(log_path, errors="replace"):
        m = MARK.search(line)
        if m:
            if key:
                points.append({**key, "calls": [dict(zip(("func", "bytes", "algo", "proto", "ch_lo", "ch_hi"), k)) | {"count": c}
                                                for k, c in seen.items()]})
            key = dict(zip(("mode", "proto_env", "n", "coll", "size_bytes"), m.groups()))
            key["n"], key["size_bytes"] = int(key["n"]), int(key["size_bytes"])
            seen = collections.Counter()
            continue
        c = CALL.search(line)
        if c and key:
            f, b, a, p, lo, hi = c.groups()
            seen[(f, int(b), a, p, int(lo), int(hi))] += 1
        elif "NCCL INFO" in line and ("|" in line or "threadThresholds" in line or "NCCL_PROTO" in line or "Channel 00/" in line):
            tables.append(line.rstrip())
    if key:
        points.append({**key, "calls": [dict(zip(("func", "bytes", "algo", "proto", "ch_lo", "ch_hi"), k)) | {"count": c}
                                        for k, c in seen.items()]})
    json.dump({"source": "rank 0 NCCL INFO log (NCCL_DEBUG_SUBSYS=INIT,ENV,TUNING)", "points": points}, open(out_path, "w"), indent=1)
    open(tables_path, "w").write("\n".join(tables[:4000]) + "\n")


if __name__ == "__main__":
    main(*sys.argv[1:4])
