"""Every Python example of the documentation type-checks with ``mypy --strict``.

The examples are those ``tests/tools/test_docs_examples.py`` runs (README.md, ``docs/*.rst``, some
docstrings: ``helpers.docexamples``).  Each becomes a module of its own in a temporary directory -- a
fragment inside the typed function it runs in, after the typed stand-ins of ``PRELUDE`` -- and one mypy
run checks them all; an error is reported at its line in the page.  The README's test module imports the
example application, found on ``MYPYPATH``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.docexamples import FRAGMENT_FIRST_LINE, ROOT, Example, examples, fragment_module
from helpers.typecheck import run_mypy

EXAMPLES = examples()
APPLICATION = ROOT / "examples" / "worker-registry"


@pytest.fixture(scope="module")
def errors(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[str]]:
    """Per example (its ``where``), mypy's errors, each at its line in the documentation."""
    directory = tmp_path_factory.mktemp("doc_examples")
    modules: dict[Path, tuple[Example, int]] = {}
    for n, example in enumerate(EXAMPLES):
        path = directory / f"doc_example_{n:03d}.py"
        if example.kind == "fragment":
            path.write_text(fragment_module(example.code))
            modules[path] = (example, FRAGMENT_FIRST_LINE - 1)
        else:
            path.write_text(example.code)
            modules[path] = (example, 0)
    reports, _ = run_mypy(list(modules), mypy_path=[APPLICATION])
    found: dict[str, list[str]] = {}
    for report in reports:
        example, offset = modules[report.path]
        if report.kind == "error":
            found.setdefault(example.where, []).append(f"{example.locate(report.line - offset)}: {report.message}")
    return found


def test_every_kind_is_checked() -> None:
    assert {e.kind for e in EXAMPLES} == {"program", "fragment", "test"}


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.where for e in EXAMPLES])
def test_example_type_checks(example: Example, errors: dict[str, list[str]]) -> None:
    assert errors.get(example.where, []) == []
