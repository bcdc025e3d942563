"""Widgets and figures for the "Measured on real hardware" part: measured against advertised,
predictions against measurements, and readers' own result files."""

from __future__ import annotations

import math
from typing import Sequence

import ipywidgets as widgets
from matplotlib.figure import Figure

from mlcalc import measured as ms
from mlcalc import network as net
from mlcalc.accelerators import spec
from mlcalc.bench import predict
from mlcalc.bench.gpt import PRESETS, preset
from mlcalc.widgets._base import Calculator, display, figure_png, plain_log_ticks

_FIGSIZE = (7, 3)
H100_RUN = "h100-2026-11-26"  # the main H100 run: matmul sweep, copies, training
H100_RUN2 = "h100-2026-11-26-run2"  # the second H100 run: matmuls at the training shapes, attention, training


def _gib(x: float) -> str:
    return f"{x / 2**30:,.2f} GiB"


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


# --------------------------------------------------------------------------- widgets


class MeasuredCollectiveWidget(Calculator):
    """Time of a collective at a measured bus bandwidth (read off the curve at its size) and at the link's."""

    def __init__(self, op: str = "all_reduce", message_bytes: float = 2**26, n_ranks: int = 2) -> None:
        self.op = widgets.Dropdown(options=["all_reduce", "all_gather", "reduce_scatter"], value=op,
                                   description="Collective")
        self.size = widgets.FloatLogSlider(value=message_bytes, base=2, min=10, max=34, step=1, description="Bytes",
                                           continuous_update=False, readout_format=".3g")
        self.ranks = widgets.IntSlider(value=n_ranks, min=2, max=8, description="GPUs", continuous_update=False)
        super().__init__([self.op, self.size, self.ranks],
                         [widgets.HBox([self.op, self.ranks]), self.size])

    def compute(self) -> tuple[ms.BusbwCurve, float, net.CollectiveTime, net.CollectiveTime]:
        curve = ms.busbw_curve(self.op.value)
        busbw = curve.busbw_bytes_per_s_at(self.size.value)
        link = net.link("NVLink4-H100")
        at_measured = net.collective_time(self.size.value, self.ranks.value, busbw, self.op.value)
        at_link = net.collective_time(self.size.value, self.ranks.value, link.bytes_per_s, self.op.value)
        return curve, busbw, at_measured, at_link

    def render(self, result: tuple[ms.BusbwCurve, float, net.CollectiveTime, net.CollectiveTime]) -> None:
        curve, busbw, tm, tl = result
        link = net.link("NVLink4-H100").bytes_per_s
        print(f"measured busbw at {self.size.value:,.0f} B: {busbw / 1e9:,.1f} GB/s "
              f"= {busbw / link:.0%} of NVLink's {link / 1e9:.0f} GB/s (measured on {curve.n_ranks} GPUs)")
        print(f"{self.op.value} on {self.ranks.value} GPUs: {tm.time_s * 1e3:,.3f} ms at the measured busbw, "
              f"{tl.time_s * 1e3:,.3f} ms at the datasheet link")
        if self.ranks.value != curve.n_ranks:
            print(f"(the curve was measured on {curve.n_ranks} GPUs; with more, busbw usually differs: measure it)")
        display(figure_png(busbw_figure([curve], link, self.size.value)))


