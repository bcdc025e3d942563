"""The built book as readers meet it: strict build, links, launch buttons, install cells, README figures.

Pages come from _toc.yml and notebooks from notebooks/**/*.ipynb, so a new chapter is
covered as soon as it is listed in the table of contents.
"""

from __future__ import annotations

import gzip
import html.parser
import json
import pathlib
import re
import urllib.parse

import nbformat
import pytest
import yaml

from tests.conftest import HTML, ROOT, chapter_notebooks, toc_docnames, widget_view_count

# Pages Sphinx writes besides the table of contents.
EXTRA_PAGES = ["genindex", "search"]
PAGES = [*toc_docnames(), *EXTRA_PAGES]
NOTEBOOK_DOCNAMES = [str(p.relative_to(ROOT).with_suffix("")) for p in chapter_notebooks()]


class _Links(html.parser.HTMLParser):
    """The ids a page defines and the local URLs it references (href/src)."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.refs: list[tuple[str, str]] = []  # (tag, url)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if attrs.get("id"):
            self.ids.add(attrs["id"])
        if tag == "a" and attrs.get("name"):
            self.ids.add(attrs["name"])
        for key in ("href", "src"):
            if attrs.get(key) is not None:
                self.refs.append((tag, attrs[key]))


def _parse(path: pathlib.Path) -> _Links:
    parser = _Links()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser


def _built_pages() -> list[pathlib.Path]:
    skip = ("_static", "_sources", "_images")
    return sorted(p for p in HTML.rglob("*.html") if p.relative_to(HTML).parts[0] not in skip)


def test_strict_build_passes(strict_build):
    # jupyter-book build . -W -n --keep-going: any warning (broken reference, missing
    # citation, failing notebook cell) fails the build.
    assert strict_build.returncode == 0, strict_build.stdout[-4000:] + strict_build.stderr[-2000:]


def test_every_built_page_is_in_the_toc(strict_build):
    assert strict_build.returncode == 0
    built = {str(p.relative_to(HTML).with_suffix("")) for p in _built_pages()}
    # index.html at the root only redirects to the root page of the toc.
    assert built - {"index"} == set(PAGES), "pages built but not listed (or listed but not built)"
    assert f"url={toc_docnames()[0]}.html" in (HTML / "index.html").read_text()


def test_every_notebook_is_a_page_of_the_book():
    missing = sorted(set(NOTEBOOK_DOCNAMES) - set(PAGES))
    assert missing == [], f"notebooks not listed in _toc.yml: {missing}"


@pytest.mark.parametrize("docname", PAGES)
def test_site_scripts_are_local(strict_build, docname):
    assert strict_build.returncode == 0
    page = (HTML / f"{docname}.html").read_text()
    # What a browser fetches by itself (scripts, images, stylesheets, preloads, icons), not <a> links.
    external = []
    for tag, attrs in re.findall(r"<(script|img|link|iframe|source)\b([^>]*)>", page):
        url = re.search(r'(?:src|href)="([^"]*)"', attrs)
        rel = re.search(r'rel="([^"]*)"', attrs)
        fetched = tag != "link" or (rel and set(rel.group(1).split()) & {"stylesheet", "preload", "icon", "modulepreload", "prefetch"})
        if url and fetched and re.match(r"(https?:)?//", url.group(1)):
            external.append(url.group(1))
    assert external == [], f"{docname} loads from the network: {external}"
    if docname in NOTEBOOK_DOCNAMES and "widget-view+json" in page:
        assert "_static/vendor/html-manager/embed-amd.js" in page
        assert "_static/mlcalc-site.js" in page
        # The live calculators' script and the chart renderer come with the widgets, from the site.
        assert "_static/mlcalc-live.js" in page and "_static/vendor/vega/vega-embed.min.js" in page
    elif "widget-view+json" not in page:
        # Prose pages load none of it (no Python, no Vega).
        assert "mlcalc-live.js" not in page and "vendor/vega/" not in page and "pyodide" not in page
    # Thebe is off: sphinx-thebe's scripts are kept off the pages (they declared a const twice).
    assert "THEBE_JS_URL" not in page and "sphinx-thebe.js" not in page
    # A Content-Security-Policy that allows only the site's own host (book/_ext/mlcalc_site.py); the
    # browser tests see no violation of it (a console error) on any page they load.
    csp = re.findall(r'<meta http-equiv="Content-Security-Policy" content="([^"]*)"', page)
    assert len(csp) == 1, f"{docname}: {len(csp)} Content-Security-Policy tags"
    policy = html.unescape(csp[0])
    assert "default-src 'self'" in policy and "object-src 'none'" in policy and "http" not in policy, policy
    assert ("'unsafe-eval'" in policy) == ("mlcalc-live.js" in page), policy
    if "mlcalc-live.js" in page:
        # Python starts first: the boot script comes before the widget manager, Vega and MathJax.
        assert page.index("mlcalc-boot.js") < min(page.index(s) for s in ("embed-amd.js", "vega.min.js", "require.js"))


def test_internal_links_and_anchors_resolve(strict_build):
    """Every local href/src of every page names a file that exists, and an id in it."""
    assert strict_build.returncode == 0
    ids: dict[pathlib.Path, set[str]] = {}
    broken = []
    for path in _built_pages():
        parsed = _parse(path)
        ids[path] = parsed.ids
        for tag, url in parsed.refs:
            parts = urllib.parse.urlsplit(url)
            if parts.scheme or url.startswith(("//", "mailto:", "javascript:")) or url in ("", "#"):
                continue
            target = path if not parts.path else (path.parent / urllib.parse.unquote(parts.path)).resolve()
            if not target.exists():
                broken.append(f"{path.relative_to(HTML)}: <{tag}> {url} (no such file)")
            elif parts.fragment and target.suffix == ".html":
                if target not in ids:
                    ids[target] = _parse(target).ids
                if urllib.parse.unquote(parts.fragment) not in ids[target]:
                    broken.append(f"{path.relative_to(HTML)}: <{tag}> {url} (no such anchor)")
    assert broken == [], "\n".join(broken)


def _repository_url() -> str:
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    return str((config.get("repository") or {}).get("url") or "").strip()


@pytest.mark.parametrize("docname", NOTEBOOK_DOCNAMES)
def test_launch_and_download_buttons(strict_build, docname):
    """Launch buttons work or are absent: with repository.url unset, none links anywhere."""
    assert strict_build.returncode == 0
    page = (HTML / f"{docname}.html").read_text()
    ipynb = f"{docname}.ipynb"
    url = _repository_url()
    binder = re.findall(r'href="(https://mybinder\.org/[^"]+)"', page)
    colab = re.findall(r'href="(https://colab\.research\.google\.com/[^"]+)"', page)
    if not url:
        assert binder == [] and colab == [], "launch buttons while repository.url is unset"
        assert 'class="btn btn-sm btn-source-repository-button' not in page
    else:
        org_repo = urllib.parse.urlsplit(url).path.strip("/")
        # Binder opens the notebook in JupyterLab; Colab opens it from the repository.
        assert any(f"/v2/gh/{org_repo}/" in b and b.endswith(f"urlpath=lab/tree/{ipynb}") for b in binder), binder
        assert any(c.endswith(f"/github/{org_repo}/blob/main/{ipynb}") for c in colab), colab
    # The .ipynb download button points at the notebook copied into the site.
    depth = docname.count("/")
    assert f'href="{"../" * depth}_sources/{ipynb}"' in page
    assert (HTML / "_sources" / ipynb).exists()


@pytest.mark.parametrize("notebook", chapter_notebooks(), ids=lambda p: str(p.relative_to(ROOT)))
def test_first_cell_installs_mlcalc_where_missing(notebook):
    """Colab (or any fresh Jupyter) gets mlcalc from the first cell, from the one repository setting."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("set_repository", ROOT / "scripts" / "set_repository.py")
    set_repository = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(set_repository)
    nb = nbformat.read(notebook, as_version=4)
    cell = set_repository.install_cell(nb)
    assert cell is not None, "run scripts/set_repository.py: the first cell must install mlcalc"
    assert cell.source == set_repository.install_source(_repository_url()), "run scripts/set_repository.py"
    assert "remove-cell" in cell.metadata["tags"]
    url = _repository_url()
    if url:
        assert f"git+{url}" in cell.source
    # Runs as a no-op where mlcalc is installed (the build, make lab, Binder).
    exec(compile(cell.source.replace("output.enable_custom_widget_manager()", "pass"), "install-cell", "exec"), {})


