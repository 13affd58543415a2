"""Sphinx configuration: build with ``make -C doc html`` (see doc/README.md)."""

import os
import warnings

import sklearn_dpsco

project = "sklearn_dpsco"
author = "sklearn_dpsco developers"
copyright = "2026, sklearn_dpsco developers"
version = release = sklearn_dpsco.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.intersphinx",
    "sphinx.ext.mathjax",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
]

autosummary_generate = True
autodoc_default_options = {"members": True, "inherited-members": False}
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False

intersphinx_mapping = {
    "python": ("https://docs.python.org/3", None),
    "numpy": ("https://numpy.org/doc/stable", None),
    "scipy": ("https://docs.scipy.org/doc/scipy", None),
    "sklearn": ("https://scikit-learn.org/stable", None),
}
# The build machine may be offline: intersphinx then leaves plain text
# instead of links (no warning is raised for an unreachable inventory below).
intersphinx_timeout = 5
if os.environ.get("DPSCO_DOCS_OFFLINE"):
    intersphinx_mapping = {}

sphinx_gallery_conf = {
    "examples_dirs": "../examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "download_all_examples": False,
    "remove_config_comments": True,
    "abort_on_example_error": True,
}

html_theme = "pydata_sphinx_theme"
html_title = "sklearn_dpsco"
templates_path = ["_templates"]
exclude_patterns = ["_build", "sg_execution_times.rst"]
nitpicky = False

warnings.filterwarnings("ignore", category=UserWarning, message="Matplotlib is currently using agg")


def _skip_sklearn_plumbing(app, what, name, obj, skip, options):
    """Hide scikit-learn's generated metadata-routing methods from our API pages."""
    if name == "get_metadata_routing" or (name.startswith("set_") and name.endswith("_request")):
        return True
    return skip


# Labels of scikit-learn's user guide cited by docstrings our estimators
# inherit (``ClassifierMixin.score``, ``RegressorMixin.score``). Online,
# intersphinx links them; offline they are rendered as plain text. Any other
# unresolved reference still fails the build.
_SKLEARN_INHERITED_LABELS = {"accuracy_score", "r2_score"}


def _offline_sklearn_labels(app, env, node, contnode):
    if node.get("reftype") == "ref" and node.get("reftarget") in _SKLEARN_INHERITED_LABELS:
        return contnode
    return None


def setup(app):
    app.connect("autodoc-skip-member", _skip_sklearn_plumbing)
    if not intersphinx_mapping:
        app.connect("missing-reference", _offline_sklearn_labels)
