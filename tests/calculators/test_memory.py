"""The memory calculators: chart numbers equal the pure functions', published figures come out,
charts stay the same size whatever the reader types, and citations read as author-year."""

import pathlib
import re

import pytest

from mlcalc import calc, memory, spec
from mlcalc.calculators import memory as cm
from mlcalc.calculators._common import AUTHOR_YEAR
from mlcalc.charts import title_of
from mlcalc.vl import chart_values

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _ev(key, **values):
    return calc.get(key).evaluate(values)


def test_gpu_count_offers_every_convention():
    control = calc.get("memory.gpu_count").control("convention")
    assert control.values() == list(memory.CONVENTIONS) and control.default == "bekman"
    # ZeRO paper (Rajbhandari et al. 2020, section 3.1): 16 bytes/param; 80B params x 16 x 1.25 / 85.0e9 bytes
    # (an "80 GB" H100's measured capacity) = 18.8 -> 19 GPUs
    r, view = _ev("memory.gpu_count", n_params_billion=80.0, convention="zero-mixed-adam")
    assert r.n_gpus == 19 and "16 bytes/param" in view.text and "Rajbhandari et al. 2020" in view.text
    # Bekman ("The AI Battlefield"): 18 bytes/param -> 22 GPUs to train (Bekman's 80e9 gives 23), 3 to serve
    assert _ev("memory.gpu_count", n_params_billion=80.0)[0].n_gpus == 22
    assert _ev("memory.gpu_count", n_params_billion=80.0, mode="inference", convention="frontier")[0].n_gpus == 3
    parts = [row for row in chart_values(view.chart) if "part" in row]
    assert sum(row["gb"] for row in parts) == pytest.approx(r.total_bytes / 1e9)


def test_bytes_per_param_chart_is_the_conventions_table():
    r, view = _ev("memory.bytes_per_param", n_params_billion=7.5, convention="zero-mixed-adam")
    # ZeRO paper, section 3.1: 7.5B parameters take 120 GB of model states with mixed-precision Adam
    assert sum(row[2] for row in view.table.rows) == pytest.approx(120.0)
    rows = chart_values(view.chart)
    for key, conv in memory.CONVENTIONS.items():
        bars = [row for row in rows if row["convention"].endswith(key) and "category" in row]
        assert sum(row["bytes"] for row in bars) == pytest.approx(conv.total)
    assert any(row["convention"] == "▶ zero-mixed-adam" for row in rows)


def test_zero_chart_reproduces_figure_1():
    r, view = _ev("memory.zero", n_params_billion=7.5, dp=64, zero_stage=1)
    rows = chart_values(view.chart)
    at64 = {row["stage"]: row["gb"] for row in rows if row.get("dp") == 64 and "stage" in row}
    # ZeRO paper, Figure 1: 7.5B parameters, Nd = 64: 120, 31.4, 16.6 and 1.9 GB
    assert [round(at64[f"stage {s}"], 1) for s in memory.ZERO_STAGES] == [120.0, 31.4, 16.6, 1.9]
    assert len(rows) == 4 * len(cm.ZERO_DP_GRID) + 2
    # the default A100 80GB: 80 GiB (its datasheet figure read as GiB) = 85.9 GB
    assert [row["gb"] for row in rows if row.get("what", "").startswith("one ")] == [pytest.approx(85.9, abs=0.01)]


def test_activation_chart_is_table_2():
    per_layer, view = _ev("memory.activations", model="GPT-3 175B", seq_len=2048, micro_batch=1, tp=8)
    rows = chart_values(view.chart)
    totals = {row["case"]: row["mib"] for row in rows if "label" in row}
    s, b, h, a, t = 2048, 1, 12288, 96, 8
    # Korthikanti et al. 2023, Table 2: sbh(34 + 5as/h), sbh(10 + 24/t + 5as/(ht)), sbh(34/t + 5as/(ht)),
    # sbh(34/t) with selective recomputation, 2sbh/t with full recomputation (and sequence parallelism)
    sbh = s * b * h / 2**20
    assert totals["no parallelism"] == pytest.approx(sbh * (34 + 5 * a * s / h), rel=1e-5)
    assert totals["TP"] == pytest.approx(sbh * (10 + 24 / t + 5 * a * s / (h * t)), rel=1e-5)
    assert totals["TP + SP"] == pytest.approx(sbh * (34 / t + 5 * a * s / (h * t)), rel=1e-5)
    assert totals["TP + SP + selective"] == pytest.approx(sbh * 34 / t, rel=1e-5)
    assert totals["full recompute (TP + SP)"] == pytest.approx(sbh * 2 / t, rel=1e-5)
    assert per_layer / 2**20 == pytest.approx(totals["TP + SP"], rel=1e-5)
    assert "Korthikanti et al. 2023" in title_of(view.chart)


