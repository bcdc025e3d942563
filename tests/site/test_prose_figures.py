"""The prose types no figure that the catalogue holds: numbers in prose come from the code.

Scans every page's prose (the markdown cells of the notebooks, book/**/*.md) for the headline
figures of every chip in the accelerator catalogue, read from `mlcalc` (so a changed datasheet
changes the scan): memory capacity, memory bandwidth, every dense and 2:4-sparse peak the data
file holds, and the scale-up link. A number is that chip's figure when it is one of these values
(as the data holds it, or rounded to within 0.5%) and the chip is named in the same passage: a
paragraph, a list item or a table row; an exercise's answer is read with its question. "The A100's 312 TFLOPS" is a hit; "312
samples" in a paragraph that names no A100 is not. A page that types one fails, unless the passage
quotes a source and is on the allow-list below. Prose shows such a figure through myst-nb `glue`
({glue:text}`key`), which this scan skips, as it skips code, role targets and links; math is
scanned ("$989.5 / 312$" types two figures). A second scan finds counts of the data typed as words
or digits ("nineteen accelerators", "eight published runs").

Run as a script (`python tests/site/test_prose_figures.py`) to list every hit.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path


from mlcalc import accelerators, training_runs

ROOT = Path(__file__).resolve().parents[2]

# A rounded rendering of a figure (989.5 -> 989 or 990; 2.039 -> 2.04) counts when it is this close to it.
ROUNDING = 0.005

# Passages that quote a source word for word: (page, a substring of the passage). Keep it short.
ALLOWED = (
    # Bekman, "The AI Battlefield": the quoted sentence, then its reading in our units.
    ("notebooks/network/units-and-generations.ipynb", '"450GBps (3.6Tbps) unidirectional bandwidth for H100"'),
    ("notebooks/network/units-and-generations.ipynb", "rounds it to 989"),
)

# Tokens of a product name that name a form factor, a size or a part, not the chip.
_NOT_A_NAME = re.compile(r"^(?:\d+(?:GB|W)|SXM\d*|HBM\d\w*|PCIe|HGX|GPU|GCDs?|NVL\d*)$")

# A figure's unit as prose writes it. Memory must be spelt "80 GB" (with the space): "H100 80GB" is a
# product's name, not a typed figure. Peaks are matched as bare numbers (TFLOPS is often a glossary term), not
# when a unit, a percent sign or a hyphen is glued to them ("80GB", "80%", "80-node" are other quantities).
_UNIT = {
    "TB/s": r"\s?(?:TB/s|TBps)\b",
    "GB/s": r"\s?(?:GB/s|GBps)\b",
    "GB": r" GB\b(?!/|ps)",
    "GiB": r" GiB\b",
    "": r"(?!\w|\s?\\?%|-\w)",
}


def chip_names(acc: accelerators.Accelerator) -> re.Pattern[str]:
    """How prose names chip ``acc``, read from its key and product name.

    The key's family ("A100-PCIe-40GB" -> A100; "Gaudi3" -> "Gaudi 3" too; "TPU-v5e" -> "TPU v5e"), every
    token of the product name that mixes letters and digits and is not a size or a form factor
    ("TPU7x", "MI400"), and a one-word code name in brackets ("(Trillium)", "(Ironwood)"). A plural
    ("H100s") counts; a longer name does not ("GH200" is not an H200).
    """
    names = set()
    head, *rest = acc.key.split("-")
    if head == "TPU":
        names.add(rf"TPU[\s-]?{re.escape(rest[0])}")
    else:
        names.add(re.sub(r"(?<=[A-Za-z]{3})(\d+)$", r"\\s?\1", re.escape(head)))
    for token in re.findall(r"[\w.]+", acc.name):
        if re.search(r"\d", token) and re.search(r"[A-Za-z]", token) and not _NOT_A_NAME.match(token):
            names.add(re.escape(token))
    names.update(re.findall(r"\(([A-Z][a-z]+)\)", acc.name))
    alts = "|".join(sorted(names, key=len, reverse=True))
    return re.compile(rf"(?<!\w)(?:{alts})s?(?!\w)")


def chip_figures(acc: accelerators.Accelerator) -> dict[str, tuple[float, str]]:
    """What -> (value, unit) for each headline figure the catalogue holds for ``acc``."""
    figs = {"memory": (acc.memory_gb, "GB"), "memory bandwidth": (acc.memory_bandwidth_tbps, "TB/s")}
    if acc.memory_bytes != acc.datasheet_memory_bytes:  # a measured capacity, as GB and as GiB
        figs["memory (measured)"] = (acc.memory_bytes / 1e9, "GB")
        figs["memory (measured, GiB)"] = (acc.memory_bytes / 2**30, "GiB")
    for dtype, tflops in acc.dense_tflops.items():
        figs[f"dense {dtype}"] = (tflops, "")
    for dtype, tflops in acc.sparse_tflops.items():
        figs[f"sparse {dtype}"] = (tflops, "")
    if acc.scale_up_bytes_per_s:
        figs["scale-up per direction"] = (acc.scale_up_bytes_per_s / 1e9, "GB/s")
        figs["scale-up both directions"] = (2 * acc.scale_up_bytes_per_s / 1e9, "GB/s")
    return figs


def _variants(value: float) -> set[str]:
    """How a page could type ``value``: as the data holds it, with thousands separators, or with fewer
    decimals (rounded or cut) within ``ROUNDING`` of it: 989.5 -> {"989.5", "989", "990"}; 2.039 ->
    {"2.039", "2.04"}; 1979 -> {"1979", "1,979"}; 19.5 -> {"19.5"} (20 is 2.5% off: another number)."""
    numbers = {value}
    for decimals in range(4):
        scale = 10**decimals
        for v in (round(value, decimals), math.floor(value * scale) / scale):
            if abs(v - value) <= ROUNDING * value:
                numbers.add(v)
    out = set()
    for v in numbers:
        out.add(f"{v:g}")
        if v >= 1000:  # 1307.4 -> 1,307.4
            whole, _, frac = f"{v:g}".partition(".")
            out.add(f"{int(whole):,}" + (f".{frac}" if frac else ""))
    return out


def catalogue_figures() -> list[tuple[str, re.Pattern[str], re.Pattern[str]]]:
    """(what, the chip's names, the figure) for every headline figure of every chip, announced ones too."""
    out = []
    for key, acc in accelerators.catalogue(include_announced=True).items():
        names = chip_names(acc)
        for what, (value, unit) in chip_figures(acc).items():
            alts = "|".join(re.escape(v) for v in sorted(_variants(value), key=len, reverse=True))
            figure = re.compile(rf"(?<![\w.,])(?<!\\\$)(?:{alts})(?![\d]|[.,]\d){_UNIT[unit]}")
            out.append((f"{key} {what}", names, figure))
    return out


_STRIP = [
    re.compile(r"```(?!\{)[^\n]*\n.*?```", re.S),  # fenced code (directives such as {dropdown} stay)
    re.compile(r"`[^`\n]*`"),  # code, and the targets of roles ({glue:text}`key`, {cite}`key`)
    re.compile(r"\]\([^)]*\)"),  # link targets
    re.compile(r"<!--.*?-->", re.S),  # comments
]
# Math as prose reads it: $1{,}307.4 \times 10^{12}$ types 1,307.4.
_MATH = (("{,}", ","), ("\\,", " "), ("\\times", " x "), ("\\approx", " ~ "))


def prose(text: str) -> str:
    """``text`` without code, role targets, link targets and comments, its math read as text."""
    for pat in _STRIP:
        text = pat.sub(" ", text)
    for tex, plain in _MATH:
        text = text.replace(tex, plain)
    return text


_ANSWER = re.compile(r"\s*(?:```|:::)\{dropdown\}")
_ITEM = re.compile(r"\n(?=[ \t]*(?:[-*+]|\d+\.)[ \t]|[ \t]*\|)")  # a line opening a list item or a table row


def passages(text: str) -> list[str]:
    """``text`` cut into passages: paragraphs, list items and table rows; an exercise's answer (a {dropdown}
    block) is read with its question."""
    out: list[str] = []
    for para in re.split(r"\n\s*\n", text):
        if out and _ANSWER.match(para):
            out[-1] += "\n\n" + para
        else:
            out += _ITEM.split(para)
    return out


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


def scan(text: str, figures=None) -> list[tuple[str, str]]:
    """(figure, the passage) for every catalogue figure ``text`` types in a passage that names its chip."""
    figures = catalogue_figures() if figures is None else figures
    hits = []
    for passage in passages(text):
        clean = prose(passage)
        for what, names, pat in figures:
            if not names.search(clean):
                continue
            for m in pat.finditer(clean):
                hits.append((what, clean[max(0, m.start() - 50):m.end() + 20].replace("\n", " ")))
    return hits


def typed_figures() -> list[tuple[str, str, str]]:
    """(page, figures, the passage) for every catalogue figure a page types and the allow-list does not cover
    (one row per passage: a number several chips share, the A100s' 312, names them all)."""
    figures = catalogue_figures()
    hits: dict[tuple[str, str], list[str]] = {}
    for page, text in pages().items():
        allowed = [s for pg, s in ALLOWED if pg == page]
        paras = [p for p in passages(text) if not any(s in p for s in allowed)]
        for what, passage in scan("\n\n".join(paras), figures):
            hits.setdefault((page, passage), []).append(what)
    return [(page, ", ".join(whats), passage) for (page, passage), whats in hits.items()]


def test_every_chip_has_names_and_figures():
    # The scan covers the whole catalogue, announced parts included: each chip is found by its name.
    for key, acc in accelerators.catalogue(include_announced=True).items():
        figs = chip_figures(acc)
        assert {"memory", "memory bandwidth"} <= set(figs) and len(figs) >= 3, key
        family = key.replace("-", " ") if key.startswith("TPU-") else key.split("-")[0]
        assert chip_names(acc).search(f"the {family} is"), key
    names = {k: chip_names(a) for k, a in accelerators.catalogue(include_announced=True).items()}
    assert names["Gaudi3"].search("Intel's Gaudi 3 ships") and names["TPU-v6e"].search("Trillium")
    assert names["H100-SXM"].search("eight H100s") and not names["H200-SXM"].search("a GH200 node")


def test_the_scan_finds_a_typed_figure_and_skips_glue_code_and_math():
    # The scan must be able to fail: a typed flagship figure is found, a glued or computed one is not.
    bw = accelerators.spec("H100-SXM").memory_bandwidth_tbps
    typed = f"The H100 reads its memory at {bw:g} TB/s."
    glued = "The H100 reads its memory at {glue:text}`h100_bw` TB/s, `spec('H100-SXM')`, [datasheet](x.md#3.35)."
    assert scan(typed) and not scan(glued)
    # a longer number that merely contains a figure is not a hit (13.35 TB/s, 3.355 TB/s, 380 GB), nor is a
    # price (an escaped \$ in MyST) or a product's name
    assert not scan(f"The H100: 1{bw:g} TB/s, {bw:g}5 TB/s, 380 GB, H100 80GB HBM3. A B200 rents at \\$80.")


def test_the_scan_covers_every_chip_and_needs_its_name_nearby():
    a100 = accelerators.spec("A100-40GB").peak_flops("bf16") / 1e12
    assert scan(f"An A100 peaks at {a100:g} TFLOPS.")
    assert scan(f"An A100 peaks at {a100:,.0f} dense TFLOPS.")
    assert not scan(f"A batch of {a100:g} sequences.")  # no chip named: another number
    assert not scan(f"The A100 is older.\n\nA batch of {a100:g} sequences.")  # another paragraph
    assert not scan(f"The GH200 runs {a100:g} steps.")  # another chip's name
    assert not scan(f"- The A100 is older.\n- A batch of {a100:g} sequences.")  # another list item
    assert not scan(f"| A100 | 2020 |\n| batch | {a100:g} |")  # another table row
    h100 = accelerators.spec("H100-SXM").peak_flops("bf16") / 1e12
    assert scan(f"1. How fast is an H100?\n\n```{{dropdown}} Answer\n${h100:,g} \\times 10^{{12}}$ FLOP/s\n```")
    mi = accelerators.spec("MI300X")
    assert scan(f"The MI300X holds {mi.memory_gb:g} GB at {mi.memory_bandwidth_tbps:g} TB/s.")
    v7 = accelerators.spec("TPU-v7")
    assert scan(f"Ironwood reaches {v7.dense_tflops['bf16']:,.0f} bf16 TFLOPS.")
    # a percentage or a rounding far off the figure is not it (the B200's fp32 figure is 80; 19.5 is not 20)
    assert not scan("Plan with 80% of a B200's bandwidth, $80\\%$ on a 80-node B200 cluster; an A100 step took 20 s.")


_WORDS = ("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
          "seventeen eighteen nineteen").split()


def _spelt(n: int) -> str:
    """``n`` as a pattern of its digits or its English words (up to 99): 24 -> "24|twenty[- ]four"."""
    if n < 20:
        return f"{n}|{_WORDS[n]}"
    tens = "twenty thirty forty fifty sixty seventy eighty ninety".split()[n // 10 - 2]
    return f"{n}|{tens}" + ("" if n % 10 == 0 else f"[- ]{_WORDS[n % 10]}")


# Words that may stand between a count and its noun ("25 published large training runs").
_ADJ = r"(?:(?:published|large|training|measured|LoRA|fine-tuning|pre-training) )*"


def catalogue_counts() -> list[tuple[str, re.Pattern[str]]]:
    """(what, pattern) for the counts of the book's data that prose tends to type ("nineteen accelerators",
    "eight published runs"): the catalogue's chips, the published runs each check uses, the measured runs."""
    from mlcalc import finetune, plan, training_runs

    counts = [
        ("chips in the catalogue", len(accelerators.catalogue()), r"accelerators|chips|GPUs and accelerators"),
        ("catalogue entries with announced parts", len(accelerators.catalogue(include_announced=True)),
         r"accelerators|chips|entries"),
        ("published runs of the planner's check", len(plan.published_runs()), rf"published {_ADJ}runs"),
        ("published runs of the step-time engine", len(training_runs.runs()), rf"published {_ADJ}runs"),
        ("measured fine-tuning runs", len(finetune.measured()), rf"{_ADJ}runs"),
    ]
    return [(f"{what} ({n})", re.compile(rf"\b(?:{_spelt(n)})\s+(?:{noun})\b", re.I)) for what, n, noun in counts]


def typed_counts() -> list[tuple[str, str, str]]:
    """(page, count, the passage) for every count of the data a page types."""
    counts = catalogue_counts()
    return [(page, what, clean[max(0, m.start() - 50):m.end() + 20].replace("\n", " "))
            for page, text in pages().items() for clean in [prose(text)]
            for what, pat in counts for m in pat.finditer(clean)]


def test_the_count_scan_finds_a_typed_count():
    n = len(accelerators.catalogue())
    assert any(p.search(f"This chapter collects {n} accelerators") for _, p in catalogue_counts())
    assert not any(p.search("This chapter collects {glue:text} accelerators") for _, p in catalogue_counts())
    runs = len(training_runs.runs())
    assert any(p.search(f"checked against {runs} published large runs") for _, p in catalogue_counts())
    assert _spelt(19) == "19|nineteen" and re.fullmatch(_spelt(24), "twenty-four")


def test_no_page_types_a_count_of_the_data():
    hits = typed_counts()
    assert not hits, "counts typed in prose (glue them from mlcalc instead):\n" + "\n".join(
        f"{page}: {what}: ...{passage}..." for page, what, passage in hits)


def self_check_texts() -> list[str]:
    """The text of the self-check exercises and the quiz as their source types it: each string literal of
    ``mlcalc/calculators/exercises.py``, an f-string's formatted fields read as "{}" (pages show these texts
    as cell outputs, where a typed figure and a computed one look alike)."""
    import ast

    from mlcalc.calculators import exercises

    tree = ast.parse(Path(exercises.__file__).read_text(encoding="utf-8"))
    parts = {id(v) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr) for v in node.values}
    texts = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            texts.append("".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in parts:
            texts.append(node.value)
    return texts


def test_no_self_check_types_a_catalogue_figure():
    texts = self_check_texts()
    assert any("NVLink" in t for t in texts)  # the exercises' questions were read
    hits = [hit for text in texts for hit in scan(text)]
    assert not hits, "figures typed in the self-check's text (format them from mlcalc instead):\n" + "\n".join(
        f"{what}: ...{passage}..." for what, passage in hits)


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
    for page, what, passage in typed_figures() + typed_counts():
        print(f"{page}: {what}: ...{passage}...")
