"""Execute notebooks in place, so that their stored outputs are what nbval compares.

Usage: python scripts/execute_notebooks.py [NOTEBOOK ...]   (default: every notebook under notebooks/)
"""

from __future__ import annotations

import pathlib
import sys

import nbformat
from nbclient import NotebookClient

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "book" / "_ext"))
import kernel_channels  # noqa: E402  (the fix for a kernel reply the client misses: see the module)

kernel_channels.install()


def execute(path: pathlib.Path) -> None:
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}).execute()
    nbformat.write(nb, path)
    print(f"executed {path.relative_to(ROOT)}")


def main(args: list[str]) -> None:
    paths = [pathlib.Path(a).resolve() for a in args] or sorted(
        p for p in (ROOT / "notebooks").rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts
    )
    for path in paths:
        execute(path)


if __name__ == "__main__":
    main(sys.argv[1:])
