"""Sphinx configuration for bnfisher's documentation site.

Build:  sphinx-build -W --keep-going -b html docs docs/_build/html
The gallery (``examples/``) is executed on every build, so its figures are never stale.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import bnfisher

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
os.environ.setdefault("MPLBACKEND", "Agg")

project = "bnfisher"
author = "the bnfisher developers"
copyright = "2026, the bnfisher developers"
release = bnfisher.__version__
version = ".".join(release.split(".")[:2])

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
    "myst_parser",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "auto_examples/*.ipynb", "auto_examples/*.py",
                    "auto_examples/*.zip", "auto_examples/*.md5", "auto_examples/*.json"]
templates_path = ["_templates"]
html_static_path = ["_static"]

# Markdown pages (the user guide): $...$ maths, heading anchors for links between pages.
myst_enable_extensions = ["dollarmath", "colon_fence"]
myst_heading_anchors = 3

# API reference: one page per public callable, from the numpydoc docstrings.
autosummary_generate = True
# autosummary writes every listed page anew (only where its text changed) but keeps pages of objects no longer
# listed, which then fail to import (a moved class): remove those alone, so that builds running at once (the site
# test on several workers) never lose a page another is reading.
_LISTED = {f"bnfisher.{line.strip()}.rst" for line in (ROOT / "docs" / "api.rst").read_text().splitlines()
           if line.startswith("   ") and not line.strip().startswith(":") and line.strip()}
for _stub in (ROOT / "docs" / "generated").glob("*.rst"):
    if _stub.name not in _LISTED:
        _stub.unlink(missing_ok=True)
# scikit-learn's metadata-routing and output-API methods are documented by scikit-learn, not here.
autodoc_default_options = {
    "members": True,
    "exclude-members": ("set_fit_request,set_transform_request,set_predict_request,set_score_request,"
                        "set_predict_proba_request,set_params,get_params,set_output,get_metadata_routing,score,"
                        "fit_transform"),
}
autodoc_typehints = "none"
numpydoc_show_class_members = False
numpydoc_xref_param_type = False
numpydoc_validation_checks: set[str] = set()

sphinx_gallery_conf = {
    "examples_dirs": str(ROOT / "examples"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "download_all_examples": False,
    "remove_config_comments": True,
    "within_subsection_order": "FileNameSortKey",
    "abort_on_example_error": True,
    "show_memory": False,
    "min_reported_time": 1,
    # No computation-time pages: they were written into docs/ on every build (a tracked file rewritten by a test).
    "write_computation_times": False,
}

html_theme = "pydata_sphinx_theme"
html_title = f"bnfisher {version}"
html_theme_options = {
    "navbar_align": "left",
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
}
html_show_sourcelink = False
