#!/usr/bin/env bash
# Fetch the scripts the static site serves itself (so it needs no CDN) from the npm
# registry into _vendor/vendor/. Build outputs: not committed (see .gitignore).
set -euo pipefail
cd "$(dirname "$0")/.."
dest=_vendor/vendor
stamp=2  # bump when the list of fetched files changes, so an old _vendor is refetched
if [ -f "$dest/.complete" ] && [ "$(cat "$dest/.complete")" = "$stamp" ]; then exit 0; fi
command -v npm >/dev/null || { echo "npm is needed to fetch the widget and MathJax scripts (install Node.js)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
( cd "$tmp" && npm pack --silent requirejs@2.3.7 @jupyter-widgets/html-manager@1.0.6 mathjax@3.2.2 >/dev/null )
rm -rf "$dest"; mkdir -p "$dest/html-manager" "$dest/mathjax" "$dest/none"
for t in "$tmp"/*.tgz; do mkdir -p "$t.d"; tar -xzf "$t" -C "$t.d"; done
cp "$tmp"/requirejs-2.3.7.tgz.d/package/require.js "$dest/require.js"
hm="$tmp"/jupyter-widgets-html-manager-1.0.6.tgz.d/package/dist
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
touch "$dest/none/.keep"
echo "$stamp" > "$dest/.complete"
echo "fetched site scripts into $dest ($(du -sh "$dest" | cut -f1))"
