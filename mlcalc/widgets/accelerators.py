"""The accelerators part's static tables: ``html_table`` (its calculators' widgets are made in
:mod:`mlcalc.widgets` from :mod:`mlcalc.calculators.accelerators`)."""

from __future__ import annotations

import html
from typing import Sequence

from IPython.display import HTML



def html_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> HTML:
    """A small HTML table (numbers right-aligned) for the chapters' static tables."""
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


__all__ = ["html_table"]
