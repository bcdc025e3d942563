"""The chart data of every calculator state the tests enumerate: recorded once, compared after a chart change.

A chart may look different after a refactor of how it is drawn (mlcalc.charts); its numbers may not.
This runs every registered calculator at the states tests/calculators/test_glance.py enumerates (each control alone at
its ends, each option, 1000x, 1/1000x and 0 of its default) and at each preset, and keeps, per state, the
chart's distinct data rows (:func:`mlcalc.vl.chart_values`), its title and the view's plain text (what nbval compares).

    .venv/bin/python scripts/chart_data.py record /tmp/before.json
    .venv/bin/python scripts/chart_data.py check /tmp/before.json     # exit 1 and the differences if any
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import mlcalc.calculators  # noqa: E402,F401  (registers every calculator)
from mlcalc import calc  # noqa: E402
from mlcalc.vl import chart_values  # noqa: E402
from tests.calculators.test_glance import states  # noqa: E402


def _states(c: calc.Calc) -> list[tuple[dict, str | None]]:
    out: list[tuple[dict, str | None]] = [(s, None) for s in states(c)]
    for p in c.presets:  # each preset option, as a reader picks it (its followers set)
        for option in list(p.values)[:8]:
            s = {ct.key: ct.default for ct in c.controls}
            s[p.control] = option
            out.append((s, p.control))
    return out


def _distinct(values: list[dict]) -> list[dict]:
    """The chart's rows, each once, in the order they first come (two layers drawing one row carry it twice)."""
    seen: list[str] = []
    out = []
    for row in values:
        key = json.dumps(row, sort_keys=True, default=str)
        if key not in seen:
            seen.append(key)
            out.append(row)
    return out


def _title(spec: dict) -> str:
    """The chart's title as one line (a title parameter of mlcalc.charts, a string, or lines)."""
    for param in spec.get("params", []) or []:
        if param.get("name") == "mlcalc_title":
            return str(param["value"])
    title = spec.get("title", "")
    if isinstance(title, dict):
        title = title.get("text", "")
    return " ".join(title) if isinstance(title, list) else str(title)


def collect(only: str | None = None) -> dict[str, list]:
    got: dict[str, list] = {}
    for key in sorted(calc.REGISTRY):
        if only and not key.startswith(tuple(only.split(","))):
            continue
        c = calc.REGISTRY[key]
        rows = []
        for s, changed in _states(c):
            out = calc.run(key, s, changed)
            if not out.get("ok"):
                rows.append({"state": s, "error": out.get("error")})
                continue
            chart = out["chart"]
            rows.append({"state": s, "data": None if chart is None else _distinct(chart_values(chart)), "text": out["text"],
                         "title": None if chart is None else _title(chart)})
        got[key] = json.loads(json.dumps(rows, default=str))
    return got


def main(argv: list[str]) -> int:
    mode, path = argv[1], Path(argv[2])
    only = argv[3] if len(argv) > 3 else None
    got = collect(only)
    if mode == "record":
        path.write_text(json.dumps(got, sort_keys=True))
        print(f"recorded {sum(len(v) for v in got.values())} states of {len(got)} calculators to {path}")
        return 0
    want = json.loads(path.read_text())
    for rows in want.values():  # a record may hold every row as chart_values gave it
        for row in rows:
            if row.get("data") is not None:
                row["data"] = _distinct(row["data"])
    bad = 0
    for key, rows in got.items():
        for new, old in zip(rows, want.get(key, [])):
            for part in ("error", "data", "text", "title"):
                if new.get(part) != old.get(part):
                    bad += 1
                    if bad <= 20:
                        print(f"{key} {part} differs at {new['state']}:\n  was {str(old.get(part))[:300]}\n"
                              f"  now {str(new.get(part))[:300]}")
        if len(rows) != len(want.get(key, [])):
            bad += 1
            print(f"{key}: {len(rows)} states, was {len(want.get(key, []))}")
    print(f"{sum(len(v) for v in got.values())} states of {len(got)} calculators: {bad} differences")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
