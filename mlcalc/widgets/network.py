"""Widgets and figures for the network chapters (units, collectives, parallelism, topology)."""

from __future__ import annotations

from typing import Sequence

import ipywidgets as widgets
import numpy as np
from matplotlib.figure import Figure

from mlcalc import network as net
from mlcalc import parallel as par
from mlcalc.accelerators import catalogue, spec
from mlcalc.widgets._base import Calculator, display, figure_png, plain_log_ticks

_FIGSIZE = (7, 3)
_PHASE_COLORS = {"F": "#4c72b0", "B": "#dd8452"}


def _fmt_bytes(n: float) -> str:
    """Bytes with a decimal prefix (kB = 1e3 ... TB = 1e12)."""
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:,.3g} {unit}"
    return f"{n:,.0f} B"


def _fmt_time(s: float) -> str:
    """Seconds with a sensible unit."""
    if s >= 1:
        return f"{s:,.3g} s"
    if s >= 1e-3:
        return f"{s * 1e3:,.3g} ms"
    return f"{s * 1e6:,.3g} us"


# --------------------------------------------------------------------------- 1. units


class BandwidthUnitsWidget(Calculator):
    """Gb/s or GB/s, one direction or both, NICs per node, and the 80% rule."""

    def __init__(self, value: float = 400.0, unit: str = "Gb/s", direction: str = "per direction",
                 nics_per_node: int = 8, efficiency: float = net.SEED_EFFICIENCY) -> None:
        self.value = widgets.FloatText(value=value, description="Advertised")
        self.unit = widgets.Dropdown(options=list(net.UNITS), value=unit, description="Unit")
        self.direction = widgets.ToggleButtons(options=list(net.DIRECTIONS), value=direction)
        self.nics = widgets.IntText(value=nics_per_node, description="NICs/node")
        self.efficiency = widgets.FloatSlider(value=efficiency, min=0.0, max=1.0, step=0.05, description="Efficiency",
                                              continuous_update=False)
        inputs = [self.value, self.unit, self.direction, self.nics, self.efficiency]
        super().__init__(inputs, [widgets.HBox([self.value, self.unit]), self.direction,
                                  widgets.HBox([self.nics, self.efficiency])])

    def compute(self) -> net.UnitsResult:
        return net.bandwidth_units(self.value.value, self.unit.value, self.direction.value, self.nics.value,
                               self.efficiency.value)

    def render(self, r: net.UnitsResult) -> None:
        one = r.one_direction_bytes_per_s
        print(f"One link, one direction : {one / 1e9:,.2f} GB/s = {net.bytes_per_s_to_gbps(one):,.0f} Gb/s")
        print(f"Node ({self.nics.value} x), one direction: {r.node_bytes_per_s / 1e9:,.1f} GB/s = "
              f"{net.bytes_per_s_to_gbps(r.node_bytes_per_s):,.0f} Gb/s")
        print(f"Plan with ({self.efficiency.value:.0%})   : {r.expected_node_bytes_per_s / 1e9:,.1f} GB/s = "
              f"{net.bytes_per_s_to_gbps(r.expected_node_bytes_per_s):,.0f} Gb/s")


# --------------------------------------------------------------------------- 2. generations


def generations_figure(speedups: Sequence[net.Speedup], log: bool = False) -> Figure:
    """Grouped bars: compute and intra-node (NVLink) speed-up of each generation."""
    fig = Figure(figsize=_FIGSIZE)
    ax = fig.subplots()
    x = np.arange(len(speedups))
    comp = [s.compute for s in speedups]
    link = [s.intra_node for s in speedups]
    ax.bar(x - 0.2, comp, 0.4, label="compute (fp16 dense TFLOPS)", color="#4c72b0")
    ax.bar(x + 0.2, link, 0.4, label="NVLink (GB/s, one direction)", color="#dd8452")
    for xi, c, lk in zip(x, comp, link):
        ax.text(xi - 0.2, c, f"{c:.1f}x", ha="center", va="bottom", fontsize=8)
        ax.text(xi + 0.2, lk, f"{lk:.1f}x", ha="center", va="bottom", fontsize=8)
    ax.set_xticks(x, [s.gpu for s in speedups])
    if log:
        ax.set_yscale("log")
    ax.margins(y=0.15)
    ax.set_ylabel(f"speed-up over {speedups[[s.compute for s in speedups].index(1.0)].gpu}"
                  if 1.0 in comp else "speed-up")
    ax.legend(frameon=False, fontsize=8)
    ax.set_title("Compute outgrows the intra-node network")
    return fig


