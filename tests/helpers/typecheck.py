"""Run ``mypy --strict`` once over some files and hand back its errors, per file and line.

The project's configuration (``pyproject.toml``) is used, with its overrides, and its cache: a run after
the first checks only what changed.  Notes (``reveal_type``...) are kept apart from errors.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_LINE = re.compile(r"^(?P<path>[^:\n]+):(?P<line>\d+): (?P<kind>error|note): (?P<message>.*)$")


@dataclass(frozen=True)
class Report:
    """One line of mypy's output about a checked file."""

    path: Path
    line: int
    kind: str  # "error" or "note"
    message: str


def run_mypy(files: Sequence[Path], *, mypy_path: Sequence[Path] = ()) -> tuple[list[Report], str]:
    """mypy --strict over ``files`` (one process, ``mypy_path`` searched for imports); its reports on
    those files, and its whole output."""
    env = dict(os.environ, MYPYPATH=os.pathsep.join(map(str, mypy_path)))
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--config-file",
            str(ROOT / "pyproject.toml"),
            "--strict",
            "--show-error-codes",
            "--no-pretty",
            "--no-error-summary",
            *map(str, files),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    output = proc.stdout + proc.stderr
    wanted = {f.resolve() for f in files}
    reports = []
    for line in output.splitlines():
        m = _LINE.match(line)
        if m is not None and (path := (ROOT / m["path"]).resolve()) in wanted:
            reports.append(Report(path, int(m["line"]), m["kind"], m["message"]))
    assert proc.returncode in (0, 1) and (proc.returncode == 0 or reports), output  # a crash is no pass
    return reports, output
