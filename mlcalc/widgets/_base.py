"""What every calculator widget shares: controls, one observer, an output area, inline errors."""

from __future__ import annotations

import html
import io
from typing import Any, Sequence

import ipywidgets as widgets
from IPython.display import Image, display
from matplotlib.figure import Figure


def figure_png(fig: Figure, dpi: int = 96) -> Image:
    """A matplotlib figure as a PNG image to display (no pyplot state, nothing left open)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
    return Image(data=buf.getvalue(), format="png")


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
