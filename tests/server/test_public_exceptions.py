"""Every public async context manager and async iterator of zkwire and zklock lets exceptions out as they
are, as ``open_client`` does: a body's error is the same object (traceback kept), ``KeyboardInterrupt``
stays a ``KeyboardInterrupt`` and an outer cancel scope's ``Cancelled`` a ``Cancelled`` -- never an
exception group of the library's making (``except KeyboardInterrupt`` around ``trio.run`` must work).

The blocks are found from the public names (``zkwire.__all__``, ``zklock.__all__``, the public modules
among them and ``zkwire.testing.__all__``): a class with ``__aenter__`` or ``__aiter__``, and a function or
public method that is an ``asynccontextmanager`` or returns one of those.  Each must have a case in
:data:`CASES` saying how to open it; a new one without a case fails :func:`test_every_public_block_has_a_case`.
"""

from __future__ import annotations

import asyncio
import inspect
import subprocess
import sys
import textwrap
import traceback
import types
import typing
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from typing import Any

import pytest
import trio

import zklock
import zkwire
import zkwire.testing

# ------------------------------------------------------------------------------------------- discovery


def _public_namespaces() -> list[tuple[str, types.ModuleType]]:
    """The public modules whose ``__all__`` is walked, with the prefix their names are reported under."""
    out = [("zkwire", zkwire), ("zklock", zklock), ("zkwire.testing", zkwire.testing)]
    for prefix, module in list(out):
        for name in module.__all__:
            value = getattr(module, name)
            if isinstance(value, types.ModuleType):
                out.append((f"{prefix}.{name}", value))
    return out


def _is_async_block_type(value: object) -> bool:
    return isinstance(value, type) and (hasattr(value, "__aenter__") or hasattr(value, "__aiter__"))


def _ours(value: object) -> bool:
    return getattr(value, "__module__", "").split(".")[0] in ("zkwire", "zklock")


def _opens_async_block(fn: Callable[..., Any], public_types: set[type]) -> bool:
    """Whether ``fn`` is an ``asynccontextmanager`` (or an async generator), or returns an async context
    manager or iterator that is not itself a public class (a public one has a case of its own)."""
    if inspect.isasyncgenfunction(inspect.unwrap(fn)):
        return True
    try:
        returned = typing.get_type_hints(fn).get("return")
    except NameError:  # a name only imported under TYPE_CHECKING: read the annotation's text
        text = str(inspect.signature(fn, eval_str=False).return_annotation)
        return any(word in text for word in ("AsyncIterator", "AsyncGenerator", "AsyncContextManager"))
    origin = typing.get_origin(returned) or returned
    if not isinstance(origin, type) or origin in public_types:
        return False
    return _is_async_block_type(origin) or issubclass(origin, AbstractAsyncContextManager | AsyncIterator)


def _public_objects() -> dict[str, object]:
    """Every public name of zkwire and zklock (and of their public modules), qualified."""
    return {
        f"{prefix}.{name}": getattr(module, name) for prefix, module in _public_namespaces() for name in module.__all__
    }


def public_async_blocks() -> set[str]:
    """The qualified names of every public async context manager and async iterator: the public classes
    that are one, and the public functions and methods (inherited ones too) that open one."""
    objects = _public_objects()
    public_types = {value for value in objects.values() if isinstance(value, type) and _ours(value)}
    found: set[str] = set()
    for qualified, value in objects.items():
        if isinstance(value, type) and _ours(value):
            if _is_async_block_type(value):
                found.add(qualified)
            for attr in dir(value):
                member = inspect.getattr_static(value, attr)
                if isinstance(member, staticmethod | classmethod):
                    member = member.__func__
                if attr.startswith("_") or not inspect.isfunction(member) or not _ours(member):
                    continue
                if _opens_async_block(member, public_types):
                    found.add(f"{qualified}.{attr}")
        elif inspect.isfunction(value) and _ours(value) and _opens_async_block(value, public_types):
            found.add(qualified)
    return found


# ------------------------------------------------------------------------------------------- the cases


@dataclass
class Env:
    hosts: str
    path: str
    zk: zkwire.Client


#: Opens a context manager whose body is under test.
BlockFactory = Callable[[Env], AbstractAsyncContextManager[object]]


