"""The GPU-count widget recomputes on a change and shows bad input inline."""

import pytest

pytest.importorskip("ipywidgets")

from mlcalc.widgets import GpuCountWidget


def test_widget_starts_on_the_bekman_example():
    w = GpuCountWidget()
    # Bekman's example (80B parameters, 18 bytes each, headroom 1.25) on an "80 GB" H100 in real bytes:
    # 1.8e12 / 85.0e9 (torch total_memory, measured) = 21.2 -> 22 (Bekman's 80e9 gives 23).
    assert w.last_result.n_gpus == 22
    w.mode.value = "inference"
    assert w.last_result.n_gpus == 3  # 80e9 x 2 x 1.25 / 85.0e9 = 2.35 -> 3


def test_widget_follows_the_accelerator():
    w = GpuCountWidget()
    w.accelerator.value = "MI300X"  # 192 GiB: 80e9*18*1.25/206.2e9 = 8.73 -> 9
    assert w.last_result.n_gpus == 9


def test_bad_input_is_shown_inline_and_widget_recovers():
    w = GpuCountWidget()
    w.n_params_billion.value = -3
    assert "params" in w.last_error and "params" in w.message.value
    assert w.last_result.n_gpus == 22  # the last good answer stays
    w.n_params_billion.value = 7
    assert w.last_error == "" and w.message.value == ""
    assert w.last_result.n_gpus == 2  # 7e9*18*1.25/85.0e9 = 1.85 -> 2
