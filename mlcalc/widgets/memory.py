"""Widgets for the memory calculators."""

from __future__ import annotations

import ipywidgets as widgets
from matplotlib.figure import Figure

from mlcalc import memory
from mlcalc.accelerators import catalogue, spec
from mlcalc.widgets._base import Calculator, display, figure_png


def gpu_memory_figure(est: memory.GpuEstimate, accelerator_label: str) -> Figure:
    """Stacked bar of what fills the memory, against the memory of the accelerators needed."""
    fig = Figure(figsize=(7, 2.6))
    ax = fig.subplots()
    left = 0.0
    colors = ["#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860"]
    for i, (name, nbytes) in enumerate(est.parts_bytes.items()):
        gb = nbytes / 1e9
        ax.barh(0, gb, left=left, color=colors[i % len(colors)], label=f"{name}: {gb:,.0f} GB")
        left += gb
    capacity = est.n_gpus * est.gpu_memory_bytes / 1e9
    for k in range(1, est.n_gpus + 1):
        ax.axvline(k * est.gpu_memory_bytes / 1e9, color="0.3", lw=0.6, ls=":")
    ax.axvline(capacity, color="black", lw=1.5)
    ax.set_yticks([])
    ax.set_xlabel("GB (1e9 bytes); dotted lines: one accelerator's memory each")
    ax.set_title(f"{est.n_gpus} x {accelerator_label} = {capacity:,.0f} GB for {est.total_bytes / 1e9:,.0f} GB needed")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.45), ncol=2, fontsize=8, frameon=False)
    return fig


class GpuCountWidget(Calculator):
    """How many GPUs do you need? Model size, accelerator, training or inference."""

    def __init__(self, n_params_billion: float = 80.0, accelerator: str = "H100-SXM", mode: str = "train") -> None:
        self.params = widgets.FloatText(value=n_params_billion, description="Params (B)", step=1.0)
        self.accelerator = widgets.Dropdown(
            options=[(f"{a.key} ({a.memory_gb:g} GB)", a.key) for a in catalogue().values()],
            value=accelerator,
            description="Accelerator",
        )
        self.mode = widgets.ToggleButtons(options=[("Train", "train"), ("Serve", "inference")], value=mode)
        self.headroom = widgets.FloatSlider(
            value=memory.SEED_HEADROOM, min=1.0, max=2.0, step=0.05, description="Headroom", continuous_update=False
        )
        inputs = [self.params, self.accelerator, self.mode, self.headroom]
        super().__init__(inputs, [widgets.HBox([self.params, self.accelerator]), widgets.HBox([self.mode, self.headroom])])

    def compute(self) -> memory.GpuEstimate:
        acc = spec(self.accelerator.value)
        return memory.gpus_needed(
            self.params.value * 1e9, acc.memory_bytes, mode=self.mode.value, headroom=self.headroom.value
        )

    def render(self, result: memory.GpuEstimate) -> None:
        verb = "train" if self.mode.value == "train" else "serve"
        print(f"At least {result.n_gpus} x {self.accelerator.value} to {verb} "
              f"({result.total_bytes / 1e9:,.0f} GB / {result.gpu_memory_bytes / 1e9:,.0f} GB = {result.exact:.2f})")
        display(figure_png(gpu_memory_figure(result, self.accelerator.value)))
