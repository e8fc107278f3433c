"""Sphinx configuration: the API reference is generated from the docstrings (autodoc + napoleon).

Why Sphinx rather than MkDocs with mkdocstrings: the docstrings are written in reStructuredText
(``:class:`` / ``:meth:`` roles, ``::`` literal blocks), which Sphinx renders as they are and checks
(``-W`` turns a broken role, a malformed block or a duplicate description into an error), while
mkdocstrings expects Markdown; and Sphinx is one dependency (autodoc and napoleon, for the "Raises:"
sections, ship with it) where the MkDocs route needs four.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import zkwire
from zkwire.client.overloaddoc import HEADING

project = "zkwire / zklock"
author = "The zkwire maintainers"
copyright = "the zkwire maintainers"
release = zkwire.__version__
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.intersphinx",
    "sphinx.ext.viewcode",
]

# Google-style "Raises:" / "Returns:" sections, as the docstrings write them.
napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_use_rtype = False

autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_typehints_format = "short"
autodoc_default_options = {"members": True, "undoc-members": False, "show-inheritance": True}
autoclass_content = "class"

# ``type[...]`` in annotations would also match attributes named ``type``: keep the builtin, silently.
suppress_warnings = ["ref.python"]

intersphinx_mapping: dict[str, tuple[str, str | None]] = {}  # offline builds: no inventories fetched

templates_path: list[str] = []
exclude_patterns = ["_build"]
html_theme = "alabaster"
html_static_path: list[str] = []
html_theme_options = {"description": "A ZooKeeper client for trio, and lock recipes", "fixed_sidebar": True}


def _without_overloads_block(app: object, what: str, name: str, obj: object, options: object, lines: list[str]) -> None:
    """Autodoc shows an overloaded function's forms as its signatures: the block that lists them for
    ``help()`` (:mod:`zkwire.client.overloaddoc`) would repeat them."""
    if HEADING in lines:
        start = end = lines.index(HEADING)
        end += 1
        while end < len(lines) and (not lines[end].strip() or lines[end].startswith(" ")):
            end += 1
        del lines[start:end]


def setup(app: Any) -> dict[str, bool]:
    app.connect("autodoc-process-docstring", _without_overloads_block)
    return {"parallel_read_safe": True}