class GenerationsWidget(Calculator):
    """Speed-ups of compute and NVLink across GPU generations, over a chosen baseline."""

    def __init__(self, baseline: str = "V100", log: bool = False) -> None:
        self.baseline = widgets.Dropdown(options=[g.gpu for g in net.generations()], value=baseline,
                                         description="Baseline")
        self.log_scale = widgets.Checkbox(value=log, description="log scale")
        super().__init__([self.baseline, self.log_scale], [widgets.HBox([self.baseline, self.log_scale])])

    def compute(self) -> tuple[net.Speedup, ...]:
        return net.speedups(self.baseline.value)

    def render(self, result: tuple[net.Speedup, ...]) -> None:
        for s in result:
            print(f"{s.gpu:5s} compute {s.compute:5.2f}x   NVLink {s.intra_node:4.1f}x   "
                  f"ratio {s.compute / s.intra_node:4.2f}")
        display(figure_png(generations_figure(result, self.log_scale.value)))


# --------------------------------------------------------------------------- 3. collectives

_SIZES = np.logspace(3, 11, 49)  # 1 kB ... 100 GB


def collective_sweep(fab: net.Fabric, collective: str, algorithm: str,
                     sizes: Sequence[float] = tuple(_SIZES)) -> tuple[net.CollectiveTime, ...]:
    """The collective's time at every message size of ``sizes``."""
    return tuple(net.fabric_collective_time(float(s), fab, collective, algorithm) for s in sizes)


def collective_figure(fab: net.Fabric, collective: str, algorithm: str, message_bytes: float) -> Figure:
    """Time and bus bandwidth against message size, with the chosen size marked."""
    sweep = collective_sweep(fab, collective, algorithm)
    here = net.fabric_collective_time(message_bytes, fab, collective, algorithm)
    fig = Figure(figsize=_FIGSIZE)
    ax1, ax2 = fig.subplots(1, 2)
    ax1.loglog(_SIZES, [t.time_s for t in sweep], color="#4c72b0", label="total")
    ax1.loglog(_SIZES, [t.latency_s for t in sweep], color="0.5", ls="--", label="latency part")
    ax1.loglog(_SIZES, [max(t.bandwidth_s, 1e-9) for t in sweep], color="#dd8452", ls=":", label="bandwidth part")
    ax1.plot([message_bytes], [here.time_s], "ko")
    ax1.set_xlabel("message size (bytes)")
    ax1.set_ylabel("time")
    ax1.legend(frameon=False, fontsize=7)
    ax2.semilogx(_SIZES, [t.busbw_bytes_per_s / 1e9 for t in sweep], color="#55a868")
    ax2.axhline(fab.busbw_bytes_per_s / 1e9, color="0.3", lw=0.8, ls=":")
    ax2.plot([message_bytes], [here.busbw_bytes_per_s / 1e9], "ko")
    ax2.set_xlabel("message size (bytes)")
    ax2.set_ylabel("bus bandwidth (GB/s)")
    ax2.set_ylim(bottom=0)
    for ax in (ax1, ax2):
        ax.minorticks_off()
        plain_log_ticks(ax.xaxis, "B")
    plain_log_ticks(ax1.yaxis, "s")
    fig.suptitle(f"{collective} ({algorithm}) on {fab.n_ranks} GPUs", fontsize=10)
    fig.subplots_adjust(wspace=0.4, bottom=0.17, top=0.86)
    return fig


def collective_compare_figure(fabrics: Sequence[tuple[str, net.Fabric]], collective: str = "all_reduce",
                              algorithm: str = "ring") -> Figure:
    """Bus bandwidth against message size for several fabrics (e.g. one node against two)."""
    fig = Figure(figsize=_FIGSIZE)
    ax = fig.subplots()
    for label, fab in fabrics:
        sweep = collective_sweep(fab, collective, algorithm)
        ax.semilogx(_SIZES, [t.busbw_bytes_per_s / 1e9 for t in sweep], label=label)
    ax.set_xlabel("message size")
    ax.set_ylabel("bus bandwidth (GB/s)")
    ax.set_ylim(bottom=0)
    ax.minorticks_off()
    plain_log_ticks(ax.xaxis, "B")
    ax.legend(frameon=False, fontsize=8)
    ax.set_title(f"{collective} ({algorithm}): the slowest link sets the plateau", fontsize=9)
    return fig


