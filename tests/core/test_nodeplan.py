"""From one measured node to a plan (issue 24, item 6): the engine on a node's own mlcalc.bench results.

The node is the book's own H100 80GB HBM3 SXM (mlcalc/data/measured/h100-2026-11-26 and -run2: bf16 matmul sweeps,
device copies, SDPA attention and 40 GPT-2 training cases), read as a reader's results would be; and the 2 x H200
run h200x2-2026-11-26, which also measured collectives.
"""

import statistics

import pytest

from mlcalc import measured, models, nodeplan

H100 = measured.run("h100-2026-11-26") + measured.run("h100-2026-11-26-run2")
H200X2 = measured.run("h200x2-2026-11-26")


def test_the_node_machine_is_the_nodes_own_rates():
    m = nodeplan.node_machine(H100)
    copy = next(r for r in H100 if isinstance(r, measured.CopyResult) and r.kind == "d2d")
    assert m.memory_bytes_per_s == copy.memory_bytes_per_s
    sweeps = [r for r in H100 if isinstance(r, measured.MatmulResult) and r.dtype == "bf16"]
    assert m.matmul_flops_per_s(8192, 8192, 8192) == measured.matmul_rate_near(sweeps, 8192, 8192, 8192)
    assert m.key == "H100-SXM"


# One factor for the whole node, from its 40 training cases: the GPT program's model (the predictions chapter's) on
# the node's rates is 7-8% fast before, and every case within 15% after (the spread of shapes remains, not fitted).
def test_one_factor_calibrates_the_node():
    cal = nodeplan.calibrate(H100)
    assert len(cal.before) == len(cal.after) == 40
    assert 1.0 < cal.factor < 1.15
    before = statistics.median(abs(c.error) for c in cal.before)
    after = statistics.median(abs(c.error) for c in cal.after)
    assert after < before / 2 and after < 0.05
    assert all(abs(c.error) < 0.15 for c in cal.after)


# Weak scaling: 64 sequences of 4096 per node of 8 GPUs; ZeRO-3's gathers overlap the passes (the engine's rule), so
# tokens per second grow with the nodes while each step stays as long; the chosen layout fits the card.
def test_projection_scales_with_nodes_and_fits():
    m = models.preset("Llama-3 8B")
    plans = {n: nodeplan.project(m, n, results=H100, seq_len=4096, global_batch=64 * n, system="DGX-H100")
             for n in (1, 4, 16)}
    for n, p in plans.items():
        assert p.gpus == 8 * n and p.layout.n_gpus == p.gpus and p.tried <= 64
        assert p.prediction.fits and p.prediction.peak_bytes_per_gpu <= p.prediction.device_bytes
        assert any("not measured" in a for a in p.assumptions)
    assert plans[16].prediction.tokens_per_s > 12 * plans[1].prediction.tokens_per_s
    assert plans[16].prediction.step_s >= 0.95 * plans[1].prediction.step_s


def test_measured_collectives_set_the_links_inside_the_node():
    p = nodeplan.project(models.preset("Llama-3.2 1B"), 2, results=H200X2, seq_len=2048, global_batch=32,
                         system="DGX-H100")
    assert any("measured all-reduce bus bandwidth over 2 GPUs" in a for a in p.assumptions)
    q = nodeplan.project(models.preset("Llama-3.2 1B"), 2, results=H100, seq_len=2048, global_batch=32,
                         system="DGX-H100")
    assert any("no collectives measured" in a for a in q.assumptions)


def test_bad_input_names_the_parameter():
    with pytest.raises(ValueError, match="results"):
        nodeplan.node_machine([r for r in H100 if not isinstance(r, measured.MatmulResult)])
    with pytest.raises(ValueError, match="n_nodes"):
        nodeplan.project(models.preset("Llama-3 8B"), 0, results=H100, seq_len=4096, global_batch=64, system="DGX-H100")
    with pytest.raises(ValueError, match="no layout"):
        nodeplan.project(models.preset("Llama-3 405B"), 1, results=H100, seq_len=8192, global_batch=8,
                         system="DGX-H100")
