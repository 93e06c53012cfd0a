# Sphinx configuration for kernlab's documentation.
#
#   pip install -e ".[docs]" && python -m sphinx -W -b html docs docs/_build/html
#
# Sphinx (not MkDocs) because its autodoc imports kernlab itself: the API pages show the
# docstrings and signatures of the objects users call, and a small local extension
# (_ext/kernlab_reference.py) renders the builtin reference from the live builtin registry.
# Names that kernlab creates at import (kl.sin is put into the package by a loop) are only
# visible that way; a static reader (mkdocstrings) would not see them. One dependency, and
# -W turns every warning into an error, which tests/test_docs.py and CI rely on.
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))       # this checkout's kernlab, installed or not
sys.path.insert(0, str(HERE / "_ext"))

project = "kernlab"
author = "the kernlab authors"
copyright = "2026, the kernlab authors"
release = version = "0.1.0"

extensions = ["sphinx.ext.autodoc", "kernlab_reference"]
autodoc_member_order = "bysource"
autodoc_typehints = "none"             # signatures as written; the prose says the types
default_role = "literal"
highlight_language = "python3"
exclude_patterns = ["_build"]
nitpicky = False
html_theme = "alabaster"
html_theme_options = {"description": "write, differentiate and inspect compute kernels",
                      "fixed_sidebar": True}
html_static_path: list = []