def test_serving_chart_does_not_grow_with_the_batch():
    # issue 15: batch 1e6 drew one line per device (tens of thousands) and froze the kernel
    est, view = _ev("memory.serving", batch=10**6)
    assert est.n_devices > 10_000
    rows = chart_values(view.chart)
    assert len(rows) == 3
    assert rows[-1]["gb"] == pytest.approx(est.n_devices * est.usable_bytes_per_device / 1e9, rel=1e-5)
    # Llama 3 70B, 8 KV heads of 128 in 80 layers: 2 x 80 x 8 x 128 x 2 bytes = 320 KiB per token (bf16)
    assert "320.0 KiB" in view.text


def test_moe_chart_is_total_and_active():
    s, view = _ev("memory.moe", model="Mixtral 8x7B")
    # Mistral AI (Mixtral of experts): 47B total parameters, 13B active per token
    assert [round(row["billions"]) for row in chart_values(view.chart)] == [47, 13]


def test_training_fit_chart_is_the_grid():
    fit, view = _ev("memory.training_fit")
    rows = chart_values(view.chart)
    cells = [row for row in rows if "zero" in row]
    m = memory.model_preset("Llama-3 70B")
    grid = memory.training_fit_grid(m, spec("H100-SXM").memory_bytes, memory.ZERO_STAGES, cm.MICRO_BATCHES,
                                    seq_len=8192, dp=4, tp=8, pp=1, recompute="selective", overhead_fraction=0.1)
    assert [row["gb"] for row in cells] == pytest.approx([x / 1e9 for r in grid for x in r], rel=1e-5)
    assert [row["label"].endswith("X") for row in cells] == [x > fit.device_bytes for r in grid for x in r]
    parts = [row for row in rows if "part" in row]
    assert sum(row["gb"] for row in parts) == pytest.approx(fit.total_bytes / 1e9, rel=1e-5)


def test_cpu_table_is_deepspeeds_loading_rule():
    needs, view = _ev("memory.cpu", model="Llama-3 8B", accelerators=8, workers=2, ram_per_worker_gb=0.0)
    # DeepSpeed "Memory Requirements": every process builds the fp32 model on the CPU, params x 4 x GPUs x 1.5
    loading = memory.model_preset("Llama-3 8B").n_params() * 4 * 8 * 1.5
    assert view.table.rows[0][1] == pytest.approx(loading / 1e9)
    # Bekman, "The AI Battlefield": 2-3 workers per accelerator plus the main process
    assert needs.cores == 24


def _bib_entries():
    entries = {}
    for bib in (ROOT / "book" / "refs").glob("*.bib"):
        for m in re.finditer(r"@\w+\{([^,]+),(.*?)\n\}", bib.read_text(), re.S):
            entries[m.group(1).strip()] = m.group(2)
    return entries


def test_author_year_matches_the_bibliography():
    entries = _bib_entries()
    for key, text in AUTHOR_YEAR.items():
        body = entries[key]
        year = re.search(r"year\s*=\s*\{(\d{4})\}", body).group(1)
        authors = re.search(r"author\s*=\s*\{(.*?)\},?\n", body, re.S).group(1)
        first = authors.split(" and ")[0].strip("{} ")
        assert text.endswith(year), key
        assert first.split()[-1].strip("{}") in text or first in text, key
        assert ("et al." in text) == (len(authors.split(" and ")) > 2), key


def test_gpu_count_convention_greys_out_when_serving():
    pytest.importorskip("ipywidgets")
    from mlcalc.widgets import GpuCountWidget

    w = GpuCountWidget()
    assert not w.convention.disabled
    w.mode.value = "inference"
    assert w.convention.disabled and w.last_result.n_gpus == 3  # Bekman: 80B to serve on 80 GB GPUs
