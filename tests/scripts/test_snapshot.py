"""The site's Pyodide memory snapshot: made by the build, and what it imports kept small.

The site's worker restores Python from a memory snapshot made at the build (scripts/make_snapshot.mjs, run by
scripts/build_wheel.sh) with every calculator imported. Pyodide restores a snapshot only into the heap it starts with,
30 MiB (31,457,280 bytes); when `import mlcalc` grows the heap past it, the build makes no snapshot, says so, and goes
on (a reader's `make book` still works: every page then starts Python cold, a few times slower). That happened in
session 33 and went unseen until 13 browser tests failed in CI. Here it fails at once, naming the limit and the fix:

- ``test_the_build_made_a_pyodide_snapshot_for_this_wheel`` (``make test``: its build made the wheel and snapshot);
- ``test_the_snapshots_imports_leave_out_record_code`` and ``test_the_code_the_snapshot_imports_stays_within_budget``
  (``make check``: plain CPython, the same imports as the snapshot's).
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
VENDOR = ROOT / "_vendor" / "vendor" / "mlcalc"
MAKER = ROOT / "scripts" / "make_snapshot.mjs"
HEAP_LIMIT = 31_457_280  # bytes: the 30 MiB heap Pyodide (314.0.7) restores a snapshot into

FIX = ("The fix: keep code a page does not need at start (records, checks, scores, measured-run readers, big tables) "
       "out of the modules the site imports at start (LEAVES() and IMPORTS() in scripts/make_snapshot.mjs): put it in "
       "a module of its own, imported inside the function that needs it (as mlcalc/serving_record.py holds serving's "
       "record code, mlcalc/decode_profile.py the decode profile), then run `bash scripts/build_wheel.sh` and read the "
       "heap's peak and margin it prints.")

# Modules of mlcalc that read, check or score records: the site imports them when a calculator first needs them,
# never at start. Record code added to a module the site imports at start belongs in one of these (or a new one).
RECORD_MODULES = ("mlcalc.accuracy", "mlcalc.serving_record", "mlcalc.servemeasured", "mlcalc.decode_profile",
                  "mlcalc.trtllm_host", "mlcalc.distruns", "mlcalc.hfruns", "mlcalc.training_runs")

# Syntax-tree nodes (docstrings left out: the snapshot's Python runs as python -OO) of the mlcalc modules the snapshot
# imports: 147,844 at the serving split (session 34), when the heap peaked at 27.23 MB of the 31.46 MB (4.23 MB
# spare). Measured there: 35,254 nodes of record modules imported as well put 0.85 MB on the peak, about 24 bytes a
# node, so this budget (+42,000 nodes, about 1 MB) keeps about 3 MB spare. Not a byte count: the build measures the
# heap itself; this says early, without Node or Pyodide, that the code imported at start has grown by a quarter.
NODE_BUDGET = 190_000


def _snapshot_imports() -> list[str]:
    """The modules scripts/make_snapshot.mjs imports (LEAVES() then IMPORTS()), read from it."""
    text = MAKER.read_text()
    leaves = re.search(r"function LEAVES\(\) \{\s*return \[(.*?)\];", text, re.S)
    imports = re.search(r'function IMPORTS\(\) \{\s*return "import ([^"]*)";', text)
    assert leaves and imports, "scripts/make_snapshot.mjs no longer has LEAVES() and IMPORTS() as this test reads them"
    return re.findall(r'"([\w.]+)"', leaves.group(1)) + [m.strip() for m in imports.group(1).split(",")]


def _imported_at_start() -> list[tuple[str, str]]:
    """(module, file) of every mlcalc module a fresh CPython imports when it imports what the snapshot imports."""
    code = ("import importlib, json, sys\n"
            f"for m in {_snapshot_imports()!r}: importlib.import_module(m)\n"
            "print(json.dumps(sorted((k, getattr(v, '__file__', None) or '') for k, v in sys.modules.items()"
            " if k == 'mlcalc' or k.startswith('mlcalc.'))))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return [tuple(x) for x in json.loads(proc.stdout)]


def _nodes(path: str) -> int:
    """Syntax-tree nodes of a module, its docstrings left out."""
    tree = ast.parse(pathlib.Path(path).read_text())
    n = sum(1 for _ in ast.walk(tree))
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) \
                and ast.get_docstring(node, clean=False) is not None:
            n -= 2  # the docstring's Expr and Constant
    return n


@pytest.fixture(scope="module")
def at_start() -> list[tuple[str, str]]:
    return _imported_at_start()


def test_the_snapshots_imports_leave_out_record_code(at_start):
    names = {m for m, _ in at_start}
    assert "mlcalc.calculators" in names and "mlcalc.live" in names, sorted(names)
    found = sorted(names & set(RECORD_MODULES))
    assert not found, (
        f"{', '.join(found)} now imported when the site starts (by a module in scripts/make_snapshot.mjs's LEAVES() or "
        f"IMPORTS(), or one they import at its top): its code then fills the heap of the site's Pyodide snapshot, "
        f"which restores only into {HEAP_LIMIT:,} bytes (30 MiB). Import it inside the function that needs it. " + FIX)


def test_the_code_the_snapshot_imports_stays_within_budget(at_start):
    sizes = sorted(((_nodes(f), m) for m, f in at_start if f.endswith(".py")), reverse=True)
    total = sum(n for n, _ in sizes)
    assert total > 100_000, sizes  # the count is real: every page module is in it
    biggest = ", ".join(f"{m} {n:,}" for n, m in sizes[:6])
    assert total <= NODE_BUDGET, (
        f"the mlcalc modules the site imports at start hold {total:,} syntax-tree nodes, over the budget of "
        f"{NODE_BUDGET:,} that keeps about 3 MB spare of the {HEAP_LIMIT:,} bytes (30 MiB) the site's Pyodide snapshot "
        f"restores into (largest: {biggest}). " + FIX + " Raise NODE_BUDGET only if the build's printed margin is "
        "still 3 MB or more.")


@pytest.mark.build
def test_the_build_made_a_pyodide_snapshot_for_this_wheel():
    wheel = VENDOR / "mlcalc.whl"
    if not wheel.exists():
        pytest.skip("no wheel built in this checkout (make book and make test build it)")
    if os.environ.get("MLCALC_SNAPSHOT") == "0":
        pytest.skip("MLCALC_SNAPSHOT=0: the build was asked for no snapshot")
    meta = VENDOR / "snapshot.json"
    failed = VENDOR / "snapshot-failed.txt"
    why = failed.read_text().strip() if failed.exists() else "(scripts/build_wheel.sh printed why)"
    assert meta.exists(), (
        "the build made no Pyodide memory snapshot (_vendor/vendor/mlcalc/snapshot.json), so every page of the site "
        f"starts Python cold. Pyodide restores a snapshot only into {HEAP_LIMIT:,} bytes (30 MiB) of heap, and the "
        f"modules the site imports at start must fit in it. The build said:\n{why}\n" + FIX)
    record = json.loads(meta.read_text())
    assert record["wheel_sha256"] == hashlib.sha256(wheel.read_bytes()).hexdigest(), (
        "the snapshot was made for another wheel: the site's worker ignores it and starts cold; run "
        "`bash scripts/build_wheel.sh` (make book) again")
    assert record["heap_limit_bytes"] == HEAP_LIMIT, record["heap_limit_bytes"]  # Pyodide's start heap changed?
    assert 0 < record["heap_peak_bytes"] <= HEAP_LIMIT, record["heap_peak_bytes"]
