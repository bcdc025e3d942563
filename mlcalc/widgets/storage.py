"""Widgets for the storage calculators: thin front ends to ``mlcalc.storage``."""

from __future__ import annotations

from typing import Sequence

import ipywidgets as widgets
import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, NullLocator

from mlcalc import _check, storage
from mlcalc.storage import GB, GiB, MiB, TB
from mlcalc.widgets._base import Calculator, display, figure_png

HOUR = 3600.0
YEAR_H = 24 * 365.0

# Per-node (or per-device) figures a node's dataloader can compare itself with.
COMPARE_FILESYSTEMS = ("nfs-tcp", "nfs-nconnect", "nvme-p4500", "nvme-980pro-fio")

_STYLE = {"description_width": "initial"}


def dataloader_figure(bw: storage.DataloaderBandwidth, keys: Sequence[str] = COMPARE_FILESYSTEMS) -> Figure:
    """Bars: the node's input bandwidth need against what one client or one drive delivers (log scale)."""
    fig = Figure(figsize=(7, 2.8))
    ax = fig.subplots()
    labels = [storage.filesystem(k).name.split(" (")[0].split(",")[0] + f" [{k}]" for k in keys]
    values = [storage.filesystem(k).bandwidth_bytes_per_s / GB for k in keys]
    need = bw.per_node_bytes_per_s / GB
    colors = ["#55a868" if v >= need else "#c44e52" for v in values]
    ax.barh(labels, values, color=colors)
    ax.axvline(need, color="black", lw=1.5)
    lo, hi = min(values + [need]) / 3, max(values + [need]) * 3
    ax.set_xscale("log")
    ax.set_xlim(lo, hi)
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:g}"))
    ax.set_title(f"one node needs {need:,.3g} GB/s (black line)", fontsize=10)
    ax.set_xlabel("GB/s (1e9 bytes/s), log scale; green: enough for one node, red: not")
    ax.invert_yaxis()
    ax.tick_params(axis="y", labelsize=8)
    return fig


def goodput_figure(checkpoint_s: float, mtbf_s: float, restart_s: float = 0.0, chosen_s: float | None = None) -> Figure:
    """Goodput against the checkpoint interval, with Young's and Daly's optima marked."""
    young = storage.young_interval_s(checkpoint_s, mtbf_s)
    daly = storage.daly_interval_s(checkpoint_s, mtbf_s)
    lo, hi = young / 30.0, min(young * 30.0, 3 * mtbf_s)
    taus = np.geomspace(lo, max(hi, lo * 10), 200)
    g = [storage.goodput(t, checkpoint_s, mtbf_s, restart_s).fraction for t in taus]
    fig = Figure(figsize=(7, 3))
    ax = fig.subplots()
    ax.plot(taus / HOUR, g, color="#4c72b0")
    for t, label, ls in ((young, "Young", "--"), (daly, "Daly", ":")):
        ax.axvline(t / HOUR, color="0.3", ls=ls, lw=1, label=f"{label}: {t / HOUR:.2f} h")
    if chosen_s is not None:
        gc = storage.goodput(chosen_s, checkpoint_s, mtbf_s, restart_s).fraction
        ax.plot([chosen_s / HOUR], [gc], "o", color="#c44e52", label=f"chosen: {chosen_s / HOUR:.2f} h -> {gc:.1%}")
    ax.set_xscale("log")
    ax.xaxis.set_minor_locator(NullLocator())  # minor log ticks double the render time
    ax.set_xlabel("compute time between checkpoints (hours, log scale)")
    ax.set_ylabel("goodput")
    ax.set_ylim(max(0.0, min(g) - 0.05), 1.0)
    ax.legend(fontsize=8, loc="lower center")
    return fig