@dataclass(frozen=True)
class IteratorSetup:
    """An async iterator under test, with ``poke`` making it yield (at least) one more item."""

    iterator: AsyncIterator[object]
    poke: Callable[[], Awaitable[None]]


#: Opens whatever an async iterator needs and yields it.
IteratorFactory = Callable[[Env], AbstractAsyncContextManager[IteratorSetup]]


async def _nothing() -> None:
    pass


def _create_under(env: Env, root: str) -> Callable[[], Awaitable[None]]:
    count = 0

    async def poke() -> None:
        nonlocal count
        count += 1
        await env.zk.create(f"{root}/poke-{count}")

    return poke


@asynccontextmanager
async def _lease_block(env: Env) -> AsyncIterator[zklock.Lease]:
    lease = await zklock.Mutex(env.zk, f"{env.path}/lease").acquire_lease()
    async with lease:
        yield lease


@asynccontextmanager
async def _sessions_stream(env: Env) -> AsyncIterator[IteratorSetup]:
    async with zkwire.sessions(env.hosts, session_timeout=4) as stream:
        yield IteratorSetup(stream, _nothing)


@asynccontextmanager
async def _states(env: Env) -> AsyncIterator[IteratorSetup]:
    yield IteratorSetup(env.zk.states(), _nothing)


@asynccontextmanager
async def _persistent_watch(env: Env) -> AsyncIterator[IteratorSetup]:
    await env.zk.ensure_path(env.path)
    async with env.zk.add_watch(env.path, recursive=True) as watch:
        yield IteratorSetup(watch, _create_under(env, env.path))


@asynccontextmanager
async def _data_watch(env: Env) -> AsyncIterator[IteratorSetup]:
    yield IteratorSetup(zkwire.watch_data(env.zk, env.path), _nothing)


@asynccontextmanager
async def _data_watch_across_sessions(env: Env) -> AsyncIterator[IteratorSetup]:
    async with zkwire.sessions(env.hosts, session_timeout=4) as stream:
        yield IteratorSetup(zkwire.watch_data(stream, env.path), _nothing)


@asynccontextmanager
async def _children_watch(env: Env) -> AsyncIterator[IteratorSetup]:
    yield IteratorSetup(zkwire.watch_children(env.zk, env.path), _nothing)


@asynccontextmanager
async def _tree_events(env: Env) -> AsyncIterator[IteratorSetup]:
    await env.zk.ensure_path(env.path)
    async with zkwire.open_tree_cache(env.zk, env.path) as cache:
        yield IteratorSetup(cache.events(), _create_under(env, env.path))


@asynccontextmanager
async def _tree_events_across_sessions(env: Env) -> AsyncIterator[IteratorSetup]:
    await env.zk.ensure_path(env.path)
    async with zkwire.sessions(env.hosts, session_timeout=4) as stream:
        async with zkwire.open_tree_cache(stream, env.path) as cache:
            yield IteratorSetup(cache.events(), _create_under(env, env.path))


@asynccontextmanager
async def _tree_cache_across_sessions(env: Env) -> AsyncIterator[zkwire.TreeCache]:
    async with zkwire.sessions(env.hosts, session_timeout=4) as stream:
        async with zkwire.open_tree_cache(stream, env.path) as cache:
            yield cache


@asynccontextmanager
async def _taken_item(env: Env) -> AsyncIterator[bytes]:
    queue = zklock.LockingQueue(env.zk, f"{env.path}/lq")
    await queue.put(b"item")
    async with queue.take() as item:
        yield item


@asynccontextmanager
async def _group_view_changes(env: Env) -> AsyncIterator[IteratorSetup]:
    await env.zk.ensure_path(env.path)
    async with zklock.open_group_view(env.zk, env.path) as view:
        yield IteratorSetup(view.changes(), _create_under(env, env.path))


@asynccontextmanager
async def _shared_count_watch(env: Env) -> AsyncIterator[IteratorSetup]:
    count = zklock.SharedCount(env.zk, f"{env.path}/count")

    async def poke() -> None:
        await count.add(1)

    yield IteratorSetup(count.watch(), poke)


@asynccontextmanager
async def _party_watch(env: Env) -> AsyncIterator[IteratorSetup]:
    count = 0

    async def poke() -> None:
        nonlocal count
        count += 1
        await env.zk.ensure_path(f"{env.path}/party/{count:032x}__party__", data=b"member")

    yield IteratorSetup(zklock.watch_party(env.zk, f"{env.path}/party"), poke)


