"""Record the planners' answers and check that a change to their speed left every one of them the same.

    .venv/bin/python scripts/planner_equality.py --write /tmp/before.json   # before the change
    .venv/bin/python scripts/planner_equality.py --check /tmp/before.json   # after: exit 1 on any difference
    .venv/bin/python scripts/planner_equality.py --plain --write /tmp/plain.json  # the same code without its shortcuts

What is recorded, as ``repr`` (every float to its last bit):

- ``plan.best_layout`` for every model preset x every offered chip x every GPU count the search tries
  (``plan.candidate_counts(16384)``) and a few counts it does not (160, 1000, 3), at the training
  planner's default sequence and batch, and at 8,192 tokens for a few models;
- ``plan.layout_memory`` / ``plan.step_time`` / ``plan.step_time_floor`` of every candidate of a few cases;
- each planning calculator (``plan.train``, ``plan.compare``, ``plan.tco``, ``plan.serve``) and the
  other calculators this speed work touches: their result (``repr``) and what the page shows
  (:func:`mlcalc.calc.run`: text, table, chart) for the page's state, the defaults, every model preset and
  every option of each choice control (one at a time), and the states the tests name.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))


def _layouts(quick: bool) -> dict[str, str]:
    from mlcalc import memory, plan

    out = {}
    models = list(memory.model_presets())
    counts = plan.candidate_counts(16384) + (3, 160, 1000)
    batch = 4 * 2**20
    for name in models[::7] if quick else models:
        model = memory.model_preset(name)
        for chip in plan.offered_chips():
            for n in counts:
                for s in ((4096, 8192) if name in models[::10] else (4096,)):
                    try:
                        r = repr(plan.best_layout(model, chip, n, s, batch))
                    except ValueError as err:
                        r = f"ValueError: {err}"
                    out[f"best_layout {name} {chip} {n} {s}"] = r
    for name in models[::12]:
        model = memory.model_preset(name)
        for chip in plan.offered_chips()[:2]:
            for n in (8, 64, 512):
                for tp, pp, dp, m in plan.layout_candidates(model, chip, n, 4096, batch):
                    for rc in ("selective", "full"):
                        key = f"{name} {chip} {n} {tp} {pp} {dp} {m} {rc}"
                        out["layout_memory " + key] = repr(plan.layout_memory(model, chip, tp, pp, dp, 4096, rc, m))
                        out["step_time " + key] = repr(plan.step_time(model, chip, n, tp, pp, dp, m, rc, 4096))
                        out["floor " + key] = repr(plan.step_time_floor(model, chip, n, tp, pp, dp, m, rc, 4096))
    return out


def _states(key: str, quick: bool) -> list[dict]:
    """Values to run calculator ``key`` with: defaults, the pages' states, each option of each choice."""
    from bench_compute import page_calculators, pages
    from mlcalc.calc import get
    from mlcalc.live import widget_values

    calc = get(key)
    base = calc.defaults()
    states = [dict(base)]
    for _, nb in pages():
        for k, v in page_calculators(nb):
            if k == key:
                states.append(calc.values(widget_values(key, v)))
    for c in calc.controls:
        if c.kind in ("choice", "toggle", "check"):
            opts = c.values() if c.kind != "check" else [not c.default]
            for o in (opts[::5] if quick else opts):
                for start in states[:2]:
                    states.append(dict(start, **{c.key: o}))
    extra = {
        "plan.train": [{"gpus": 160}, {"gpus": 8}, {"gpus": 1024, "chip": "H100-SXM"}, {"hpc": True},
                       {"deadline_days": 1.0}, {"deadline_days": 0.001}, {"budget_m": 0.01}, {"max_gpus": 1000},
                       {"max_gpus": 7}, {"tokens_b": 1500.0}, {"batch_m": 16.0}, {"model": "Llama-3 8B", "deadline_days": 30.0,
                       "budget_m": 0.1, "seq_len": 8192, "rent": False}, {"rent": False, "buy": False, "hpc": True}],
        "plan.compare": [{"gpus_a": 160, "gpus_b": 8}, {"gpus_a": 4096, "gpus_b": 16384}],
        "plan.serve": [{"rps": 100.0}, {"rps": 0.5}, {"ttft_ms": 50.0}, {"tpot_ms": 5.0}, {"cv": 2.0},
                       {"prompt": 8000, "output": 1000}, {"prompt": 100, "output": 10}],
    }
    for e in extra.get(key, []):
        try:
            states.append(calc.values(e | {k: v for k, v in base.items() if k not in e}))
        except ValueError:
            pass
    seen, out = set(), []
    for s in states:
        r = repr(sorted(s.items()))
        if r not in seen:
            seen.add(r)
            out.append(s)
    return out


