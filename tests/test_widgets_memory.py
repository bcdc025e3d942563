"""The GPU-count widget recomputes on a change and shows bad input inline."""

import pytest

pytest.importorskip("ipywidgets")

from mlcalc.widgets import GpuCountWidget  # noqa: E402


def test_widget_starts_on_the_bekman_example():
    w = GpuCountWidget()
    assert w.last_result.n_gpus == 23  # Bekman: 80B on 80 GB GPUs, training
    w.mode.value = "inference"
    assert w.last_result.n_gpus == 3  # Bekman: 80B on 80 GB GPUs, inference


def test_widget_follows_the_accelerator():
    w = GpuCountWidget()
    w.accelerator.value = "MI300X"  # 192 GB: 80e9*18*1.25/192e9 = 9.375 -> 10
    assert w.last_result.n_gpus == 10


def test_bad_input_is_shown_inline_and_widget_recovers():
    w = GpuCountWidget()
    w.params.value = -3
    assert "params" in w.last_error and "params" in w.message.value
    assert w.last_result.n_gpus == 23  # the last good answer stays
    w.params.value = 7
    assert w.last_error == "" and w.message.value == ""
    assert w.last_result.n_gpus == 2  # 7e9*18*1.25/80e9 = 1.97 -> 2
