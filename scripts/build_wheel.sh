#!/usr/bin/env bash
# Build the pure (py3-none-any) wheel of mlcalc from the checkout, served by the site at
# _static/vendor/mlcalc/mlcalc.whl: the reader's browser (Pyodide) runs the calculators from it.
# Then, in step with it, a Pyodide memory snapshot of the interpreter with that wheel's mlcalc imported
# (scripts/make_snapshot.mjs, Node.js): the site's worker restores it instead of starting Python cold,
# and starts cold when it is missing or made for another wheel (snapshot.json records the wheel's SHA-256).
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-.venv/bin/python}
dest=_vendor/vendor/mlcalc
tmp=$(mktemp -d)
trap 'rm -rf "$tmp" build' EXIT
# The same sources give the same wheel, byte for byte (fixed file times), so an unchanged
# checkout keeps its snapshot.
export SOURCE_DATE_EPOCH=315532800
"$python" -m pip wheel --quiet --no-deps --no-build-isolation -w "$tmp" . 2>/dev/null \
  || "$python" -m pip wheel --quiet --no-deps -w "$tmp" .
whl=$(ls "$tmp"/mlcalc-*-py3-none-any.whl)
mkdir -p "$dest"
cp "$whl" "$dest/mlcalc.whl"
basename "$whl" > "$dest/wheel-name.txt"
echo "built $(basename "$whl") into $dest ($(du -h "$dest/mlcalc.whl" | cut -f1))"

# The snapshot: remade only when the wheel changed (its record names the wheel's SHA-256).
sha=$("$python" -c 'import hashlib,sys; print(hashlib.sha256(open(sys.argv[1],"rb").read()).hexdigest())' "$dest/mlcalc.whl")
maker=$("$python" -c 'import hashlib,sys; print(hashlib.sha256(open(sys.argv[1],"rb").read()).hexdigest())' scripts/make_snapshot.mjs)
# The heap's peak and margin a snapshot's record states (scripts/make_snapshot.mjs measures them).
heap_line() {
  "$python" - "$1" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
peak, limit = d.get("heap_peak_bytes"), d.get("heap_limit_bytes")
print(f"import mlcalc's heap peaked at {peak / 1e6:.2f} MB of the {limit / 1e6:.2f} MB (30 MiB) a snapshot restores into: "
      f"{(limit - peak) / 1e6:.2f} MB to spare" if peak and limit else "its record states no heap peak")
PY
}
rm -f "$dest/snapshot-failed.txt"
if [ "${MLCALC_SNAPSHOT:-1}" = "0" ]; then
  rm -f "$dest/snapshot.json" "$dest"/mlcalc.snapshot*
  echo "no Pyodide snapshot (MLCALC_SNAPSHOT=0): the site's Python starts cold"
elif [ -f "$dest/snapshot.json" ] && [ -f "$dest/mlcalc.snapshot.gz" ] && grep -q "\"wheel_sha256\": \"$sha\"" "$dest/snapshot.json" \
     && grep -q "\"maker_sha256\": \"$maker\"" "$dest/snapshot.json" \
     && { if [ "${MLCALC_SNAPSHOT_WARM:-0}" = "1" ]; then ! grep -q '"warmed": null' "$dest/snapshot.json";
          else grep -q '"warmed": null' "$dest/snapshot.json"; fi; }; then
  echo "Pyodide snapshot already made for this wheel; $(heap_line "$dest/snapshot.json")"
elif ! command -v node >/dev/null; then
  rm -f "$dest/snapshot.json" "$dest"/mlcalc.snapshot*
  echo "no Node.js: no Pyodide snapshot (the site's Python starts cold, a few times slower)" | tee "$dest/snapshot-failed.txt" >&2
else
  rm -f "$dest/snapshot.json" "$dest"/mlcalc.snapshot*
  node scripts/make_snapshot.mjs _vendor/vendor/pyodide "$dest/mlcalc.whl" "$tmp/mlcalc.snapshot" "$tmp/snapshot.json" \
    > "$tmp/snapshot.log" 2>&1 || {
    # Not an error for `make book` (the site works, every page starting Python cold, a few times slower), but loud:
    # the reason is kept beside the wheel, and `make test` fails on it (tests/scripts/test_snapshot.py).
    tail -c 3000 "$tmp/snapshot.log" > "$dest/snapshot-failed.txt"
    { echo; echo "======== NO PYODIDE SNAPSHOT: every page of the site will start Python cold ========"
      cat "$dest/snapshot-failed.txt"; echo "(kept in $dest/snapshot-failed.txt)"
      echo "===================================================================================="; echo; } >&2
    exit 0; }
  tail -n 1 "$tmp/snapshot.log"
  # Compressed once here: `make serve` (scripts/serve.py) sends this file as it is, with Content-Encoding: gzip.
  gzip -6 -c "$tmp/mlcalc.snapshot" > "$tmp/mlcalc.snapshot.gz"
  mv "$tmp/mlcalc.snapshot" "$tmp/mlcalc.snapshot.gz" "$dest/"
  mv "$tmp/snapshot.json" "$dest/snapshot.json"  # last: the record appears only with its files
fi
