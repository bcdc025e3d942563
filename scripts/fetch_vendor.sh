#!/usr/bin/env bash
# Fetch the scripts the static site serves itself (so it needs no CDN) from the npm
# registry into _vendor/vendor/. Build outputs: not committed (see .gitignore).
#   require.js + html-manager   the embedded ipywidgets (html-manager pinned: the live
#                               calculators use its internals, which are not a public API)
#   mathjax                     math
#   vega, vega-lite, vega-embed the calculators' charts (Vega-Lite specs made by mlcalc.vl)
#   pyodide                     Python in the reader's browser (core only: no package wheels)
# The wheel of mlcalc itself is built from the checkout by scripts/build_wheel.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
dest=_vendor/vendor
stamp=3  # bump when the list of fetched files changes, so an old _vendor is refetched
if [ -f "$dest/.complete" ] && [ "$(cat "$dest/.complete")" = "$stamp" ]; then exit 0; fi
command -v npm >/dev/null || { echo "npm is needed to fetch the site's scripts (install Node.js)" >&2; exit 1; }
HTML_MANAGER=1.0.6
PYODIDE=314.0.7
VEGA=6.4.0
VEGA_LITE=6.5.0
VEGA_EMBED=7.3.0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
( cd "$tmp" && npm pack --silent requirejs@2.3.7 "@jupyter-widgets/html-manager@$HTML_MANAGER" mathjax@3.2.2 \
    "pyodide@$PYODIDE" "vega@$VEGA" "vega-lite@$VEGA_LITE" "vega-embed@$VEGA_EMBED" >/dev/null )
# Keep the wheel of mlcalc (built separately) across a refetch.
keep=$(mktemp -d); [ -d "$dest/mlcalc" ] && cp -r "$dest/mlcalc" "$keep/"
rm -rf "$dest"; mkdir -p "$dest/html-manager" "$dest/mathjax" "$dest/none" "$dest/vega" "$dest/pyodide"
[ -d "$keep/mlcalc" ] && cp -r "$keep/mlcalc" "$dest/"; rm -rf "$keep"
for t in "$tmp"/*.tgz; do mkdir -p "$t.d"; tar -xzf "$t" -C "$t.d"; done
cp "$tmp"/requirejs-2.3.7.tgz.d/package/require.js "$dest/require.js"
hm="$tmp"/jupyter-widgets-html-manager-$HTML_MANAGER.tgz.d/package/dist
cp "$hm/embed-amd.js" "$dest/html-manager/embed-amd.js"
# The widget icon fonts (Font Awesome) that embed-amd.js loads from its own folder
# (book/_static/mlcalc-site.js points require.js at it).
cp "$hm"/*.woff2 "$hm"/*.woff "$hm"/*.ttf "$dest/html-manager/"
# MathJax: the combined component and the pieces it loads at run time (fonts, extensions).
mj="$tmp"/mathjax-3.2.2.tgz.d/package/es5
cp "$mj/tex-mml-chtml.js" "$dest/mathjax/"
mkdir -p "$dest/mathjax/output/chtml" "$dest/mathjax/input"
cp -r "$mj/output/chtml/fonts" "$dest/mathjax/output/chtml/"
cp -r "$mj/input/tex" "$dest/mathjax/input/" 2>/dev/null || true
cp -r "$mj/a11y" "$mj/ui" "$mj/sre" "$dest/mathjax/" 2>/dev/null || true
# Vega: classic (UMD) scripts, loaded before require.js so they become globals (vega, vegaLite, vegaEmbed).
cp "$tmp"/vega-$VEGA.tgz.d/package/build/vega.min.js "$dest/vega/"
cp "$tmp"/vega-lite-$VEGA_LITE.tgz.d/package/build/vega-lite.min.js "$dest/vega/"
cp "$tmp"/vega-embed-$VEGA_EMBED.tgz.d/package/build/vega-embed.min.js "$dest/vega/"
# Pyodide's core: the loader, the WebAssembly runtime, the standard library and its lock file.
py="$tmp"/pyodide-$PYODIDE.tgz.d/package
cp "$py"/pyodide.mjs "$py"/pyodide.asm.mjs "$py"/pyodide.asm.wasm "$py"/python_stdlib.zip "$py"/pyodide-lock.json "$dest/pyodide/"
touch "$dest/none/.keep"
echo "$stamp" > "$dest/.complete"
echo "fetched site scripts into $dest ($(du -sh "$dest" | cut -f1))"
