"""Time, in CPython, the control changes the site part of ``make bench`` makes on every calculator.

    .venv/bin/python scripts/bench_compute.py                  # every page, p50/p90 per calculator
    .venv/bin/python scripts/bench_compute.py --match plan     # only pages whose name holds "plan"
    .venv/bin/python scripts/bench_compute.py --json out.json  # also write the figures
    .venv/bin/python scripts/bench_compute.py --profile plan.train   # cProfile of one calculator's changes

For each page of the book (reading order) and each calculator on it, the calculator starts from the
values the page was built with (the widget models stored in the executed notebook, as the site's page
holds them) and, as scripts/benchmark.py's site part does, its first control that takes a valid other
value (at most 4 alternatives tried) is switched back and forth ``--repeats`` times. Each switch is the
call the site's worker makes, :func:`mlcalc.live.run_widgets_json` (controls that follow a preset,
compute, view, the page's link), timed with ``time.perf_counter``. The pages run in one process, in
order, as a reader's page runs them in one worker (what one page computed first stays imported), but
each page's first change is timed like any other. The in-browser times (Pyodide) are about 1.5-3x these.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import statistics
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT / "tests"))

from benchmark import _site_alternatives, _summary  # noqa: E402  (the same changes and statistics)

_VIEW = "application/vnd.jupyter.widget-view+json"
_STATE = "application/vnd.jupyter.widget-state+json"


def page_calculators(notebook: pathlib.Path) -> list[tuple[str, dict]]:
    """The calculators a page shows, in order: (key, control values in widget form) as stored."""
    nb = json.loads(notebook.read_text())
    state = nb.get("metadata", {}).get("widgets", {}).get(_STATE, {}).get("state", {})
    out = []
    for cell in nb["cells"]:
        for o in cell.get("outputs", []):
            mid = o.get("data", {}).get(_VIEW, {}).get("model_id")
            model = state.get(mid, {}).get("state", {})
            classes = model.get("_dom_classes", [])
            if "mlcalc-calculator" not in classes:
                continue
            key = next(c[len("mlcalc-calc-"):] for c in classes if c.startswith("mlcalc-calc-"))
            box = state[model["children"][0].split("IPY_MODEL_")[1]]["state"]
            values = {}
            for child in box["children"]:
                m = state[child.split("IPY_MODEL_")[1]]
                ctl = next(c[len("mlcalc-ctl-"):] for c in m["state"]["_dom_classes"] if c.startswith("mlcalc-ctl-"))
                choice = m["model_name"] in ("DropdownModel", "ToggleButtonsModel", "RadioButtonsModel")
                values[ctl] = m["state"]["index"] if choice else m["state"]["value"]
            out.append((key, values))
    return out


CLOCK = time.perf_counter  # --cpu: time.process_time (this process's CPU time: steadier on a loaded machine)


def _change(key: str, values: dict, control: str, value, initial: dict) -> tuple[float, dict]:
    """One change as the page makes it: the worker's call, timed; the page's models then follow."""
    from mlcalc.live import run_widgets_json

    values = dict(values, **{control: value})
    t0 = CLOCK()
    out = json.loads(run_widgets_json(key, json.dumps(values), control, json.dumps(initial), ""))
    ms = (CLOCK() - t0) * 1000
    values.update(out.get("controls") or {})
    return ms, {"ok": out.get("ok", False), "values": values}


def bench_calculator(key: str, values: dict, repeats: int) -> dict:
    from mlcalc.calc import get

    initial = dict(values)
    for control in get(key).controls:
        original = values[control.key]
        for alt in _site_alternatives(control, original)[:4]:
            ms, first = _change(key, values, control.key, alt, initial)
            if not first["ok"]:
                values = _change(key, first["values"], control.key, original, initial)[1]["values"]
                continue
            samples, values = [ms], first["values"]
            for r in range(1, repeats):
                ms, done = _change(key, values, control.key, original if r % 2 else alt, initial)
                samples.append(ms)
                values = done["values"]
            return {"control": f"{control.label} ({control.kind})", "samples_ms": [round(s, 2) for s in samples],
                    **_summary(samples)}
    return {"error": "no control took a valid other value"}


def pages(match: str = "") -> list[tuple[str, pathlib.Path]]:
    from conftest import toc_docnames

    out = []
    for doc in toc_docnames():
        nb = ROOT / f"{doc}.ipynb"
        if match in doc and nb.exists():
            out.append((doc, nb))
    return out


def run(match: str = "", repeats: int = 11, only: str = "", exact: bool = False) -> dict:
    results = {}
    for doc, nb in pages(match):
        if exact and doc != match:
            continue
        for i, (key, values) in enumerate(page_calculators(nb)):
            if only and key != only:
                continue
            name = f"{doc.split('notebooks/', 1)[-1]} #{i + 1} {key}"
            results[name] = bench_calculator(key, values, repeats)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--match", default="", help="only pages whose name contains this")
    parser.add_argument("--repeats", type=int, default=11, help="changes per calculator (the site part's default)")
    parser.add_argument("--over", type=float, default=15.0, help="list the calculators whose p90 is above this, ms")
    parser.add_argument("--json", type=pathlib.Path, help="write the figures here")
    parser.add_argument("--cpu", action="store_true",
                        help="time CPU seconds of this process (time.process_time), not wall time: steadier on a loaded machine")
    parser.add_argument("--fresh", action="store_true",
                        help="each page in a new Python that has imported what the site's snapshot holds (a page's worker "
                             "starts from it): first-call costs (data files read, modules imported when first needed) count")
    parser.add_argument("--cold", action="store_true", help="without mlcalc.warm.warm() first (a snapshot made without it)")
    parser.add_argument("--page", help=argparse.SUPPRESS)  # --fresh: the one page this process measures
    parser.add_argument("--profile", metavar="KEY", help="profile the changes of calculator KEY (cProfile, top 40)")
    args = parser.parse_args(argv)
    global CLOCK
    if args.cpu:
        CLOCK = time.process_time
    import mlcalc.calculators
    import mlcalc.live
    if not args.cold:
        import mlcalc.warm  # the snapshot ran it too (scripts/make_snapshot.mjs)

        mlcalc.warm.warm()
    if args.profile:
        import cProfile
        import pstats

        prof = cProfile.Profile()
        prof.enable()
        run(args.match, args.repeats, args.profile)
        prof.disable()
        pstats.Stats(prof).sort_stats("cumulative").print_stats(40)
        return 0
    if args.page:  # one page of a --fresh run: its figures as JSON on stdout
        print(json.dumps(run(args.page, args.repeats, exact=True)))
        return 0
    t0 = time.perf_counter()
    if args.fresh:
        import subprocess

        results = {}
        for doc, _ in pages(args.match):
            cmd = [sys.executable, __file__, "--page", doc, "--repeats", str(args.repeats)] + (["--cpu"] if args.cpu else []) + (["--cold"] if args.cold else [])
            out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
            results.update(json.loads(out.strip().splitlines()[-1]))
    else:
        results = run(args.match, args.repeats)
    print(f"| calculator (CPython: run_widgets_json, {'CPU' if args.cpu else 'wall'} time) | control | p50 ms | p90 ms | max ms |")
    print("|---|---|---:|---:|---:|")
    for name, r in results.items():
        if "error" in r:
            print(f"| {name} | {r['error']} | | | |")
        else:
            print(f"| {name} | {r['control']} | {r['median_ms']} | {r['p90_ms']} | {max(r['samples_ms'])} |")
    ok = {k: v for k, v in results.items() if "p90_ms" in v}
    p90 = sorted(v["p90_ms"] for v in ok.values())
    slow = sorted((k for k in ok if ok[k]["p90_ms"] > args.over), key=lambda k: -ok[k]["p90_ms"])
    print(f"\n{len(ok)} calculators; median of p90 {statistics.median(p90):.1f} ms; worst {max(p90):.1f} ms; "
          f"{len(slow)} above {args.over:g} ms: " + ", ".join(f"{k} ({ok[k]['p90_ms']:.0f})" for k in slow))
    print(f"total {time.perf_counter() - t0:.1f} s")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
