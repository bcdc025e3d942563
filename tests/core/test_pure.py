"""What the site runs in the reader's browser (Pyodide: the standard library and the mlcalc wheel,
nothing else) imports and runs with numpy, matplotlib, ipywidgets and IPython blocked."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys
import tomllib

ROOT = pathlib.Path(__file__).resolve().parents[2]

BLOCKED = ("numpy", "matplotlib", "ipywidgets", "IPython", "PIL", "pandas", "traitlets")

_SCRIPT = r"""
import importlib.abc, json, sys
BLOCKED = %r
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ImportError(f"{name} is not available in the browser")
        return None
sys.meta_path.insert(0, Block())
import mlcalc, mlcalc.calc, mlcalc.vl, mlcalc.calculators, mlcalc.live
from mlcalc.calc import REGISTRY, run_json
from mlcalc.live import run_widgets_json
out = {}
for key, calc in sorted(REGISTRY.items()):
    out[key] = json.loads(run_json(key, json.dumps(calc.defaults())))["ok"]
# A dropdown arrives from the page as its option's index.
first_choice = {k: [c for c in calc.controls if c.kind in ("choice", "toggle")] for k, calc in REGISTRY.items()}
for key, cs in first_choice.items():
    if cs:
        assert json.loads(run_widgets_json(key, json.dumps({cs[0].key: 0})))["ok"] is not None
loaded = sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED)
print(json.dumps({"ok": out, "loaded": loaded}))
"""


def test_browser_side_imports_with_the_standard_library_alone():
    proc = subprocess.run([sys.executable, "-c", _SCRIPT % (BLOCKED,)], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["loaded"] == []
    assert report["ok"], "no calculator registered"
    failing = [key for key, ok in report["ok"].items() if not ok]
    assert failing == [], f"calculators that fail with their defaults: {failing}"


def test_the_wheel_needs_no_numpy():
    """The site installs the mlcalc wheel with no dependency: the core declares none."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["dependencies"] == []
    # numpy is for matplotlib figure code only: it is in the extras that draw them.
    for extra in ("widgets", "book", "test"):
        assert any(r.startswith("numpy") for r in project["optional-dependencies"][extra]), extra


def test_widget_values_map_indices_and_whole_floats():
    from mlcalc.calc import get
    from mlcalc.live import widget_values

    calc = get("memory.gpu_count")
    acc = calc.control("accelerator")
    values = widget_values("memory.gpu_count", {"n_params_billion": 405, "accelerator": 1, "mode": 1})
    assert values == {"n_params_billion": 405.0, "accelerator": acc.options[1][1], "mode": "inference"}
    assert isinstance(values["n_params_billion"], float)
    import pytest

    with pytest.raises(ValueError, match="option number 99"):
        widget_values("memory.gpu_count", {"accelerator": 99})
    with pytest.raises(ValueError, match="no control named"):
        widget_values("memory.gpu_count", {"nope": 1})


_HIDDEN_SCRIPT = r"""
import builtins, io, json, pathlib, sys
HIDDEN = %r
def _hidden(p):
    return any(h in str(p) for h in HIDDEN)
_open, _iterdir, _exists = builtins.open, pathlib.Path.iterdir, pathlib.Path.exists
def guarded_open(file, *a, **k):
    if _hidden(file):
        raise FileNotFoundError(f"{file} is not in the wheel")
    return _open(file, *a, **k)
builtins.open = io.open = guarded_open
pathlib.Path.iterdir = lambda self: (p for p in _iterdir(self) if not _hidden(p))
pathlib.Path.exists = lambda self, **k: False if _hidden(self) else _exists(self, **k)
from mlcalc import accuracy
from mlcalc.calc import REGISTRY, run_json
answers = {k: json.loads(run_json(k, json.dumps(c.defaults()))) for k, c in sorted(REGISTRY.items())}
records = {k: accuracy.record(k) for k in accuracy.CALCULATORS}
print(json.dumps({"answers": answers, "records": records}, sort_keys=True))
"""


def test_the_site_reads_no_data_the_wheel_leaves_out():
    """The run folders pyproject.toml keeps out of the wheel (record-only data: the multi-GPU record's metered
    repeats) change no answer of the site: every calculator at its defaults and every calculator's record line come
    out the same with those folders hidden (open, exists and iterdir do not see them) as with them."""
    excluded = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["exclude-package-data"]
    hidden = sorted({k.rsplit(".", 1)[1] for k in excluded if k.startswith("mlcalc.data.measured.")})
    assert hidden, "no run folder is kept out of the wheel"
    runs = [subprocess.run([sys.executable, "-c", _HIDDEN_SCRIPT % (h,)], capture_output=True, text=True, cwd=ROOT)
            for h in (hidden, [])]
    for proc in runs:
        assert proc.returncode == 0, proc.stderr[-3000:]
    seen, whole = (json.loads(proc.stdout.strip().splitlines()[-1]) for proc in runs)
    assert seen["records"] and seen == whole
