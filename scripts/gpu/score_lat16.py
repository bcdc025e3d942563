"""Score the lat16 call against its committed predictions (scripts/gpu/lat16_predictions.json, landed before the
call) by the rule written there, and write the run folder's compact table.

Reads mlcalc/data/measured/h200x4-2026-11-28-lat16/: nccl_eager.json (eager and graph under NCCL's defaults, NCCL's log
off), nccl_graph.json (graphs under NCCL_PROTO unset / LL / LL128 / Simple, NCCL's log on), symm.json (torch's
one-shot and two-shot all-reduce) and tuning.json (rank 0's logged algorithm and protocol per point). Writes there:
- small_collectives.json: one row per measured point (the slowest rank's median of 3 blocks) with NCCL's logged pick;
- scored.json: each law's error at every point, the rule's scores and decision, the logged picks against the model's.

    python scripts/gpu/score_lat16.py
"""

from __future__ import annotations

import json
import os
import statistics

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
RUN = os.path.join(ROOT, "mlcalc", "data", "measured", "h200x4-2026-11-28-lat16")
FUNCS = {"all_reduce": "AllReduce", "all_gather": "AllGather", "reduce_scatter": "ReduceScatter"}


def _load(name: str) -> dict:
    with open(os.path.join(RUN, name)) as f:
        return json.load(f)


def logged_picks() -> dict[tuple[str, str, int, int], dict]:
    """(NCCL_PROTO, collective, GPUs, size) -> the measured call's logged algorithm/protocol and channels. A point's
    log also holds the timing's barriers and gathers: only calls of the measured function and byte count are kept
    (NCCL logs count x element size: the whole buffer for an all-reduce, one rank's share for the other two)."""
    out = {}
    for p in _load("tuning.json")["points"]:
        want = p["size_bytes"] if p["coll"] == "all_reduce" else p["size_bytes"] // p["n"]
        calls = [c for c in p["calls"] if c["func"] == FUNCS[p["coll"]] and c["bytes"] == want]
        picks = sorted({f"{c['algo'].lower()}/{c['proto'].replace('SIMPLE', 'Simple')}" for c in calls})
        chans = sorted({c["ch_hi"] - c["ch_lo"] + 1 for c in calls})
        out[(p["proto_env"], p["coll"], p["n"], p["size_bytes"])] = {
            "picks": picks, "channels": chans, "calls": sum(c["count"] for c in calls)}
    return out


def table() -> list[dict]:
    picks = logged_picks()
    rows = []
    for name, log_on in (("nccl_eager.json", False), ("nccl_graph.json", True)):
        for p in _load(name)["points"]:
            key = (p["proto"], p["coll"], p["n"], p["size_bytes"])
            row = {"engine": "nccl", "mode": p["mode"], "nccl_proto": p["proto"], "nccl_log": log_on,
                   "coll": p["coll"], "n": p["n"], "size_bytes": p["size_bytes"], "time_s": p["time_s"]}
            if log_on:
                row["logged"] = picks[key]["picks"]
                row["channels"] = picks[key]["channels"]
            rows.append(row)
    for p in _load("symm.json")["points"]:
        rows.append({"engine": f"torch_symm_mem_{p['kernel']}", "mode": p["mode"], "coll": "all_reduce", "n": p["n"],
                     "size_bytes": p["size_bytes"], "time_s": p["time_s"]})
    return rows


def score(pred: dict, observed: dict, law: str, tol: float) -> dict:
    errs = {k: pred[k][law] / v - 1 for k, v in observed.items()}
    return {"within": sum(abs(e) <= tol for e in errs.values()), "of": len(errs),
            "median_abs_error": statistics.median(abs(e) for e in errs.values())}


