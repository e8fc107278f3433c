"""Every Python example of the documentation runs against the real server.

Examples are taken from the pages under ``docs/``, from README.md and from the docstrings of the modules
in ``DOCSTRING_MODULES``.  ``127.0.0.1:2181`` in an example is replaced by the test server with a fresh
chroot of its own (created beforehand), so examples that use a chroot of their own (``.../app``) must
create it, as they would on a fresh server.

* A complete program (it calls ``trio.run`` or ``asyncio.run``) runs in a subprocess and must exit 0.
* A fragment runs inside an async function with ``zk`` (a client), ``stream`` (a sessions stream) and a
  few stand-ins (``serve``, ``work``, ``apply``...) in scope; it must not raise.  Fragments that follow
  changes forever are stopped after a moment, which counts as a pass.
"""

from __future__ import annotations

import ast
import inspect
import os
import re
import shlex
import sys
import textwrap
import types
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio

import zklock
import zkwire

ROOT = Path(__file__).resolve().parents[2]
PLACEHOLDER = "127.0.0.1:2181"
DOCSTRING_MODULES = [
    "zkwire.client.nodes",
    "zkwire.client.retry",
    "zkwire.client.continuity",
    "zkwire.client.nodewatch",
    "zkwire.client.treecache",
    "zkwire.client.aio",
    "zkwire.client.api",
    "zklock.recipe",
    "zklock.lease",
]
FRAGMENT_TIME = 1.5


def _rst_blocks(path: Path) -> Iterator[tuple[str, str]]:
    lines = path.read_text().splitlines()
    i = 0
    while i < len(lines):
        if lines[i].strip() in (".. code-block:: python", ".. code-block:: python3"):
            start = i + 1
            i += 1
            while i < len(lines) and (not lines[i].strip() or lines[i].startswith(" ")):
                i += 1
            yield f"{path.relative_to(ROOT)}:{start}", textwrap.dedent("\n".join(lines[start:i])).strip("\n")
        else:
            i += 1


def _markdown_blocks(path: Path) -> Iterator[tuple[str, str]]:
    text = path.read_text()
    for m in re.finditer(r"^```python\n(.*?)^```", text, re.S | re.M):
        line = text[: m.start()].count("\n") + 1
        yield f"{path.relative_to(ROOT)}:{line}", m.group(1)


def _literal_blocks(doc: str) -> Iterator[str]:
    """The ``::`` literal blocks of a docstring."""
    lines = inspect.cleandoc(doc).splitlines()
    i = 0
    while i < len(lines):
        if lines[i].rstrip().endswith("::"):
            i += 1
            block: list[str] = []
            while i < len(lines) and (not lines[i].strip() or lines[i].startswith(" ")):
                block.append(lines[i])
                i += 1
            code = textwrap.dedent("\n".join(block)).strip("\n")
            if code:
                yield code
        else:
            i += 1


def _docstrings(module: types.ModuleType) -> Iterator[tuple[str, str]]:
    if module.__doc__:
        yield module.__name__, module.__doc__
    for name, obj in vars(module).items():
        if getattr(obj, "__module__", None) != module.__name__:
            continue
        if inspect.isclass(obj):
            if obj.__doc__:
                yield f"{module.__name__}.{name}", obj.__doc__
            for attr, member in vars(obj).items():
                doc = getattr(member, "__doc__", None)
                if callable(member) and doc:
                    yield f"{module.__name__}.{name}.{attr}", doc
        elif inspect.isfunction(obj) and obj.__doc__:
            yield f"{module.__name__}.{name}", obj.__doc__


def _examples() -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    for page in sorted((ROOT / "docs").rglob("*.rst")):
        found.extend(_rst_blocks(page))
    found.extend(_markdown_blocks(ROOT / "README.md"))
    import importlib

    for name in DOCSTRING_MODULES:
        module = importlib.import_module(name)
        for where, doc in _docstrings(module):
            for n, code in enumerate(_literal_blocks(doc)):
                found.append((f"{where} (example {n + 1})", code))
    return [(where, code) for where, code in found if _is_python(code)]


def _is_python(code: str) -> bool:
    try:
        ast.parse(code)
    except SyntaxError:
        try:  # a fragment with top-level await
            compile(code, "<example>", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
        except SyntaxError:
            return False
    return True


EXAMPLES = _examples()


def test_there_are_examples() -> None:
    complete = [w for w, c in EXAMPLES if "trio.run(" in c or "asyncio.run(" in c]
    assert len(complete) >= 15, complete
    assert any(w.startswith("README.md") for w in complete)
    # The pytest plugin's page shows a test module, run here with the plugin (_run_test_module).
    assert any(w.startswith("docs/testing.rst") and "def test_" in c for w, c in EXAMPLES)


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


@pytest.mark.parametrize(("where", "code"), EXAMPLES, ids=[w for w, _ in EXAMPLES])
async def test_example_runs(where: str, code: str, zk_hosts: str, zk_path: str, tmp_path: Path) -> None:
    hosts = f"{zk_hosts}{zk_path}"
    async with zkwire.open_client(zk_hosts) as admin:
        await admin.ensure_path(zk_path)
    try:
        if "def test_" in code:
            await _run_test_module(code, tmp_path)
        elif "trio.run(" in code or "asyncio.run(" in code:
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
    body = textwrap.indent(code, "        ")
    source = f"async def __example(zk, stream, lock):\n    async def __body():\n{body}\n    await __body()\n"
    namespace: dict[str, object] = {
        "trio": trio,
        "zkwire": zkwire,
        "zklock": zklock,
        "DEFAULT": b"",
        "apply": lambda *a: None,
        "rebalance": lambda *a: None,
    }

    async def idle(*args: object) -> None:
        await trio.sleep(0.01)

    for name in ("serve", "work", "do_the_job"):
        namespace[name] = idle
    exec(compile(source, "<example>", "exec"), namespace)
    example = namespace["__example"]
    async with zkwire.open_client(hosts) as zk, zkwire.sessions(hosts) as stream:
        await zk.ensure_path("/config", data=b"v1")
        await zk.ensure_path("/services/web/1")
        await zk.ensure_path("/workers")
        lock = zklock.Mutex(zk, "/locks/example")
        with trio.move_on_after(FRAGMENT_TIME):
            await example(zk, stream, lock)  # type: ignore[operator]
