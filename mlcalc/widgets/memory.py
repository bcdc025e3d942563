"""Widgets for the memory calculators."""

from __future__ import annotations

import io
import math

import ipywidgets as widgets
from IPython.display import Image
from matplotlib.figure import Figure

from mlcalc import memory
from mlcalc.accelerators import catalogue, spec
from mlcalc.calculators import memory as calculators_memory
from mlcalc.widgets._base import CalcWidget, Calculator, display, figure_png


class GpuCountWidget(CalcWidget):
    """How many GPUs do you need? Model size, accelerator, training or inference."""

    calc = calculators_memory.GPU_COUNT
    aliases = {"n_params_billion": "params"}


# ---------------------------------------------------------------------------
# Shared pieces of the memory chapters' widgets
# ---------------------------------------------------------------------------

CATEGORY_COLORS = {"parameters": "#4c72b0", "gradients": "#dd8452", "optimizer states": "#55a868",
                   "other": "#c7c7c7", "activations": "#c44e52", "logits (fp32, for the loss)": "#8172b3",
                   "overhead (stated)": "#937860"}


def _png(fig: Figure) -> Image:
    """A figure laid out by hand (no layout engine) as PNG, for the widgets."""
    return figure_png(fig, layout=False)


def _model_dropdown(value: str) -> widgets.Dropdown:
    return widgets.Dropdown(options=list(memory.model_presets()), value=value, description="Model")


def _accelerator_dropdown(value: str) -> widgets.Dropdown:
    return widgets.Dropdown(options=[(f"{a.key} ({a.memory_gb:g} GB)", a.key) for a in catalogue().values()],
                            value=value, description="Accelerator")


def _int_slider(value: int, lo: int, hi: int, description: str) -> widgets.IntSlider:
    return widgets.IntSlider(value=value, min=lo, max=hi, description=description, continuous_update=False)


def _pow2_dropdown(value: int, hi: int, description: str) -> widgets.Dropdown:
    return widgets.Dropdown(options=[2**k for k in range(hi + 1)], value=value, description=description)


# ---------------------------------------------------------------------------
# 1. Bytes per parameter
# ---------------------------------------------------------------------------


