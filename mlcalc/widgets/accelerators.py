"""Widgets and figures for the accelerators part: catalogue, peak, training cost, MFU, roofline, shapes."""

from __future__ import annotations

import html
from typing import Sequence

import ipywidgets as widgets
from IPython.display import HTML
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter, LogLocator, NullLocator

from mlcalc import accelerators, compute
from mlcalc.accelerators import catalogue, spec
from mlcalc.widgets._base import Calculator, display, figure_png

_FIGSIZE = (7, 3)
_VENDOR_COLORS = {"NVIDIA": "#76b900", "AMD": "#ed1c24", "Intel": "#0071c5", "Google": "#fbbc04", "AWS": "#8c564b"}


def html_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> HTML:
    """A small HTML table (numbers right-aligned) for widget output and static pages."""
    head = "".join(f"<th style='text-align:left;padding:2px 8px'>{html.escape(h)}</th>" for h in headers)
    body = []
    for row in rows:
        cells = []
        for v in row:
            numeric = isinstance(v, (int, float)) or (isinstance(v, str) and (v[:1].isdigit() or v in ("n/a", "-")))
            align = "right" if numeric else "left"
            cells.append(f"<td style='text-align:{align};padding:2px 8px'>{html.escape(str(v))}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return HTML(f"<table style='border-collapse:collapse;font-size:90%'><tr>{head}</tr>{''.join(body)}</table>")


def _log_axes(ax: Axes, x_subs: tuple[float, ...] = (1.0, 2.0, 5.0)) -> None:
    """Log-log axes with plain tick labels and no minor ticks (mathtext and minor ticks are slow to draw)."""
    ax.set_xscale("log")
    ax.set_yscale("log")
    for axis, subs in ((ax.xaxis, x_subs), (ax.yaxis, (1.0, 2.0, 5.0))):
        axis.set_minor_locator(NullLocator())
        axis.set_major_locator(LogLocator(subs=subs))
        axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.grid(True, lw=0.3, alpha=0.5)


def _fmt(x: float | None, digits: int = 0) -> str:
    return "n/a" if x is None else f"{x:,.{digits}f}"


# ------------------------------------------------------------------------------------------
# Catalogue
# ------------------------------------------------------------------------------------------


def catalogue_table(rows: Sequence[compute.CatalogueRow], dtype: str, source: str) -> HTML:
    """The catalogue rows as an HTML table."""
    return html_table(
        ["accelerator", "vendor", f"{dtype} TFLOPS ({source})", "memory GB", "memory TB/s",
         "scale-up GB/s (one direction)", "ops:byte"],
        [[r.key, r.vendor, _fmt(r.tflops, 1), _fmt(r.memory_gb), _fmt(r.bandwidth_tbps, 2),
          _fmt(r.scale_up_gbps, 1), _fmt(r.ridge_flops_per_byte)] for r in rows],
    )


def catalogue_figure(rows: Sequence[compute.CatalogueRow], dtype: str, source: str, highlight: Sequence[str] = ()) -> Figure:
    """Compute (dense TFLOPS) against memory bandwidth, one labelled dot per accelerator."""
    fig = Figure(figsize=_FIGSIZE)
    ax = fig.subplots()
    xs = [r.bandwidth_tbps for r in rows]
    ys = [r.tflops for r in rows]
    colors = [_VENDOR_COLORS.get(r.vendor, "0.4") for r in rows]
    sizes = [60 if r.key in highlight else 25 for r in rows]
    edges = ["black" if r.key in highlight else "none" for r in rows]
    ax.scatter(xs, ys, s=sizes, c=colors, edgecolors=edges, zorder=3)  # one call: much faster than one per dot
    labels: dict[tuple[float, float], list[str]] = {}
    for r in rows:  # chips with identical figures share one label ("GB200 / MI355X")
        labels.setdefault((r.bandwidth_tbps, r.tflops), []).append(r.key)
    placed: list[tuple[float, float]] = []
    for (x, y), keys in labels.items():
        # Stack the labels of neighbouring dots instead of printing them on top of each other.
        near = sum(1 for px, py in placed if abs(px / x - 1) < 0.12 and abs(py / y - 1) < 0.25)
        placed.append((x, y))
        ax.annotate(" / ".join(keys), (x, y), fontsize=7, xytext=(4, 2 - 8 * near), textcoords="offset points")
    handles = [Line2D([], [], marker="o", ls="", color=c, label=v) for v, c in _VENDOR_COLORS.items()
               if any(r.vendor == v for r in rows)]
    ax.legend(handles=handles, fontsize=7, loc="lower right")
    _log_axes(ax)
    ax.set_xlabel("memory bandwidth, TB/s (log)")
    ax.set_ylabel(f"dense {dtype} TFLOPS (log)")
    ax.set_title(f"Compute against memory bandwidth ({source})", fontsize=10)
    return fig


class CatalogueWidget(Calculator):
    """Explore the catalogue: pick a dtype and a FLOPS source, sort the table, see compute against bandwidth."""

    def __init__(self, dtype: str = "bf16", source: str = "advertised", sort_by: str = "tflops") -> None:
        self.dtype = widgets.Dropdown(options=list(accelerators.DTYPES), value=dtype, description="dtype")
        self.source = widgets.ToggleButtons(options=list(compute.flops_sources()), value=source)
        self.sort_by = widgets.Dropdown(options=[(v, k) for k, v in compute.SORT_KEYS.items()], value=sort_by,
                                        description="sort by")
        inputs = [self.dtype, self.source, self.sort_by]
        super().__init__(inputs, [widgets.HBox([self.dtype, self.sort_by]), self.source])

    def compute(self) -> list[compute.CatalogueRow]:
        return compute.catalogue_rows(self.dtype.value, self.source.value, self.sort_by.value)

    def render(self, result: list[compute.CatalogueRow]) -> None:
        display(catalogue_table(result, self.dtype.value, self.source.value))
        display(figure_png(catalogue_figure(result, self.dtype.value, self.source.value)))


def compare_rows(key_a: str, key_b: str, source: str = "advertised") -> list[tuple[str, str, str, str]]:
    """Side-by-side figures of two accelerators with the ratio b / a (n/a where either lacks one)."""
    a, b = spec(key_a), spec(key_b)
    rows: list[tuple[str, str, str, str]] = []

    def add(label: str, x: float | None, y: float | None, digits: int = 1) -> None:
        ratio = "n/a" if x is None or y is None or x == 0 else f"{y / x:.2f}x"
        rows.append((label, _fmt(x, digits), _fmt(y, digits), ratio))

    for dtype in accelerators.DTYPES:
        fa = compute.achievable_flops(key_a, dtype, source) / 1e12 if compute.has_flops(key_a, dtype, source) else None
        fb = compute.achievable_flops(key_b, dtype, source) / 1e12 if compute.has_flops(key_b, dtype, source) else None
        if fa is not None or fb is not None:
            add(f"{dtype} TFLOPS ({source})", fa, fb)
    add("memory GB", a.memory_gb, b.memory_gb, 0)
    add("memory TB/s", a.memory_bandwidth_tbps, b.memory_bandwidth_tbps, 2)
    la, lb = a.scale_up_bytes_per_s, b.scale_up_bytes_per_s
    add("scale-up GB/s, one direction", None if la is None else la / 1e9, None if lb is None else lb / 1e9)
    return rows


class CompareWidget(Calculator):
    """Two accelerators side by side, with the ratio of every figure."""

    def __init__(self, a: str = "A100-80GB", b: str = "H100-SXM", source: str = "advertised") -> None:
        keys = list(catalogue())
        self.a = widgets.Dropdown(options=keys, value=a, description="chip A")
        self.b = widgets.Dropdown(options=keys, value=b, description="chip B")
        self.source = widgets.ToggleButtons(options=list(compute.flops_sources()), value=source)
        super().__init__([self.a, self.b, self.source], [widgets.HBox([self.a, self.b]), self.source])

    def compute(self) -> list[tuple[str, str, str, str]]:
        return compare_rows(self.a.value, self.b.value, self.source.value)

    def render(self, result: list[tuple[str, str, str, str]]) -> None:
        display(html_table(["figure", self.a.value, self.b.value, "B / A"], result))


# ------------------------------------------------------------------------------------------
# Peak from first principles
# ------------------------------------------------------------------------------------------


class PeakWidget(Calculator):
    """Clock x units x FMA per clock x 2: check a vendor's peak, or see what a lower clock costs."""

    def __init__(self, accelerator: str = "H100-SXM", clock_mhz: float | None = None) -> None:
        keys = list(accelerators.recipes())
        self.accelerator = widgets.Dropdown(options=keys, value=accelerator, description="accelerator")
        start = accelerators.recipe(accelerator).clock_mhz if clock_mhz is None else clock_mhz
        self.clock = widgets.FloatText(value=start, description="clock MHz", step=10)
        self.accelerator.observe(self._reset_clock, names="value")
        super().__init__([self.accelerator, self.clock], [widgets.HBox([self.accelerator, self.clock])])

    def _reset_clock(self, change: object) -> None:
        self.clock.value = accelerators.recipe(self.accelerator.value).clock_mhz

    def compute(self) -> tuple[accelerators.PeakRecipe, float]:
        r = accelerators.recipe(self.accelerator.value)
        return r, r.flops(clock_mhz=self.clock.value)

    def render(self, result: tuple[accelerators.PeakRecipe, float]) -> None:
        r, flops = result
        sheet = spec(r.key).peak_flops(r.dtype)
        print(f"{self.clock.value:,.0f} MHz x {r.units:,} {r.unit_name} x {r.fma_per_unit_per_clock:,.0f} FMA/clock x 2 "
              f"= {flops / 1e12:,.1f} TFLOPS {r.dtype}")
        print(f"datasheet: {sheet / 1e12:,.1f} TFLOPS -> formula / datasheet = {flops / sheet:.3f}")


# ------------------------------------------------------------------------------------------
# Training cost, offers, MFU
# ------------------------------------------------------------------------------------------


def cost_vs_mfu_figure(total_flops: float, n_gpus: int, peak_flops: float, price: float, mfu: float, label: str) -> Figure:
    """Days of one run as MFU varies, the chosen MFU marked; the right axis reads the same curve as cost."""
    fig = Figure(figsize=_FIGSIZE)
    ax = fig.subplots()
    xs = [0.1 + 0.01 * i for i in range(81)]
    days = [compute.training_time_s(total_flops, n_gpus, peak_flops, x) / 86400 for x in xs]
    ax.plot([x * 100 for x in xs], days, color="#4c72b0")
    here = compute.run_cost(total_flops, n_gpus, peak_flops, mfu, price)
    ax.scatter([mfu * 100], [here.days], color="#c44e52", zorder=3)
    ax.annotate(f"{mfu:.0%}: {here.days:,.1f} days, {here.cost:,.0f}", (mfu * 100, here.days), fontsize=8,
                xytext=(6, 4), textcoords="offset points")
    ax.set_xlabel("MFU, % of the chosen peak")
    ax.set_ylabel("days")
    ax.set_ylim(0, max(days) * 1.05)
    ax2 = ax.twinx()  # cost is days x GPUs x 24 h x price: the same curve on another scale
    per_day = n_gpus * 24 * price / 1e3
    ax2.set_ylim(0, max(days) * 1.05 * per_day)
    ax2.set_ylabel(f"cost, thousands (at {price:g}/GPU-hour)")
    ax.set_title(label, fontsize=10)
    ax.grid(True, lw=0.3, alpha=0.5)
    return fig


def _accelerator_dropdown(value: str, description: str = "accelerator") -> widgets.Dropdown:
    return widgets.Dropdown(options=list(catalogue()), value=value, description=description)


class TrainingCostWidget(Calculator):
    """FLOPs of a run (6ND or 8ND), then time, GPU-hours and cost on G accelerators at an MFU and price."""

    def __init__(self, n_params_billion: float = 7.0, n_tokens_billion: float = 319.5, accelerator: str = "H100-SXM",
                 n_gpus: int = 160, mfu: float = 0.4, price_per_gpu_hour: float = 12.5, source: str = "advertised") -> None:
        narrow = widgets.Layout(width="210px")
        self.params = widgets.FloatText(value=n_params_billion, description="params (B)", layout=narrow)
        self.tokens = widgets.FloatText(value=n_tokens_billion, description="tokens (B)", layout=narrow)
        self.recompute = widgets.Checkbox(value=False, description="recompute (8ND)", indent=False)
        self.accelerator = _accelerator_dropdown(accelerator)
        self.dtype = widgets.Dropdown(options=list(accelerators.DTYPES), value="bf16", description="dtype", layout=narrow)
        self.source = widgets.ToggleButtons(options=list(compute.flops_sources()), value=source)
        self.n_gpus = widgets.IntText(value=n_gpus, description="GPUs", layout=narrow)
        self.mfu = widgets.FloatSlider(value=mfu, min=0.05, max=1.0, step=0.01, description="MFU", continuous_update=False)
        self.price = widgets.FloatText(value=price_per_gpu_hour, description="$/GPU-hour", layout=narrow)
        inputs = [self.params, self.tokens, self.recompute, self.accelerator, self.dtype, self.source, self.n_gpus,
                  self.mfu, self.price]
        layout = [widgets.HBox([self.params, self.tokens, self.recompute]),
                  widgets.HBox([self.accelerator, self.dtype, self.n_gpus]), self.source,
                  widgets.HBox([self.mfu, self.price])]
        super().__init__(inputs, layout)

    def compute(self) -> tuple[float, float, compute.RunCost]:
        total = compute.training_flops(self.params.value * 1e9, self.tokens.value * 1e9, self.recompute.value)
        peak = compute.achievable_flops(self.accelerator.value, self.dtype.value, self.source.value)
        return total, peak, compute.run_cost(total, self.n_gpus.value, peak, self.mfu.value, self.price.value)

    def render(self, result: tuple[float, float, compute.RunCost]) -> None:
        total, peak, rc = result
        print(f"run: {total:.3g} FLOP")
        print(f"each {self.accelerator.value}: {peak / 1e12:,.1f} TFLOPS ({self.source.value}) x MFU {self.mfu.value:.0%}"
              f" = {rc.achieved_flops_per_gpu / 1e12:,.1f} TFLOPS")
        print(f"on {self.n_gpus.value}: {rc.days:,.2f} days, {rc.gpu_hours:,.0f} GPU-hours, "
              f"cost {rc.cost:,.0f} at {self.price.value:g}/GPU-hour")
        label = f"{self.n_gpus.value} x {self.accelerator.value}, {self.dtype.value} {self.source.value}"
        display(figure_png(cost_vs_mfu_figure(total, self.n_gpus.value, peak, self.price.value, self.mfu.value, label)))


class FlopsWidget(Calculator):
    """FLOPs of one iteration of a GPT model (Megatron-LM eq. 3), against the 6N / 8N rules."""

    def __init__(self, preset: str = "GPT-3 175B", recompute: bool = True) -> None:
        c = compute.MEGATRON_CONFIGS[preset]
        self.preset = widgets.Dropdown(options=list(compute.MEGATRON_CONFIGS), value=preset, description="preset")
        small = widgets.Layout(width="200px")
        self.layers = widgets.IntText(value=c.n_layers, description="layers", layout=small)
        self.hidden = widgets.IntText(value=c.hidden, description="hidden", layout=small)
        self.vocab = widgets.IntText(value=c.vocab, description="vocab", layout=small)
        self.seq_len = widgets.IntText(value=c.seq_len, description="seq len", layout=small)
        self.batch = widgets.IntText(value=c.batch, description="batch", layout=small)
        self.recompute = widgets.Checkbox(value=recompute, description="full recomputation", indent=False)
        self.preset.observe(self._load_preset, names="value")
        inputs = [self.preset, self.layers, self.hidden, self.vocab, self.seq_len, self.batch, self.recompute]
        layout = [widgets.HBox([self.preset, self.recompute]), widgets.HBox([self.layers, self.hidden, self.vocab]),
                  widgets.HBox([self.seq_len, self.batch])]
        super().__init__(inputs, layout)

    def _load_preset(self, change: object) -> None:
        c = compute.MEGATRON_CONFIGS[self.preset.value]
        for control, value in ((self.layers, c.n_layers), (self.hidden, c.hidden), (self.vocab, c.vocab),
                               (self.seq_len, c.seq_len), (self.batch, c.batch)):
            control.value = value

    def compute(self) -> compute.IterationFlops:
        config = compute.GptConfig(self.layers.value, self.hidden.value, self.batch.value, self.vocab.value,
                                   self.seq_len.value)
        return compute.gpt_iteration_flops(config, self.recompute.value)

    def render(self, result: compute.IterationFlops) -> None:
        rule = 8 if self.recompute.value else 6
        print(f"parameters (eq. 2): {result.n_params / 1e9:,.1f} B")
        print(f"FLOP per iteration: {result.flops:.3e}  ({result.flops_per_token:.3e} per token)")
        print(f"per token / parameters = {result.ratio_to_n:.2f}  (the simple rule says {rule}; "
              f"attention is {result.attention_share:.1%} of the layer FLOPs)")


def offers_table(results: Sequence[compute.OfferResult]) -> HTML:
    """Offers side by side: peak, time, GPU-hours and cost."""
    return html_table(
        ["offer", "GPUs", "TFLOPS each", "MFU", "price/GPU-h", "days", "GPU-hours", "cost"],
        [[r.offer.name, r.offer.n_gpus, _fmt(r.peak_flops_per_gpu / 1e12, 1), f"{r.offer.mfu:.0%}",
          _fmt(r.offer.price_per_gpu_hour, 2), _fmt(r.time_s / 86400, 2), _fmt(r.gpu_hours), _fmt(r.cost)]
         for r in results],
    )


def offers_figure(results: Sequence[compute.OfferResult]) -> Figure:
    """Two bar charts: days and cost per offer."""
    fig = Figure(figsize=_FIGSIZE)
    ax1, ax2 = fig.subplots(1, 2)
    names = [r.offer.name for r in results]
    ax1.barh(names, [r.time_s / 86400 for r in results], color="#4c72b0")
    ax1.set_xlabel("days")
    ax2.barh(names, [r.cost / 1e3 for r in results], color="#dd8452")
    ax2.set_xlabel("cost, thousands")
    ax2.set_yticks([])
    for ax in (ax1, ax2):
        ax.invert_yaxis()
        ax.grid(True, axis="x", lw=0.3, alpha=0.5)
    fig.tight_layout()
    return fig


class OffersWidget(Calculator):
    """The same run on up to three offers: accelerator, count, price, MFU each."""

    def __init__(self, n_params_billion: float = 7.0, n_tokens_billion: float = 300.0,
                 offers: Sequence[compute.Offer] | None = None, source: str = "advertised") -> None:
        offers = list(offers or [
            compute.Offer("64 x H100", "H100-SXM", 64, 3.0, 0.4),
            compute.Offer("192 x A100", "A100-80GB", 192, 1.0, 0.4),
            compute.Offer("64 x MI300X", "MI300X", 64, 2.5, 0.3),
        ])[:3]
        self.params = widgets.FloatText(value=n_params_billion, description="params (B)")
        self.tokens = widgets.FloatText(value=n_tokens_billion, description="tokens (B)")
        self.source = widgets.ToggleButtons(options=list(compute.flops_sources()), value=source)
        self.rows = []
        for o in offers:
            self.rows.append((
                _accelerator_dropdown(o.accelerator, ""),
                widgets.IntText(value=o.n_gpus, description="GPUs", layout=widgets.Layout(width="150px")),
                widgets.FloatText(value=o.price_per_gpu_hour, description="$/h", layout=widgets.Layout(width="150px")),
                widgets.FloatSlider(value=o.mfu, min=0.05, max=1.0, step=0.01, description="MFU",
                                    continuous_update=False, layout=widgets.Layout(width="250px")),
            ))
        inputs = [self.params, self.tokens, self.source, *[c for row in self.rows for c in row]]
        layout = [widgets.HBox([self.params, self.tokens]), self.source, *[widgets.HBox(list(row)) for row in self.rows]]
        super().__init__(inputs, layout)

    def compute(self) -> list[compute.OfferResult]:
        total = compute.training_flops(self.params.value * 1e9, self.tokens.value * 1e9)
        offers = [compute.Offer(f"{n.value} x {acc.value}", acc.value, n.value, price.value, mfu.value,
                                flops_source=self.source.value) for acc, n, price, mfu in self.rows]
        return compute.compare_offers(total, offers)

    def render(self, result: list[compute.OfferResult]) -> None:
        display(offers_table(result))
        display(figure_png(offers_figure(result)))


class MfuWidget(Calculator):
    """MFU from FLOP per iteration and its time, or from tokens per second; and what it does to the days."""

    def __init__(self, tflop_per_iteration: float = 624.0, iteration_time_s: float = 4.0, accelerator: str = "A100-80GB",
                 n_gpus: int = 1) -> None:
        self.mode = widgets.ToggleButtons(options=[("per iteration", "iteration"), ("from tokens/s", "tokens")],
                                          value="iteration")
        self.tflop = widgets.FloatText(value=tflop_per_iteration, description="TFLOP/iter")
        self.seconds = widgets.FloatText(value=iteration_time_s, description="s/iter")
        self.tokens_per_s = widgets.FloatText(value=3000.0, description="tokens/s")
        self.params = widgets.FloatText(value=7.0, description="params (B)")
        self.accelerator = _accelerator_dropdown(accelerator)
        self.dtype = widgets.Dropdown(options=list(accelerators.DTYPES), value="bf16", description="dtype")
        self.source = widgets.ToggleButtons(options=list(compute.flops_sources()), value="advertised")
        self.n_gpus = widgets.IntText(value=n_gpus, description="GPUs")
        self.recompute = widgets.Checkbox(value=False, description="full recomputation (for HFU)", indent=False)
        inputs = [self.mode, self.tflop, self.seconds, self.tokens_per_s, self.params, self.accelerator, self.dtype,
                  self.source, self.n_gpus, self.recompute]
        layout = [self.mode, widgets.HBox([self.tflop, self.seconds]), widgets.HBox([self.tokens_per_s, self.params]),
                  widgets.HBox([self.accelerator, self.dtype, self.n_gpus]), self.source, self.recompute]
        super().__init__(inputs, layout)

    def compute(self) -> tuple[float, float]:
        peak = compute.achievable_flops(self.accelerator.value, self.dtype.value, self.source.value)
        if self.mode.value == "iteration":
            u = compute.mfu(self.tflop.value * 1e12, self.seconds.value, peak, self.n_gpus.value)
        else:
            u = compute.mfu_from_tokens(self.tokens_per_s.value, 6 * self.params.value * 1e9, peak, self.n_gpus.value)
        return u, peak

    def render(self, result: tuple[float, float]) -> None:
        u, peak = result
        print(f"achieved {u * peak / 1e12:,.1f} TFLOPS per GPU of {peak / 1e12:,.1f} ({self.source.value}): "
              f"MFU = {u:.1%}")
        if self.recompute.value:  # the hardware also runs the forward pass again: 8N instead of 6N per token
            print(f"with full recomputation the hardware does 8/6 as much: HFU = {u * 8 / 6:.1%}")
        if u > 1:
            print("MFU above 100%: the FLOP count or the time is wrong (or the peak is a measured, not a datasheet one).")
        elif u > 0:
            print(f"a run planned at 100% of this peak takes {1 / u:.2f}x as long at this MFU")


# ------------------------------------------------------------------------------------------
# Roofline and matmul shapes
# ------------------------------------------------------------------------------------------


def roofline_figure(key: str, dtype: str, point: compute.RooflinePoint | None = None, label: str = "",
                    source: str = "advertised") -> Figure:
    """The roofline of one accelerator (log-log), with an operation's point marked."""
    acc = spec(key)
    peak = compute.achievable_flops(key, dtype, source)
    bw = acc.memory_bandwidth_bytes_per_s
    ridge = compute.ridge_intensity(peak, bw)
    fig = Figure(figsize=_FIGSIZE)
    ax = fig.subplots()
    lo = min(0.1, point.intensity / 3 if point else 0.1)
    hi = max(ridge * 30, point.intensity * 3 if point else 1.0)
    xs = [lo, ridge, hi]  # the roof is two straight segments on log-log axes
    ax.plot(xs, [min(peak, x * bw) / 1e12 for x in xs], color="black", lw=1.5)
    ax.axvline(ridge, color="0.5", ls=":", lw=1)
    ax.annotate(f"ridge {ridge:,.0f} FLOP/B", (ridge, peak / 1e12), fontsize=8, xytext=(4, -12), textcoords="offset points")
    if point is not None:
        color = "#c44e52" if point.bound == "memory" else "#55a868"
        ax.scatter([point.intensity], [point.attainable_flops / 1e12], color=color, zorder=3, s=50)
        ax.annotate(f"{label} ({point.bound}-bound, {point.fraction_of_peak:.0%} of peak)",
                    (point.intensity, point.attainable_flops / 1e12), fontsize=8, xytext=(6, -14),
                    textcoords="offset points")
    _log_axes(ax, x_subs=(1.0,))
    ax.set_xlabel("arithmetic intensity, FLOP per byte (log)")
    ax.set_ylabel(f"attainable {dtype} TFLOPS")
    ax.set_title(f"{key}: {peak / 1e12:,.0f} TFLOPS ({source}), {bw / 1e12:.2f} TB/s", fontsize=10)
    return fig


class RooflineWidget(Calculator):
    """A matmul (M, N, K) or an LLM decoding step (batch) on an accelerator's roofline."""

    def __init__(self, accelerator: str = "H100-SXM", dtype: str = "bf16", mode: str = "matmul") -> None:
        self.accelerator = _accelerator_dropdown(accelerator)
        self.dtype = widgets.Dropdown(options=list(accelerators.DTYPES), value=dtype, description="dtype")
        self.source = widgets.ToggleButtons(options=list(compute.flops_sources()), value="advertised")
        self.mode = widgets.ToggleButtons(options=[("matmul", "matmul"), ("LLM decode", "decode")], value=mode)
        self.m = widgets.IntText(value=8192, description="M", layout=widgets.Layout(width="160px"))
        self.n = widgets.IntText(value=128, description="N", layout=widgets.Layout(width="160px"))
        self.k = widgets.IntText(value=8192, description="K", layout=widgets.Layout(width="160px"))
        self.batch = widgets.IntText(value=1, description="batch")
        self.params = widgets.FloatText(value=70.0, description="params (B)")
        inputs = [self.accelerator, self.dtype, self.source, self.mode, self.m, self.n, self.k, self.batch, self.params]
        layout = [widgets.HBox([self.accelerator, self.dtype]), self.source, self.mode,
                  widgets.HBox([self.m, self.n, self.k]), widgets.HBox([self.batch, self.params])]
        super().__init__(inputs, layout)

    def compute(self) -> tuple[compute.RooflinePoint, str, compute.DecodeBound | None]:
        key, dtype = self.accelerator.value, self.dtype.value
        peak = compute.achievable_flops(key, dtype, self.source.value)
        bw = spec(key).memory_bandwidth_bytes_per_s
        if self.mode.value == "matmul":
            i = compute.matmul_intensity(self.m.value, self.n.value, self.k.value, dtype)
            return compute.roofline(i, peak, bw), f"{self.m.value}x{self.n.value}x{self.k.value}", None
        bpp = compute.DTYPE_BYTES[dtype]
        i = compute.decode_intensity(self.batch.value, bpp)
        bound = compute.decode_bound(self.params.value * 1e9, bw, peak, self.batch.value, bpp)
        return compute.roofline(i, peak, bw), f"decode, batch {self.batch.value}", bound

    def render(self, result: tuple[compute.RooflinePoint, str, compute.DecodeBound | None]) -> None:
        point, label, bound = result
        print(f"{label}: {point.intensity:,.1f} FLOP/B against a ridge of {point.ridge_intensity:,.0f}: "
              f"{point.bound}-bound, at most {point.attainable_flops / 1e12:,.0f} TFLOPS ({point.fraction_of_peak:.0%})")
        if bound is not None:
            print(f"decode upper bound: {bound.tokens_per_s:,.0f} tokens/s in all, "
                  f"{bound.tokens_per_s_per_sequence:,.1f} per sequence (weights only, no KV cache)")
        display(figure_png(roofline_figure(self.accelerator.value, self.dtype.value, point, label, self.source.value)))


def shape_efficiency_figure(m: int, n_values: Sequence[int], k: int, n_sms: int, tile_m: int = 256, tile_n: int = 128,
                            title: str = "", mark: Sequence[int] = ()) -> Figure:
    """Efficiency of an M x N x K GEMM as N varies (tile x wave quantization), marked N values labelled."""
    effs = [compute.matmul_shape_efficiency(m, nv, k, n_sms, tile_m, tile_n) for nv in n_values]
    fig = Figure(figsize=_FIGSIZE)
    ax = fig.subplots()
    ax.plot(list(n_values), [e.efficiency * 100 for e in effs], lw=1, color="#4c72b0", label="tile x wave")
    ax.plot(list(n_values), [e.wave_efficiency * 100 for e in effs], lw=0.8, color="#dd8452", ls="--", label="wave only")
    for nv in mark:
        e = compute.matmul_shape_efficiency(m, nv, k, n_sms, tile_m, tile_n)
        ax.scatter([nv], [e.efficiency * 100], color="#c44e52", zorder=3)
        ax.annotate(f"N={nv}: {e.efficiency:.1%}", (nv, e.efficiency * 100), fontsize=8, xytext=(4, -12),
                    textcoords="offset points")
    ax.set_xlabel("N")
    ax.set_ylabel("useful work, %")
    ax.set_title(title or f"M={m}, K={k}, {tile_m}x{tile_n} tiles, {n_sms} SMs", fontsize=10)
    ax.grid(True, lw=0.3, alpha=0.5)
    ax.legend(fontsize=8, loc="lower right")
    return fig


class ShapeEfficiencyWidget(Calculator):
    """Tile and wave quantization: efficiency of a GEMM against N on a GPU's SM count."""

    TILES = [("256x128", (256, 128)), ("128x256", (128, 256)), ("128x128", (128, 128)), ("64x128", (64, 128))]

    def __init__(self, accelerator: str = "H100-SXM", m: int = 8192, k: int = 8192, n_center: int = 8192) -> None:
        keys = [a.key for a in catalogue().values() if a.sm_count]
        self.accelerator = widgets.Dropdown(options=keys, value=accelerator, description="GPU")
        self.tile = widgets.Dropdown(options=self.TILES, value=(256, 128), description="tile")
        self.m = widgets.IntText(value=m, description="M", layout=widgets.Layout(width="170px"))
        self.k = widgets.IntText(value=k, description="K", layout=widgets.Layout(width="170px"))
        self.n_center = widgets.IntText(value=n_center, description="N around", layout=widgets.Layout(width="200px"))
        self.span = widgets.IntSlider(value=1024, min=64, max=8192, step=64, description="± N", continuous_update=False)
        inputs = [self.accelerator, self.tile, self.m, self.k, self.n_center, self.span]
        layout = [widgets.HBox([self.accelerator, self.tile]), widgets.HBox([self.m, self.k]),
                  widgets.HBox([self.n_center, self.span])]
        super().__init__(inputs, layout)

    def compute(self) -> tuple[list[int], compute.ShapeEfficiency, int]:
        n_sms = spec(self.accelerator.value).sm_count or 0
        center = self.n_center.value
        here = compute.matmul_shape_efficiency(self.m.value, center, self.k.value, n_sms, *self.tile.value)
        lo = max(1, center - self.span.value)
        step = max(1, (center + self.span.value - lo) // 400)
        return list(range(lo, center + self.span.value + 1, step)), here, n_sms

    def render(self, result: tuple[list[int], compute.ShapeEfficiency, int]) -> None:
        ns, here, n_sms = result
        print(f"N={self.n_center.value}: {here.tiles} tiles in {here.waves} waves of {here.wave_size}; "
              f"tile {here.tile_efficiency:.1%} x wave {here.wave_efficiency:.1%} = {here.efficiency:.1%}"
              + ("" if here.aligned else "; not a multiple of 8 elements: Tensor Cores run less efficiently still"))
        tm, tn = self.tile.value
        display(figure_png(shape_efficiency_figure(self.m.value, ns, self.k.value, n_sms, tm, tn,
                                                   mark=[self.n_center.value])))


__all__ = [
    "CatalogueWidget",
    "CompareWidget",
    "FlopsWidget",
    "MfuWidget",
    "OffersWidget",
    "PeakWidget",
    "RooflineWidget",
    "ShapeEfficiencyWidget",
    "TrainingCostWidget",
    "catalogue_figure",
    "catalogue_table",
    "compare_rows",
    "cost_vs_mfu_figure",
    "html_table",
    "offers_figure",
    "offers_table",
    "roofline_figure",
    "shape_efficiency_figure",
]