def test_binder_installs_only_what_notebooks_need():
    """binder/: the widgets extra and JupyterLab, then mlcalc itself (no PyTorch, Playwright or Node)."""
    import tomllib

    reqs = [line.strip() for line in (ROOT / "binder" / "requirements.txt").read_text().splitlines()
            if line.strip() and not line.startswith("#")]
    names = {re.split(r"[<>=!~ \[]", r, maxsplit=1)[0].lower() for r in reqs}
    assert not names & {"torch", "playwright", "nodejs", "node", "pytest", "nbval", "jupyter-book"}, names
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert set(extras["widgets"]) <= set(reqs), "binder/requirements.txt must carry mlcalc's widgets extra"
    assert any(r.startswith("jupyterlab") for r in reqs)
    post = (ROOT / "binder" / "postBuild").read_text()
    assert "pip install --no-deps ." in post
    assert (ROOT / "binder" / "postBuild").stat().st_mode & 0o111, "binder/postBuild must be executable"
    # Everything the notebooks import is the standard library, mlcalc, or installed by Binder.
    import sys

    imported = set()
    for path in chapter_notebooks():
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type == "code" and "mlcalc-install" not in cell.metadata.get("tags", []):
                imported |= set(re.findall(r"^\s*(?:from|import)\s+(\w+)", cell.source, flags=re.M))
    provided = {n.replace("-", "_") for n in names} | {"mlcalc", "IPython"}
    assert imported - set(sys.stdlib_module_names) - provided == set()
    # ... and Colab's install cell installs the same extra packages (myst-nb for the glued numbers).
    if "myst_nb" in imported:
        assert "myst-nb" in (ROOT / "scripts" / "set_repository.py").read_text()