def capacity_figure(cap: storage.Capacity) -> Figure:
    """Stacked bar of what must fit, next to the capacity to buy."""
    fig = Figure(figsize=(7, 2.2))
    ax = fig.subplots()
    left = 0.0
    colors = ["#4c72b0", "#dd8452", "#55a868"]
    for i, (name, nbytes) in enumerate(cap.parts_bytes.items()):
        ax.barh(1, nbytes / TB, left=left, color=colors[i % 3], label=f"{name}: {nbytes / TB:,.1f} TB")
        left += nbytes / TB
    ax.barh(0, cap.to_buy_bytes / TB, color="0.6", label=f"to buy at {cap.usable_fraction:.0%} usable: {cap.to_buy_bytes / TB:,.1f} TB")
    ax.set_yticks([0, 1], ["buy", "store"])
    ax.set_xlabel("TB (1e12 bytes)")
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.4), ncol=2, frameon=False)
    return fig


def startup_figure(processes_per_node: int, n_files: int, ops_per_file: float, metadata_ops_per_s: float,
                   op_latency_s: float, n_nodes: int | None = None) -> Figure:
    """Start-up time against the number of nodes (log-log), with the latency floor and the server ramp."""
    nodes = np.geomspace(1, 4096, 60)
    runs = [storage.import_startup_time(1, processes_per_node, n_files, ops_per_file, metadata_ops_per_s, op_latency_s)]
    latency = runs[0].latency_bound_s
    server = runs[0].server_bound_s * nodes  # the server term grows linearly with the node count
    fig = Figure(figsize=(7, 3))
    ax = fig.subplots()
    ax.plot(nodes, np.maximum(latency, server), color="#4c72b0", lw=2, label="start-up time")
    ax.plot(nodes, np.full_like(nodes, latency), "--", color="0.4", lw=1, label=f"one process alone: {latency:,.1f} s")
    ax.plot(nodes, server, ":", color="0.4", lw=1, label="metadata server bound")
    if n_nodes is not None:
        r = storage.import_startup_time(n_nodes, processes_per_node, n_files, ops_per_file, metadata_ops_per_s, op_latency_s)
        ax.plot([n_nodes], [r.seconds], "o", color="#c44e52", label=f"{n_nodes} nodes: {r.seconds:,.0f} s ({r.bottleneck})")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.xaxis.set_minor_locator(NullLocator())  # minor log ticks double the render time
    ax.yaxis.set_minor_locator(NullLocator())
    ax.set_xlabel("nodes starting at once (log scale)")
    ax.set_ylabel("start-up time, s (log scale)")
    ax.legend(fontsize=8, loc="upper left")
    return fig


def _float(value: float, description: str, step: float = 1.0) -> widgets.FloatText:
    return widgets.FloatText(value=value, description=description, step=step, style=_STYLE)


def _int(value: int, description: str) -> widgets.IntText:
    return widgets.IntText(value=value, description=description, style=_STYLE)


