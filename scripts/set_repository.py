"""Write the book's repository URL (``repository.url`` in _config.yml, the one setting) into the
first cell of every chapter notebook: the cell that installs mlcalc where it is missing (Colab, a
JupyterHub, any fresh Jupyter). It does nothing where mlcalc is installed (make lab, Binder, the build).

    .venv/bin/python scripts/set_repository.py          # after changing repository.url
    .venv/bin/python scripts/set_repository.py --check  # exit 1 if a notebook is out of step

tests/site/test_site.py checks that every notebook's install cell is the one this script writes.
"""

from __future__ import annotations

import argparse
import pathlib
import sys

import nbformat
import yaml

ROOT = pathlib.Path(__file__).resolve().parent.parent
TAG = "mlcalc-install"


def repository_url() -> str:
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    return str((config.get("repository") or {}).get("url") or "").strip().rstrip("/")


def install_source(url: str | None = None) -> str:
    """The source of the install cell for a repository URL ("" = unset)."""
    url = repository_url() if url is None else url
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    branch = str((config.get("repository") or {}).get("branch") or "main")
    head = [
        "# Colab, a JupyterHub or a fresh Jupyter: install the book's package, mlcalc, where it is missing.",
        "# (Nothing happens where it is installed: make lab, Binder, the book's build.)",
        "import importlib.util, subprocess, sys",
        "",
        'if importlib.util.find_spec("mlcalc") is None:',
    ]
    if url:
        body = [
            f'    subprocess.run([sys.executable, "-m", "pip", "install", "-q",',
            f'                    "mlcalc[widgets] @ git+{url}@{branch}", "myst-nb>=1"], check=True)',
        ]
    else:
        body = ['    raise ModuleNotFoundError("mlcalc is not installed: clone the book\'s repository and run `make lab`")']
    tail = [
        'if "google.colab" in sys.modules:  # let Colab draw the ipywidgets calculators',
        "    from google.colab import output",
        "",
        "    output.enable_custom_widget_manager()",
    ]
    return "\n".join(head + body + tail)


def notebooks() -> list[pathlib.Path]:
    return sorted(p for p in (ROOT / "notebooks").rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)


def install_cell(nb) -> nbformat.NotebookNode | None:
    first = nb.cells[0] if nb.cells else None
    if first is not None and first.cell_type == "code" and TAG in first.get("metadata", {}).get("tags", []):
        return first
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only check; exit 1 if a notebook is out of step")
    args = parser.parse_args()
    source = install_source()
    stale = []
    for path in notebooks():
        nb = nbformat.read(path, as_version=4)
        cell = install_cell(nb)
        if cell is not None and cell.source == source:
            continue
        stale.append(path.relative_to(ROOT))
        if args.check:
            continue
        if cell is None:
            cell = nbformat.v4.new_code_cell(source)
            cell["id"] = TAG
            nb.cells.insert(0, cell)
        cell.source = source
        # Hidden on the website (it is for running the notebook elsewhere).
        cell.metadata["tags"] = ["remove-cell", TAG]
        cell.outputs = []
        cell.execution_count = None
        nbformat.write(nb, path)
    for p in stale:
        print(("out of step: " if args.check else "updated: ") + str(p))
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
