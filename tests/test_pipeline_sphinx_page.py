"""privtrans.book.pipeline.sphinx_page: each script once on a page, the sidebar collapsed, the theme's
other options kept."""



def test_sphinx_page_keeps_each_script_once():
    from sphinx.builders.html._assets import _JavaScript

    from privtrans.book.pipeline import sphinx_page

    scripts = [_JavaScript(None, body="const T = 1"), _JavaScript("a.js"), _JavaScript("", body="const T = 1"),
               _JavaScript("a.js", **{"async": "async"})]
    before = list(scripts)
    ctx = {"script_files": scripts}
    sphinx_page.unique_scripts(None, "p", "page.html", ctx, None)
    assert ctx["script_files"] == [before[0], before[1], before[3]]
    # in place: a handler that runs later (sphinx.ext.mathjax) appends to the builder's own list
    assert ctx["script_files"] is scripts
    assert ctx["default_mode"] == "light"  # no "invalid theme mode" console error on a first visit


def test_sphinx_page_collapses_the_sidebar_and_keeps_the_other_theme_options():
    from privtrans.book.pipeline import sphinx_page

    config = {"html_theme_options": {"home_page_in_toc": True, "use_repository_button": False}}
    sphinx_page.collapsed_sidebar(None, config)
    assert config["html_theme_options"] == {"home_page_in_toc": True, "use_repository_button": False,
                                             "collapse_navbar": True}
    config = {"html_theme_options": None}
    sphinx_page.collapsed_sidebar(None, config)
    assert config["html_theme_options"] == {"collapse_navbar": True}