class PredictionWidget(Calculator):
    """Predicted peak memory and step time of a GPT training step on the H100, against the measurement if any."""

    def __init__(self, model: str = "gpt2-350M", batch: int = 8, seq_len: int = 1024, recompute: bool = False) -> None:
        self.model = widgets.Dropdown(options=list(PRESETS), value=model, description="Model")
        self.batch = widgets.IntSlider(value=batch, min=1, max=64, description="Batch", continuous_update=False)
        self.seq = widgets.Dropdown(options=[256, 512, 1024, 2048, 4096, 8192], value=seq_len, description="Seq len")
        self.recompute = widgets.Checkbox(value=recompute, description="Activation checkpointing")
        super().__init__([self.model, self.batch, self.seq, self.recompute],
                         [widgets.HBox([self.model, self.seq]), widgets.HBox([self.batch, self.recompute])])

    def compute(self) -> tuple[predict.Prediction, predict.Prediction, predict.Prediction, ms.TrainCase | None]:
        cfg = preset(self.model.value)
        b, s, rc = self.batch.value, self.seq.value, self.recompute.value
        shapes = [r for r in ms.run(H100_RUN2) if isinstance(r, ms.MatmulResult)] + [ms.matmul("H100-SXM", "bf16")]
        bw = ms.copy_bandwidth("H100-SXM", "d2d").memory_bytes_per_s
        attn = ms.attention_rate_near(b, cfg.n_head, s, H100_RUN2 + "/")
        mem = predict.program_memory(cfg, b, s, rc)
        textbook = predict.textbook_memory(cfg, b, s, rc)
        t = predict.program_step_time(cfg, b, s, rc, lambda m, n, k: ms.matmul_rate_near(shapes, m, n, k), bw, attn)
        found = [c for c in ms.train_cases(H100_RUN2 + "/")
                 if (c.model, c.batch, c.seq_len, c.recompute) == (self.model.value, b, s, rc)]
        return mem, textbook, t, (found[0] if found else None)

    def render(self, result: tuple[predict.Prediction, predict.Prediction, predict.Prediction, ms.TrainCase | None]) -> None:
        mem, textbook, t, case = result
        h100 = spec("H100-SXM").memory_bytes
        print(f"peak memory: program model {_gib(mem.total)} ({mem.note}); textbook {_gib(textbook.total)}; "
              f"the H100 has {_gib(h100)}" + ("  -> does not fit" if mem.total > h100 else ""))
        for k, v in mem.parts.items():
            print(f"  {k:55s} {_gib(v)}")
        print(f"step time: {t.total * 1e3:,.1f} ms = " + " + ".join(f"{k} {v * 1e3:,.1f}" for k, v in t.parts.items()))
        if case is not None and case.peak_bytes and case.step_s:
            print(f"measured on the H100: {_gib(case.peak_bytes)} (error {mem.total / case.peak_bytes - 1:+.1%}), "
                  f"{case.step_s * 1e3:,.1f} ms (error {t.total / case.step_s - 1:+.1%})")
        else:
            print("not among the measured cases: this is a prediction only")


class PastedResultWidget(Calculator):
    """Paste nccl-tests output or a mamf-finder log: see what mlcalc reads from it."""

    def __init__(self, text: str = "", kind: str = "nccl-tests", op: str = "all_reduce") -> None:
        self.text = widgets.Textarea(value=text, description="Paste", layout=widgets.Layout(width="95%", height="140px"))
        self.kind = widgets.ToggleButtons(options=["nccl-tests", "mamf-finder"], value=kind)
        self.op = widgets.Dropdown(options=list(ms.COLLECTIVES), value=op, description="nccl op")
        super().__init__([self.text, self.kind, self.op], [self.kind, self.op, self.text])

    def compute(self) -> ms.BusbwCurve | ms.MatmulResult:
        if not self.text.value.strip():
            raise ValueError("text='' is not allowed: paste the output of an nccl-tests program or a mamf-finder log")
        if self.kind.value == "nccl-tests":
            return ms.parse_nccl_tests(self.text.value, op=self.op.value, label="pasted")
        return ms.parse_mamf_log(self.text.value, label="pasted")

    def render(self, r: ms.BusbwCurve | ms.MatmulResult) -> None:
        if isinstance(r, ms.BusbwCurve):
            link = net.link("NVLink4-H100").bytes_per_s
            print(f"{r.op} on {r.n_ranks} ranks of {r.info.device_name}: {len(r.sizes_bytes)} sizes, "
                  f"peak busbw {r.peak_busbw_bytes_per_s / 1e9:,.1f} GB/s ({r.peak_busbw_bytes_per_s / link:.0%} "
                  f"of H100 NVLink one way)")
            display(figure_png(busbw_figure([r], link)))
        else:
            line = f"{r.dtype} best {r.best_tflops:,.1f} TFLOPS at {'x'.join(map(str, r.best_shape))}"
            if r.info.accelerator:
                line += f" = {r.best_flops_per_s / spec(r.info.accelerator).peak_flops(r.dtype):.0%} of the dense peak"
            print(line + f" ({r.info.device_name})")
