"""The "Measured on real hardware" part's static matplotlib figures (measured against advertised,
predictions against measurements); its calculators' widgets are made in :mod:`mlcalc.widgets`."""

from __future__ import annotations

import math
from typing import Sequence

from matplotlib.figure import Figure

from mlcalc import measured as ms
from mlcalc import gpt_program as predict
from mlcalc.figures import plain_log_ticks

_FIGSIZE = (7, 3)

# --------------------------------------------------------------------------- figures


def matmul_sweep_figure(result: ms.MatmulResult, peak_flops: float) -> Figure:
    """TFLOPS of every swept shape against its FLOP count, with the datasheet peak and the best."""
    fig = Figure(figsize=_FIGSIZE)
    ax = fig.subplots()
    rows = sorted(result.sweep, key=lambda r: 2.0 * r.m * r.n * r.k)
    ax.scatter([2.0 * r.m * r.n * r.k for r in rows], [r.tflops for r in rows], s=10, color="#4c72b0",
               label="swept shapes (median)")
    ax.axhline(peak_flops / 1e12, color="#c44e52", ls="--", lw=1, label="datasheet dense peak")
    ax.axhline(result.best_tflops, color="#55a868", lw=1, label="best, burst")
    if result.sustained_tflops is not None:
        ax.axhline(result.sustained_tflops, color="#dd8452", lw=1, ls=":", label="best, sustained")
    ax.set_xscale("log")
    plain_log_ticks(ax.xaxis, "FLOP")
    ax.set_xlabel("FLOP of one product (2 m n k)")
    ax.set_ylabel("TFLOPS")
    ax.set_ylim(0, peak_flops / 1e12 * 1.1)
    ax.set_title(f"{result.dtype} matmul on {result.info.device_name}", fontsize=9)
    ax.legend(fontsize=7, loc="lower right")
    return fig


def copy_figure(copies: Sequence[ms.CopyResult], memory_bytes_per_s: float, pcie_bytes_per_s: float) -> Figure:
    """Copy bandwidth against size (device copy counted read + write) with the datasheet lines."""
    fig = Figure(figsize=_FIGSIZE)
    ax = fig.subplots()
    for c in copies:
        scale = 2 if c.kind == "d2d" else 1
        label = {"d2d": "device to device (read + write)", "h2d": "host to device", "d2h": "device to host"}[c.kind]
        ax.plot(c.sizes_bytes, [g * scale for g in c.gbps], marker="o", ms=3, label=label)
    ax.axhline(memory_bytes_per_s / 1e9, color="#c44e52", ls="--", lw=1, label="HBM datasheet")
    ax.axhline(pcie_bytes_per_s / 1e9, color="0.4", ls=":", lw=1, label="PCIe 5.0 x16, one direction")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    plain_log_ticks(ax.xaxis, "B", binary=True)
    plain_log_ticks(ax.yaxis)
    ax.set_xlabel("bytes copied")
    ax.set_ylabel("GB/s")
    ax.legend(fontsize=7, loc="center right")
    return fig


def busbw_figure(curves: Sequence[ms.BusbwCurve], link_bytes_per_s: float, size_bytes: float | None = None) -> Figure:
    """Bus bandwidth against message size for each curve, with the link's one-direction figure."""
    fig = Figure(figsize=_FIGSIZE)
    ax = fig.subplots()
    for c in curves:
        ax.plot(c.sizes_bytes, c.busbw_gbps, marker="o", ms=3, label=f"{c.op} ({c.info.label.split('/')[0]})")
    ax.axhline(link_bytes_per_s / 1e9, color="#c44e52", ls="--", lw=1, label="NVLink 4, one direction")
    if size_bytes:
        ax.axvline(size_bytes, color="0.5", lw=1, ls=":")
    ax.set_xscale("log", base=2)
    plain_log_ticks(ax.xaxis, "B", binary=True)
    ax.set_xlabel("message size, bytes (nccl-tests convention)")
    ax.set_ylabel("busbw, GB/s")
    ax.legend(fontsize=6, loc="upper left")
    return fig


def prediction_figure(rows: Sequence[predict.Comparison]) -> Figure:
    """Predicted against measured: peak memory (left) and step time (right), with the target bands."""
    fig = Figure(figsize=(7, 3.2))
    a1, a2 = fig.subplots(1, 2)
    for ax, meas, pairs, band, unit in (
        (a1, [r.measured_peak_bytes / 2**30 for r in rows],
         [("textbook", [r.textbook_peak_bytes / 2**30 for r in rows], "#c44e52"),
          ("program", [r.program_peak_bytes / 2**30 for r in rows], "#4c72b0")], 0.10, "peak memory, GiB"),
        (a2, [r.measured_step_s * 1e3 for r in rows],
         [("textbook", [r.textbook_step_s * 1e3 if r.textbook_step_s else math.nan for r in rows], "#c44e52"),
          ("program", [r.program_step_s * 1e3 for r in rows], "#4c72b0")], 0.20, "step time, ms"),
    ):
        hi = max(max(meas), *(max(v for v in p if v == v) for _, p, _ in pairs if any(v == v for v in p))) * 1.1
        ax.fill_between([0, hi], [0, hi * (1 - band)], [0, hi * (1 + band)], color="0.9", label=f"±{band:.0%}")
        ax.plot([0, hi], [0, hi], color="0.5", lw=1)
        for label, pred, color in pairs:
            ax.scatter(meas, pred, s=12, color=color, label=label)
        ax.set_xlim(0, hi)
        ax.set_ylim(0, hi)
        ax.set_xlabel(f"measured {unit}", fontsize=8)
        ax.set_ylabel(f"predicted {unit}", fontsize=8)
        ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    return fig
