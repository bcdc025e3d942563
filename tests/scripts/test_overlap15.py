"""The overlap15b call (mlcalc/data/measured/h200x2-2026-11-27-overlap15b): kernels beside an NCCL collective.

Scored by ``scripts/gpu/score_overlap15.py`` against the blind predictions landed before any call
(``scripts/gpu/overlap15_predictions.json``: +22.2 % for every case, 132 / (132 - 24) SMs). What the record says,
pinned: NCCL's collective ran 24 blocks that no GEMM block can share an SM with; kernels of a millisecond and more
slowed far less than the uniform share while the collective beside them slowed instead; short GEMMs of few waves
slowed more; the uniform-share rule stays off in the engine.
"""

from __future__ import annotations

import json
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "scripts", "gpu"))

import score_overlap15 as so  # noqa: E402

from mlcalc import steptime  # noqa: E402


@pytest.fixture(scope="module")
def scored():
    return so.score()


def test_the_record_is_the_scored_file(scored):
    assert json.loads((so.RECORD / "scored.json").read_text()) == json.loads(json.dumps(scored))


def test_nccl_ran_the_24_blocks_the_predictions_assumed(scored):
    assert scored["card"] == "NVIDIA H200"
    grids = {k["grid"][0] for k in scored["nccl_kernels"]}
    assert grids == {24}
    # 544 threads x 96 registers = 52,224 of an SM's 65,536, and 103,808 B of shared memory: an SM holding one
    # of NCCL's blocks has no room for a Hopper GEMM block beside it.
    assert all(k["block"][0] * k["regs"] > 50_000 and k["smem"] > 100_000 for k in scored["nccl_kernels"])


def test_long_kernels_slow_far_less_than_the_uniform_share_and_the_collective_gives_way(scored):
    long = [r for r in scored["rows"] if r["alone_ms"] >= 1.0]
    assert len(long) == 8
    assert all(0.0 < r["measured_slowdown"] < 0.11 < r["predicted_slowdown"] for r in long)
    assert all(r["collective_slowdown"] > 0.10 for r in long)


def test_short_gemms_of_few_waves_slow_past_the_wave_bound(scored):
    short = {(r["case"], r["collective"]): r for r in scored["rows"] if r["case"] in ("8B-o-2k", "8B-down-2k")}
    assert len(short) == 4
    assert all(r["measured_slowdown"] > r["wave_quantised_bound"] == 0.5 for r in short.values())


def test_blind_score_and_the_engine_keeps_the_rule_off(scored):
    assert (scored["held"], scored["cases"]) == (7, 22)
    assert steptime.COLLECTIVE_INTERFERENCE is False
