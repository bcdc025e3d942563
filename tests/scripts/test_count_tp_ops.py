"""scripts/gpu/count_tp_ops.json: the tensor-parallel program's operations, counted per model shape (issue 24).

Source: scripts/gpu/count_tp_ops.py (torch 2.13, CPU, 4 gloo ranks, train_dist.py's TP program with sequence and
loss parallel, narrowed widths, each shape's own vocabulary and MLP ratio), the counts at 2 and 4 layers.
"""

import json
import pathlib
from collections import Counter

import pytest

from mlcalc import steptime

COUNT = json.loads((pathlib.Path(__file__).resolve().parents[2] / "scripts/gpu/count_tp_ops.json").read_text())


def _split(counts, phase, kind):
    return sum(v for k, v in counts[phase].items() if k.startswith(kind + ":"))


def _per_layer_and_outside(shape, rc):
    c = COUNT["shapes"][shape]["counts"]
    a, b = c[f"{'rc' if rc else 'plain'}-2L"], c[f"{'rc' if rc else 'plain'}-4L"]
    out = {}
    for ph in ("forward", "backward", "optimizer"):
        for kind in ("plain", "dtensor"):
            per = (_split(b, ph, kind) - _split(a, ph, kind)) / 2
            out[(ph, kind)] = (per, _split(a, ph, kind) - 2 * per)
    return out


def test_the_qwen3_shape_dispatches_what_the_mistral_and_llama3_shapes_do():
    for rc in (False, True):
        ref = _per_layer_and_outside("Mistral 7B", rc)
        for shape in ("Qwen3-8B-noqknorm", "Llama-3 8B"):
            assert _per_layer_and_outside(shape, rc) == ref
            for rcl in ("rc-2L", "rc-4L", "plain-2L", "plain-4L"):  # operation by operation
                assert Counter(COUNT["shapes"][shape]["counts"][rcl]["forward"]) == Counter(
                    COUNT["shapes"]["Mistral 7B"]["counts"][rcl]["forward"])
                assert COUNT["shapes"][shape]["counts"][rcl]["sharding_cache_misses"] == 0


def test_counts_agree_with_the_engine_tables():
    # the engine's tables were counted on the GPU program (torch 2.11, CUDA); here on the CPU, torch 2.13
    got = _per_layer_and_outside("Qwen3-8B-noqknorm", False)
    assert got[("forward", "dtensor")] == (steptime.TP_DTENSOR_OPS_PER_LAYER["forward"],
                                           steptime.TP_DTENSOR_OPS_OUTSIDE["forward"])
    assert got[("backward", "dtensor")] == (steptime.TP_DTENSOR_OPS_PER_LAYER["backward"],
                                            steptime.TP_DTENSOR_OPS_OUTSIDE["backward"])
    # forward: 107 ops a layer, as the GPU count (80 + 27); backward 168 here against 163 there (the CPU's attention)
    fwd = got[("forward", "plain")][0] + got[("forward", "dtensor")][0]
    assert fwd == steptime.PLAIN_OPS_PER_LAYER["forward"] + steptime.TP_EXTRA_OPS_PER_LAYER["forward"]
    bwd = got[("backward", "plain")][0] + got[("backward", "dtensor")][0]
    assert bwd == pytest.approx(steptime.PLAIN_OPS_PER_LAYER["backward"] + steptime.TP_EXTRA_OPS_PER_LAYER["backward"],
                                abs=5)
    # checkpointed: the recomputed forward's DTensor ops (100 on the GPU count) in the backward
    rc = _per_layer_and_outside("Qwen3-8B-noqknorm", True)
    assert rc[("backward", "dtensor")][0] - got[("backward", "dtensor")][0] == steptime.TP_DTENSOR_OPS_PER_LAYER[
        "recompute"]