def main() -> None:
    with open(os.path.join(HERE, "lat16_predictions.json")) as f:
        doc = json.load(f)
    tol = doc["tolerance"]
    pred = {(r["coll"], r["n"], r["size_bytes"]): r for r in doc["rows"]}
    rows = table()
    graph = {(r["coll"], r["n"], r["size_bytes"]): r["time_s"] for r in rows
             if r["engine"] == "nccl" and not r["nccl_log"] and r["mode"] == "graph"}
    eager = {(r["coll"], r["n"], r["size_bytes"]): r["time_s"] for r in rows
             if r["engine"] == "nccl" and r["mode"] == "eager"}
    picks = logged_picks()
    s = {law: score(pred, graph, law, tol) for law in ("law_s", "nccl_s")}
    better = max(("law_s", "nccl_s"), key=lambda w: (s[w]["within"], -s[w]["median_abs_error"]))
    agree = sum(picks[("unset",) + k]["picks"] == [r["nccl_pick"]] for k, r in pred.items())
    forced = {p: sum(picks[(p,) + k]["picks"] == [r["nccl_proto_pick"][p]] for k, r in pred.items())
              for p in ("LL", "LL128", "Simple")}
    forced_err = {}
    for p in ("LL", "LL128", "Simple"):
        obs = {(r["coll"], r["n"], r["size_bytes"]): r["time_s"] for r in rows
               if r["engine"] == "nccl" and r.get("nccl_proto") == p and r["mode"] == "graph"}
        errs = [pred[k]["nccl_proto_s"][p] / v - 1 for k, v in obs.items()]
        forced_err[p] = {"within": sum(abs(e) <= tol for e in errs), "of": len(errs),
                         "median_error": statistics.median(errs)}
    points = [{"coll": k[0], "n": k[1], "size_bytes": k[2], "graph_s": graph[k], "eager_s": eager[k],
               "law_s": pred[k]["law_s"], "nccl_s": pred[k]["nccl_s"], "law_error": pred[k]["law_s"] / graph[k] - 1,
               "nccl_error": pred[k]["nccl_s"] / graph[k] - 1, "nccl_pick": pred[k]["nccl_pick"],
               "logged_pick": picks[("unset",) + k]["picks"]} for k in sorted(graph)]
    out = {"call": "lat16", "rule": doc["rule"], "predictions": "scripts/gpu/lat16_predictions.json",
           "engine_commit_of_predictions": doc["engine_commit"],
           "card": "4 x NVIDIA H200 (asked nvidia-h100-x4), NCCL 2.28.9, torch 2.11.0+cu130",
           "graph_scores": s, "eager_scores": {law: score(pred, eager, law, tol) for law in ("law_s", "nccl_s")},
           "better": better, "engine_takes_nccl_choice": better == "nccl_s" and s["nccl_s"]["within"] > s["law_s"]["within"],
           "logged_pick_equals_model": {"unset": agree, "of": len(pred), "forced": forced},
           "forced_protocol_model_vs_graph": forced_err, "points": points}
    with open(os.path.join(RUN, "scored.json"), "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    head = {"run": "h200x4-2026-11-28-lat16", "tool": "scripts/gpu/lat16_bench.py",
            "what": "time per collective, bf16, size = nccl-tests' S (the whole buffer); the slowest rank's "
                    "median of 3 timed blocks; graph = CUDA-graph replay of 32 captured calls, eager = a loop "
                    "of eager calls between CUDA events; nccl_log: NCCL's INFO log on (its per-call lines are "
                    "written at capture only); logged: the algorithm/protocol NCCL's log names for the point",
            "card": out["card"]}
    with open(os.path.join(RUN, "small_collectives.json"), "w") as f:  # one row a line: the site's wheel carries it
        f.write(json.dumps(head)[:-1] + ', "rows": [\n')
        f.write(",\n".join(json.dumps({**r, "time_s": round(r["time_s"], 10)}, separators=(",", ":")) for r in rows))
        f.write("\n]}\n")
    print(json.dumps({k: out[k] for k in ("graph_scores", "eager_scores", "better", "engine_takes_nccl_choice",
                                          "logged_pick_equals_model", "forced_protocol_model_vs_graph")}, indent=1))


if __name__ == "__main__":
    main()
