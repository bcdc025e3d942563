"""wave16 (issue 24), post hoc and labelled: does a physical rule for compute beside NCCL hold on the record?

The rule tested (the one issue 24 asked for, no constant fitted): a compute kernel beside a collective runs on the SMs
the collective leaves, ``sms - blocks`` (NCCL's channels, one block each, read from its INFO log), so its time grows by
its wave-quantised bound, ``ceil(tiles / (sms - blocks)) / ceil(tiles / sms) - 1``, over the share of its duration the
collective overlaps. Two records are read, nothing is run:

1. overlap15b (h200x2-2026-11-27-overlap15b): each GEMM timed alone and beside K queued all-gathers or reduce-scatters,
   K chosen so the collectives outlast the timed window (the share overlapped is 1 by construction; :func:`coverage`
   gives each case's collectives' time over its compute window). The bound is score_overlap15.py's, already in its
   scored.json; a case holds when the measured slowdown is within 5 points of it.
2. sync16 (h200x4-2026-11-28-sync16, per-rank compact traces): each compute kernel beside an NCCL kernel (more than
   0 % of it inside one) against the SAME operation alone (less than 10 % inside one) in the same step.
   score_sync16.beside_slowdown matched kernels by name only; cuBLAS runs different shapes under one kernel name
   (nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT in a FSDP 4 8B step: 27 us alone, 560 us beside: two different
   GEMMs of each layer's backward), so its +42-92 % (4 ranks) against +17-21 % (2 ranks) compares different work.
   Here a kernel's operation is its name with the names of the ``CONTEXT`` kernels before and after it on the
   compute streams (a layer's op at the same place in its layer); :func:`matched_slowdown` gives, by class, the
   kernels' time beside, the same operations' median time alone, and the share of that time the collectives
   overlap.

    .venv/bin/python scripts/gpu/wave16_beside.py   # writes scripts/gpu/wave16_beside.json
"""

from __future__ import annotations

import gzip
import json
import os
import re
import statistics
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MEAS = os.path.join(ROOT, "mlcalc", "data", "measured")
O15 = os.path.join(MEAS, "h200x2-2026-11-27-overlap15b")
S16 = os.path.join(MEAS, "h200x4-2026-11-28-sync16")
NCCL4 = os.path.join(MEAS, "h200x4-2026-11-27-coll10b", "nccl_default.1000.txt")  # 4 x H200, NCCL 2.28.9, rank 0
OUT = os.path.join(ROOT, "scripts", "gpu", "wave16_beside.json")
CONTEXT = 12  # kernels either side that name an operation (a Llama layer issues 30-75 compute kernels)
WITHIN = 0.05


def _load(path: str) -> Any:
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)


def coll_channels(log_path: str) -> int:
    """NCCL's collective channels (one thread block each) from its INFO line "N coll channels"."""
    with open(log_path) as f:
        for line in f:
            m = re.search(r"NCCL INFO (\d+) coll channels", line)
            if m:
                return int(m.group(1))
    raise ValueError(f"log_path={log_path!r}: no 'coll channels' line; expected an NCCL INFO log")


def coverage(rank: dict[str, Any]) -> dict[str, float]:
    """overlap15b: per case and collective, the K collectives' time (fastest window) over the n compute calls'."""
    out = {}
    for case, v in rank["compute"].items():
        for coll, b in v["beside"].items():
            out[f"{case}|{coll}"] = b["k"] * min(b["coll_ms_per_op"]) / (v["n"] * min(b["with_ms"]))
    return out