@pytest.mark.parametrize("notebook", chapter_notebooks(), ids=lambda p: str(p.relative_to(ROOT)))
def test_live_note_before_first_widget(notebook):
    """A {note} before the first widget says the calculators run in the browser, and how to get them live."""
    nb = nbformat.read(notebook, as_version=4)
    first = next((i for i, c in enumerate(nb.cells) if c.cell_type == "code" and widget_view_count(c)), None)
    if first is None:
        pytest.skip("no widget in this notebook")
    notes = [
        c.source
        for c in nb.cells[:first]
        if c.cell_type == "markdown" and re.search(r"(```|:::)\s*\{(note|admonition|tip)\}", c.source)
    ]
    assert any("in your browser" in n and "make serve" in n and "make lab" in n for n in notes), (
        "put a {note} before the first widget saying the calculators run in the browser, and how to get a live one"
    )
    assert not any("nothing\nrecomputes" in n or "nothing recomputes" in n for n in notes)


def test_bibliography_and_glossary_are_used(strict_build):
    assert strict_build.returncode == 0
    refs = (HTML / "book" / "references.html").read_text()
    assert refs.count('role="doc-biblioentry"') >= 1, "the references page lists no entry"
    glossary_page = HTML / "book" / "glossary.html"
    assert glossary_page.exists(), "book/glossary.md must be in the toc"
    terms = re.findall(r'<dt id="(term-[^"]+)"', glossary_page.read_text())
    assert len(terms) >= 20, terms
    cites, uses = set(), set()
    for path in _built_pages():
        text = path.read_text()
        name = str(path.relative_to(HTML))
        if re.search(r'href="[^"]*references\.html#', text) and "references" not in name:
            cites.add(name)
        if re.search(r'href="[^"]*glossary\.html#term-', text):
            uses.add(name)
    assert cites, "no page cites the bibliography"
    # The preface and the first chapter use glossary terms ({term}`...`).
    preface, first_chapter = toc_docnames()[:2]
    assert {f"{preface}.html", f"{first_chapter}.html"} <= uses, sorted(uses)


