"""Sphinx configuration of the course's website (``./course.sh site``; ``scripts/build_site.py``
stages the pages). MyST-NB renders the notebooks from their stored outputs: nothing runs."""

project = "Gradient Clinic"
author = "Gradient Clinic"
copyright = "Gradient Clinic contributors, MIT licence"
html_title = "Gradient Clinic"

extensions = ["myst_nb"]
nb_execution_mode = "off"  # the stored outputs, exactly what CI proved
# The labs are widgets: show their stored text fallback, and load no widget JavaScript
# (it would come from a CDN, and the site must work offline).
nb_mime_priority_overrides = [("html", "application/vnd.jupyter.widget-view+json", None)]
nb_ipywidgets_js = {}
myst_heading_anchors = 3

exclude_patterns = ["_build"]
html_theme = "sphinx_book_theme"
html_theme_options = {
    "use_download_button": True,  # the page's notebook, to run it
    "show_toc_level": 2,
    "home_page_in_toc": True,
    "announcement": (
        "Run it yourself: <code>./course.sh lab</code> opens the course, "
        "<code>./course.sh test</code> tests it (<a href='index.html#two-commands'>how</a>)."
    ),
}
html_static_path = ["static"]
html_css_files = ["course.css"]
html_last_updated_fmt = None
# Light or dark as the reader's system says, with the theme's switch to change it.
html_context = {"default_mode": "auto"}
html_favicon = "static/favicon.svg"
