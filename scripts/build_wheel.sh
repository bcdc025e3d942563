#!/usr/bin/env bash
# Build the pure (py3-none-any) wheel of mlcalc from the checkout, served by the site at
# _static/vendor/mlcalc/mlcalc.whl: the reader's browser (Pyodide) runs the calculators from it.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-.venv/bin/python}
dest=_vendor/vendor/mlcalc
tmp=$(mktemp -d)
trap 'rm -rf "$tmp" build' EXIT
"$python" -m pip wheel --quiet --no-deps --no-build-isolation -w "$tmp" . 2>/dev/null \
  || "$python" -m pip wheel --quiet --no-deps -w "$tmp" .
whl=$(ls "$tmp"/mlcalc-*-py3-none-any.whl)
mkdir -p "$dest"
cp "$whl" "$dest/mlcalc.whl"
basename "$whl" > "$dest/wheel-name.txt"
echo "built $(basename "$whl") into $dest ($(du -h "$dest/mlcalc.whl" | cut -f1))"
