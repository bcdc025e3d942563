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
"""

from __future__ import annotations

from typing import Any


def _is_thebe(js: Any) -> bool:
    name = str(getattr(js, "filename", "") or "")
    body = str(getattr(js, "attributes", {}).get("body", ""))
    return "thebe" in name or "THEBE_JS_URL" in body


def _clean_scripts(app, pagename, templatename, context, doctree) -> None:
    scripts = context.get("script_files")
    if not scripts:
        return
    kept, seen = [], set()
    for js in scripts:
        key = (str(getattr(js, "filename", js)), str(sorted(getattr(js, "attributes", {}).items())))
        if _is_thebe(js) or key in seen:
            continue
        seen.add(key)
        kept.append(js)
    context["script_files"] = kept
    context.setdefault("default_mode", "auto")


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
