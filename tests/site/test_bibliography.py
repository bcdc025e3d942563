"""The bibliography files: each key defined once across all parts.

sphinxcontrib-bibtex stops reading a file at a repeated key, which silently drops every
entry after it (a missing citation then fails the strict build far from the cause).
"""

from __future__ import annotations

import collections
import pathlib
import re

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_every_bibtex_key_is_defined_once():
    files = yaml.safe_load((ROOT / "_config.yml").read_text())["bibtex_bibfiles"]
    where = collections.defaultdict(list)
    for name in files:
        for key in re.findall(r"^@\w+\{([^,\s]+),", (ROOT / name).read_text(), flags=re.M):
            where[key].append(name)
    repeated = {k: v for k, v in where.items() if len(v) > 1}
    assert not repeated, f"keys defined more than once (keep one, in book/refs/frame.bib if shared): {repeated}"
    assert len(where) > 20
