"""Serving (mlcalc.serving): decode on the roofline against our measured points and published benchmarks."""

import pytest

from mlcalc import memory, serving, vl
from mlcalc.calculators import REGISTRY


def test_every_measured_decode_point_within_25_percent():
    # Measured in this book: transformers 5.17 generate, static cache, eager PyTorch 2.11, random-weight
    # Llama-shaped 1B and 8B in bf16 on NVIDIA H200 (mlcalc/data/measured/h200x2-2026-11-26-decode).
    # The prediction takes from that card only a read bandwidth, the launch floor of tiny models and the
    # copy rate of repeat_kv at a shape that is not a decode point.
    checks = serving.check_decode()
    assert len(checks) == 14
    for c in checks:
        assert "H200" in c.card
        assert abs(c.error) <= 0.25, c


def test_floor_and_bandwidths_come_from_the_run():
    f = serving.measured_floor()
    assert 0 < f.per_layer_s < 0.002 and 0 < f.fixed_s < 0.01
    # H200 datasheet: 4.8 TB/s; a large read reaches less.
    assert 3.5e12 < serving.measured_read_bandwidth() < 4.8e12
    assert serving.measured_copy_bandwidth() < serving.measured_read_bandwidth()


def test_batching_moves_decode_along_the_roofline():
    m = memory.model_preset("Llama-3 8B")
    steps = [serving.decode_step(m, b, 1024, 3.35e12, 794.5e12) for b in (1, 8, 64)]
    assert steps[0].tokens_per_s < steps[1].tokens_per_s < steps[2].tokens_per_s
    # Batch 1 reads every weight once per token: (weights + one cache) / bandwidth, where an embedding
    # lookup reads one row, not the table (Llama 3 8B's output projection is a separate matrix).
    read = m.n_params() - m.params_breakdown()["embeddings"]
    assert steps[0].step_s == pytest.approx(
        (read * 2 + memory.kv_cache_bytes_per_token(32, 8, 128) * 1024) / 3.35e12, rel=0.01)
    assert steps[0].bytes_per_gpu == pytest.approx(read * 2 + memory.kv_cache_bytes_per_token(32, 8, 128) * 1024)


def test_gqa_aware_attention_reads_the_cache_once():
    # transformers' SDPA path with a mask expands K and V with repeat_kv (g = heads / kv_heads copies):
    # read 1 + write g at the copy rate, then read g; a GQA-aware kernel reads the cache once.
    assert serving.attention_time_s(1e9, 32, 8, 4e12) == pytest.approx(1e9 / 4e12)
    assert serving.attention_time_s(1e9, 32, 8, 4e12, 1e12) == pytest.approx(5e9 / 1e12 + 4e9 / 4e12)


@pytest.mark.parametrize("batch,inp,out,chip", [(112, 128, 2048, "H100-SXM"), (48, 2048, 2048, "H100-SXM"),
                                                (60, 128, 2048, "A100-80GB")])
def test_decode_dominated_published_points_within_20_percent(batch, inp, out, chip):
    # TensorRT-LLM performance.md (v0.6.1): Llama 2 7B, tp = 1, static batches whose time is mostly decode
    # (long outputs): memory-bound, where the roofline model should hold.
    c = next(c for c in serving.check_benchmarks()
             if (c.batch, c.input, c.output, c.chip, c.model) == (batch, inp, out, chip, "Llama-2 7B"))
    assert abs(c.error) < 0.20, c


def test_serving_plan_meets_targets_and_fits_the_cache():
    m = memory.model_preset("Llama-3 70B")
    s = serving.plan_serving(m, "H100-SXM", 10, 1000, 200, 1.0, 0.05, 4.916)
    assert not s.problems
    assert s.ttft_s <= 1.0 and s.tpot_s <= 0.05
    assert s.batch * 1200 <= s.kv_tokens_fit
    assert s.replicas * s.replica_requests_per_s >= 10
    # 70B in bf16 (141 GB) does not fit one 80 GB H100: tensor parallelism.
    assert s.tp >= 2


def test_impossible_latency_names_the_target():
    m = memory.model_preset("Llama-3 8B")
    s = serving.plan_serving(m, "H100-SXM", 1, 100, 10, 1.0, 1e-4, 4.916)
    assert any(p.startswith("TPOT") for p in s.problems)
    with pytest.raises(ValueError, match="fit no tensor-parallel group"):
        serving.plan_serving(memory.model_preset("Llama-3 405B"), "A100-80GB", 1, 100, 10, 1, 1, 1)


def test_serve_chart_reads_the_pure_function():
    _, view = REGISTRY["plan.serve"].evaluate({"model": "Llama-3 8B"})
    rows = vl.chart_values(view.chart)
    assert rows and all(r["tokens_per_s_per_gpu"] > 0 for r in rows)
    assert [r["batch"] for r in rows] == sorted(r["batch"] for r in rows)
