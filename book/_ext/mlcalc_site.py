"""Small fixes to the static site that configuration alone cannot make.

- Thebe is off (``launch_buttons.thebe: false``), but Jupyter Book always loads
  sphinx-thebe, which puts its script and a ``const THEBE_JS_URL`` on every page,
  twice ("Identifier 'THEBE_JS_URL' has already been declared"). Drop them, and drop
  any other script added twice.
- Launch buttons work or are absent: the repository URL (``repository.url`` in _config.yml) is the
  one setting. While it is unset there is no repository button and no launch button (Binder, Colab,
  JupyterHub would point nowhere); once set, both appear.
- The theme logs a console error ("Got invalid theme mode") when no colour mode is
  set in the page context: default it to "auto".
- A page with calculators starts its Python first: ``mlcalc-boot.js`` (it starts the Web Worker that
  loads Pyodide) goes first in ``<head>``, right after the policy tag: before the stylesheets (a script after
  them runs only once they have all loaded), the widget manager, Vega and MathJax.
- Every page carries a Content-Security-Policy (a meta tag) that allows only what the site loads, from
  the site itself: its scripts (inline ones included: the theme's and Sphinx's), styles, fonts, images
  and, on a page with calculators, the evaluation Vega's expressions need and a worker. Nothing from any
  other host; no plugins, frames or form posts elsewhere. (A meta tag cannot set frame-ancestors or
  reporting: a host that wants them sends the header itself; README "Serving the site".)
"""

from __future__ import annotations

import html
from typing import Any

#: The Content-Security-Policy of every page ('self': the site's own host). Pages with calculators add
#: 'unsafe-eval' (Vega compiles a chart's expressions with the Function constructor) and blob: workers.
CSP = ("default-src 'self'; script-src 'self' 'unsafe-inline'{eval}; style-src 'self' 'unsafe-inline'; "
       "img-src 'self' data:; font-src 'self' data:; connect-src 'self'; worker-src 'self'{blob}; "
       "object-src 'none'; frame-src 'none'; base-uri 'self'; form-action 'self'")


def page_csp(live: bool) -> str:
    """The policy of a page (``live``: it has calculators)."""
    return CSP.format(eval=" 'unsafe-eval'" if live else "", blob=" blob:" if live else "")


def _is_thebe(js: Any) -> bool:
    name = str(getattr(js, "filename", "") or "")
    body = str(getattr(js, "attributes", {}).get("body", ""))
    return "thebe" in name or "THEBE_JS_URL" in body


def _clean_scripts(app, pagename, templatename, context, doctree) -> None:
    scripts = context.get("script_files") or []
    kept, seen = [], set()
    for js in scripts:
        key = (str(getattr(js, "filename", js)), str(sorted(getattr(js, "attributes", {}).items())))
        if _is_thebe(js) or key in seen:
            continue
        seen.add(key)
        kept.append(js)
    live = [js for js in kept if str(getattr(js, "filename", js)).endswith("mlcalc-live.js")]
    context["script_files"] = kept
    context.setdefault("default_mode", "auto")
    tag = f'<meta http-equiv="Content-Security-Policy" content="{html.escape(page_csp(bool(live)))}">\n'
    if live:
        # mlcalc-boot.js goes right after the policy (which covers only what follows it), before the stylesheets: a
        # script placed after them waits for every one of them to load before it runs (measured 2026-11-28, 2 busy
        # cores, empty cache: the worker was created 0.52 s after navigation among the page's scripts).
        first = live[0]
        boot = type(first)(str(first.filename).replace("mlcalc-live.js", "mlcalc-boot.js"))
        tag += context["js_tag"](boot) + "\n"
    context["metatags"] = tag + context.get("metatags", "")


def _launch_buttons(app, config) -> None:
    options = config.html_theme_options
    url = str(options.get("repository_url") or "").strip()
    options["use_repository_button"] = bool(url)
    if not url:
        options.pop("repository_url", None)
        options["launch_buttons"] = {}


def setup(app):
    app.connect("config-inited", _launch_buttons)
    app.connect("html-page-context", _clean_scripts, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
