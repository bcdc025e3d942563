"""The prose types no figure that the catalogue holds: numbers in prose come from the code.

Scans every page's prose (the markdown cells of the notebooks, book/**/*.md) for the flagship
figures of the accelerator catalogue, read from `mlcalc` (so a changed datasheet changes the
scan): a page that types one fails, unless the passage quotes a source and is on the allow-list
below. Prose shows such a figure through myst-nb `glue` ({glue:text}`key`), which this scan
skips, as it skips code, math and links.

Run as a script (`python tests/site/test_prose_figures.py`) to list every hit.
"""

from __future__ import annotations

import json
import re
from pathlib import Path


import mlcalc

ROOT = Path(__file__).resolve().parents[2]

# The flagship chips whose figures the issue tracker found typed by hand (H100 and H200 SXM).
FLAGSHIPS = ("H100-SXM", "H200-SXM")

# Passages that quote a source word for word: (page, a substring of the passage). Keep it short.
ALLOWED = (
    # Bekman, "The AI Battlefield": the quoted sentence, then its reading in our units.
    ("notebooks/network/units-and-generations.ipynb", '"450GBps (3.6Tbps) unidirectional bandwidth for H100"'),
    ("notebooks/network/units-and-generations.ipynb", "rounds it to 989"),
)

_UNIT = {"TB/s": r"\s?(?:TB/s|TBps)\b", "GB/s": r"\s?(?:GB/s|GBps)\b", "GB": r" GB\b(?!/|ps)", "": ""}


def _variants(value: float) -> set[str]:
    """How a page could type ``value``: 989.5 -> {"989.5", "989", "990"}, 1979 -> {"1979", "1,979"}."""
    out = {f"{value:g}"}
    if value != int(value):
        out |= {str(int(value)), str(round(value))}
    out |= {f"{int(v):,}" for v in (value, round(value)) if v == int(v)}
    return {v for v in out if len(v.replace(",", "").replace(".", "")) >= 2}


def catalogue_figures() -> list[tuple[str, re.Pattern[str]]]:
    """(what, pattern) for each flagship figure: memory, memory bandwidth, peaks, scale-up link."""
    figs: dict[str, tuple[float, str]] = {}
    for key in FLAGSHIPS:
        a = mlcalc.spec(key)
        figs[f"{key} memory"] = (a.memory_bytes / 1e9, "GB")
        figs[f"{key} memory bandwidth"] = (a.memory_bandwidth_bytes_per_s / 1e12, "TB/s")
        for dtype in ("bf16", "fp8"):
            figs[f"{key} dense {dtype}"] = (a.peak_flops(dtype) / 1e12, "")
            if dtype in a.sparse_tflops:
                figs[f"{key} sparse {dtype}"] = (float(a.sparse_tflops[dtype]), "")
        if a.scale_up_bytes_per_s:
            figs[f"{key} scale-up per direction"] = (a.scale_up_bytes_per_s / 1e9, "GB/s")
            figs[f"{key} scale-up both directions"] = (2 * a.scale_up_bytes_per_s / 1e9, "GB/s")
    out = []
    for what, (value, unit) in figs.items():
        alts = "|".join(re.escape(v) for v in sorted(_variants(value), key=len, reverse=True))
        out.append((what, re.compile(rf"(?<![\w.,$])(?:{alts})(?![\d]|[.,]\d){_UNIT[unit]}")))
    return out


_STRIP = [
    re.compile(r"```(?!\{)[^\n]*\n.*?```", re.S),  # fenced code (directives such as {dropdown} stay)
    re.compile(r"\$\$.*?\$\$", re.S),  # display math
    re.compile(r"(?<!\\)\$(?!\$)[^$]+?(?<!\\)\$"),  # inline math (an escaped \$ is a price, not math)
    re.compile(r"`[^`\n]*`"),  # code, and the targets of roles ({glue:text}`key`, {cite}`key`)
    re.compile(r"\]\([^)]*\)"),  # link targets
    re.compile(r"<!--.*?-->", re.S),  # comments
]


def prose(text: str) -> str:
    """``text`` without code, math, role targets, link targets and comments."""
    for pat in _STRIP:
        text = pat.sub(" ", text)
    return text


def pages() -> dict[str, str]:
    """Page path (relative to the repository) -> its prose."""
    out = {}
    for p in sorted([*ROOT.glob("notebooks/**/*.ipynb"), *ROOT.glob("book/**/*.ipynb")]):
        if ".ipynb_checkpoints" in p.parts:
            continue
        cells = json.loads(p.read_text(encoding="utf-8"))["cells"]
        out[p.relative_to(ROOT).as_posix()] = "\n\n".join(
            "".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    for p in sorted(ROOT.glob("book/**/*.md")):
        out[p.relative_to(ROOT).as_posix()] = p.read_text(encoding="utf-8")
    return out


def typed_figures() -> list[tuple[str, str, str]]:
    """(page, figure, the passage) for every catalogue figure a page types and the allow-list does not cover."""
    figures = catalogue_figures()
    hits = []
    for page, text in pages().items():
        allowed = [s for pg, s in ALLOWED if pg == page]
        for para in re.split(r"\n\s*\n", text):
            if any(s in para for s in allowed):
                continue
            clean = prose(para)
            for what, pat in figures:
                for m in pat.finditer(clean):
                    hits.append((page, what, clean[max(0, m.start() - 50):m.end() + 20].replace("\n", " ")))
    return hits


def test_the_scan_finds_a_typed_figure_and_skips_glue_code_and_math():
    # The scan must be able to fail: a typed flagship figure is found, a glued or computed one is not.
    bw = mlcalc.spec("H100-SXM").memory_bandwidth_bytes_per_s / 1e12
    typed = f"The H100 reads its memory at {bw:g} TB/s."
    glued = "The H100 reads its memory at {glue:text}`h100_bw` TB/s, `spec('H100-SXM')`, $3.35$."
    figures = catalogue_figures()
    assert any(p.search(prose(typed)) for _, p in figures)
    assert not any(p.search(prose(glued)) for _, p in figures)
    # a longer number that merely contains a figure is not a hit (13.35 TB/s, 3.355 TB/s, 180 GB)
    assert not any(p.search(prose(f"1{bw:g} TB/s, {bw:g}5 TB/s, 180 GB, $80")) for _, p in figures)


def test_the_allow_list_is_small_and_every_entry_is_used():
    assert len(ALLOWED) <= 10
    texts = pages()
    for page, snippet in ALLOWED:
        assert snippet in texts.get(page, ""), f"allow-list entry no longer on {page}: {snippet!r}"


def test_no_page_types_a_catalogue_figure():
    hits = typed_figures()
    assert not hits, "figures typed in prose (glue them from mlcalc instead):\n" + "\n".join(
        f"{page}: {what}: ...{passage}..." for page, what, passage in hits)


if __name__ == "__main__":
    for page, what, passage in typed_figures():
        print(f"{page}: {what}: ...{passage}...")
