"""The user-style programs of ``tests/typing`` type-check with ``mypy --strict``, as written.

They hold ``assert_type`` checks (an element type gone to ``Any`` or to a union fails them), negative
cases as ``# type: ignore[code]`` (``--strict`` warns about an ignore that is not needed, so a call that
stops being an error fails too) and ``reveal_type(x)  # revealed: T`` lines, compared with mypy's note.
"""

from __future__ import annotations

import re
from pathlib import Path

from helpers.typecheck import ROOT, run_mypy

PROGRAMS = sorted((ROOT / "tests" / "typing").glob("*.py"))
_REVEALED = re.compile(r"reveal_type\(.*#\s*revealed:\s*(?P<type>.+?)\s*$")


def _expected_notes(path: Path) -> dict[int, str]:
    notes = {}
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if "reveal_type(" in line and not line.lstrip().startswith(("#", "from ", "import ")):
            m = _REVEALED.search(line)
            assert m is not None, f"{path.name}:{n}: a reveal_type line needs '# revealed: <type>'"
            notes[n] = f'Revealed type is "{m["type"]}"'
    return notes


def test_the_typing_programs_check() -> None:
    assert len(PROGRAMS) >= 4, PROGRAMS
    reports, output = run_mypy(PROGRAMS)
    errors = [f"{r.path.name}:{r.line}: {r.message}" for r in reports if r.kind == "error"]
    assert errors == [], output
    expected = {(path.name, n, note) for path in PROGRAMS for n, note in _expected_notes(path).items()}
    revealed = {(r.path.name, r.line, r.message) for r in reports if r.kind == "note"}
    assert revealed == expected
