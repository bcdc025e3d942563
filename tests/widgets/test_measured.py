"""Widgets of the hardware part: set a control, check last_result / last_error."""

from __future__ import annotations

import pytest

pytest.importorskip("ipywidgets")

from mlcalc import measured, spec
from mlcalc.widgets import MeasuredCollectiveWidget, PastedResultWidget, PredictionWidget

from tests.core.test_measured import MAMF_TEXT, NCCL_TEXT


def test_prediction_widget_finds_the_measured_case():
    w = PredictionWidget(model="gpt2-1.5B", batch=8, seq_len=1024, recompute=False)
    mem, textbook, t, case = w.last_result
    assert case is not None and case.peak_bytes
    assert abs(mem.total / case.peak_bytes - 1) < 0.10
    w.batch.value = 64  # 1.5B at 64 x 1024 tokens does not fit in 80 GB: still a result, flagged in the text
    assert w.last_error == "" and w.last_result[0].total > spec("H100-SXM").memory_bytes
    assert w.last_result[3] is None


def test_measured_collective_widget_reads_the_curve():
    w = MeasuredCollectiveWidget(op="all_gather", message_bytes=2**30)
    curve, busbw, tm, tl = w.last_result
    assert busbw == pytest.approx(measured.busbw_curve("all_gather").busbw_bytes_per_s_at(2**30))
    assert tm.time_s > tl.time_s  # the measured bus is slower than the datasheet link


def test_pasted_result_widget_parses_and_reports_errors():
    w = PastedResultWidget(text=NCCL_TEXT)
    assert w.last_result.peak_busbw_bytes_per_s == pytest.approx(335.54e9)
    w.kind.value = "mamf-finder"
    assert w.last_error  # nccl-tests text is not a mamf log
    w.text.value = MAMF_TEXT
    assert w.last_error == "" and w.last_result.best_tflops == pytest.approx(758.2)
    w.text.value = ""
    assert "text=''" in w.last_error
