"""The measured-hardware calculators: chart numbers equal the loaders' and the network model's, and
the paste box reads at most 64 KiB."""

import time

import pytest

from mlcalc import calc, measured, network
from mlcalc.calculators import measured as cm
from mlcalc.vl import chart_values

from tests.core.test_measured import NCCL_TEXT


def test_collective_chart_is_the_measured_curve():
    r, view = calc.get("measured.collective").evaluate({"op": "all_gather", "message_bytes": 2**30})
    curve = measured.busbw_curve("all_gather")
    rows = chart_values(view.chart)
    line = [row for row in rows if "size" in row]
    assert [row["bytes"] for row in line] == [float(s) for s in curve.sizes_bytes]
    assert [row["busbw"] for row in line] == pytest.approx(list(curve.busbw_gbps), rel=1e-5)
    # NVIDIA H100 datasheet: NVLink 900 GB/s bidirectional, 450 GB/s each way
    assert [row["busbw"] for row in rows if "what" in row] == [450.0]
    point = rows[-1]
    assert point["bytes"] == 2.0**30 and point["busbw"] == pytest.approx(curve.busbw_bytes_per_s_at(2**30) / 1e9, rel=1e-5)
    _, busbw, tm, tl = r
    assert tm.time_s == pytest.approx(network.collective_time(2**30, 2, busbw, "all_gather").time_s)
    assert "1 GiB" in view.text


def test_collective_sizes_read_in_binary_units():
    labels = [label for label, _ in calc.get("measured.collective").control("message_bytes").options]
    assert labels[0] == "1 KiB" and labels[-1] == "16 GiB" and "64 MiB" in labels


def test_pasted_nccl_tests_chart_is_the_paste():
    r, view = calc.get("measured.pasted").evaluate({"text": NCCL_TEXT})
    rows = [row for row in chart_values(view.chart) if "size" in row]
    # the test's nccl-tests sample (all_reduce_perf on 2 H100s): sizes 8 B, 1 MiB, 128 MiB
    assert [row["bytes"] for row in rows] == [8.0, 1048576.0, 134217728.0]
    assert rows[-1]["busbw"] == pytest.approx(335.54)


def test_pasted_default_is_the_books_measurement():
    r, view = calc.get("measured.pasted").evaluate({})
    curve = measured.busbw_curve("all_reduce")
    assert r.sizes_bytes == curve.sizes_bytes and r.n_ranks == curve.n_ranks
    assert r.busbw_gbps == pytest.approx(curve.busbw_gbps, abs=0.005)


def test_a_96_kB_paste_is_refused_at_once():
    # issue 15: a 96 kB paste into this calculator hung the kernel (the parser was quadratic)
    start = time.perf_counter()
    out = calc.run("measured.pasted", {"text": "\n" * 96_000})
    assert time.perf_counter() - start < 0.5
    assert not out["ok"] and "65,536 bytes" in out["error"]
    out = calc.run("measured.pasted", {"text": NCCL_TEXT + " " * (cm.MAX_PASTE_BYTES - len(NCCL_TEXT))})
    assert out["ok"], out  # exactly 64 KiB is read


def test_prediction_table_is_the_program_model():
    from mlcalc import gpt_program as predict
    from mlcalc.gpt_program import preset

    (mem, textbook, t, case), view = calc.get("measured.prediction").evaluate(
        {"model": "gpt2-1.5B", "batch": 8, "seq_len": 1024})
    assert case is not None  # a measured case: the text gives the errors
    assert sum(row[1] for row in view.table.rows) * 2**30 == pytest.approx(
        predict.program_memory(preset("gpt2-1.5B"), 8, 1024, False).total)
    # measured on the H100 (h100-2026-11-26-run2): the program model is within 10% of the peak memory
    assert abs(mem.total / case.peak_bytes - 1) < 0.10
    assert "measured on the H100" in view.text