def overlap15b_rule() -> dict[str, Any]:
    """The wave-quantised SM-share rule at an overlapped share of 1 against overlap15b's GEMMs."""
    scored = _load(os.path.join(O15, "scored.json"))
    rows = [{"case": r["case"], "collective": r["collective"], "alone_ms": r["alone_ms"],
             "measured": r["measured_slowdown"], "rule": r["wave_quantised_bound"],
             "held": abs(r["measured_slowdown"] - r["wave_quantised_bound"]) <= WITHIN}
            for r in scored["rows"] if r["wave_quantised_bound"] is not None]
    cov = {}
    for rank in (0, 1):
        for key, x in coverage(_load(os.path.join(O15, f"overlap15_rank{rank}.json"))).items():
            cov[key] = min(cov.get(key, x), x)
    return {"rows": rows, "held": sum(r["held"] for r in rows), "of": len(rows),
            "above_rule": sum(r["measured"] > r["rule"] + WITHIN for r in rows),
            "below_rule": sum(r["measured"] < r["rule"] - WITHIN for r in rows),
            "min_collectives_over_compute": min(cov.values())}


def _kind(name: str) -> str:
    low = name.lower()
    if "nvjet" in name or "gemm" in low or "cutlass" in low:
        return "gemm"
    return "attention" if ("sdpa" in name or "flash" in low or "cudnn" in low) else "other"


def matched_slowdown(trace: dict[str, Any], context: int = CONTEXT) -> dict[str, dict[str, float]]:
    """sync16: over every profiled step but the first, by class, the seconds of kernels overlapping an NCCL kernel,
    the same operations' median seconds alone in the same step (operations with at least 2 alone), and the NCCL-
    overlapped seconds of those at their alone time."""
    res = {k: [0.0, 0.0, 0.0] for k in ("gemm", "attention", "other")}
    ev = trace["events"]
    first: list[tuple[float, float, str]] = []
    first_share: Any = None
    for st in trace["steps"][1:]:
        lo = next(float(e[2]) for e in ev if e[0] == "user_annotation" and e[1] == st["name"])
        hi = lo + st["wall_s"] * 1e6
        ks = sorted((float(e[2]), float(e[2]) + float(e[3]), str(e[1])) for e in ev
                    if e[0] == "kernel" and lo <= float(e[2]) < hi)
        nccl = [(a, b) for a, b, n in ks if "nccl" in n.lower()]
        comp = [(a, b, n) for a, b, n in ks if "nccl" not in n.lower()]

        def share(a: float, b: float, nccl: list[tuple[float, float]] = nccl) -> float:
            o = sum(min(b, y) - max(a, x) for x, y in nccl if x < b and y > a)
            return o / (b - a) if b > a else 0.0

        if not first:
            first, first_share = comp, share
        names = [n for _, _, n in comp]
        ops: dict[tuple[Any, ...], list[tuple[float, float]]] = {}
        for j, (a, b, n) in enumerate(comp):
            sig = (n, tuple(names[max(0, j - context):j]), tuple(names[j + 1:j + 1 + context]))
            ops.setdefault(sig, []).append((b - a, share(a, b)))
        for sig, v in ops.items():
            alone = [d for d, s in v if s < 0.1]
            if len(alone) < 2:
                continue
            m = statistics.median(alone)
            r = res[_kind(sig[0])]
            for d, s in v:
                if s > 0.0:
                    r[0] += d * 1e-6
                    r[1] += m * 1e-6
                    r[2] += s * m * 1e-6
    out: dict[str, Any] = {k: {"beside_s": x, "alone_s": y, "overlapped_s": z, "slowdown": x / y - 1 if y else 0.0,
                               "per_overlapped": (x - y) / z if z else 0.0} for k, (x, y, z) in res.items()}
    # the whole step (every kernel, matched or not), its first kept profiled step: compute busy, the part of it under
    # an NCCL kernel, and that part's excess at each class's matched rate r (d s r / (1 + r) a kernel)
    busy = under = excess = 0.0
    for a, b, n in first:
        s = first_share(a, b)
        r = out[_kind(n)]["per_overlapped"]
        busy += (b - a) * 1e-6
        under += s * (b - a) * 1e-6
        excess += s * (b - a) * r / (1 + r) * 1e-6
    out["step"] = {"compute_busy_s": busy, "under_nccl_s": under, "excess_at_matched_rates_s": excess,
                   "compute_alone_estimate_s": busy - excess}
    return out


