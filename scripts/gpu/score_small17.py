"""Score small17's call by the rule fixed before it (scripts/gpu/small17_predictions.json "rule").

    python scripts/gpu/score_small17.py RUN_DIR   (RUN_DIR holds graph.json, graph_logged.json, tuning.json; writes
                                                   RUN_DIR/scored.json)
"""

from __future__ import annotations

import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from mlcalc import measured  # noqa: E402

ALGO = {"RING": "ring", "TREE": "tree"}
PROTO = {"LL": "LL", "LL128": "LL128", "SIMPLE": "Simple"}


def _times(path):
    d = json.load(open(path))
    return {(p["coll"], p["n"], p["size_bytes"]): p["time_s"] for p in d["points"] if p["time_s"]}, d


def _score(rows, observed, key):
    errs = [r[key] / observed[(r["coll"], r["n"], r["size_bytes"])] - 1 for r in rows
            if (r["coll"], r["n"], r["size_bytes"]) in observed]
    return {"within": sum(abs(e) <= 0.2 for e in errs), "of": len(errs),
            "median_abs_error": statistics.median(abs(e) for e in errs) if errs else None,
            "median_error": statistics.median(errs) if errs else None}


def main(run_dir: str) -> None:
    pred = json.load(open(os.path.join(HERE, "small17_predictions.json")))
    rows = pred["rows"]
    graph, meta = _times(os.path.join(run_dir, "graph.json"))
    logged_t, _ = _times(os.path.join(run_dir, "graph_logged.json"))
    tuning = json.load(open(os.path.join(run_dir, "tuning.json")))["points"]
    func = {"all_reduce": "AllReduce", "all_gather": "AllGather", "reduce_scatter": "ReduceScatter"}
    logged = {}
    for p in tuning:
        per_rank = p["size_bytes"] // (1 if p["coll"] == "all_reduce" else p["n"])
        names = sorted({f"{ALGO[c['algo']]}/{PROTO[c['proto']]}" for c in p["calls"]
                        if c["func"] == func[p["coll"]] and c["bytes"] in (p["size_bytes"], per_rank)})
        logged[(p["coll"], p["n"], p["size_bytes"])] = names
    lat16 = {(p.collective, p.n_ranks, p.size_bytes): p.time_s for p in measured.small_collectives()
             if p.engine == "nccl" and p.mode == "graph" and p.nccl_proto == "unset" and not p.nccl_log}
    blind = [r for r in rows if r["blind"]]
    base = [r for r in rows if not r["blind"]]
    points = []
    for r in rows:
        k = (r["coll"], r["n"], r["size_bytes"])
        t = graph.get(k)
        points.append({**r, "graph_s": t, "graph_logged_s": logged_t.get(k), "logged_pick": logged.get(k, []),
                       "proto_error": r["proto_s"] / t - 1 if t else None,
                       "law_error": r["law_s"] / t - 1 if t else None,
                       "lat16_s": lat16.get(k), "vs_lat16": t / lat16[k] - 1 if t and k in lat16 else None})
    out = {"call": "small17", "rule": pred["rule"], "predictions": "scripts/gpu/small17_predictions.json",
           "engine_commit_of_predictions": pred["engine_commit"], "device_name": meta.get("device_name"),
           "nccl": meta.get("nccl"), "torch": meta.get("torch"),
           "blind": {"proto_s": _score(blind, graph, "proto_s"), "law_s": _score(blind, graph, "law_s")},
           "baseline": {"proto_s": _score(base, graph, "proto_s"), "law_s": _score(base, graph, "law_s"),
                        "median_vs_lat16": statistics.median(p["vs_lat16"] for p in points if p["vs_lat16"] is not None)},
           "logged_run": {"proto_s": _score(rows, logged_t, "proto_s"), "law_s": _score(rows, logged_t, "law_s")},
           "logged_pick_equals_pick": {"equal": sum(p["logged_pick"] == [p["pick"]] for p in points),
                                       "of": sum(bool(p["logged_pick"]) for p in points)},
           "points": points}
    json.dump(out, open(os.path.join(run_dir, "scored.json"), "w"), indent=1)
    for k in ("blind", "baseline", "logged_run", "logged_pick_equals_pick"):
        print(k, json.dumps(out[k]))


if __name__ == "__main__":
    main(sys.argv[1])
