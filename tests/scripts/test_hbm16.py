"""hbm16's blind predictions (scripts/gpu/hbm16_predictions.json), landed before the call: NCCL's ring traffic through
HBM leaves a memory-bound kernel what the chip sustains less what the ring moves; compute-bound kernels 132 / 108."""

from __future__ import annotations

import json
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "scripts", "gpu"))

import predict_hbm16 as ph  # noqa: E402

from mlcalc import network, serving  # noqa: E402


@pytest.fixture(scope="module")
def pred():
    with open(ph.PATH) as f:
        return json.load(f)


def test_touches_per_received_byte_count_the_ring_steps():
    # 2 ranks: own shard read + written (2) and the one received chunk written, read, written (3)
    assert ph.hbm_touches_per_byte(2) == 5.0
    # 4 ranks: 3 x 3 received + 2 own, over 3 received chunks
    assert ph.hbm_touches_per_byte(4) == pytest.approx(11 / 3)
    assert ph.hbm_touches_per_byte(2, l2=True) == 3.0


@pytest.mark.parametrize("card,key,system", [("NVIDIA H200", "H200-SXM", "DGX-H200"),
                                             ("NVIDIA H100 80GB HBM3", "H100-SXM", "DGX-H100")])
@pytest.mark.parametrize("n", [2, 4])
def test_memory_bound_prediction_is_what_the_ring_leaves(pred, card, key, system, n):
    size = ph.LAYER_PARAMS * 2
    t = network.fabric_collective_seconds(float(size), network.fabric(system, gpus_per_node=n), "all_gather")
    r = size * (n - 1) / n / t * ph.hbm_touches_per_byte(n)
    b = serving.read_bandwidth(key)
    got = pred["cards"][card]["worlds"][str(n)]["copy-1GiB|all_gather"]["slowdown"]
    assert got == pytest.approx(b / (b - r) - 1, abs=1e-4)


def test_h200_numbers_as_committed(pred):
    w = pred["cards"]["NVIDIA H200"]["worlds"]
    assert w["2"]["add-1GiB|reduce_scatter"]["slowdown"] == pytest.approx(0.4701, abs=1e-4)
    assert w["4"]["add-1GiB|reduce_scatter"]["slowdown"] == pytest.approx(0.4057, abs=1e-4)
    assert w["4"]["8B-up-8k|all_gather"]["slowdown"] == pytest.approx(132 / 108 - 1, abs=1e-4)
    assert pred["scoring"] == {"within": 0.05, "memory_bound_needed": 6, "memory_bound_cases": 8}