CALCULATORS = ("plan.train", "plan.compare", "plan.tco", "plan.serve", "finetune.memory", "memory.training_fit",
               "measured.prediction", "accelerators.shape_efficiency", "network.collective", "storage.checkpoint_interval")


def _calculators(quick: bool, only: str = "") -> dict[str, str]:
    from mlcalc.calc import get, run

    out = {}
    for key in CALCULATORS:
        if only and only not in key:
            continue
        calc = get(key)
        for values in _states(key, quick):
            label = f"{key} {json.dumps(values, sort_keys=True, default=repr)}"
            try:
                result, _ = calc.evaluate(values)
                out["result " + label] = repr(result)
            except Exception as err:  # noqa: BLE001 - an error is an answer too
                out["result " + label] = f"{type(err).__name__}: {err}"
            out["run " + label] = json.dumps(run(key, values), sort_keys=True)
    return out


def record(quick: bool, only: str = "") -> dict[str, str]:
    import mlcalc.calculators  # noqa: F401

    t0 = time.perf_counter()
    out = {} if only else _layouts(quick)
    print(f"layouts: {len(out)} answers in {time.perf_counter() - t0:.0f} s", flush=True)
    t0 = time.perf_counter()
    calcs = _calculators(quick, only)
    print(f"calculators: {len(calcs)} answers in {time.perf_counter() - t0:.0f} s", flush=True)
    return out | calcs


def plain() -> None:
    """The planner without its shortcuts: no micro-batch bound (the layouts visited in floor order, stopped by the
    FLOP floor alone), no memory shortcut (every visited layout's memory computed) and nothing remembered between
    searches but the layouts (as before the shortcuts)."""
    from mlcalc import plan

    plan._micro_bound_on = False
    plan._MICRO.clear()
    plan._DEPTHS.clear()
    plan._CARRIED.clear()
    plan._fits_order_on = False
    plan._FITS.clear()
    plan._best_layout.cache_clear()
    plan._run_cached = plan._run  # type: ignore[assignment]
    plan._price_cached = plan._price  # type: ignore[assignment]
    plan._owned_rate = lambda purchase, power, node_kw, kw: plan.tco(  # type: ignore[assignment]
        purchase, power, node_kw, goodput=1.0, **kw).per_useful_gpu_hour


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", type=pathlib.Path, help="record the answers here")
    parser.add_argument("--check", type=pathlib.Path, help="compare with the answers recorded here")
    parser.add_argument("--quick", action="store_true", help="every 7th model, every 5th option (a few minutes less)")
    parser.add_argument("--plain", action="store_true", help="record the planner without its shortcuts (see plain())")
    parser.add_argument("--only", default="", help="only calculators whose key holds this (no layouts)")
    args = parser.parse_args(argv)
    if args.plain:
        plain()
    now = record(args.quick, args.only)
    if args.write:
        args.write.write_text(json.dumps(now, indent=0, sort_keys=True) + "\n")
        print(f"{len(now)} answers written to {args.write}")
    if args.check:
        then = json.loads(args.check.read_text())
        common = [k for k in now if k in then]
        diff = [k for k in common if now[k] != then[k]]
        missing = [k for k in now if k not in then]
        for k in diff[:20]:
            print(f"DIFFERENT {k}\n  before: {then[k][:400]}\n  after:  {now[k][:400]}")
        print(f"{len(common)} answers compared: {len(diff)} different; {len(missing)} not recorded before")
        return 1 if diff or not common else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