# In the browser, each page's rendering (widgets, math, images, calculators, no outside request,
# no console error) is checked by tests/site/test_layout.py's 1280 px pass (check_page), in the same page load; a
# chapter's in tests/site/test_live_site.py's recompute test, before it changes a control.


def test_readme_speed_section_shows_the_committed_benchmark():
    """The README's Speed figures are those of benchmarks/results.json, with date and machine."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("benchmark", ROOT / "scripts" / "benchmark.py")
    benchmark = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(benchmark)
    results = json.loads((ROOT / "benchmarks" / "results.json").read_text())
    readme = (ROOT / "README.md").read_text()
    section = readme.split(benchmark.README_START, 1)[1].split(benchmark.README_END, 1)[0]
    assert benchmark.headline(results) in section
    assert results["date"] in section and f"{results['machine']['cores']} cores" in section
    for part in ("widgets_python", "widgets_lab", "build", "pages"):
        assert part in results, f"benchmarks/results.json lacks {part}: run scripts/benchmark.py in full"


def test_the_page_refuses_a_paste_over_what_mlcalc_reads():
    """The page's size check (mlcalc-live.js) is the paste calculator's own limit, not another number."""
    from mlcalc.calculators.measured import MAX_PASTE_BYTES

    script = (ROOT / "book" / "_static" / "mlcalc-live.js").read_text()
    assert re.search(r"PASTE_MAX_BYTES = (\d+);", script).group(1) == str(MAX_PASTE_BYTES)


def test_make_serve_sends_gzip_cache_headers_and_304(tmp_path):
    """scripts/serve.py (make serve): what the README says a static host must set."""
    import sys
    import threading
    import urllib.request

    sys.path.insert(0, str(ROOT / "scripts"))
    import serve

    (tmp_path / "_static" / "vendor" / "pyodide").mkdir(parents=True)
    (tmp_path / "page.html").write_text("<p>hello</p>" * 500)
    (tmp_path / "_static" / "vendor" / "pyodide" / "pyodide.asm.wasm").write_bytes(b"\0asm" + b"\1" * 5000)
    (tmp_path / "_static" / "w.mjs").write_text("export const x = 1;" * 100)
    (tmp_path / "_static" / "snap.snapshot").write_bytes(b"raw" * 500)
    (tmp_path / "_static" / "snap.snapshot.gz").write_bytes(gzip.compress(b"S" * 4000))
    server = serve.make_server(str(tmp_path), port=0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"

    def get(path, **headers):
        req = urllib.request.Request(base + path, headers={"Accept-Encoding": "gzip", **headers})
        try:
            with urllib.request.urlopen(req) as r:
                return r.status, dict(r.headers), r.read()
        except urllib.error.HTTPError as err:
            return err.code, dict(err.headers), b""

    try:
        status, h, body = get("/page.html")
        assert status == 200 and h["Content-Encoding"] == "gzip" and gzip.decompress(body) == b"<p>hello</p>" * 500
        assert h["Cache-Control"] == "no-cache" and h["Vary"] == "Accept-Encoding" and h["ETag"]
        assert get("/page.html", **{"If-None-Match": h["ETag"]})[0] == 304
        status, h, body = get("/_static/vendor/pyodide/pyodide.asm.wasm")
        assert h["Content-Type"] == "application/wasm" and "max-age=3600" in h["Cache-Control"]
        assert gzip.decompress(body).startswith(b"\0asm")
        assert get("/_static/w.mjs")[1]["Content-Type"].startswith("text/javascript")
        # a .gz made at build time is sent as it is
        status, h, body = get("/_static/snap.snapshot")
        assert h.get("Content-Encoding") == "gzip" and gzip.decompress(body) == b"S" * 4000
        # without Accept-Encoding: the file as it is
        req = urllib.request.Request(base + "/page.html", headers={"Accept-Encoding": "identity"})
        with urllib.request.urlopen(req) as r:
            assert "Content-Encoding" not in r.headers and r.read() == b"<p>hello</p>" * 500
    finally:
        server.shutdown()
