"""One-off (issue 12): rewrite the notebooks' old "this page is a snapshot" notes to say what is true
now (the calculators run in the browser; from file:// they are snapshots; make serve / make lab).

Idempotent: run it again after merging notebooks that still carry the old note.

    .venv/bin/python scripts/update_live_notes.py
"""

from __future__ import annotations

import pathlib
import re

import nbformat

ROOT = pathlib.Path(__file__).resolve().parent.parent
SINGULAR = ("On the website this calculator runs in your browser: Python starts when it comes\n"
            "into view (\"Loading live calculators...\"), then each change is computed by the same\n"
            "code as in Jupyter. Opened from a file it is a snapshot with its controls off: run\n"
            "`make serve` for a live site, or `make lab` to run the notebook.\n")
PLURAL = ("On the website these calculators run in your browser: Python starts when one comes\n"
          "into view (\"Loading live calculators...\"), then each change is computed by the same\n"
          "code as in Jupyter. Opened from a file they are snapshots with their controls off: run\n"
          "`make serve` for a live site, or `make lab` to run the notebook.\n")
OLD = re.compile(r"On the website (this calculator is a snapshot|these calculators are snapshots): the controls move "
                 r"but nothing\s+recomputes\. To run (it|them) live, open this page in Binder or Colab from the\s+rocket"
                 r"\s+button at the top, or clone the repository and run `make lab`\.\n")
OLD_TOO = "The widget below is a snapshot too: see the note above on how to run it live."
NEW_TOO = "The widget below runs in your browser too (see the note above)."


def main() -> None:
    for path in sorted((ROOT / "notebooks").rglob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        changed = False
        for cell in nb.cells:
            if cell.cell_type != "markdown":
                continue
            new = OLD.sub(lambda m: SINGULAR if m.group(1).startswith("this") else PLURAL, cell.source)
            new = new.replace(OLD_TOO, NEW_TOO)
            if new != cell.source:
                cell.source, changed = new, True
        if changed:
            nbformat.write(nb, path)
            print("updated:", path.relative_to(ROOT))


if __name__ == "__main__":
    main()
