"""How the accelerator and network calculators call :func:`mlcalc.vl.chart` (standard library only).

Two measured quirks of Vega 6.4 / Vega-Lite 6.5, rendered headless to SVG:

- ``autosize: fit`` misplaces the title of a layered chart whose axes and legend take much of its height
  (the title lands above the canvas, clipped); fitting the width only (``fit-x``) keeps it.
- A title wider than the column squeezes the plot to nothing under ``fit-x`` (the title's width counts),
  so long titles are wrapped into lines that fit a phone's column (about 40 characters).
"""

from __future__ import annotations

from typing import Any

from mlcalc import vl

FIT_X = {"type": "fit-x", "contains": "padding"}
TITLE_CHARS = 40  # characters per title line: about 300 px at the 13 px title size


def wrap(text: str, width: int = TITLE_CHARS) -> str | list[str]:
    """A title as one line, or as lines of at most ``width`` characters (split at spaces)."""
    if len(text) <= width:
        return text
    lines: list[str] = []
    line = ""
    for word in text.split(" "):
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    lines.append(line)
    return lines


def chart(*args: Any, title: str = "", **kwargs: Any) -> dict[str, Any]:
    """:func:`mlcalc.vl.chart` fitted to the column's width (height as given), its title wrapped."""
    spec = vl.chart(*args, autosize=FIT_X, **kwargs)
    if title:
        spec["title"] = wrap(title)
    return spec


__all__ = ["FIT_X", "TITLE_CHARS", "chart", "wrap"]
