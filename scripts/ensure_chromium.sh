#!/usr/bin/env bash
# The browser tests drive Debian's Chromium through Playwright (never a downloaded browser).
set -euo pipefail
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
if [ -x "$CHROMIUM" ]; then exit 0; fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "installing Debian's chromium for the browser tests"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
else
  echo "The browser tests need Chromium at $CHROMIUM: run 'sudo apt-get install -y chromium' (or set CHROMIUM=/path/to/chromium)." >&2
  exit 1
fi
