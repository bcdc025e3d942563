"""The network widgets recompute on a change, show bad input inline, and stay quick."""


import pytest

pytest.importorskip("ipywidgets")

from mlcalc.widgets import (
    BandwidthUnitsWidget, CollectiveWidget, GenerationsWidget, LayoutWidget, PipelineWidget, StepCommWidget,
    TopologyWidget,
)


def test_units_widget_bekman_example_and_bad_input():
    w = BandwidthUnitsWidget(value=800, unit="Gb/s", nics_per_node=1)
    # Bekman: "if you are told you get 800Gbps, expect ~640Gbps" (= 80 GB/s).
    assert w.last_result.expected_node_bytes_per_s == pytest.approx(80e9)
    w.nics_per_node.value = 0
    assert "nics_per_node" in w.last_error and "nics_per_node" in w.message.value
    w.nics_per_node.value = 8  # DGX H100-like: 8 x 800 Gb/s
    assert w.last_error == "" and w.last_result.node_bytes_per_s == pytest.approx(800e9)
    w.direction.value = "bidirectional"
    assert w.last_result.one_direction_bytes_per_s == pytest.approx(50e9)


def test_generations_widget_baseline():
    w = GenerationsWidget()
    assert [round(s.intra_node) for s in w.last_result] == [1, 2, 3, 6]  # Bekman table
    w.baseline.value = "A100"
    assert [s.intra_node for s in w.last_result] == pytest.approx([0.5, 1, 1.5, 3])


def test_collective_widget_slowest_link_and_bad_input():
    w = CollectiveWidget()
    fab, t = w.last_result
    # NCCL maintainers: NVLink ~370 of 450 GB/s (nccl-tests#212); 46-48 GB/s per 400G NIC (nccl-tests#290).
    assert fab.bottleneck == "intra-node" and fab.busbw_bytes_per_s == pytest.approx(370e9, rel=1e-3)
    w.n_nodes.value = 2  # rings cross nodes through all 8 NICs: 8 x 47 = 376 GB/s, NVLink still slower
    fab, t = w.last_result
    assert fab.bottleneck == "intra-node" and fab.busbw_bytes_per_s == pytest.approx(370e9, rel=1e-3)
    w.system.value = "DGX-A100"  # 8 x 24 GB/s HDR NICs < 235 GB/s NVLink: the network sets the pace
    fab, t = w.last_result
    assert fab.bottleneck == "inter-node" and fab.busbw_bytes_per_s == pytest.approx(8 * 23.5e9)
    w.system.value = "DGX-H100"
    w.collective.value = "all_gather"
    w.algorithm.value = "tree"
    assert "algorithm" in w.last_error
    w.algorithm.value = "ring"
    assert w.last_error == ""
    w.efficiency.value = 0.0
    assert "efficiency" in w.last_error
    w.efficiency.value = 1.0
    w.measured_busbw_gb_s.value = 40.0  # a measured busbw (GB/s) replaces the links
    fab, t = w.last_result
    assert w.last_error == "" and fab.busbw_bytes_per_s == pytest.approx(40e9)
    w.measured_busbw_gb_s.value = -1.0
    assert "measured_busbw_gb_s" in w.last_error


def test_step_comm_widget_and_bad_layout():
    w = StepCommWidget()
    assert {ln.parallelism for ln in w.last_result.lines} == {"tensor", "pipeline", "data"}
    good = w.last_result
    w.dp.value = 5  # 8 x 8 x 5 = 320 GPUs but 2304 sequences is not a multiple of 5
    assert "global_batch" in w.last_error and w.last_result is good
    w.dp.value = 0
    assert "dp" in w.last_error
    w.dp.value = 24
    assert w.last_error == ""


def test_layout_widget_reproduces_table1_and_reports_bad_input():
    w = LayoutWidget(model="GPT-1008B", n_nodes=384, global_batch=3072)
    lay = w.last_result.layout
    assert (lay.tp, lay.pp, lay.dp) == (8, 64, 6)  # Narayanan et al. 2021, Table 1
    w.n_nodes.value = 3
    assert "n_gpus" in w.last_error


def test_pipeline_widget_redraws_and_bubble():
    w = PipelineWidget(kind="1f1b", p=4, m=8)
    assert w.last_result.bubble_fraction == pytest.approx(3 / 8)  # Narayanan et al. (p-1)/m
    w.kind.value = "interleaved"
    assert w.last_result.bubble_fraction == pytest.approx(3 / 16)  # (p-1)/(m v), v = 2
    w.m.value = 6
    assert "m=6" in w.last_error
    w.m.value = 12
    assert w.last_error == ""


def test_topology_widget_rail_only_row():
    w = TopologyWidget(n_gpus=32768, radix=128, hb_domain=256)
    r = w.last_result
    # Rail-only paper row N = 32768, radix 128: 1280 vs 256 switches, 75% cheaper.
    assert (r.fat_tree.switches, r.rail_only.switches) == (1280, 256)
    assert round(100 * r.cost_reduction) == 75
    w.n_gpus.value = 1000
    assert "hb_domain" in w.last_error


@pytest.mark.parametrize("make, poke", [
    (CollectiveWidget, lambda w: setattr(w.message_bytes, "value", 2 ** 20)),
    (PipelineWidget, lambda w: setattr(w.p, "value", 8)),
    (LayoutWidget, lambda w: setattr(w.mfu, "value", 0.4)),
    (TopologyWidget, lambda w: setattr(w.radix, "value", 32)),
])
def test_widget_updates_work(make, poke):
    w = make()
    poke(w)  # speed is measured by scripts/benchmark.py, not here
    assert w.last_error == ""
