"""environment.yml (conda/mamba) asks for the same packages as pyproject.toml (pip)."""

from __future__ import annotations

import pathlib
import re
import tomllib

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
# Packages whose conda-forge name differs from their PyPI name.
CONDA_NAME = {"torch": "pytorch"}


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~ \[]", requirement.strip(), maxsplit=1)[0].lower()


def _spec(requirement: str) -> str:
    return requirement.strip().replace(" ", "")


def test_environment_yml_matches_pyproject():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = {_name(r): _spec(r) for r in project["dependencies"]}
    for extra in ("book", "test"):
        wanted.update({_name(r): _spec(r) for r in project["optional-dependencies"][extra]})
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    conda = {}
    pip_lines: list[str] = []
    for dep in env["dependencies"]:
        if isinstance(dep, dict):
            pip_lines += dep.get("pip", [])
        else:
            conda[_name(dep)] = _spec(dep)
    for name, spec in wanted.items():
        conda_name = CONDA_NAME.get(name, name)
        assert conda_name in conda, f"environment.yml lacks {name} (pyproject.toml asks for {spec})"
        assert conda[conda_name] == spec.replace(name, conda_name, 1), (
            f"version differs for {name}: pyproject {spec}, environment.yml {conda[conda_name]}"
        )
    extra = set(conda) - {CONDA_NAME.get(n, n) for n in wanted} - {"python", "pip", "nodejs"}
    assert not extra, f"environment.yml has packages pyproject.toml does not: {sorted(extra)}"
    assert "-e ." in pip_lines, "environment.yml must install mlcalc from the repository (pip: -e .)"
    assert env["dependencies"][0] == "python=3.11"
