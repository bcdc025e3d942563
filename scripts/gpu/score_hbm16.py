"""Score hbm16's blind predictions (scripts/gpu/hbm16_predictions.json, landed before the call) against the record
of the call (mlcalc/data/measured/*-2026-11-28-hbm16/hbm16_w4.json and hbm16_w2.json), by the rule fixed in
scripts/gpu/predict_hbm16.py: the HBM rule holds when the 8 memory-bound cases (copy and add x all_gather and
reduce_scatter x 4 and 2 ranks) are within 5 points of the prediction on at least 6 of them. Also printed: the
compute-bound cases against the SM rule, and the collectives' stretch over the compute window.
Writes scored.json next to the record with ``--write``.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))
PREDICTIONS = ROOT / "scripts/gpu/hbm16_predictions.json"


def record() -> Path:
    found = sorted((ROOT / "mlcalc/data/measured").glob("*-2026-11-28-hbm16"))
    if len(found) != 1:
        raise ValueError(f"record: expected one *-2026-11-28-hbm16 folder, found {[p.name for p in found]}")
    return found[0]


def stretch(rec: dict, coll: str, c_alone: float) -> float:
    """The collective's slowdown over the compute window: k collectives took T (wall) beside a window W of compute that
    they outlast; they did W rho of their work in W and the rest at their own pace: rho = 1 - (T - k c) / W."""
    b = rec["beside"][coll]
    k = b["k"]
    rhos = []
    for t_op, w_ms in zip(b["coll_ms_per_op"], b["with_ms"]):
        window = w_ms * rec["n"]
        rhos.append(1.0 - (t_op * k - k * c_alone) / window)
    rho = statistics.median(rhos)
    return 1.0 / rho - 1.0 if rho > 0 else float("inf")


def score() -> dict:
    pred = json.loads(PREDICTIONS.read_text())
    within, needed = pred["scoring"]["within"], pred["scoring"]["memory_bound_needed"]
    rec_dir = record()
    rows, card = [], None
    for w in (4, 2):
        ranks = json.loads((rec_dir / f"hbm16_w{w}.json").read_text())["ranks"]
        card = ranks[0]["device"]
        p = pred["cards"][card]["worlds"][str(w)]
        for name, rec0 in ranks[0]["compute"].items():
            for coll in rec0["beside"]:
                per_rank = [statistics.median(r["compute"][name]["beside"][coll]["with_ms"])
                            / statistics.median(r["compute"][name]["alone_ms"]) - 1 for r in ranks]
                m = statistics.mean(per_rank)
                pc = p[f"{name}|{coll}"]
                st = [stretch(r["compute"][name], coll, statistics.median(r["collectives"][coll]["alone_ms"]))
                      for r in ranks]
                rows.append({"world": w, "case": name, "collective": coll, "class": pc["class"],
                             "alone_ms": round(statistics.median(rec0["alone_ms"]), 4),
                             "measured": round(m, 4), "ranks": [round(x, 4) for x in per_rank],
                             "predicted": pc["slowdown"], "l2_bound": pc.get("l2_bound"),
                             "held": abs(m - pc["slowdown"]) <= within,
                             "collective_stretch": round(statistics.mean(st), 4)})
        for coll in ranks[0]["collectives"]:
            alone = statistics.mean(statistics.median(r["collectives"][coll]["alone_ms"]) for r in ranks)
            b = ranks[0]["collectives"][coll]["bytes"]
            rows.append({"world": w, "case": "comm-alone", "collective": coll, "class": "collective",
                         "alone_ms": round(alone, 4), "busbw_GBps": round(b * (w - 1) / w / alone / 1e6, 1),
                         "priced_busbw_GBps": p[f"comm|{coll}"]["busbw_GBps"]})
    # After the call, labelled (not part of the committed rule): HBM bytes per second of the kernel and of NCCL while
    # both run, NCCL's counted at hbm_touches_per_byte (full count and L2 count) x its measured busbw alone, each over
    # its slowdown, against the kernel's own rate alone (copy: 2 operands moved, add: 3).
    import predict_hbm16 as ph
    moved = {name: nbytes * (2 if kind == "copy" else 3) for name, nbytes, kind in ph.STREAMS}
    busbw = {(r["world"], r["collective"]): r["busbw_GBps"] * 1e9 for r in rows if r["class"] == "collective"}
    for r in rows:
        if r["class"] == "memory":
            k_alone = moved[r["case"]] / (r["alone_ms"] / 1e3)
            k_beside = k_alone / (1 + r["measured"])
            for tag, l2 in (("", False), ("_l2", True)):
                nccl = busbw[(r["world"], r["collective"])] * ph.hbm_touches_per_byte(r["world"], l2)
                r[f"hbm_sum_over_alone{tag}"] = round((k_beside + nccl / (1 + r["collective_stretch"])) / k_alone, 4)
            r["kernel_alone_TBps"] = round(k_alone / 1e12, 3)
    mem = [r for r in rows if r["class"] == "memory"]
    comp = [r for r in rows if r["class"] == "compute"]
    held = sum(r["held"] for r in mem)
    return {"card": card, "within": within, "needed": needed, "memory_held": held, "memory_cases": len(mem),
            "holds": held >= needed, "compute_held": sum(r["held"] for r in comp), "compute_cases": len(comp),
            "stretch_within": sum(abs(r["collective_stretch"]) <= within for r in mem + comp),
            "rows": rows}


def main(argv: list[str]) -> None:
    s = score()
    for r in s["rows"]:
        if r["class"] == "collective":
            print(f"w{r['world']} {r['collective']:15s} alone {r['alone_ms']:.4f} ms busbw {r['busbw_GBps']} GB/s "
                  f"(priced {r['priced_busbw_GBps']})")
            continue
        print(f"w{r['world']} {r['case']:15s} {r['collective']:15s} {r['class']:7s} alone {r['alone_ms']:8.4f} ms  "
              f"measured {r['measured']:+.1%} {r['ranks']}  predicted {r['predicted']:+.1%}  "
              f"L2 bound {r['l2_bound'] or 0:+.1%}  held {r['held']!s:5s}  collective {r['collective_stretch']:+.1%}")
    for r in s["rows"]:
        if r["class"] == "memory":
            print(f"w{r['world']} {r['case']} {r['collective']}: kernel alone {r['kernel_alone_TBps']} TB/s; kernel + NCCL "
                  f"beside / kernel alone {r['hbm_sum_over_alone']:.3f} (L2 count {r['hbm_sum_over_alone_l2']:.3f}) (after the call)")
    print(f"{s['card']}: memory-bound {s['memory_held']} of {s['memory_cases']} within {s['within'] * 100:.0f} points "
          f"(needed {s['needed']}): {'HOLDS' if s['holds'] else 'FAILS'}; compute-bound {s['compute_held']} of "
          f"{s['compute_cases']}; collective unslowed (within 5 points) {s['stretch_within']}")
    if "--write" in argv:
        (record() / "scored.json").write_text(json.dumps(s, indent=1) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
