"""Write the h100mg calls' stated causes from their own data (session 37, issue 24): ``python
scripts/gpu/causes_h100mg.py`` from the repository root. Both calls asked ``nvidia-h100-x2`` and got 2 x H200 (two
hosts); both ran ``scripts/gpu/run_h100mg.sh`` against ``scripts/gpu/h100mg_predictions.json``, committed and landed
before the first.

Writes each run's ``blind_misses.json`` (the engine's default, blind: causes of its misses, if any) and ``misses.json``
(the record's misses: the launch-floor rule at the case's own pace, :func:`mlcalc.distruns.record_step_s`), and prints
the comparison of hosts that the causes quote: the baseline case (meter12's TP 2 1B at 8 x 1024, run unchanged on all
five hosts) and every metered case's host work against the engine's (:func:`mlcalc.distruns.host_work`). Every number
in the texts is computed here from the calls' files; no constant is chosen."""

from __future__ import annotations

import json
import pathlib
import statistics
import sys

from mlcalc import blindruns, distruns

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from causes_meter12b import floor_pace, k, name, pct  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
MEAS = ROOT / "mlcalc" / "data" / "measured"
METER = (blindruns.RUN_METER, blindruns.RUN_METER_B, blindruns.RUN_METER_C)
MG = (blindruns.RUN_MG, blindruns.RUN_MG_B)
BASE = "w2-tp2-1B-s1024-mb8-m12-meter"
WHEN = {blindruns.RUN_MG: "2026-11-27 19:44-19:48 UTC", blindruns.RUN_MG_B: "2026-11-27 19:49-19:53 UTC"}


def label(c: distruns.DistCase) -> str:
    """meter12b's names, with FSDP and the pipeline."""
    if c.pp > 1:
        model = name(c).split(" at ")[0].split(" ", 2)[-1]
        return f"PP {c.pp} ({c.schedule}) {model} at {c.n_micro} x {c.micro_batch} x {c.seq_len:,}" + (
            " checkpointed" if c.recompute else "")
    if c.tp == 1:
        return name(c).replace(f"TP {c.tp}", f"FSDP {c.dp}")
    return name(c)


def base_row(run: str) -> tuple[float, float, float, float]:
    """(measured step s, pace, launch-floor error, host work over the engine's) of the baseline case on a run."""
    c = next(x for x in distruns.cases(run) if x.id == BASE)
    pace, _, err = blindruns.metered_errors(run)[BASE]
    return c.step_s, pace, err, distruns.host_work(c).ratio


def host_ratio(run: str) -> float:
    """The median over a run's metered tensor-parallel cases (the host-bound layouts: their issue time is host work,
    where an FSDP or pipeline step's also holds its waits on the GPU) of their host work over the engine's."""
    return statistics.median(distruns.host_work(c).ratio for c in distruns.cases(run)
                             if distruns.case_pace(c) > 0 and c.tp > 1)


def record_cause(run: str, cid: str) -> str:
    """The cause of a record miss (launch-floor rule at the case's own pace), in numbers."""
    c = next(x for x in distruns.cases(run) if x.id == cid)
    pace, rule_s, err = blindruns.metered_errors(run)[cid]
    scaled = blindruns.metered_errors(run, "paced_step_s_scaled")[cid][2]
    hw = distruns.host_work(c)
    others = [(r, base_row(r)) for r in METER + MG if r != run] if cid == BASE else []
    same = [x for x in distruns.cases(run) if x.id != cid and x.tp == c.tp and x.dp == c.dp and x.pp == c.pp
            and x.model.name == c.model.name]
    s0, p0 = floor_pace(run, "floor.json")
    s1, p1 = floor_pace(run, "floor_end.json")
    text = (f"Predicted too slow: {label(c)} {pct(err)} at its own pace, {k(pace)} thousand runs a second (the launch-"
            f"floor rule committed before the call gives {rule_s * 1e3:.0f} ms against {c.step_s * 1e3:.0f} ms "
            f"measured; host7c's rule {pct(scaled)}). Its slowest rank did {hw.ratio:.2f} of the host work the engine "
            f"charges (mlcalc.distruns.host_work: issue seconds x the busy vCPU's pace, issue/step "
            f"{c.issue_over_step:.2f})")
    if others:
        text += "; the same case on the other hosts: " + "; ".join(
            f"{r} {s * 1e3:.0f} ms at {k(p)} thousand, {pct(e)}, host work {h:.2f}" for r, (s, p, e, h) in others)
    for x in same:
        p2, _, e2 = blindruns.metered_errors(run)[x.id]
        text += (f". On this host {label(x)} (the same tokens a step; the engine charges it the same host passes) "
                 f"took {x.step_s * 1e3:.0f} ms at {k(p2)} thousand, {pct(e2)}, host work "
                 f"{distruns.host_work(x).ratio:.2f}")
    blocks = [b for b in distruns.paced_blocks(run, distruns.STATED_PACE, distruns.launch_floor_s())
              if b.case.id == cid]
    half = len(blocks) // 2
    first, last = blocks[:half], blocks[half:]

    def span(bs: list[distruns.MeteredBlock], f: object) -> str:
        v = sorted(f(b) for b in bs)  # type: ignore[operator]
        return f"{v[0]:.0f}-{v[-1]:.0f}"

    text += (f". Its blocks: the first {half} took {span(first, lambda b: b.step_s * 1e3)} ms at "
             f"{span(first, lambda b: b.pace / 1e3)} thousand ({span(first, lambda b: b.error * 100)} %), the last "
             f"{len(last)} {span(last, lambda b: b.step_s * 1e3)} ms at {span(last, lambda b: b.pace / 1e3)} thousand "
             f"({span(last, lambda b: b.error * 100)} %): the step fell "
             f"{100 * (1 - statistics.median(b.step_s for b in last) / statistics.median(b.step_s for b in first)):.0f}"
             f" % while the meter's pace rose "
             f"{100 * (statistics.median(b.pace for b in last) / statistics.median(b.pace for b in first) - 1):.0f} %, "
             f"more than the launch-floor rule moves with the pace (its fixed share), and at either pace the case did less "
             f"host work than the engine charges ({hw.ratio:.2f}, median over the steps; this host's other "
             f"tensor-parallel cases "
             + ", ".join(f"{distruns.host_work(x).ratio:.2f}" for x in distruns.cases(run)
                         if x.tp > 1 and x.id != cid and distruns.case_pace(x) > 0)
             + f"; median over the TP cases of the other hosts: "
             + ", ".join(f"{r} {host_ratio(r):.2f}" for r in METER + MG if r != run)
             + f"). Its calibration floor (train_hf.py --floor, Llama-3.2 1B at 1 x 64 tokens, GPU 1, threads on "
             f"metered vCPU 12) took {s0:.1f} ms at the call's start (vCPU 12 at {k(p0)} thousand) and {s1:.1f} ms "
             f"at its end (at {k(p1)} thousand). Why the meter and the rank parted is not found; nothing is fitted "
             f"to it")
    return text


