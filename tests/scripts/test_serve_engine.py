"""The GPU serving scripts' logic on the CPU (scripts/gpu/serve_engine.py, bench_serve.py's pure helpers).

The engine's decode after a prefill must give the token a prefill of the longer prompt gives (the cache written
and read at the right positions); its weights count is the shape's. Skipped where PyTorch is not installed.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
GPU = Path(__file__).resolve().parents[2] / "scripts" / "gpu"


def _load(name: str):
    sys.path.insert(0, str(GPU))
    try:
        spec = importlib.util.spec_from_file_location(f"_gpu_{name}", GPU / f"{name}.py")
        mod = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = mod  # dataclasses look their module up there
        spec.loader.exec_module(mod)
        return mod
    finally:
        sys.path.remove(str(GPU))


def test_engine_decode_continues_its_prefill():
    eng_mod = _load("serve_engine")
    eng_mod._selfcheck()  # decode after prefill == prefill of the longer prompt; raises otherwise


def test_engine_graph_step_runs_eager_on_the_cpu_and_keeps_slots_apart():
    m = _load("serve_engine")
    torch.manual_seed(0)
    eng = m.Engine(m.CFGS["tiny"], torch.device("cpu"))
    eng.alloc_cache(4, 32)
    ids = torch.randint(0, 1024, (4, 6))
    for s in range(4):  # four requests prefilled one by one into their slots, as the load test does
        eng.prefill(ids[s:s + 1], s)
    step = m.GraphStep(eng, 4)  # no CUDA: runs the step eagerly
    out = step(ids[:, 5], torch.full((4,), 6))
    ref = m.Engine(m.CFGS["tiny"], torch.device("cpu"))
    ref.alloc_cache(4, 32)
    assert torch.equal(out, ref.prefill(torch.cat([ids, ids[:, 5:6]], dim=1)))


def test_engine_weight_bytes_are_the_shape():
    m = _load("serve_engine")
    eng = m.Engine(m.CFGS["tiny"], torch.device("cpu"))
    assert eng.n_weight_bytes == pytest.approx(m.weight_bytes(m.CFGS["tiny"]))
    # Llama 3 8B: 8.03e9 parameters in bf16 (the model card), the output projection untied
    assert m.weight_bytes(m.CFGS["llama8b"]) == pytest.approx(2 * 8.03e9, rel=0.01)


def test_engine_refuses_a_tensor_parallel_size_that_does_not_divide():
    m = _load("serve_engine")
    with pytest.raises(ValueError, match="tp_size=3"):
        m.Engine(m.CFGS["tiny"], torch.device("cpu"), 0, 3)