def sync16_matched() -> dict[str, Any]:
    out = {}
    for f in sorted(os.listdir(os.path.join(S16, "traces"))):
        if "fsdp" not in f:  # the TP and one-GPU traces: no compute beside a collective to match
            continue
        out[f.removeprefix("probe-").removesuffix(".json.gz")] = matched_slowdown(_load(os.path.join(S16, "traces", f)))
    return out


def sync16_engine(matched: dict[str, Any], blocks: int, sms: int) -> dict[str, Any]:
    """Per FSDP configuration: the measured excess per second of compute under NCCL (every rank), against what the
    engine's COLLECTIVE_INTERFERENCE charges, ``blocks / sms`` of the collectives' priced time (the pass longer than
    the collectives: :func:`mlcalc.steptime.beside_collective_factor`), the NCCL busy time against that price, and the
    share of its device time the engine has beside a collective (priced collectives over device total, H200, k = 1)."""
    preds = _load(os.path.join(ROOT, "scripts", "gpu", "sync16_predictions.json"))
    comm, k1 = preds["comm_total_s"], preds["host_factors"].index(1.0)
    scored = _load(os.path.join(S16, "scored.json"))
    out = {}
    for cfg in sorted({k.rsplit("-r", 1)[0] for k in matched}):
        steps = [v["step"] for k, v in matched.items() if k.rsplit("-r", 1)[0] == cfg]
        priced = comm[f"{cfg}|NVIDIA H200"]
        row = next(r for r in scored["rows"] if r["config"] == cfg)
        device = preds["grid"][f"{cfg}|NVIDIA H200|queue"]["device_s"][k1]  # the device total the engine prices
        out[cfg] = {"excess_per_under_s": [x["excess_at_matched_rates_s"] / x["under_nccl_s"] for x in steps],
                    "under_nccl_share": [x["under_nccl_s"] / x["compute_busy_s"] for x in steps],
                    "excess_s": [x["excess_at_matched_rates_s"] for x in steps],
                    "compute_alone_estimate_s": [x["compute_alone_estimate_s"] for x in steps],
                    "engine_collectives_s": priced, "engine_growth_s": priced * blocks / sms,
                    "engine_device_s": device, "engine_share": min(1.0, priced / device),
                    "nccl_busy_s": row["nccl_busy_s_per_rank"], "sm_share": blocks / sms}
    return out


def main() -> dict[str, Any]:
    scored = _load(os.path.join(O15, "scored.json"))
    res = {"card": "NVIDIA H200 (both records)",
           "nccl_blocks": {"2 ranks (overlap15b trace)": scored["nccl_kernels"][0]["grid"][0],
                           "4 ranks (coll10b INFO log)": coll_channels(NCCL4)},
           "sms": 132, "context": CONTEXT, "within": WITHIN,
           "overlap15b": overlap15b_rule(), "sync16_matched": sync16_matched()}
    res["sync16_step"] = sync16_engine(res["sync16_matched"], res["nccl_blocks"]["4 ranks (coll10b INFO log)"], 132)
    with open(OUT, "w") as f:
        json.dump(res, f, indent=1)
        f.write("\n")
    return res


if __name__ == "__main__":
    r = main()
    o = r["overlap15b"]
    print(f"NCCL blocks {r['nccl_blocks']}; overlap15b: rule within {WITHIN:.0%} on {o['held']} of {o['of']} "
          f"({o['above_rule']} above, {o['below_rule']} below; collectives >= {o['min_collectives_over_compute']:.2f}"
          f" x the compute window)")
    for cfg, v in r["sync16_step"].items():
        print(cfg, {k: [round(x, 3) for x in x_] if isinstance(x_, list) else round(x_, 4) for k, x_ in v.items()})
    for cid, v in r["sync16_matched"].items():
        st = v["step"]
        print(cid, {k: (round(x["slowdown"], 3), round(x["per_overlapped"], 3), round(x["beside_s"] * 1e3, 1))
                    for k, x in v.items() if k != "step"}, {k: round(x * 1e3, 1) for k, x in st.items()})
