"""scripts/gpu/train_hf.py: the ModelConfig -> transformers config mapping (pure), and a tiny CPU run
where transformers is installed (it is not a test dependency: skipped otherwise)."""

import importlib.util
import json
from pathlib import Path

import pytest

from mlcalc import models

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "gpu" / "train_hf.py"


def _load():
    spec = importlib.util.spec_from_file_location("train_hf", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_each_architecture_maps_to_its_transformers_family():
    th = _load()
    kinds = {models.from_dict(c["model"]).name: th.hf_config(models.from_dict(c["model"]), c["seq_len"])[0]
             for c in th.gpu_cases()}
    assert kinds["Llama-3.2 1B"] == "llama" and kinds["Qwen2.5 0.5B"] == "qwen2" and kinds["Qwen3 0.6B"] == "qwen3"
    assert kinds["Gemma-3 1B"] == "gemma3_text" and kinds["GPT-2 355M"] == "gpt2"
    assert kinds["Mistral 7B widths, 4 layers"] == "mistral" and kinds["Mixtral 8x7B widths, 2 layers"] == "mixtral"
    _, kw = th.hf_config(models.preset("Gemma-3 1B"), 2048)
    assert kw["layer_types"] == ["full_attention"] * 26  # sliding windows off: every layer sees the whole context


def test_tiny_cpu_run_counts_the_same_parameters(tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    th = _load()
    out = tmp_path / "cpu.json"
    assert th.main(["--cpu-tiny", "--part", "0/4", "--steps", "1", "--warmup", "1", "--out", str(out)]) == 0
    cases = json.loads(out.read_text())["cases"]
    assert cases and all(c["n_params"] == c["n_params_mlcalc"] and c["step_s"] > 0 for c in cases)