class DataloaderWidget(Calculator):
    """Input bandwidth a node needs (Ibrahim et al.): sample size, FLOPs per sample, achieved FLOP/s."""

    def __init__(self, workload: str = "cosmoflow", achieved_tflops: float = 35.0, accelerators_per_node: int = 8) -> None:
        w = storage.data()["workloads"]
        self._presets = {k: v for k, v in w.items() if isinstance(v, dict) and "sample_mib" in v}
        self.workload = widgets.Dropdown(
            options=[(v["name"], k) for k, v in self._presets.items()] + [("custom", "custom")],
            value=workload, description="Workload", style=_STYLE,
        )
        preset = self._presets.get(workload, self._presets["cosmoflow"])
        self.sample_mib = _float(preset["sample_mib"], "Sample (MiB)", 0.1)
        self.gflops = _float(preset["flops_per_sample_gif"], "FLOPs/sample (GiFLOP)", 1.0)
        self.tflops = _float(achieved_tflops, "Achieved TFLOP/s per accelerator", 5.0)
        self.per_node = _int(accelerators_per_node, "Accelerators per node")
        self._loading = False
        self.workload.observe(self._load_preset, names="value")
        inputs = [self.sample_mib, self.gflops, self.tflops, self.per_node]
        super().__init__(inputs, [widgets.HBox([self.workload, self.sample_mib]), widgets.HBox([self.gflops, self.tflops]), self.per_node])

    def _load_preset(self, change: object = None) -> None:
        preset = self._presets.get(self.workload.value)
        if preset is None:
            return
        self._loading = True
        self.sample_mib.value = preset["sample_mib"]
        self.gflops.value = preset["flops_per_sample_gif"]
        self._loading = False
        self._update()

    def _update(self, change: object = None) -> None:
        if getattr(self, "_loading", False):
            return
        preset = self._presets.get(self.workload.value)
        edited = preset is not None and (self.sample_mib.value, self.gflops.value) != (preset["sample_mib"], preset["flops_per_sample_gif"])
        if edited:  # the numbers no longer match the preset's: say so
            self.workload.value = "custom"
        super()._update(change)

    def compute(self) -> storage.DataloaderBandwidth:
        return storage.dataloader_bandwidth(
            self.sample_mib.value * MiB, self.gflops.value * GiB, self.tflops.value * 1e12, self.per_node.value
        )

    def render(self, result: storage.DataloaderBandwidth) -> None:
        print(f"{result.samples_per_s:,.2f} samples/s per accelerator, {result.flop_per_byte:,.0f} FLOP per input byte")
        print(f"per accelerator: {result.per_accelerator_bytes_per_s / GB:,.3f} GB/s; "
              f"per node of {self.per_node.value}: {result.per_node_bytes_per_s / GB:,.2f} GB/s")
        display(figure_png(dataloader_figure(result)))


class LlmDataloaderWidget(Calculator):
    """Input bandwidth of language-model training: tokens per second x bytes per token."""

    def __init__(self, n_params_billion: float = 7.0, achieved_tflops: float = 400.0, n_gpus: int = 1024) -> None:
        self.params = _float(n_params_billion, "Params (B)", 1.0)
        self.tflops = _float(achieved_tflops, "Achieved TFLOP/s per GPU", 10.0)
        self.factor = widgets.Dropdown(options=list(storage.FLOPS_PER_PARAM_PER_TOKEN.items()), value=6.0,
                                       description="FLOPs/param/token", style=_STYLE)
        self.token_bytes = widgets.Dropdown(options=list(storage.BYTES_PER_TOKEN.items()), value=4.0,
                                            description="Bytes/token", style=_STYLE)
        self.per_node = _int(8, "GPUs per node")
        self.n_gpus = _int(n_gpus, "GPUs in the job")
        inputs = [self.params, self.tflops, self.factor, self.token_bytes, self.per_node, self.n_gpus]
        super().__init__(inputs, [widgets.HBox([self.params, self.tflops]), widgets.HBox([self.factor, self.token_bytes]),
                                  widgets.HBox([self.per_node, self.n_gpus])])

    def compute(self) -> tuple[storage.DataloaderBandwidth, float]:
        n_gpus = _check.positive_int("n_gpus", self.n_gpus.value)
        flops_per_token = storage.llm_flops_per_token(self.params.value * 1e9, self.factor.value)
        bw = storage.dataloader_bandwidth(self.token_bytes.value, flops_per_token, self.tflops.value * 1e12, self.per_node.value)
        return bw, bw.per_accelerator_bytes_per_s * n_gpus

    def render(self, result: tuple[storage.DataloaderBandwidth, float]) -> None:
        bw, job = result
        print(f"{bw.samples_per_s:,.0f} tokens/s per GPU -> {bw.per_accelerator_bytes_per_s / 1e3:,.1f} kB/s per GPU, "
              f"{bw.per_node_bytes_per_s / 1e6:,.3f} MB/s per node, {job / 1e6:,.2f} MB/s for the whole job")
        nfs = storage.filesystem("nfs-tcp").bandwidth_bytes_per_s
        print(f"one NFS client (~{nfs / GB:g} GB/s) could feed {nfs / bw.per_node_bytes_per_s:,.0f} such nodes")


