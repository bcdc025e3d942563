"""Static, print-quality figures for the chapters (matplotlib): helpers every chapter shares.

The calculators draw their charts from data (Vega-Lite, :mod:`mlcalc.vl`); matplotlib is for the
chapters' static figures only. Needs the ``widgets`` extra (matplotlib).
"""

from __future__ import annotations

import io

from IPython.display import Image
from matplotlib.axis import Axis
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, NullFormatter

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


__all__ = ["figure_png", "plain_log_ticks", "si_label"]