class CollectiveWidget(Calculator):
    """Time and bus bandwidth of a collective: message size, GPUs, nodes and the links between them."""

    def __init__(self, system: str = "DGX-H100", collective: str = "all_reduce", algorithm: str = "ring",
                 n_nodes: int = 1, gpus_per_node: int = 8, message_bytes: float = 2 ** 30,
                 efficiency: float = 1.0, measured_busbw_gb_s: float = 0.0) -> None:
        self.system = widgets.Dropdown(options=list(net.systems()), value=system, description="System")
        self.collective = widgets.Dropdown(options=list(net.COLLECTIVES), value=collective, description="Collective")
        self.algorithm = widgets.ToggleButtons(options=list(net.ALGORITHMS), value=algorithm)
        self.nodes = widgets.IntSlider(value=n_nodes, min=1, max=64, description="Nodes", continuous_update=False)
        self.gpus = widgets.IntSlider(value=gpus_per_node, min=1, max=8, description="GPUs/node",
                                      continuous_update=False)
        self.size = widgets.FloatLogSlider(value=message_bytes, base=2, min=10, max=36, step=1,
                                           description="Bytes", continuous_update=False, readout_format=".3g")
        self.efficiency = widgets.FloatSlider(value=efficiency, min=0.0, max=1.0, step=0.05,
                                              description="Efficiency", continuous_update=False)
        self.measured = widgets.FloatText(value=measured_busbw_gb_s, description="busbw GB/s",
                                          tooltip="a measured bus bandwidth (nccl-tests); 0 = use the links")
        inputs = [self.system, self.collective, self.algorithm, self.nodes, self.gpus, self.size, self.efficiency,
                  self.measured]
        super().__init__(inputs, [widgets.HBox([self.system, self.collective]), self.algorithm,
                                  widgets.HBox([self.nodes, self.gpus]), widgets.HBox([self.size, self.efficiency]),
                                  self.measured])

    def compute(self) -> tuple[net.Fabric, net.CollectiveTime]:
        fab = net.fabric(self.system.value, self.nodes.value, self.efficiency.value, self.gpus.value)
        measured = self.measured.value
        if measured != 0:
            if not measured > 0:
                raise ValueError(f"measured_busbw_gb_s={measured!r} is not allowed: give a bus bandwidth > 0 GB/s, "
                                 "or 0 to use the links")
            fab = net.with_busbw(fab, measured * 1e9)
        return fab, net.fabric_collective_time(self.size.value, fab, self.collective.value, self.algorithm.value)

    def render(self, result: tuple[net.Fabric, net.CollectiveTime]) -> None:
        fab, t = result
        print(f"{self.collective.value} of {_fmt_bytes(self.size.value)} on {fab.n_ranks} GPUs "
              f"({fab.n_nodes} x {fab.gpus_per_node}): {_fmt_time(t.time_s)} "
              f"(latency {_fmt_time(t.latency_s)}, bandwidth {_fmt_time(t.bandwidth_s)})")
        pace = ("the measured bus bandwidth sets the pace" if self.measured.value > 0
                else f"the {fab.bottleneck} link sets the pace")
        print(f"algbw {t.algbw_bytes_per_s / 1e9:,.1f} GB/s, busbw {t.busbw_bytes_per_s / 1e9:,.1f} GB/s "
              f"of {fab.busbw_bytes_per_s / 1e9:,.1f} GB/s; {pace}")
        display(figure_png(collective_figure(fab, self.collective.value, self.algorithm.value, self.size.value)))


# --------------------------------------------------------------------------- 4 + 7. parallelism budget


