"""A small Sphinx extension of the book's own, loaded from ``_config.yml``.

- Each script once per page. sphinx-thebe (which Jupyter Book always loads) registers its inline
  configuration script every time the build reads documents, and a page that declares
  ``const THEBE_JS_URL`` twice stops with "Identifier 'THEBE_JS_URL' has already been declared".
- A colour mode on a first visit. pydata-sphinx-theme starts from the page context's
  ``default_mode``, which Jupyter Book never sets, so every page logged "Got invalid theme mode: ."
  as a console error until the reader picked a mode.
- Figure captions carry the paper's own numbering ("Figure 1(a-b) reproduced"). sphinx-jupyterbook-latex
  (which Jupyter Book always loads) sets ``numfig = True`` for every builder at ``config-inited``,
  over ``_config.yml``, so Sphinx prefixed "Fig. 4" to those captions; it is switched off again
  after that handler.
- A sidebar that shows the open page's own branch. pydata-sphinx-theme renders the whole sidebar
  tree into each of the ~190 pages (most of them the library's module pages), which was most of
  the HTML build's time; collapsed (``collapse_navbar``, as Sphinx's own themes do, Jupyter Book's
  other theme options kept) the smoke book's HTML took 48 s instead of 71 s, and every page is still
  reached from its chapter's or the library's page, whose branch opens when that page is open.
"""

from __future__ import annotations


def _key(js) -> tuple:
    """What a script tag renders from: its file (None and '' both mean inline) and its attributes
    (an inline script's body among them)."""
    name = getattr(js, "filename", js) or None
    return (str(name) if name else None, tuple(sorted((k, str(v)) for k, v in getattr(js, "attributes", {}).items())))


def unique_scripts(app, pagename, templatename, context, doctree):
    context.setdefault("default_mode", "light")
    seen, kept = set(), []
    for js in context.get("script_files", []):
        k = _key(js)
        if k not in seen:
            seen.add(k)
            kept.append(js)
    # in place: the list is the builder's own, and handlers after this one (sphinx.ext.mathjax adds
    # MathJax to pages with math) append to it; a new list here silently dropped MathJax from the book
    context["script_files"][:] = kept


def keep_numfig(app, config) -> None:
    config["numfig"] = False  # as _config.yml says; the book numbers nothing itself


def collapsed_sidebar(app, config) -> None:
    config["html_theme_options"] = {**(config["html_theme_options"] or {}), "collapse_navbar": True}


def setup(app):
    app.connect("config-inited", keep_numfig, priority=900)  # after sphinx-jupyterbook-latex (500)
    app.connect("config-inited", collapsed_sidebar)
    app.connect("html-page-context", unique_scripts, priority=1)  # html-page-context stops at the first handler that returns a template
    return {"parallel_read_safe": True, "parallel_write_safe": True}
