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
