"""Static, print-quality figures for the chapters (matplotlib): helpers every chapter shares.

The calculators draw their charts from data (Vega-Lite, :mod:`mlcalc.charts`); matplotlib is for the
chapters' static figures only. Needs the ``widgets`` extra (matplotlib).
"""

from __future__ import annotations

import io

from IPython.display import Image
from matplotlib.axis import Axis
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, NullFormatter

from mlcalc import network as net
from mlcalc import parallel as par
from mlcalc.calculators._common import si as si_label


def figure_png(fig: Figure, dpi: int = 96, layout: bool = True) -> Image:
    """A matplotlib figure as a PNG image to display (no pyplot state, nothing left open).

    One draw only (widget updates stay quick): the figure is drawn at ``dpi`` so that text
    metrics are measured once, laid out by matplotlib's tight layout engine unless
    ``layout`` is False or the figure already has an engine (a figure laid out by hand sets
    matplotlib's ``PlaceHolderLayoutEngine``), and saved
    without ``bbox_inches="tight"``, which would draw it twice.
    """
    fig.set_dpi(dpi)
    if layout and fig.get_layout_engine() is None:
        fig.set_layout_engine("tight")
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi="figure", pil_kwargs={"compress_level": 1})
    return Image(data=buf.getvalue(), format="png")


def plain_log_ticks(axis: Axis, unit: str = "", binary: bool = False) -> None:
    """Label a log axis in plain text with unit prefixes ("1 MB", "10 ms") and no minor labels.

    Easier to read than 10^6, and quicker to draw: matplotlib's default log labels go
    through its TeX-like math parser, which is most of a network figure's drawing time.
    """
    axis.set_major_formatter(FuncFormatter(lambda v, _: si_label(v, unit, binary)))
    axis.set_minor_formatter(NullFormatter())


# --------------------------------------------------------------------------- network chapters

SWEEP_BYTES = tuple(10 ** (3 + i / 6) for i in range(49))  # 1 kB ... 100 GB
_PHASE_COLORS = {"F": "#4c72b0", "B": "#dd8452"}


def collective_sweep(fab: net.Fabric, collective: str, algorithm: str,
                     sizes: tuple[float, ...] = SWEEP_BYTES) -> tuple[net.CollectiveTime, ...]:
    """The collective's time at every message size of ``sizes``."""
    return tuple(net.fabric_collective_time(float(s), fab, collective, algorithm) for s in sizes)


def collective_compare_figure(fabrics: list[tuple[str, net.Fabric]], collective: str = "all_reduce",
                              algorithm: str = "ring") -> Figure:
    """Bus bandwidth against message size for several fabrics (e.g. one node against two)."""
    fig = Figure(figsize=(7, 3))
    ax = fig.subplots()
    for label, fab in fabrics:
        sweep = collective_sweep(fab, collective, algorithm)
        ax.semilogx(SWEEP_BYTES, [t.busbw_bytes_per_s / 1e9 for t in sweep], label=label)
    ax.set_xlabel("message size")
    ax.set_ylabel("bus bandwidth (GB/s)")
    ax.set_ylim(bottom=0)
    ax.minorticks_off()
    plain_log_ticks(ax.xaxis, "B")
    ax.legend(frameon=False, fontsize=8)
    ax.set_title(f"{collective} ({algorithm}): the slowest link sets the plateau", fontsize=9)
    return fig


def pipeline_figure(t: par.Timeline, kind: str, p: int, m: int, v: int) -> Figure:
    """A pipeline schedule drawn as a timeline: one row per device, forward blue, backward orange."""
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


__all__ = ["collective_compare_figure", "collective_sweep", "figure_png", "pipeline_figure", "plain_log_ticks",
           "si_label"]
