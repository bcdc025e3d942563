"""The GPU scripts (scripts/gpu) as the CPU tests load them: by path, without putting the folder on sys.path."""

from __future__ import annotations

import importlib.util
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GPU = os.path.join(ROOT, "scripts", "gpu")


def load(name: str):
    """scripts/gpu/<name>.py as a module."""
    spec = importlib.util.spec_from_file_location(name, os.path.join(GPU, f"{name}.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