@asynccontextmanager
async def _assignments(env: Env) -> AsyncIterator[IteratorSetup]:
    async with zklock.SetPartitioner(env.zk, f"{env.path}/partitioner", [1, 2], time_boundary=0) as p:
        yield IteratorSetup(p, _nothing)


@asynccontextmanager
async def _service_changes(env: Env) -> AsyncIterator[IteratorSetup]:
    discovery = zklock.ServiceDiscovery(env.zk, f"{env.path}/services")
    async with discovery.open_cache("api") as cache:
        count = 0

        async def poke() -> None:
            nonlocal count
            count += 1
            instance = zklock.ServiceInstance("api", id=f"i{count}")
            await env.zk.ensure_path(discovery.instance_path("api", instance.id), data=instance.to_json())

        yield IteratorSetup(cache.changes(), poke)


#: How to open each public async context manager (the body runs inside it).
BLOCKS: dict[str, BlockFactory] = {
    "zkwire.open_client": lambda env: zkwire.open_client(env.hosts, session_timeout=4),
    "zkwire.sessions": lambda env: zkwire.sessions(env.hosts, session_timeout=4),
    "zkwire.open_tree_cache": lambda env: zkwire.open_tree_cache(env.zk, env.path),
    "zkwire.open_tree_cache(sessions)": lambda env: _tree_cache_across_sessions(env),
    "zkwire.Client.add_watch": lambda env: env.zk.add_watch(env.path, recursive=True),
    "zklock.Mutex": lambda env: zklock.Mutex(env.zk, f"{env.path}/mutex"),
    "zklock.ReadLock": lambda env: zklock.ReadWriteLock(env.zk, f"{env.path}/rw").read_lock,
    "zklock.WriteLock": lambda env: zklock.ReadWriteLock(env.zk, f"{env.path}/rw").write_lock,
    "zklock.Semaphore": lambda env: zklock.Semaphore(env.zk, f"{env.path}/sem", 2),
    "zklock.Election": lambda env: zklock.Election(env.zk, f"{env.path}/election"),
    "zklock.Election.leadership": lambda env: zklock.Election(env.zk, f"{env.path}/election").leadership(),
    "zklock.Lease": _lease_block,
    "zkwire.task_nursery": lambda env: zkwire.task_nursery("a test"),
    "zklock.PersistentTtlNode": lambda env: zklock.PersistentTtlNode(env.zk, f"{env.path}/ttl", 5.0),
    "zklock.PersistentNode": lambda env: zklock.PersistentNode(env.zk, f"{env.path}/node"),
    "zklock.GroupMember": lambda env: zklock.GroupMember(env.zk, f"{env.path}/group", "me"),
    "zklock.open_group_view": lambda env: zklock.open_group_view(env.zk, f"{env.path}/group"),
    "zklock.Party": lambda env: zklock.Party(env.zk, f"{env.path}/party"),
    "zklock.ShallowParty": lambda env: zklock.ShallowParty(env.zk, f"{env.path}/party"),
    "zklock.SharedCount": lambda env: zklock.SharedCount(env.zk, f"{env.path}/count"),
    "zklock.AtomicLong": lambda env: zklock.AtomicLong(env.zk, f"{env.path}/long"),
    "zklock.AtomicInteger": lambda env: zklock.AtomicInteger(env.zk, f"{env.path}/int"),
    "zklock.Counter": lambda env: zklock.Counter(env.zk, f"{env.path}/counter"),
    "zklock.DoubleBarrier": lambda env: zklock.DoubleBarrier(env.zk, f"{env.path}/barrier", 1),
    "zklock.Queue": lambda env: zklock.Queue(env.zk, f"{env.path}/queue"),
    "zklock.LockingQueue": lambda env: zklock.LockingQueue(env.zk, f"{env.path}/lq"),
    "zklock.LockingQueue.take": _taken_item,
    "zklock.MultiLock": lambda env: zklock.MultiLock(env.zk, [f"{env.path}/a", f"{env.path}/b"]),
    "zklock.Semaphore.leases": lambda env: zklock.Semaphore(env.zk, f"{env.path}/sem", 2).leases(2),
    "zklock.LeaderSelector": lambda env: zklock.LeaderSelector(env.zk, f"{env.path}/selector"),
    "zklock.LeaderSelector.leadership": lambda env: zklock.LeaderSelector(env.zk, f"{env.path}/s").leadership(),
    "zklock.ServiceRegistration": lambda env: zklock.ServiceDiscovery(env.zk, f"{env.path}/s").registration(
        zklock.ServiceInstance("api")
    ),
    "zklock.ServiceDiscovery.open_cache": lambda env: zklock.ServiceDiscovery(env.zk, env.path).open_cache("api"),
    "zklock.SetPartitioner": lambda env: zklock.SetPartitioner(env.zk, f"{env.path}/partitioner", [1], time_boundary=0),
}


