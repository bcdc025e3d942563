"""Network calculators (compute/view): their charts carry the numbers of the pure functions."""

import pytest

from mlcalc import calc
from mlcalc import network as net
from mlcalc import parallel as par
from mlcalc.calculators import network as calcs
from mlcalc.vl import chart_values


def _evaluate(c, **given):
    result, view = c.evaluate(given)
    calc.check_chart(view.chart)
    return result, view


# nccl-tests doc/PERFORMANCE.md: an all-reduce's busbw is algbw x 2(n-1)/n; the chart's curve is the model's.
def test_collective_chart_follows_the_model():
    (fab, t), view = _evaluate(calcs.COLLECTIVE, plot="busbw")
    rows = [r for r in chart_values(view.chart) if "bytes" in r]
    for r in rows[:-1:8]:
        c = net.fabric_collective_time(r["bytes"], fab, "all_reduce", "ring")
        assert r["busbw"] == pytest.approx(c.busbw_bytes_per_s / 1e9, rel=1e-5)
        assert c.busbw_bytes_per_s == pytest.approx(c.algbw_bytes_per_s * 2 * 7 / 8)
    assert rows[-1]["busbw"] == pytest.approx(t.busbw_bytes_per_s / 1e9, rel=1e-5)
    _, view = _evaluate(calcs.COLLECTIVE, plot="time")
    total = [r for r in chart_values(view.chart) if r.get("part") == "total"]
    assert len(total) == len(calcs.SWEEP_BYTES) and "1.07 GB (1 GiB)" in view.text


# NCCL 2.28.9 on one H100 node runs a ring on 24 channels (mlcalc.network.nccl_ring_channels; its logs on 2 and 4 H200s,
# h200x2-2026-11-27-coll10): on 2 GPUs an all-gather's busbw is the channels' (262.5 GB/s, measured 269), not the
# links' 370 GB/s. The text names what sets the pace, so a busbw below the links' is not left unexplained.
def test_collective_text_names_the_ring_channels_where_they_set_the_pace():
    (fab, t), view = _evaluate(calcs.COLLECTIVE, collective="all_gather", gpus_per_node=2)
    ring = net.collective_busbw_bytes_per_s(fab, "all_gather", "ring")
    assert ring < 0.8 * fab.busbw_bytes_per_s and t.busbw_bytes_per_s <= ring
    assert f"NCCL's {fab.ring_channels} ring channels set the pace" in view.text and "link sets the pace" not in view.text
    assert calcs.gbs(ring) in view.text and calcs.gbs(fab.channel_copy_bytes_per_s) in view.text
    # across nodes NCCL picks its channels by another search (not modelled): the links' text stays
    _, view = _evaluate(calcs.COLLECTIVE, collective="all_gather", n_nodes=2)
    assert "link sets the pace" in view.text and "ring channels" not in view.text
    _, view = _evaluate(calcs.COLLECTIVE, measured_busbw_gb_s=300)
    assert "the measured bus bandwidth sets the pace" in view.text


def test_collective_bad_measured_busbw_is_named():
    assert "measured_busbw_gb_s" in calc.run(calcs.COLLECTIVE.key, {"measured_busbw_gb_s": -1})["error"]
    assert "message (bytes)" in calc.run(calcs.COLLECTIVE.key, {"message_bytes": 0})["error"]


# Wang et al. (Rail-only), N = 32,768 and radix 128: 1,280 fat-tree switches against 256, 75% cheaper.
def test_topology_chart_rows():
    r, view = _evaluate(calcs.TOPOLOGY, radix=128)
    counts = {(d["what"], d["design"]): d["count"] for d in chart_values(view.chart)}
    assert counts[("switches", "fat tree")] == 1280 and counts[("switches", "Rail-only")] == 256
    assert counts[("transceivers", "fat tree")] == r.fat_tree.transceivers
    assert round(100 * r.cost_reduction) == 75


# Narayanan et al. 2021: bubble (p-1)/m, divided by v when interleaved.
def test_pipeline_chart_is_the_timeline_and_bounded():
    t, view = _evaluate(calcs.PIPELINE, kind="interleaved", p=4, m=8, v=2)
    assert t.bubble_fraction == pytest.approx(3 / 16)
    boxes = [r for r in chart_values(view.chart)]
    assert len(boxes) == 2 * 4 * 8 * 2 and max(b["end"] for b in boxes) == pytest.approx(t.makespan)
    _, view = _evaluate(calcs.PIPELINE, kind="interleaved", p=calcs.MAX_P, m=calcs.MAX_M, v=calcs.MAX_V)
    assert len(chart_values(view.chart)) <= calc.MAX_CHART_ROWS
    assert "p=9" in calc.run(calcs.PIPELINE.key, {"p": 9})["error"]


# Bekman's table: NVLink grew 1x, 2x, 3x, 6x from V100 to B200; compute 1x, 2.5x, 7.9x, 18x.
def test_generations_chart():
    _, view = _evaluate(calcs.GENERATIONS)
    link = [round(r["x"]) for r in chart_values(view.chart) if r["what"].startswith("NVLink")]
    compute = [r["x"] for r in chart_values(view.chart) if r["what"].startswith("compute")]
    assert link == [1, 2, 3, 6] and compute == pytest.approx([1, 2.496, 7.916, 18.0], rel=1e-3)


# Narayanan et al. 2021, Table 1: GPT 145.6B as t=8, p=8, d=24 on 192 DGX A100 nodes (batch 2,304).
def test_step_comm_chart_is_the_budget():
    b, view = _evaluate(calcs.STEP_COMM)
    rows = chart_values(view.chart)
    bars = {r["what"]: r["s"] for r in rows if "what" in r}
    assert bars["compute"] == pytest.approx(b.compute_s, rel=1e-5)
    for ln in b.lines:
        assert bars[f"{ln.parallelism} ({ln.link})"] == pytest.approx(ln.time_s, rel=1e-5)
    lay, view = _evaluate(calcs.LAYOUT)
    assert (lay.layout.tp, lay.layout.pp, lay.layout.dp) == (8, 8, 24)


# Bekman: "if you are told you get 800Gbps, expect ~640Gbps" (80 GB/s).
def test_units_table():
    _, view = _evaluate(calcs.UNITS, value=800, nics_per_node=1)
    assert view.table.rows[2][1:] == ("80.0", "640")


# Kaplan et al. 2020: a step costs 6 N T FLOP, so twice the sequence length (T) is twice the compute time;
# any dense preset of mlcalc.models can be laid out, its parameters counted from its ModelConfig.
def test_step_budget_takes_any_dense_model_and_its_sequence_length():
    from mlcalc import models

    b1, _ = _evaluate(calcs.STEP_COMM, model="Llama-3 70B", seq_len=4096)
    b2, _ = _evaluate(calcs.STEP_COMM, model="Llama-3 70B", seq_len=8192)
    assert b2.compute_s == pytest.approx(2 * b1.compute_s)
    n = models.preset("Llama-3 70B").n_params()
    assert b1.compute_s == pytest.approx(6 * n * 2304 * 4096 / (1536 * 312e12 * 0.47), rel=1e-6)
    assert all(not models.preset(m).is_moe for m in calcs.MODEL_NAMES if m not in par.NARAYANAN_TABLE1)
