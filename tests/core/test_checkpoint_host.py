"""What activation checkpointing adds to the host's work, by architecture: the count (scripts/gpu/count_checkpoint.py,
on the CPU with transformers 5.17, the version of every Hugging Face training run) and the floors of three runs
(mlcalc/data/measured/*-2026-11-26-train-hf*/train_hf/floor_part*.json, each model at 1 x 64 tokens).

host9 (session 35) looked for a per-architecture rule behind the calibration run's under-predicted checkpointed
floors (Qwen2.5 0.5B -32 %, the blind10 case Qwen2.5 0.5B 16 x 512 checkpointed -30 %) and found none: a
checkpointed Qwen2.5 layer does what a Llama layer does, and the same floor is predicted within 1 % on another H200
host. These tests pin that evidence (the engine's rule is unchanged: a flat host cost per checkpointed layer)."""

from __future__ import annotations

import json
import pathlib

import pytest

from mlcalc import hfruns, steptime

ROOT = pathlib.Path(__file__).resolve().parents[2]
COUNT = json.loads((ROOT / "scripts/gpu/count_checkpoint.json").read_text())

RUN2 = "h200x2-2026-11-26-train-hf-run2"  # the H200 machine the blind predictions used
H200X4 = "h200x4-2026-11-26-train-hf"
H100 = "h100-2026-11-26-train-hf"


def _per_layer(name: str, key: str) -> tuple[float, float, float]:
    r = COUNT["models"][name][key]
    return r["forward_ops"], r["backward_ops"], r["saved_tensors"]


def test_the_count_is_of_the_runs_software_and_every_floor_model():
    # scripts/gpu/count_checkpoint.py OUT.json: tiny widths, the floor models' layer structure, 2 and 4 layers
    assert COUNT["transformers"] == "5.17.0" and COUNT["device"] == "cpu"
    assert set(COUNT["models"]) == {c.model.name for c in hfruns.cases(RUN2, "floor")}


@pytest.mark.parametrize("name, fwd, saved, recompute_extra, detach", [
    # per layer: forward ops, tensors autograd saves (each a pack and an unpack hook of torch.utils.checkpoint when
    # checkpointed), the backward's extra ops with checkpointing (the forward's ops again and more), and of those
    # the detaches (about one per saved tensor; count_checkpoint.json, backward_hist_per_layer)
    ("Llama-3.2 1B", 83, 38, 83 + 31, 34),
    ("Mistral 7B widths, 4 layers", 83, 38, 83 + 31, 34),
    ("Qwen2.5 0.5B", 86, 38, 86 + 31, 34),
    ("Qwen3 0.6B", 99, 50, 99 + 43, 46),
    ("Gemma-3 1B", 121, 62, 121 + 55, 58),
    ("Mixtral 8x7B widths, 2 layers", 107, 52, 107 + 34, 39),
    ("GPT-2 355M", 83, 30, 83 + 22, 24),
])
def test_a_checkpointed_layer_reruns_its_forward_and_detaches_what_it_saves(name, fwd, saved, recompute_extra,
                                                                          detach):
    f, b, s = _per_layer(name, "plain")
    f1, b1, s1 = _per_layer(name, "checkpointed")
    assert (f, s) == (fwd, saved)
    assert f1 == f  # the forward pass dispatches the same ops checkpointed
    assert s1 == 1  # under checkpoint's own hooks the layer's saved tensors are packed inside it
    assert b1 - b == recompute_extra
    assert (COUNT["models"][name]["checkpointed"]["backward_hist_per_layer"].get("detach", 0)
            - COUNT["models"][name]["plain"]["backward_hist_per_layer"].get("detach", 0)) == detach


def test_qwen25_checkpoints_as_llama_does():
    # Qwen2.5's layer is Llama's with Q/K/V biases: 3 more forward ops, 12 more backward (the engine's _OPS_QKV_BIAS),
    # the same saved tensors and the same checkpointing extra: no count separates the two
    (fl, bl, sl), (fq, bq, sq) = _per_layer("Llama-3.2 1B", "plain"), _per_layer("Qwen2.5 0.5B", "plain")
    assert (fq - fl, bq - bl, sq - sl) == (3, 12, 0)
    extra = {n: _per_layer(n, "checkpointed")[1] - _per_layer(n, "plain")[1] - _per_layer(n, "plain")[0]
             for n in ("Llama-3.2 1B", "Qwen2.5 0.5B")}
    assert extra["Llama-3.2 1B"] == extra["Qwen2.5 0.5B"] == 31


def _floor_error(run: str, name: str, rc: bool) -> float:
    c = next(c for c in hfruns.cases(run, "floor") if c.model.name == name and c.recompute == rc)
    return steptime.step_time(c.model, c.batch, c.seq_len, rc, hfruns.machine(run)).total_s / c.step_s - 1.0


def _floor_ratio(run: str, name: str) -> float:
    by = {c.recompute: c.step_s for c in hfruns.cases(run, "floor") if c.model.name == name}
    return by[True] / by[False]


def test_the_same_checkpointed_floor_is_predicted_on_two_hosts_and_missed_on_the_third():
    # Qwen2.5 0.5B at 1 x 64 checkpointed, each run's own machine (rates, floors, checkpointing calibration)
    assert _floor_error(H200X4, "Qwen2.5 0.5B", True) == pytest.approx(-0.001, abs=0.01)
    assert _floor_error(H100, "Qwen2.5 0.5B", True) == pytest.approx(-0.111, abs=0.01)
    assert _floor_error(RUN2, "Qwen2.5 0.5B", True) == pytest.approx(-0.318, abs=0.01)
    # measured checkpointed / plain floor: 1.86 and 1.89 on two hosts, 2.87 on the calibration run; the engine 1.82
    assert _floor_ratio(H200X4, "Qwen2.5 0.5B") == pytest.approx(1.860, abs=0.005)
    assert _floor_ratio(H100, "Qwen2.5 0.5B") == pytest.approx(1.889, abs=0.005)
    assert _floor_ratio(RUN2, "Qwen2.5 0.5B") == pytest.approx(2.870, abs=0.005)
    # on the calibration run Qwen3 0.6B (Qwen2.5's shape with Q/K norms, no biases) went the other way: 1.28
    assert _floor_ratio(RUN2, "Qwen3 0.6B") == pytest.approx(1.277, abs=0.005)


def test_the_calibration_runs_plain_floors_miss_too():
    # not checkpointing: on run 2 four of seven models' floors without it are 22-39 % under the engine, none on
    # h200x4 beyond the Mixtral cut (its experts' fp32 products)
    run2 = {n: _floor_error(RUN2, n, False) for n in ("Qwen3 0.6B", "Mixtral 8x7B widths, 2 layers",
                                                      "Mistral 7B widths, 4 layers", "Gemma-3 1B")}
    assert all(-0.40 < e < -0.21 for e in run2.values()), run2
    x4 = {n: _floor_error(H200X4, n, False) for n in ("Qwen3 0.6B", "Mistral 7B widths, 4 layers", "Gemma-3 1B")}
    assert all(abs(e) < 0.14 for e in x4.values()), x4