def budget_figure(b: par.Budget) -> Figure:
    """Horizontal bars: compute time against each kind of communication per step."""
    fig = Figure(figsize=(7, 2.4))
    ax = fig.subplots()
    labels = ["compute"] + [f"{ln.parallelism} ({ln.link})" for ln in b.lines]
    values = [b.compute_s] + [ln.time_s for ln in b.lines]
    colors = ["#55a868"] + ["#4c72b0" if ln.parallelism != "data" else "#dd8452" for ln in b.lines]
    ax.barh(range(len(values)), values, color=colors)
    ax.axvline(b.dp_overlap.window_s, color="0.3", ls=":", lw=1)
    ax.text(b.dp_overlap.window_s, len(values) - 0.5, " backward pass", fontsize=7, va="center")
    ax.set_yticks(range(len(values)), labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("seconds per step")
    ax.set_title(f"tp={b.layout.tp} x pp={b.layout.pp} x dp={b.layout.dp}: step {b.step_s:,.2f} s, "
                 f"{b.exposed_s:,.2f} s exposed communication", fontsize=9)
    return fig


def print_budget(b: par.Budget) -> None:
    """The budget as a small table."""
    print(f"{'parallelism':12s} {'link':11s} {'bytes/GPU/step':>15s} {'time':>10s}")
    for ln in b.lines:
        print(f"{ln.parallelism:12s} {ln.link:11s} {_fmt_bytes(ln.wire_bytes):>15s} {_fmt_time(ln.time_s):>10s}")
    print(f"compute {_fmt_time(b.compute_s)}; data-parallel traffic "
          f"{'hides behind' if b.dp_overlap.hidden else 'overflows'} the backward pass "
          f"({_fmt_time(b.dp_overlap.comm_s)} vs {_fmt_time(b.dp_overlap.window_s)})")


_ACCEL_FOR_SYSTEM = {"DGX-A100": "A100-80GB", "AWS-p4d": "A100-80GB", "DGX-H100": "H100-SXM", "AWS-p5": "H100-SXM"}


class _BudgetBase(Calculator):
    """Controls shared by the step-budget and layout widgets."""

    def _common(self, model: str, system: str, accelerator: str, global_batch: int, mfu: float) -> list:
        self.model = widgets.Dropdown(options=list(par.NARAYANAN_TABLE1), value=model, description="Model")
        self.system = widgets.Dropdown(options=list(net.systems()), value=system, description="System")
        self.accelerator = widgets.Dropdown(options=list(catalogue()), value=accelerator, description="GPU")
        self.batch = widgets.IntText(value=global_batch, description="Batch (seqs)")
        self.mfu = widgets.FloatSlider(value=mfu, min=0.05, max=1.0, step=0.05, description="MFU",
                                       continuous_update=False)
        self.dp_strategy = widgets.Dropdown(options=list(par.DP_STRATEGIES), value="ddp", description="DP kind")
        return [self.model, self.system, self.accelerator, self.batch, self.mfu, self.dp_strategy]

    def _budget(self, layout: par.Layout) -> par.Budget:
        s = net.system(self.system.value)
        n_gpus = layout.tp * layout.pp * layout.dp
        if n_gpus % s.gpus_per_node:
            raise ValueError(f"n_gpus={n_gpus} is not allowed: it must fill whole {s.key} nodes of {s.gpus_per_node}")
        fab = net.fabric(self.system.value, n_gpus // s.gpus_per_node)
        return par.layout_budget(par.reference_model(self.model.value), layout, fab, self.batch.value, 1,
                                 spec(self.accelerator.value).peak_flops("bf16"), self.mfu.value,
                                 self.dp_strategy.value)

    def render(self, b: par.Budget) -> None:
        print_budget(b)
        display(figure_png(budget_figure(b)))


class StepCommWidget(_BudgetBase):
    """Communication against compute for one step of a tp x pp x dp layout you choose."""

    def __init__(self, model: str = "GPT-145.6B", system: str = "DGX-A100", accelerator: str = "A100-80GB",
                 tp: int = 8, pp: int = 8, dp: int = 24, global_batch: int = 2304, mfu: float = 0.47) -> None:
        common = self._common(model, system, accelerator, global_batch, mfu)
        self.tp = widgets.Dropdown(options=[1, 2, 4, 8], value=tp, description="tp")
        self.pp = widgets.IntText(value=pp, description="pp")
        self.dp = widgets.IntText(value=dp, description="dp")
        inputs = common + [self.tp, self.pp, self.dp]
        super().__init__(inputs, [widgets.HBox([self.model, self.system, self.accelerator]),
                                  widgets.HBox([self.tp, self.pp, self.dp]),
                                  widgets.HBox([self.batch, self.mfu, self.dp_strategy])])

    def compute(self) -> par.Budget:
        tp = self.tp.value
        pp = self.pp.value
        dp = self.dp.value
        for name, v in (("pp", pp), ("dp", dp)):
            if not isinstance(v, int) or v < 1:
                raise ValueError(f"{name}={v!r} is not allowed: it must be a whole number of at least 1")
        return self._budget(par.Layout(tp, pp, dp, 0.0, 0.0))


class LayoutWidget(_BudgetBase):
    """Suggest tensor x pipeline x data parallel for a model on a cluster, and show its budget."""

    def __init__(self, model: str = "GPT-145.6B", system: str = "DGX-A100", accelerator: str = "A100-80GB",
                 n_nodes: int = 192, global_batch: int = 2304, mfu: float = 0.47,
                 state_memory_fraction: float = 0.5) -> None:
        common = self._common(model, system, accelerator, global_batch, mfu)
        self.nodes = widgets.IntText(value=n_nodes, description="Nodes")
        self.fraction = widgets.FloatSlider(value=state_memory_fraction, min=0.1, max=1.0, step=0.05,
                                            description="States/mem", continuous_update=False)
        inputs = common + [self.nodes, self.fraction]
        super().__init__(inputs, [widgets.HBox([self.model, self.system, self.accelerator]),
                                  widgets.HBox([self.nodes, self.fraction]),
                                  widgets.HBox([self.batch, self.mfu, self.dp_strategy])])

    def compute(self) -> par.Budget:
        s = net.system(self.system.value)
        nodes = self.nodes.value
        if not isinstance(nodes, int) or nodes < 1:
            raise ValueError(f"n_nodes={nodes!r} is not allowed: it must be a whole number of at least 1")
        layout = par.suggest_layout(par.reference_model(self.model.value), nodes * s.gpus_per_node, s.gpus_per_node,
                                    spec(self.accelerator.value).memory_bytes,
                                    state_memory_fraction=self.fraction.value)
        return self._budget(layout)

    def render(self, b: par.Budget) -> None:
        lay = b.layout
        print(f"Suggested: tensor {lay.tp} (inside a node) x pipeline {lay.pp} (across nodes) x data {lay.dp}; "
              f"model states {lay.state_bytes_per_gpu / 1e9:,.1f} GB per GPU "
              f"of a {lay.budget_bytes / 1e9:,.0f} GB budget")
        super().render(b)


# --------------------------------------------------------------------------- 5. pipeline schedules


def pipeline_figure(t: par.Timeline, kind: str, p: int, m: int, v: int) -> Figure:
    """The schedule drawn as a timeline: one row per device, forward blue, backward orange."""
    fig = Figure(figsize=(7, 0.45 * p + 1.1))
    ax = fig.subplots()
    groups: dict[tuple[int, str, int], list[tuple[float, float]]] = {}
    for s in t.slots:
        groups.setdefault((s.device, s.phase, s.chunk), []).append((s.start, s.end - s.start))
    for (device, phase, chunk), spans in groups.items():
        ax.broken_barh(spans, (device - 0.4, 0.8), facecolors=_PHASE_COLORS[phase], alpha=1.0 if chunk == 0 else 0.55,
                       edgecolor="white", linewidth=0.5)
    if len(t.slots) <= 160:
        for s in t.slots:
            ax.text((s.start + s.end) / 2, s.device, str(s.micro + 1), ha="center", va="center", fontsize=6,
                    color="white")
    ax.set_yticks(range(p), [f"GPU {d}" for d in range(p)], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, t.makespan)
    ax.set_xlabel("time (one stage's forward pass = 1)")
    label = {"gpipe": "GPipe", "1f1b": "1F1B", "interleaved": f"interleaved 1F1B, v={v}"}[kind]
    ax.set_title(f"{label}: p={p}, m={m}; bubble {t.bubble_fraction:.1%} of compute "
                 f"(formula {par.bubble_fraction(p, m, v):.1%})", fontsize=9)
    return fig


class PipelineWidget(Calculator):
    """Draw a pipeline schedule (GPipe, 1F1B, interleaved 1F1B) and its bubble as p, m and v change."""

    def __init__(self, kind: str = "1f1b", p: int = 4, m: int = 8, v: int = 2) -> None:
        self.kind = widgets.ToggleButtons(options=[("GPipe", "gpipe"), ("1F1B", "1f1b"),
                                                   ("Interleaved", "interleaved")], value=kind)
        self.p = widgets.IntSlider(value=p, min=1, max=8, description="p (stages)", continuous_update=False)
        self.m = widgets.IntSlider(value=m, min=1, max=32, description="m (micro)", continuous_update=False)
        self.v = widgets.IntSlider(value=v, min=1, max=4, description="v (chunks)", continuous_update=False)
        super().__init__([self.kind, self.p, self.m, self.v], [self.kind, widgets.HBox([self.p, self.m, self.v])])

    def compute(self) -> par.Timeline:
        self.v.disabled = self.kind.value != "interleaved"  # v only means something when interleaved
        v = self.v.value if self.kind.value == "interleaved" else 1
        return par.pipeline_schedule(self.kind.value, self.p.value, self.m.value, v)

    def render(self, t: par.Timeline) -> None:
        v = self.v.value if self.kind.value == "interleaved" else 1
        print(f"Step {t.makespan:g} time units for {t.busy:g} of work per GPU: bubble {t.bubble_fraction:.1%}; "
              f"up to {t.peak_in_flight} micro-batches in flight per GPU")
        display(figure_png(pipeline_figure(t, self.kind.value, self.p.value, self.m.value, v)))


# --------------------------------------------------------------------------- 6. topology


def topology_figure(r: net.TopologyResult, title: str = "") -> Figure:
    """Bars: switches and transceivers of each design."""
    fig = Figure(figsize=_FIGSIZE)
    ax1, ax2 = fig.subplots(1, 2)
    names = ["fat tree", "Rail-only"]
    ax1.bar(names, [r.fat_tree.switches, r.rail_only.switches], color=["#4c72b0", "#55a868"])
    ax1.set_title("switches", fontsize=9)
    ax2.bar(names, [r.fat_tree.transceivers, r.rail_only.transceivers], color=["#4c72b0", "#55a868"])
    ax2.set_title("transceivers", fontsize=9)
    for ax in (ax1, ax2):
        ax.ticklabel_format(axis="y", style="plain")
    fig.suptitle(f"{title}{': ' if title else ''}cost reduction {r.cost_reduction:.0%}", fontsize=10)
    fig.subplots_adjust(wspace=0.45, top=0.84)
    return fig


class TopologyWidget(Calculator):
    """Switches and transceivers of a fat tree and a Rail-only network for N GPUs."""

    def __init__(self, n_gpus: int = 32768, radix: int = 64, hb_domain: int = 256, cost_ratio: float = 2.0) -> None:
        self.n = widgets.IntText(value=n_gpus, description="GPUs")
        self.radix = widgets.Dropdown(options=[16, 32, 48, 64, 128, 256], value=radix, description="Radix")
        self.hb = widgets.Dropdown(options=[8, 16, 32, 64, 72, 256], value=hb_domain, description="HB domain")
        self.ratio = widgets.FloatSlider(value=cost_ratio, min=0.0, max=5.0, step=0.25, description="Port/TR cost",
                                         continuous_update=False)
        super().__init__([self.n, self.radix, self.hb, self.ratio],
                         [widgets.HBox([self.n, self.radix]), widgets.HBox([self.hb, self.ratio])])

    def compute(self) -> net.TopologyResult:
        return net.compare_topologies(self.n.value, self.radix.value, self.hb.value, self.ratio.value)

    def render(self, r: net.TopologyResult) -> None:
        for name, c in (("fat tree", r.fat_tree), ("Rail-only", r.rail_only)):
            print(f"{name:9s}: {c.tiers} tier{'s' if c.tiers > 1 else ''}, {c.switches:,} switches, "
                  f"{c.transceivers:,} transceivers")
        print(f"Cost reduction: {r.cost_reduction:.1%} (switch port = {self.ratio.value:g} transceivers)")
        display(figure_png(topology_figure(r, f"{self.n.value:,} GPUs, radix {self.radix.value}, "
                                                 f"HB domain {self.hb.value}")))


__all__ = [
    "BandwidthUnitsWidget", "CollectiveWidget", "GenerationsWidget", "LayoutWidget", "PipelineWidget",
    "StepCommWidget", "TopologyWidget", "budget_figure", "collective_compare_figure", "collective_figure",
    "collective_sweep",
    "generations_figure", "pipeline_figure", "print_budget", "topology_figure",
]