class CheckpointWidget(Calculator):
    """Checkpoint size from the parameter count and what is saved, and the time to write it."""

    def __init__(self, n_params_billion: float = 176.247, contents: str = "full: bf16 + fp32 weights + Adam",
                 n_nodes: int = 48, filesystem_gb_per_s: float = 60.0, node_gbit_per_s: float = 400.0) -> None:
        self.params = _float(n_params_billion, "Params (B)", 1.0)
        self.contents = widgets.Dropdown(options=list(storage.CHECKPOINT_CONTENTS), value=contents, description="Saved", style=_STYLE)
        self.nodes = _int(n_nodes, "Nodes writing")
        self.fs = _float(filesystem_gb_per_s, "Filesystem write GB/s", 10.0)
        self.node = _float(node_gbit_per_s, "Per-node link Gbit/s", 100.0)
        inputs = [self.params, self.contents, self.nodes, self.fs, self.node]
        super().__init__(inputs, [widgets.HBox([self.params, self.contents]), widgets.HBox([self.nodes, self.fs, self.node])])

    def compute(self) -> tuple[storage.CheckpointSize, storage.CheckpointWrite]:
        size = storage.checkpoint_size(self.params.value * 1e9, self.contents.value)
        write = storage.checkpoint_write_time(size.total_bytes, self.fs.value * GB, self.nodes.value, self.node.value * 1e9 / 8)
        return size, write

    def render(self, result: tuple[storage.CheckpointSize, storage.CheckpointWrite]) -> None:
        size, write = result
        for name, nbytes in size.parts_bytes.items():
            print(f"  {name:28s} {nbytes / GB:>10,.0f} GB")
        print(f"checkpoint: {size.bytes_per_param:g} bytes/param = {size.total_bytes / 1e12:,.2f} TB "
              f"= {size.total_bytes / 2**40:,.2f} TiB")
        print(f"write: {write.seconds:,.1f} s at {write.effective_bytes_per_s / GB:,.1f} GB/s (limited by the {write.bottleneck})")


class CheckpointIntervalWidget(Calculator):
    """How often to checkpoint: failure rate from the GPU count, Young/Daly interval, goodput."""

    def __init__(self, n_gpus: int = 16384, device_mtbf_years: float = 5.8, checkpoint_s: float = 60.0,
                 restart_min: float = 10.0, interval_h: float = 1.0) -> None:
        self.n_gpus = _int(n_gpus, "GPUs")
        self.mtbf = _float(device_mtbf_years, "Per-GPU MTBF (years)", 0.5)
        self.ckpt = _float(checkpoint_s, "Blocking per checkpoint (s)", 10.0)
        self.restart = _float(restart_min, "Restart (min)", 1.0)
        self.interval = widgets.FloatLogSlider(value=interval_h, base=10, min=-2, max=2, step=0.05,
                                               description="Interval (h)", continuous_update=False, style=_STYLE)
        inputs = [self.n_gpus, self.mtbf, self.ckpt, self.restart, self.interval]
        super().__init__(inputs, [widgets.HBox([self.n_gpus, self.mtbf]), widgets.HBox([self.ckpt, self.restart]), self.interval])

    def compute(self) -> dict[str, float | storage.Goodput]:
        mtbf = storage.system_mtbf_s(self.mtbf.value * YEAR_H * HOUR, self.n_gpus.value)
        delta, restart = self.ckpt.value, _check.non_negative("restart_min", self.restart.value) * 60
        daly = storage.daly_interval_s(delta, mtbf)
        return {
            "mtbf_s": mtbf,
            "young_s": storage.young_interval_s(delta, mtbf),
            "daly_s": daly,
            "chosen": storage.goodput(self.interval.value * HOUR, delta, mtbf, restart),
            "best": storage.goodput(daly, delta, mtbf, restart),
        }

    def render(self, r: dict) -> None:
        print(f"job MTBF: {r['mtbf_s'] / HOUR:,.2f} h; Young: {r['young_s'] / 60:,.1f} min, Daly: {r['daly_s'] / 60:,.1f} min")
        c, b = r["chosen"], r["best"]
        print(f"every {self.interval.value:.2f} h: goodput {c.fraction:.1%} (checkpoints {c.checkpoint_fraction:.1%}, "
              f"lost work {c.lost_work_fraction:.1%}, restarts {c.restart_fraction:.1%}); at Daly's interval {b.fraction:.1%}")
        display(figure_png(goodput_figure(self.ckpt.value, r["mtbf_s"], self.restart.value * 60, self.interval.value * HOUR)))