def conventions_figure(highlight: str = "") -> Figure:
    """Stacked bars: bytes per parameter of every convention, coloured by what they hold."""
    fig = Figure(figsize=(7, 3.2))
    ax = fig.subplots()
    keys = list(memory.CONVENTIONS)
    for i, key in enumerate(keys):
        left = 0.0
        for cat, nbytes in memory.CONVENTIONS[key].by_category().items():
            if nbytes:
                ax.barh(i, nbytes, left=left, color=CATEGORY_COLORS[cat], edgecolor="white",
                        label=cat if i == 0 or cat == "other" else None)
                left += nbytes
        ax.text(left + 0.3, i, f"{left:g}", va="center", fontsize=8,
                fontweight="bold" if key == highlight else "normal")
    ax.set_yticks(range(len(keys)), [("> " if k == highlight else "") + k for k in keys], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("bytes per parameter")
    handles, labels = ax.get_legend_handles_labels()
    uniq = dict(zip(labels, handles))
    ax.legend(uniq.values(), uniq.keys(), fontsize=7, loc="lower right", frameon=False)
    ax.set_xlim(0, 36)
    fig.subplots_adjust(left=0.24, right=0.98, bottom=0.16, top=0.97)
    return fig


class BytesPerParamWidget(Calculator):
    """Training bytes per parameter: pick a convention and a model size, see where the bytes go."""

    def __init__(self, n_params_billion: float = 7.5, convention: str = "zero-mixed-adam") -> None:
        self.params = widgets.FloatText(value=n_params_billion, description="Params (B)", step=1.0)
        self.convention = widgets.Dropdown(options=[(c.title, k) for k, c in memory.CONVENTIONS.items()],
                                           value=convention, description="Convention",
                                           layout=widgets.Layout(width="560px"))
        super().__init__([self.params, self.convention])

    def compute(self) -> dict[str, float]:
        n = memory._check.positive("n_params", self.params.value * 1e9)
        return {label: n * b for label, b in memory.training_bytes_per_param(self.convention.value).items()}

    def render(self, result: dict[str, float]) -> None:
        conv = memory.CONVENTIONS[self.convention.value]
        for label, nbytes in result.items():
            print(f"{label:48s} {nbytes / 1e9:10,.1f} GB")
        print(f"{'total (' + format(conv.total, 'g') + ' bytes/param)':48s} {sum(result.values()) / 1e9:10,.1f} GB")
        print(f"source: {conv.source}")
        if conv.note:
            print(f"note: {conv.note}")
        display(_png(conventions_figure(self.convention.value)))


# ---------------------------------------------------------------------------
# 2. ZeRO stages
# ---------------------------------------------------------------------------


def zero_figure(n_params: float, device_bytes: float, convention: str = "zero-mixed-adam",
                offload_optimizer: bool = False, offload_params: bool = False, max_log2_dp: int = 10,
                mark_dp: int = 0) -> Figure:
    """Per-device model-state memory against the data-parallel degree, one line per ZeRO stage."""
    fig = Figure(figsize=(7, 3))
    ax = fig.subplots()
    # x is log2(Nd) on a plain axis and y is linear: log scales make the figure slow to draw.
    ks = list(range(max_log2_dp + 1))
    for stage in memory.ZERO_STAGES:
        opt = offload_optimizer and stage >= 1
        par = offload_params and stage == 3
        ys = [memory.zero_model_state_bytes(n_params, 2**k, stage, convention, opt, par).device_bytes / 1e9
              for k in ks]
        ax.plot(ks, ys, marker="o", ms=3, label=f"stage {stage}" + (" + offload" if opt or par else ""))
    ax.axhline(device_bytes / 1e9, color="black", lw=1, ls="--", label="one device")
    if mark_dp:
        ax.axvline(math.log2(mark_dp), color="0.5", lw=0.8, ls=":")
    ax.set_xticks(ks[::2], [str(2**k) for k in ks[::2]])
    ax.set_ylim(0, 1.6 * device_bytes / 1e9)
    ax.set_xlabel("data-parallel degree Nd")
    ax.set_ylabel("model states per device (GB)")
    ax.legend(fontsize=7, frameon=False, ncol=2)
    fig.subplots_adjust(left=0.1, right=0.98, bottom=0.16, top=0.96)
    return fig


class ZeroWidget(Calculator):
    """ZeRO stages 0-3: per-device model states against the data-parallel degree, with offload."""

    def __init__(self, n_params_billion: float = 7.5, dp: int = 64, stage: int = 1,
                 accelerator: str = "A100-80GB") -> None:
        self.params = widgets.FloatText(value=n_params_billion, description="Params (B)", step=1.0)
        self.dp = _pow2_dropdown(dp, 12, "DP degree")
        self.stage = widgets.ToggleButtons(options=list(memory.ZERO_STAGES), value=stage, description="Stage")
        self.stage.style.button_width = "40px"
        self.convention = widgets.Dropdown(options=list(memory.CONVENTIONS), value="zero-mixed-adam",
                                           description="Convention")
        self.offload_opt = widgets.Checkbox(value=False, description="Offload optimizer")
        self.offload_par = widgets.Checkbox(value=False, description="Offload params")
        self.accelerator = _accelerator_dropdown(accelerator)
        inputs = [self.params, self.dp, self.stage, self.convention, self.offload_opt, self.offload_par,
                  self.accelerator]
        layout = [widgets.HBox([self.params, self.dp, self.accelerator]), widgets.HBox([self.stage, self.convention]),
                  widgets.HBox([self.offload_opt, self.offload_par])]
        super().__init__(inputs, layout)

    def compute(self) -> memory.ZeroMemory:
        return memory.zero_model_state_bytes(self.params.value * 1e9, self.dp.value, self.stage.value,
                                             self.convention.value, self.offload_opt.value, self.offload_par.value)

    def render(self, result: memory.ZeroMemory) -> None:
        dev = spec(self.accelerator.value).memory_bytes
        for cat, nbytes in result.device_parts.items():
            where = f"   (+{result.cpu_parts[cat] / 1e9:,.2f} GB on the CPU)" if result.cpu_parts[cat] else ""
            print(f"{cat:18s} {nbytes / 1e9:10,.2f} GB{where}")
        verdict = "fits" if result.device_bytes <= dev else "does not fit"
        print(f"{'per device':18s} {result.device_bytes / 1e9:10,.2f} GB: {verdict} in {dev / 1e9:g} GB "
              "(activations not included)")
        display(_png(zero_figure(self.params.value * 1e9, dev, self.convention.value, self.offload_opt.value,
                                 self.offload_par.value, mark_dp=self.dp.value)))


# ---------------------------------------------------------------------------
# 3. Activations
# ---------------------------------------------------------------------------

ACTIVATION_CASES = (
    ("no parallelism", {}),
    ("TP", {"sp": False}),
    ("TP + SP", {"sp": True}),
    ("TP + SP + selective", {"sp": True, "recompute": "selective"}),
    ("TP + SP + flash attn", {"sp": True, "flash_attention": True}),
    ("full recompute (TP + SP)", {"sp": True, "recompute": "full"}),
)


def activation_cases(seq_len: int, micro_batch: int, hidden: int, n_heads: int, tp: int) -> dict[str, dict[str, float]]:
    """Per-layer activation parts for the cases of Korthikanti et al.'s Table 2 (plus flash attention)."""
    out = {}
    for label, kw in ACTIVATION_CASES:
        t = 1 if label == "no parallelism" else tp
        out[label] = dict(memory.activation_parts_per_layer(
            seq_len, micro_batch, hidden, n_heads, t, kw.get("sp", False), kw.get("recompute", "none"),
            kw.get("flash_attention", False)))
    return out


def activation_figure(cases: dict[str, dict[str, float]], highlight: str = "") -> Figure:
    """Stacked bars of per-layer activation memory by kind, one bar per technique."""
    fig = Figure(figsize=(7, 3))
    ax = fig.subplots()
    colors = {"not split": "#4c72b0", "split by": "#55a868", "attention": "#c44e52", "softmax": "#8172b3",
              "layer input": "#937860"}
    seen = set()
    for i, (label, parts) in enumerate(cases.items()):
        left = 0.0
        for name, nbytes in parts.items():
            color = next(c for k, c in colors.items() if name.startswith(k))
            ax.barh(i, nbytes / 2**20, left=left, color=color, label=None if name in seen else name)
            seen.add(name)
            left += nbytes / 2**20
        ax.text(left, i, f" {left:,.0f}", va="center", fontsize=7)
    ax.set_yticks(range(len(cases)), [("> " if k == highlight else "") + k for k in cases], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("activation memory per layer (MiB)")
    ax.set_xlim(0, 1.12 * max(sum(p.values()) for p in cases.values()) / 2**20)
    ax.legend(fontsize=7, frameon=False, loc="lower right")
    fig.subplots_adjust(left=0.25, right=0.97, bottom=0.16, top=0.97)
    return fig


class ActivationWidget(Calculator):
    """Activation memory per layer and for the model (Korthikanti et al. 2022)."""

    def __init__(self, model: str = "GPT-3 175B", seq_len: int = 2048, micro_batch: int = 1, tp: int = 8) -> None:
        self.model = _model_dropdown(model)
        self.seq_len = _pow2_dropdown(seq_len, 17, "Seq len")
        self.micro_batch = _int_slider(micro_batch, 1, 32, "Micro-batch")
        self.tp = _pow2_dropdown(tp, 4, "TP")
        self.sp = widgets.Checkbox(value=True, description="Sequence parallel")
        self.recompute = widgets.ToggleButtons(options=list(memory.RECOMPUTE), value="none", description="Recompute")
        self.flash = widgets.Checkbox(value=False, description="Flash attention")
        inputs = [self.model, self.seq_len, self.micro_batch, self.tp, self.sp, self.recompute, self.flash]
        layout = [widgets.HBox([self.model, self.seq_len]), widgets.HBox([self.micro_batch, self.tp]),
                  widgets.HBox([self.sp, self.flash]), self.recompute]
        super().__init__(inputs, layout)

    def compute(self) -> float:
        m = memory.model_preset(self.model.value)
        return memory.activation_bytes_per_layer(self.seq_len.value, self.micro_batch.value, m.hidden, m.n_heads,
                                                 self.tp.value, self.sp.value, self.recompute.value, self.flash.value)

    def render(self, result: float) -> None:
        m = memory.model_preset(self.model.value)
        print(f"per layer: {result / 2**30:,.3f} GiB;  all {m.n_layers} layers: {m.n_layers * result / 2**30:,.1f} GiB "
              f"per device (first pipeline stage, any pipeline depth)")
        cases = activation_cases(self.seq_len.value, self.micro_batch.value, m.hidden, m.n_heads, self.tp.value)
        display(_png(activation_figure(cases)))


# ---------------------------------------------------------------------------
# 4-5. Serving and mixture of experts
# ---------------------------------------------------------------------------


def serving_figure(est: memory.ServingEstimate, label: str) -> Figure:
    """Weights and KV cache against the usable memory of the devices needed."""
    fig = Figure(figsize=(7, 2.2))
    ax = fig.subplots()
    w, kv = est.weights_bytes / 1e9, est.kv_cache_bytes / 1e9
    ax.barh(0, w, color="#4c72b0", label=f"weights: {w:,.1f} GB")
    ax.barh(0, kv, left=w, color="#dd8452", label=f"KV cache: {kv:,.1f} GB")
    for k in range(1, est.n_devices + 1):
        ax.axvline(k * est.usable_bytes_per_device / 1e9, color="0.3", lw=0.8, ls=":")
    ax.set_yticks([])
    ax.set_xlabel(f"GB (1e9 bytes); dotted: usable memory of each {label}")
    ax.set_title(f"{est.n_devices} x {label} for {est.total_bytes / 1e9:,.1f} GB", fontsize=10)
    ax.legend(fontsize=8, frameon=False, loc="upper center", bbox_to_anchor=(0.5, -0.35), ncol=2)
    return fig


class ServingWidget(Calculator):
    """Serving memory: weights by dtype plus the KV cache, devices needed, the largest batch."""

    def __init__(self, model: str = "Llama-3 70B", accelerator: str = "H100-SXM", batch: int = 8,
                 context_len: int = 8192, weight_dtype: str = "bf16") -> None:
        self.model = _model_dropdown(model)
        self.accelerator = _accelerator_dropdown(accelerator)
        self.weight_dtype = widgets.Dropdown(options=list(memory.DTYPE_BYTES), value=weight_dtype, description="Weights")
        self.kv_dtype = widgets.Dropdown(options=list(memory.DTYPE_BYTES), value="bf16", description="KV cache")
        self.batch = widgets.IntText(value=batch, description="Batch")
        self.context = _pow2_dropdown(context_len, 17, "Context")
        inputs = [self.model, self.accelerator, self.weight_dtype, self.kv_dtype, self.batch, self.context]
        layout = [widgets.HBox([self.model, self.accelerator]), widgets.HBox([self.weight_dtype, self.kv_dtype]),
                  widgets.HBox([self.batch, self.context])]
        super().__init__(inputs, layout)

    def compute(self) -> memory.ServingEstimate:
        m = memory.model_preset(self.model.value)
        return memory.serving_memory(m, self.batch.value, self.context.value, spec(self.accelerator.value).memory_bytes,
                                     self.weight_dtype.value, self.kv_dtype.value)

    def render(self, est: memory.ServingEstimate) -> None:
        m = memory.model_preset(self.model.value)
        dev = spec(self.accelerator.value).memory_bytes
        tokens = memory.max_kv_tokens(m, dev, est.n_devices, self.weight_dtype.value, self.kv_dtype.value)
        print(f"KV cache per token: {est.kv_bytes_per_token / 2**10:,.0f} KiB "
              f"(2 x {m.n_layers} layers x {m.n_kv_heads} KV heads x {m.head_dim} x {memory.DTYPE_BYTES[self.kv_dtype.value]:g} B)")
        print(f"devices needed: {est.n_devices} x {self.accelerator.value} "
              f"(using {memory.VLLM_MEMORY_UTILIZATION:.0%} of each)")
        print(f"on {est.n_devices} device(s): room for {tokens:,} tokens of KV cache = batch "
              f"{tokens // self.context.value:,} at context {self.context.value:,}")
        display(figure_png(serving_figure(est, self.accelerator.value)))


def moe_figure(summary: memory.MoeSummary, name: str) -> Figure:
    """Two bars: parameters held in memory against parameters used per token."""
    fig = Figure(figsize=(7, 1.8))
    ax = fig.subplots()
    ax.barh([0, 1], [summary.total_params / 1e9, summary.active_params / 1e9], color=["#4c72b0", "#55a868"])
    ax.set_yticks([0, 1], ["in memory (total)", "computed per token (active)"], fontsize=8)
    for y, v in ((0, summary.total_params), (1, summary.active_params)):
        ax.text(v / 1e9, y, f" {v / 1e9:,.1f}B", va="center", fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel(f"parameters of {name} (billions)")
    return fig


class MoeWidget(Calculator):
    """Mixture of experts: memory follows the total parameters, compute the active ones."""

    def __init__(self, model: str = "Mixtral 8x7B", weight_dtype: str = "bf16") -> None:
        self.model = _model_dropdown(model)
        self.weight_dtype = widgets.Dropdown(options=list(memory.DTYPE_BYTES), value=weight_dtype, description="Weights")
        super().__init__([self.model, self.weight_dtype], [widgets.HBox([self.model, self.weight_dtype])])

    def compute(self) -> memory.MoeSummary:
        return memory.moe_summary(memory.model_preset(self.model.value), self.weight_dtype.value)

    def render(self, s: memory.MoeSummary) -> None:
        print(f"weights in memory: {s.weights_bytes / 1e9:,.1f} GB; a dense model with the active "
              f"parameters would need {s.dense_equivalent_bytes / 1e9:,.1f} GB")
        print(f"forward compute: {s.forward_flops_per_token / 1e9:,.1f} GFLOP per token "
              f"({s.active_params / s.total_params:.0%} of the parameters)")
        display(figure_png(moe_figure(s, self.model.value)))


# ---------------------------------------------------------------------------
# 6. The whole training picture
# ---------------------------------------------------------------------------


def training_figure(fit: memory.TrainingFit, grid: tuple[tuple[float, ...], ...], micro_batches: tuple[int, ...],
                    label: str) -> Figure:
    """Left: what fills one device. Right: per-device GB over ZeRO stage x micro-batch, fits marked."""
    fig = Figure(figsize=(7.5, 3))
    ax, hm = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1, 1.3]})
    bottom = 0.0
    for name, nbytes in fit.parts_bytes.items():
        if nbytes:
            ax.bar(0, nbytes / 1e9, bottom=bottom, color=CATEGORY_COLORS.get(name, "#999999"), label=name, width=0.6)
            bottom += nbytes / 1e9
    ax.axhline(fit.device_bytes / 1e9, color="black", lw=1.2, ls="--")
    ax.set_xticks([])
    ax.set_ylabel("GB per device")
    ax.set_title(f"dp{fit.dp} tp{fit.tp} pp{fit.pp}, ZeRO-{fit.zero_stage}", fontsize=9)
    ax.legend(fontsize=6, frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    gb = [[v / 1e9 for v in row] for row in grid]
    ratio = [[min(v * 1e9 / fit.device_bytes, 2.0) for v in row] for row in gb]
    hm.imshow(ratio, cmap="RdYlGn_r", aspect="auto", vmin=0.0, vmax=2.0)
    for i, row in enumerate(gb):
        for j, v in enumerate(row):
            ok = v * 1e9 <= fit.device_bytes
            hm.text(j, i, f"{v:,.0f}" + ("" if ok else "\nX"), ha="center", va="center", fontsize=7,
                    color="black" if ratio[i][j] < 1.6 else "white")
    hm.set_xticks(range(len(micro_batches)), micro_batches)
    hm.set_yticks(range(len(grid)), [f"ZeRO-{z}" for z in memory.ZERO_STAGES[: len(grid)]])
    hm.set_xlabel("micro-batch size")
    hm.set_title(f"GB per {label}; X: does not fit", fontsize=9)
    fig.subplots_adjust(left=0.08, right=0.97, bottom=0.16, top=0.9, wspace=1.1)
    return fig


class TrainingFitWidget(Calculator):
    """The whole training picture: model states + activations + overhead against one device."""

    MICRO_BATCHES = (1, 2, 4, 8, 16)

    def __init__(self, model: str = "Llama-3 70B", accelerator: str = "H100-SXM", seq_len: int = 8192,
                 dp: int = 4, tp: int = 8, pp: int = 1, zero_stage: int = 3, micro_batch: int = 1) -> None:
        self.model = _model_dropdown(model)
        self.accelerator = _accelerator_dropdown(accelerator)
        self.seq_len = _pow2_dropdown(seq_len, 17, "Seq len")
        self.micro_batch = widgets.Dropdown(options=list(self.MICRO_BATCHES), value=micro_batch, description="Micro-batch")
        self.dp = _pow2_dropdown(dp, 12, "DP")
        self.tp = _pow2_dropdown(tp, 4, "TP")
        self.pp = widgets.IntText(value=pp, description="PP")
        self.stage = widgets.ToggleButtons(options=list(memory.ZERO_STAGES), value=zero_stage, description="ZeRO")
        self.stage.style.button_width = "40px"
        self.recompute = widgets.ToggleButtons(options=list(memory.RECOMPUTE), value="selective",
                                               description="Recompute")
        self.overhead = widgets.FloatSlider(value=0.1, min=0.0, max=0.5, step=0.05, description="Overhead",
                                            continuous_update=False)
        inputs = [self.model, self.accelerator, self.seq_len, self.micro_batch, self.dp, self.tp, self.pp, self.stage,
                  self.recompute, self.overhead]
        layout = [widgets.HBox([self.model, self.accelerator]), widgets.HBox([self.seq_len, self.micro_batch]),
                  widgets.HBox([self.dp, self.tp, self.pp]), widgets.HBox([self.stage, self.overhead]), self.recompute]
        super().__init__(inputs, layout)

    def _kwargs(self) -> dict:
        return {"seq_len": self.seq_len.value, "recompute": self.recompute.value,
                "overhead_fraction": self.overhead.value}

    def compute(self) -> memory.TrainingFit:
        m = memory.model_preset(self.model.value)
        dev = spec(self.accelerator.value).memory_bytes
        return memory.training_memory(m, dev, self.micro_batch.value, dp=self.dp.value, tp=self.tp.value,
                                      pp=self.pp.value, zero_stage=self.stage.value, **self._kwargs())

    def render(self, fit: memory.TrainingFit) -> None:
        m = memory.model_preset(self.model.value)
        verdict = "fits" if fit.fits else "does NOT fit"
        print(f"{fit.n_devices} devices (dp {fit.dp} x tp {fit.tp} x pp {fit.pp}): {fit.total_bytes / 1e9:,.1f} GB "
              f"per device, {verdict} in {fit.device_bytes / 1e9:g} GB")
        best = memory.fewest_devices(m, fit.device_bytes, self.micro_batch.value, zero_stage=self.stage.value,
                                     max_tp=8, **self._kwargs())
        if best is None:
            print("no layout up to 16,384 devices fits")
        else:
            print(f"fewest devices that fit with ZeRO-{self.stage.value}: {best.n_devices} "
                  f"(dp {best.dp} x tp {best.tp} x pp {best.pp}, {best.total_bytes / 1e9:,.1f} GB each)")
        grid = memory.training_fit_grid(m, fit.device_bytes, memory.ZERO_STAGES, self.MICRO_BATCHES, dp=fit.dp,
                                        tp=fit.tp, pp=fit.pp, **self._kwargs())
        display(_png(training_figure(fit, grid, self.MICRO_BATCHES, self.accelerator.value)))


# ---------------------------------------------------------------------------
# 7. The CPU side
# ---------------------------------------------------------------------------


class CpuWidget(Calculator):
    """Cores and host RAM for one training node: dataloader workers, loading, offload."""

    def __init__(self, model: str = "Llama-3 8B", accelerators: int = 8, workers: int = 2,
                 ram_per_worker_gb: float = 2.0, offload: bool = False) -> None:
        self.model = _model_dropdown(model)
        self.accelerators = _int_slider(accelerators, 1, 16, "Accel./node")
        self.workers = _int_slider(workers, 1, 8, "Workers/accel.")
        self.ram_per_worker = widgets.FloatText(value=ram_per_worker_gb, description="GB/worker")
        self.offload = widgets.Checkbox(value=offload, description="ZeRO-3 offload (optimizer + params)")
        inputs = [self.model, self.accelerators, self.workers, self.ram_per_worker, self.offload]
        layout = [widgets.HBox([self.model, self.accelerators]), widgets.HBox([self.workers, self.ram_per_worker]),
                  self.offload]
        super().__init__(inputs, layout)

    def compute(self) -> memory.CpuNeeds:
        m = memory.model_preset(self.model.value)
        g = self.accelerators.value
        off = 0.0
        if self.offload.value:
            off = g * memory.zero_model_state_bytes(m.n_params(), g, 3, offload_optimizer=True,
                                                    offload_params=True).cpu_bytes
        return memory.cpu_needs(g, self.workers.value, m.n_params(), offloaded_bytes_per_node=off,
                                ram_per_worker_bytes=memory._check.non_negative("ram_per_worker_gb",
                                                                                self.ram_per_worker.value) * 1e9)

    def render(self, needs: memory.CpuNeeds) -> None:
        print(f"dataloader workers: {needs.dataloader_workers}; processes with the main ones: {needs.processes}; "
              f"cores: at least {needs.cores}")
        for name, nbytes in needs.ram_parts_bytes.items():
            print(f"  {name:36s} {nbytes / 1e9:10,.1f} GB")
        print(f"host RAM at the peak: {needs.ram_bytes / 1e9:,.1f} GB "
              "(loading and offload do not overlap; workers come on top)")