#: How to get each public async iterator going (the ``async for`` body runs inside what opens it).
ITERATORS: dict[str, IteratorFactory] = {
    "zkwire.Sessions": _sessions_stream,
    "zkwire.StateStream": _states,
    "zkwire.Client.states": _states,
    "zkwire.PersistentWatch": _persistent_watch,
    "zkwire.DataWatch": _data_watch,
    "zkwire.watch_data": _data_watch,
    "zkwire.watch_data(sessions)": _data_watch_across_sessions,
    "zkwire.ChildrenWatch": _children_watch,
    "zkwire.watch_children": _children_watch,
    "zkwire.TreeEvents": _tree_events,
    "zkwire.TreeCache.events": _tree_events,
    "zkwire.TreeCache.events(sessions)": _tree_events_across_sessions,
    "zklock.GroupView.changes": _group_view_changes,
    "zklock.SharedCount.watch": _shared_count_watch,
    "zklock.watch_party": _party_watch,
    "zklock.SetPartitioner(assignments)": _assignments,
    "zklock.ServiceCache.changes": _service_changes,
}

#: Public async context managers used from asyncio, tested by test_asyncio_blocks.
ASYNCIO_BLOCKS = {"zkwire.aio.open_portal"}


def _covered(case: str) -> str:
    return case.split("(")[0]


def _resolve(name: str) -> object:
    """The public object a case's name stands for (``zkwire.Client.add_watch``...)."""
    objects = _public_objects()
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        head = ".".join(parts[:cut])
        if head in objects:
            value = objects[head]
            for attr in parts[cut:]:
                value = getattr(value, attr)
            return value
    raise LookupError(name)


def test_every_public_block_has_a_case() -> None:
    covered = {_covered(case) for case in (*BLOCKS, *ITERATORS, *ASYNCIO_BLOCKS)}
    assert public_async_blocks() - covered == set(), "a public async context manager or iterator without a case"
    for name in covered:
        _resolve(name)  # a case for something that is not public (anymore) fails here


def test_discovery_sees_through_the_lazy_names() -> None:
    """The walk finds what it must (a broken walk would make the guard pass vacuously)."""
    found = public_async_blocks()
    assert {"zkwire.open_client", "zkwire.sessions", "zkwire.Client.add_watch", "zkwire.StateStream"} <= found
    assert {"zklock.Mutex", "zklock.Lease", "zkwire.aio.open_portal"} <= found
    assert "zkwire.Client.get_data" not in found
    assert "zkwire.Client.states" not in found  # returns a StateStream: that class's case covers it


# ------------------------------------------------------------------------------------------- the checks


class BodyError(Exception):
    """What the bodies under test raise."""


SCENARIOS = ["error", "keyboard_interrupt", "cancel"]


def _raise_from_body(exc: BaseException) -> typing.NoReturn:
    raise exc


def _check_same(caught: BaseException | None, raised: BaseException) -> None:
    assert caught is raised, f"{caught!r} came out instead of {raised!r}"
    assert not isinstance(caught, BaseExceptionGroup)
    frames = [frame.name for frame in traceback.extract_tb(caught.__traceback__)]
    assert "_raise_from_body" in frames, frames  # the traceback still reaches the raise


def _check_cancelled(caught: BaseException | None, scope: trio.CancelScope) -> None:
    assert type(caught) is trio.Cancelled, f"{caught!r} came out instead of Cancelled"
    assert scope.cancelled_caught


@pytest.fixture
async def env(zk_hosts: str, zk_path: str) -> AsyncIterator[Env]:
    async with zkwire.open_client(zk_hosts, session_timeout=4) as zk:
        await zk.ensure_path(zk_path)
        yield Env(zk_hosts, zk_path, zk)


