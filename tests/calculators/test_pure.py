"""Every calculator runs with the standard library alone (what the reader's browser has under Pyodide)."""

import subprocess
import sys

SCRIPT = """
import importlib.abc, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in ("numpy", "matplotlib", "ipywidgets", "IPython", "torch", "PIL"):
            raise ImportError("blocked: " + name)
sys.meta_path.insert(0, Block())
from mlcalc import calc
import mlcalc.calculators
bad = [k for k in calc.REGISTRY if not calc.run(k, {})["ok"]]
print(len(calc.REGISTRY), bad)
assert not bad, bad
"""


def test_calculators_need_no_numpy_matplotlib_or_widgets():
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
