"""What every calculator widget shares: controls, one observer, an output area, inline errors."""

from __future__ import annotations

import html
import io
from typing import Any, Sequence

import ipywidgets as widgets
from IPython.display import Image, display
from matplotlib.axis import Axis
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, NullFormatter


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


_DECIMAL = ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, ""), (1e-3, "m"), (1e-6, "µ"), (1e-9, "n"))
_BINARY = ((2.0**50, "Pi"), (2.0**40, "Ti"), (2.0**30, "Gi"), (2.0**20, "Mi"), (2.0**10, "Ki"), (1.0, ""))


def si_label(value: float, unit: str = "", binary: bool = False) -> str:
    """``value`` with a decimal (k, M, G: 1e3...) or binary (Ki, Mi, Gi: 2**10...) prefix: "1 GB", "4 MiB".

    Prefixes below one (m, µ, n) only for seconds ("10 µs").
    """
    for scale, prefix in _BINARY if binary else _DECIMAL:
        if scale < 1 and unit != "s":
            break  # milli-bytes and micro-FLOP read badly: below 1, plain numbers
        if abs(value) >= scale * 0.999:
            return f"{value / scale:.3g} {prefix}{unit}".strip()
    return f"{value:.3g} {unit}".strip()


def plain_log_ticks(axis: Axis, unit: str = "", binary: bool = False) -> None:
    """Label a log axis in plain text with unit prefixes ("1 MB", "10 ms") and no minor labels.

    Easier to read than 10^6, and quicker to draw: matplotlib's default log labels go
    through its TeX-like math parser, which is most of a network figure's drawing time.
    """
    axis.set_major_formatter(FuncFormatter(lambda v, _: si_label(v, unit, binary)))
    axis.set_minor_formatter(NullFormatter())


class Calculator(widgets.VBox):
    """Base class of a calculator widget.

    A subclass builds its controls, passes them (and how to lay them out) to
    ``__init__``, and implements ``compute`` (call the pure mlcalc functions; may raise
    ValueError) and ``render`` (display the result inside the output area). A
    ValueError is shown inline as a message, and the widget keeps working.
    """

    def __init__(self, inputs: Sequence[widgets.Widget], layout: Sequence[widgets.Widget] | None = None) -> None:
        self._inputs = list(inputs)
        self.message = widgets.HTML(value="")  # the inline error message ("" when all is well)
        self.output = widgets.Output()  # where render() draws
        self.last_result: Any = None  # what compute() returned last time it succeeded
        self.last_error: str = ""  # the last error message shown, "" if none
        super().__init__([*(layout if layout is not None else self._inputs), self.message, self.output])
        self.add_class("mlcalc-calculator")
        for control in self._inputs:
            control.observe(self._update, names="value")
        self._update()

    def compute(self) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def render(self, result: Any) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def _update(self, change: object = None) -> None:
        try:
            result = self.compute()
        except ValueError as err:
            self.last_error = str(err)
            self.message.value = f'<div class="mlcalc-error" style="color:#b00020"><b>Check the input:</b> {html.escape(str(err))}</div>'
            return
        self.last_error = ""
        self.message.value = ""
        self.last_result = result
        with self.output:
            self.output.clear_output(wait=True)
            self.render(result)


__all__ = ["Calculator", "display", "figure_png"]