async def _run_scenario(
    scenario: str,
    case: str,
    cancelled: Callable[[trio.CancelScope], Awaitable[None]],
    raising: Callable[[BaseException], Awaitable[None]],
) -> None:
    """``cancelled(outer)`` is cancelled by ``outer``; ``raising(exc)`` raises ``exc`` from its body."""
    caught: BaseException | None = None
    with trio.fail_after(30):
        if scenario == "cancel":
            with trio.CancelScope() as outer:
                try:
                    await cancelled(outer)
                except BaseException as e:
                    caught = e
                    raise
            _check_cancelled(caught, outer)
            return
        raised = BodyError(case) if scenario == "error" else KeyboardInterrupt()
        try:
            await raising(raised)
        except BaseException as e:
            caught = e
        _check_same(caught, raised)


@pytest.mark.parametrize("scenario", SCENARIOS)
@pytest.mark.parametrize("case", sorted(BLOCKS))
async def test_block_lets_exceptions_out_unwrapped(env: Env, case: str, scenario: str) -> None:
    make = BLOCKS[case]

    async def cancelled(outer: trio.CancelScope) -> None:
        async with make(env):
            outer.cancel()
            await trio.sleep_forever()

    async def raising(raised: BaseException) -> None:
        async with make(env):
            _raise_from_body(raised)

    await _run_scenario(scenario, case, cancelled, raising)


@pytest.mark.parametrize("scenario", SCENARIOS)
@pytest.mark.parametrize("case", sorted(ITERATORS))
async def test_iterator_lets_exceptions_out_unwrapped(env: Env, case: str, scenario: str) -> None:
    make = ITERATORS[case]

    async def cancelled(outer: trio.CancelScope) -> None:
        # Cancelled while the iterator waits for its next item (what it had is consumed first).
        async with make(env) as setup:
            outer.deadline = trio.current_time() + 0.3
            async for _ in setup.iterator:
                pass

    async def raising(raised: BaseException) -> None:
        async with make(env) as setup:
            await setup.poke()
            async for _ in setup.iterator:
                _raise_from_body(raised)

    await _run_scenario(scenario, case, cancelled, raising)


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_asyncio_blocks(zk_hosts: str, scenario: str) -> None:
    """zkwire.aio.open_portal from asyncio: the body's error and KeyboardInterrupt come out as they are,
    and an outer timeout's CancelledError as a CancelledError."""
    caught: list[BaseException] = []

    async def main() -> None:
        async def body(raised: BaseException | None) -> None:
            async with zkwire.aio.open_portal() as portal:
                zk = await portal.enter(zkwire.open_client(zk_hosts, session_timeout=4))
                await portal.call(zk.exists, "/")
                if raised is None:
                    await asyncio.sleep(30)
                else:
                    _raise_from_body(raised)

        raised: BaseException | None = None
        try:
            if scenario == "cancel":
                async with asyncio.timeout(0.5):
                    try:
                        await body(None)
                    except BaseException as e:
                        caught.append(e)
                        raise
            else:
                raised = BodyError("portal") if scenario == "error" else KeyboardInterrupt()
                try:
                    await body(raised)
                except BaseException as e:
                    caught.append(e)
        except TimeoutError:
            pass
        if raised is not None:
            _check_same(caught[0], raised)

    asyncio.run(main())
    if scenario == "cancel":
        assert [type(e) for e in caught] == [asyncio.CancelledError]


# ------------------------------------------------------------------------------------------- Ctrl-C


def test_ctrl_c_inside_sessions_ends_trio_run_with_a_plain_keyboard_interrupt(zk_hosts: str) -> None:
    """What a program sees: ``except KeyboardInterrupt`` around ``trio.run`` catches it, nothing printed."""
    program = textwrap.dedent(
        """
        import sys
        import trio
        import zkwire

        async def main(hosts: str) -> None:
            async with zkwire.sessions(hosts, session_timeout=4) as stream:
                async for zk in stream:
                    await zk.exists("/")
                    raise KeyboardInterrupt

        try:
            trio.run(main, sys.argv[1])
        except KeyboardInterrupt:
            sys.exit(130)
        """
    )
    done = subprocess.run([sys.executable, "-c", program, zk_hosts], capture_output=True, text=True, timeout=60)
    assert done.returncode == 130, done.stderr
    assert "ExceptionGroup" not in done.stderr
    assert done.stderr == ""
