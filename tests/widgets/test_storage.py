"""The storage widgets recompute on a change, start on published examples, and show bad input inline."""


import pytest

pytest.importorskip("ipywidgets")

from mlcalc.storage import GB, TiB
from mlcalc.widgets import (
    CapacityWidget,
    CheckpointIntervalWidget,
    CheckpointWidget,
    DataloaderWidget,
    LlmDataloaderWidget,
    StartupWidget,
)


def _assert_inline_error_then_recovery(w, control, bad, good, name):
    before = w.last_result
    control.value = bad
    assert name in w.last_error and name in w.message.value
    assert w.last_result is before  # the last good answer stays
    control.value = good
    assert w.last_error == "" and w.message.value == ""


def test_dataloader_widget_cosmoflow_and_presets():
    w = DataloaderWidget(workload="cosmoflow", achieved_tflops=35)
    # Ibrahim et al. Table II inputs (16 MiB, 247 GiF) at 35 TFLOP/s: 2.2 GB/s per V100, 17.7 per node
    # (Bekman's 18.2 uses the paper's rounded 65 GB/s per PFLOP/s).
    assert w.last_result.per_accelerator_bytes_per_s / GB == pytest.approx(2.214, abs=0.001)
    assert w.last_result.per_node_bytes_per_s / GB == pytest.approx(17.71, abs=0.01)
    w.workload.value = "resnet50"
    assert w.sample_mib.value == pytest.approx(0.14)
    assert w.last_result.flop_per_byte == pytest.approx(226_743, rel=1e-3)
    w.gflops.value = 62  # editing a preset's number turns the dropdown to "custom"
    assert w.workload.value == "custom"
    assert w.last_result.flop_per_byte == pytest.approx(2 * 226_743, rel=1e-3)
    _assert_inline_error_then_recovery(w, w.sample_mib, -1, 0.14, "sample (MiB)")
    _assert_inline_error_then_recovery(w, w.accelerators_per_node, 0, 8, "accelerators per node")


def test_llm_widget_is_tiny_bandwidth():
    w = LlmDataloaderWidget(n_params_billion=7, achieved_tflops=400, n_gpus=1024)
    bw, job = w.last_result
    assert bw.samples_per_s == pytest.approx(400e12 / (6 * 7e9))
    assert job == pytest.approx(bw.per_accelerator_bytes_per_s * 1024)
    _assert_inline_error_then_recovery(w, w.n_params_billion, 0, 7, "params (billions)")
    _assert_inline_error_then_recovery(w, w.n_gpus, 0, 8, "GPUs in the job")


def test_checkpoint_widget_bloom():
    w = CheckpointWidget()  # BLOOM-176B defaults
    size, write = w.last_result
    assert size.total_bytes / TiB == pytest.approx(2.244, abs=0.001)  # README/du: "2.3T"
    assert write.bottleneck == "filesystem"
    assert write.seconds == pytest.approx(size.total_bytes / 60e9)
    w.contents.value = "weights only (bf16)"
    assert w.last_result[0].bytes_per_param == 2
    _assert_inline_error_then_recovery(w, w.n_nodes, 0, 48, "nodes writing")
    _assert_inline_error_then_recovery(w, w.filesystem_gb_per_s, -5, 60, "filesystem write GB/s")


def test_interval_widget_llama3_scale():
    w = CheckpointIntervalWidget(n_gpus=16384, device_mtbf_years=5.8)
    # 5.8 years per GPU over 16,384 GPUs: a failure every ~3.1 h (Llama 3 saw one every 3.09 h).
    assert w.last_result["mtbf_s"] / 3600 == pytest.approx(3.10, abs=0.01)
    assert w.last_result["best"].fraction >= w.last_result["chosen"].fraction - 1e-9
    _assert_inline_error_then_recovery(w, w.checkpoint_s, 0, 60, "blocking per checkpoint (s)")
    _assert_inline_error_then_recovery(w, w.restart_min, -1, 10, "restart (min)")


def test_capacity_widget_bekman_rule():
    w = CapacityWidget(dataset_tb=100, checkpoint_tb=0, checkpoints_kept=0, other_tb=0)
    assert w.last_result.to_buy_bytes / 1e12 == pytest.approx(125)  # Bekman: 100 TB usable -> 125 TB
    _assert_inline_error_then_recovery(w, w.checkpoints_kept, -1, 0, "checkpoints kept")


def test_startup_widget():
    w = StartupWidget(n_nodes=1, processes_per_node=1, n_files=479, ops_per_file=13619 / 479, metadata_kops=1000, op_latency_ms=1)
    assert w.last_result.seconds == pytest.approx(13.619)  # blister's 13,619 ops at 1 ms each
    w.n_nodes.value = 2048  # 2048 x 13,619 ops at 1e6 ops/s = 27.9 s > 13.6 s
    assert w.last_result.bottleneck == "metadata server"
    assert w.last_result.seconds == pytest.approx(2048 * 13619 / 1e6)
    _assert_inline_error_then_recovery(w, w.metadata_kops, 0, 12, "metadata server (k ops/s)")


@pytest.mark.parametrize(
    "make, control, value",
    [
        (DataloaderWidget, "achieved_tflops", 50.0),
        (CheckpointWidget, "n_params_billion", 70.0),
        (CheckpointIntervalWidget, "interval_h", 2.0),
        (CapacityWidget, "usable_fraction", 0.89),
        (StartupWidget, "n_nodes", 128),
    ],
)
def test_update_works(make, control, value):
    w = make()
    getattr(w, control).value = value  # speed is measured by scripts/benchmark.py, not here
    assert w.last_error == ""
