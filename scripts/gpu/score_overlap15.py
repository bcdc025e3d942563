"""Score overlap15's blind predictions (scripts/gpu/overlap15_predictions.json, landed in 9c6dec7 before any call)
against the 2-GPU record that ran them (mlcalc/data/measured/h200x2-2026-11-27-overlap15b/).

Per compute case and collective: the measured slowdown (median of 3 windows beside the collective over the median
of 5 windows alone, each rank), the blind prediction (S / (S - C) - 1 with C = 24 NCCL blocks, S = 132 SMs) and
its wave-quantised bound, and the collective's own time per operation beside the case against alone.
Writes the scores next to the record (scored.json) with ``--write``; prints them otherwise.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RECORD = ROOT / "mlcalc/data/measured/h200x2-2026-11-27-overlap15b"
PREDICTIONS = ROOT / "scripts/gpu/overlap15_predictions.json"
# No scoring rule was committed with the predictions; this one was chosen after the call and is labelled so: a case
# holds when its measured slowdown is within 5 points of the predicted one (+22.2 % predicted: 17.2 to 27.2 %).
WITHIN = 0.05


def score() -> dict:
    ranks = [json.loads((RECORD / f"overlap15_rank{r}.json").read_text()) for r in (0, 1)]
    card = ranks[0]["device"]
    pred = json.loads(PREDICTIONS.read_text())["cards"][card]["cases"]
    coll_alone = {c: statistics.median(ranks[0]["collectives"][c]["alone_ms"]) for c in ranks[0]["collectives"]}
    rows = []
    for name, rec in ranks[0]["compute"].items():
        alone_ms = statistics.median(rec["alone_ms"])
        for coll in rec["beside"]:
            measured = [statistics.median(r["compute"][name]["beside"][coll]["with_ms"])
                        / statistics.median(r["compute"][name]["alone_ms"]) - 1 for r in ranks]
            p = pred[f"{name}|{coll}"]
            m = statistics.mean(measured)
            coll_beside = statistics.median(rec["beside"][coll]["coll_ms_per_op"])
            rows.append({"case": name, "collective": coll, "alone_ms": round(alone_ms, 4),
                         "measured_slowdown": round(m, 4), "rank_slowdowns": [round(x, 4) for x in measured],
                         "predicted_slowdown": p["slowdown"], "wave_quantised_bound": p.get("wave_quantised_bound"),
                         "held": abs(m - p["slowdown"]) <= WITHIN,
                         "collective_slowdown": round(coll_beside / coll_alone[coll] - 1, 4)})
    return {"card": card, "nccl_kernels": ranks[0].get("nccl_kernels", []), "within": WITHIN,
            "held": sum(r["held"] for r in rows), "cases": len(rows), "rows": rows}


def main(argv: list[str]) -> None:
    s = score()
    for r in s["rows"]:
        print(f"{r['case']:16s} {r['collective']:15s} alone {r['alone_ms']:7.4f} ms  measured {r['measured_slowdown']:+.1%}"
              f"  predicted {r['predicted_slowdown']:+.1%}  wave bound {r['wave_quantised_bound'] or 0:+.1%}  held {r['held']!s:5s}  collective {r['collective_slowdown']:+.1%}")
    print(f"{s['card']}: {s['held']} of {s['cases']} within {s['within'] * 100:.0f} points of the predicted slowdown (rule chosen after the call)")
    if "--write" in argv:
        (RECORD / "scored.json").write_text(json.dumps(s, indent=1) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