def main() -> None:
    t = distruns.STEP_TARGET
    for run in MG:
        cases = {c.id: c for c in distruns.cases(run)}
        met = blindruns.metered_errors(run)
        blind = {"_about": f"Causes of the {run.split('-')[-1]} call's blind misses (2 x NVIDIA H200, asked for 2 x H100 "
                 f"(nvidia-h100-x2); {WHEN[run]}): the engine's default predictions committed before the call "
                 "(scripts/gpu/h100mg_predictions.json, engine at 41f9763), keys blind:<family>:<quantity>:<case>, "
                 "read by mlcalc.blindruns; both host rules in the same file at each case's own pace: "
                 "mlcalc.blindruns.metered_errors. Written by scripts/gpu/causes_h100mg.py"}
        for c in blindruns.checks(run):
            if c.within:
                continue
            x = cases[c.case]
            blind[f"blind:{c.family}:{c.quantity}:{c.case}"] = (
                f"{label(x)}: issue/step {x.issue_over_step:.2f}; the default prices host work at the stated pace of "
                f"90 thousand runs a second and this case ran at {k(met[c.case][0])} thousand; the launch-floor rule "
                f"at that pace {pct(met[c.case][2])}")
        (MEAS / run / "blind_misses.json").write_text(json.dumps(blind, indent=1, ensure_ascii=False) + "\n")
        rec: dict[str, str] = {}
        for ch in distruns.checks(run):
            if abs(ch.step_error) > t:
                key = f"{ch.case.family}:step"
                rec[key] = (rec[key] + " " if key in rec else "") + record_cause(run, ch.case.id)
        if rec:
            doc = {"_about": f"Causes of the {run.split('-')[-1]} call's record misses (mlcalc.distruns.record_step_s: "
                   "the launch-floor rule at the case's own pace, committed before the call in "
                   "scripts/gpu/h100mg_predictions.json), read by mlcalc.distruns. Written by "
                   "scripts/gpu/causes_h100mg.py", **rec}
            (MEAS / run / "misses.json").write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
    # the comparison of hosts (printed: what the report and the accuracy page quote)
    print("baseline TP 2 1B at 8 x 1024 on five hosts: step ms, pace k, launch-floor error, host work / engine's")
    for r in METER + MG:
        s, p, e, h = base_row(r)
        print(f"  {r:32s} {s * 1e3:6.1f} {k(p):>4s} {pct(e):>8s} {h:5.2f}  (run's TP cases, median host work {host_ratio(r):.2f})")
    for r in MG:
        sc = distruns.floor_rule_score((r,))
        print(f"{r}: blocks launch floor {sc.within_floor}/{sc.n}, host7c {sc.within_scaled}/{sc.n}")
    every = distruns.floor_rule_score(METER + MG)
    print(f"five hosts: blocks launch floor {every.within_floor}/{every.n}, host7c {every.within_scaled}/{every.n}")
    for r in MG:
        print(r, "first step (slowest rank) / median timed step:")
        for d in json.loads((MEAS / r / "train_dist_w2.json").read_text())["cases"]:
            if "ranks" in d:
                first = max(x["warmup_s_rank"][0] for x in d["ranks"])
                print(f"  {d['id']:44s} {first:6.2f} s / {d['step_s'] * 1e3:6.1f} ms")


if __name__ == "__main__":
    main()
