"""The memory chapters' widgets recompute on a change and show bad input inline."""


import pytest

pytest.importorskip("ipywidgets")

from mlcalc import memory
from mlcalc.widgets import (ActivationWidget, BytesPerParamWidget, CpuWidget, MoeWidget,
                            ServingWidget, TrainingFitWidget, ZeroWidget)


def test_bytes_per_param_switches_convention():
    w = BytesPerParamWidget(n_params_billion=7.5)
    assert sum(w.last_result.values()) == pytest.approx(120e9)  # ZeRO: 16 x 7.5B
    w.convention.value = "bekman"
    assert sum(w.last_result.values()) == pytest.approx(135e9)  # Bekman: 18 x 7.5B
    w.n_params_billion.value = -1
    assert "params (billions)" in w.last_error and "params (billions)" in w.message.value
    assert sum(w.last_result.values()) == pytest.approx(135e9)
    w.n_params_billion.value = 1
    assert w.last_error == ""


def test_zero_widget_reproduces_figure_1_and_rejects_bad_offload():
    w = ZeroWidget(n_params_billion=7.5, dp=64, zero_stage=1)
    assert round(w.last_result.device_bytes / 1e9, 1) == 31.4  # ZeRO paper, Figure 1
    w.zero_stage.value = 3
    assert round(w.last_result.device_bytes / 1e9, 1) == 1.9
    w.zero_stage.value = 2
    w.offload_par.value = True  # parameters can be offloaded only with stage 3
    assert "offload_params" in w.last_error
    w.zero_stage.value = 3
    assert w.last_error == "" and w.last_result.cpu_parts["parameters"] > 0
    w.offload_opt.value = True  # ZeRO-Infinity style: every model state in host memory
    assert w.last_result.device_bytes == 0


def test_activation_widget_follows_korthikanti():
    w = ActivationWidget(model="GPT-3 175B", seq_len=2048, micro_batch=1, tp=8)
    sbh = 2048 * 12288
    assert w.last_result == pytest.approx(sbh * (34 / 8 + 80 / 8))  # Table 2, TP + SP, 5as/h = 80
    w.recompute.value = "selective"
    assert w.last_result == pytest.approx(sbh * 34 / 8)
    w.tp.value = 16  # 96 heads: 16 divides, fine
    assert w.last_error == ""
    w.model.value = "Llama-2 13B"  # 40 heads: TP 16 does not divide them
    assert "tensor_parallel" in w.last_error


def test_serving_widget_counts_devices_and_rejects_zero_batch():
    w = ServingWidget(model="Llama-3 70B", accelerator="H100-SXM", batch=1, context_len=1024)
    assert w.last_result.n_devices == 2
    w.weight_dtype.value = "int4"
    assert w.last_result.n_devices == 1
    w.batch.value = 0
    assert "batch" in w.last_error and w.last_result.n_devices == 1


def test_moe_widget_shows_total_and_active():
    w = MoeWidget()
    assert round(w.last_result.total_params / 1e9) == 47 and round(w.last_result.active_params / 1e9) == 13


def test_training_widget_fits_and_reports_bad_pipeline_depth():
    w = TrainingFitWidget(model="Llama-3 70B", accelerator="H100-SXM", dp=4, tp=8, pp=1, zero_stage=3)
    assert w.last_result.fits
    w.zero_stage.value = 0
    assert not w.last_result.fits
    w.pp.value = 3  # 80 layers do not split into 3 stages
    assert "pp" in w.last_error and "n_layers" in w.last_error


def test_cpu_widget_counts_bekman_cores_and_rejects_negative_ram():
    w = CpuWidget(accelerators=8, workers=3)
    assert w.last_result.cores == 32 and w.last_result.dataloader_workers == 24
    w.ram_per_worker_gb.value = -1
    assert "GB per worker" in w.last_error
    w.ram_per_worker_gb.value = 1
    w.offload.value = True
    m = memory.model_preset("Llama-3 8B")
    assert w.last_result.ram_parts_bytes["offloaded model states"] == pytest.approx(16 * m.n_params())


@pytest.mark.parametrize("widget, control, value", [
    (ZeroWidget, "dp", 128), (ActivationWidget, "seq_len", 4096), (ServingWidget, "context_len", 4096),
    (TrainingFitWidget, "micro_batch", 2), (BytesPerParamWidget, "n_params_billion", 70.0),
])
def test_updates_work(widget, control, value):
    w = widget()
    getattr(w, control).value = value  # speed is measured by scripts/benchmark.py, not here
    assert w.last_error == ""
