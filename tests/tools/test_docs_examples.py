"""Every Python example of the documentation runs against the real server.

Examples are taken from the pages under ``docs/``, from README.md and from the docstrings of some modules
(see ``helpers.docexamples``; ``tests/unit/test_typing_docs.py`` type-checks the same).
``127.0.0.1:2181`` in an example is replaced by the test server with a fresh chroot of its own (created
beforehand), so examples that use a chroot of their own (``.../app``) must create it, as they would on
a fresh server.

* A complete program (it calls ``trio.run`` or ``asyncio.run``) runs in a subprocess and must exit 0.
* A fragment runs inside an async function with ``zk`` (a client), ``stream`` (a sessions stream) and a
  few stand-ins (``serve``, ``work``, ``apply``...: ``helpers.docexamples.PRELUDE``) in scope; it must not
  raise.  Fragments that follow changes forever are stopped after a moment, which counts as a pass.
"""

from __future__ import annotations

import os
import re
import shlex
import sys
from pathlib import Path

import pytest
import trio
from helpers.docexamples import ROOT, Example, examples, fragment_module

import zklock
import zkwire

PLACEHOLDER = "127.0.0.1:2181"
FRAGMENT_TIME = 1.5
EXAMPLES = examples()


def test_there_are_examples() -> None:
    complete = [e.where for e in EXAMPLES if e.kind == "program"]
    assert len(complete) >= 15, complete
    assert any(w.startswith("README.md") for w in complete)
    # The pytest plugin's page shows a test module, run here with the plugin (_run_test_module).
    assert any(e.where.startswith("docs/testing.rst") and e.kind == "test" for e in EXAMPLES)


def test_install_commands_install_a_checkout() -> None:
    """zkwire is on no package index: every ``pip install`` the documentation shows installs a checkout
    (``.``, ``'./[pytest]'``, ``path/to/zklock``...), never a name pip would look up on an index."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.rst")), *sorted(ROOT.glob("examples/*/README.md"))]
    commands = []
    for page in pages:
        for m in re.finditer(r"pip install ([^`#\n]+)", page.read_text()):
            commands.append((page.relative_to(ROOT), m.group(0).strip(), shlex.split(m.group(1))))
    local = (".", "/", "path/to/")
    for where, command, args in commands:
        targets = [a for a in args if not a.startswith("-")]
        assert targets and all(a.startswith(local) for a in targets), f"{where}: {command}"
    assert len(commands) >= 5, commands


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.where for e in EXAMPLES])
async def test_example_runs(example: Example, zk_hosts: str, zk_path: str, tmp_path: Path) -> None:
    hosts = f"{zk_hosts}{zk_path}"
    code = example.code
    async with zkwire.open_client(zk_hosts) as admin:
        await admin.ensure_path(zk_path)
    try:
        if example.kind == "test":
            await _run_test_module(code, tmp_path)
        elif example.kind == "program":
            await _run_program(code.replace(PLACEHOLDER, hosts), tmp_path)
        else:
            await _run_fragment(code.replace(PLACEHOLDER, hosts), hosts)
    finally:
        async with zkwire.open_client(zk_hosts) as admin:
            await admin.delete_recursive(zk_path)


async def _run_test_module(code: str, tmp_path: Path) -> None:
    """A test module for an application's suite: run with pytest and the plugin, in the example project
    (its configuration enables the plugin and puts the application on the path)."""
    project = ROOT / "examples" / "worker-registry"
    module = tmp_path / "test_from_the_docs.py"
    module.write_text(code)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    for name in ("ZKWIRE_TEST_HOSTS", "ZKWIRE_TEST_BACKEND"):
        env.pop(name, None)
    proc = await trio.run_process(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-c",
            "pyproject.toml",
            "--rootdir",
            ".",
            str(module),
        ],
        capture_stdout=True,
        capture_stderr=True,
        check=False,
        env=env,
        cwd=project,
    )
    out = (proc.stdout + proc.stderr).decode()
    assert proc.returncode == 0 and " passed" in out, out


async def _run_program(code: str, tmp_path: Path) -> None:
    script = tmp_path / "example.py"
    script.write_text(code)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = await trio.run_process(
        [sys.executable, str(script)], capture_stdout=True, capture_stderr=True, check=False, env=env, cwd=tmp_path
    )
    assert proc.returncode == 0, (proc.stdout + proc.stderr).decode()


async def _run_fragment(code: str, hosts: str) -> None:
    namespace: dict[str, object] = {}
    exec(compile(fragment_module(code), "<example>", "exec"), namespace)
    example = namespace["__example"]
    async with zkwire.open_client(hosts) as zk, zkwire.sessions(hosts) as stream:
        await zk.ensure_path("/config", data=b"v1")
        await zk.ensure_path("/services/web/1")
        await zk.ensure_path("/workers")
        lock = zklock.Mutex(zk, "/locks/example")
        with trio.move_on_after(FRAGMENT_TIME):
            await example(zk, stream, lock)  # type: ignore[operator]