class CapacityWidget(Calculator):
    """Storage to buy: datasets + retained checkpoints + the rest, over the usable fraction."""

    def __init__(self, dataset_tb: float = 30.0, checkpoint_tb: float = 2.47, checkpoints_kept: int = 20,
                 other_tb: float = 5.0, usable_fraction: float = storage.SEED_USABLE_FRACTION) -> None:
        self.dataset = _float(dataset_tb, "Datasets (TB)", 1.0)
        self.ckpt = _float(checkpoint_tb, "One checkpoint (TB)", 0.1)
        self.kept = _int(checkpoints_kept, "Checkpoints kept")
        self.other = _float(other_tb, "Code, logs, rest (TB)", 1.0)
        self.usable = widgets.FloatSlider(value=usable_fraction, min=0.5, max=1.0, step=0.01, description="Usable fraction",
                                          continuous_update=False, style=_STYLE)
        inputs = [self.dataset, self.ckpt, self.kept, self.other, self.usable]
        super().__init__(inputs, [widgets.HBox([self.dataset, self.ckpt]), widgets.HBox([self.kept, self.other]), self.usable])

    def compute(self) -> storage.Capacity:
        return storage.storage_capacity(self.dataset.value * TB, self.ckpt.value * TB, self.kept.value,
                                        self.other.value * TB, self.usable.value)

    def render(self, cap: storage.Capacity) -> None:
        print(f"store {cap.needed_bytes / TB:,.1f} TB -> buy {cap.to_buy_bytes / TB:,.1f} TB at {cap.usable_fraction:.0%} usable")
        display(figure_png(capacity_figure(cap)))


class StartupWidget(Calculator):
    """Start-up time of N nodes importing M files from a shared filesystem."""

    def __init__(self, n_nodes: int = 64, processes_per_node: int = 8, n_files: int = 1500, ops_per_file: float = 10.0,
                 metadata_kops: float = 12.0, op_latency_ms: float = 0.5) -> None:
        self.nodes = _int(n_nodes, "Nodes")
        self.procs = _int(processes_per_node, "Processes per node")
        self.files = _int(n_files, "Files per process")
        self.ops = _float(ops_per_file, "Metadata ops per file", 1.0)
        self.kops = _float(metadata_kops, "Metadata server (k ops/s)", 1.0)
        self.latency = _float(op_latency_ms, "Op latency (ms)", 0.1)
        inputs = [self.nodes, self.procs, self.files, self.ops, self.kops, self.latency]
        super().__init__(inputs, [widgets.HBox([self.nodes, self.procs, self.files]), widgets.HBox([self.ops, self.kops, self.latency])])

    def compute(self) -> storage.StartupTime:
        return storage.import_startup_time(self.nodes.value, self.procs.value, self.files.value, self.ops.value,
                                           self.kops.value * 1e3, self.latency.value * 1e-3)

    def render(self, r: storage.StartupTime) -> None:
        print(f"{r.total_ops:,.0f} metadata ops -> {r.seconds:,.1f} s (one process alone: {r.latency_bound_s:,.1f} s; "
              f"server-bound: {r.server_bound_s:,.1f} s); limited by the {r.bottleneck}")
        display(figure_png(startup_figure(self.procs.value, self.files.value, self.ops.value, self.kops.value * 1e3,
                                          self.latency.value * 1e-3, self.nodes.value)))
