"""Counters on one node, in the peers' layouts: Curator's ``SharedCount`` and
``DistributedAtomicLong``/``DistributedAtomicInteger``, kazoo's ``Counter``.

* :class:`SharedCount`: a 4-byte big-endian signed int.  Peers: Curator's ``SharedCount``, kazoo's
  ``Counter(support_curator=True)``.
* :class:`AtomicInteger`: a 4-byte big-endian signed int (empty or missing: 0).  Peer: Curator's
  ``DistributedAtomicInteger``.
* :class:`AtomicLong`: an 8-byte big-endian signed int (empty or missing: 0).  Peer: Curator's
  ``DistributedAtomicLong``.
* :class:`Counter`: ``repr()`` of an int or a float in ASCII (empty: the default).  Peer: kazoo's
  ``Counter``.

Every update is a compare-and-set: read the value and its version, write the new value with that
version, read again on a conflict -- at most ``max_attempts`` times.

**Exact under lost replies** (``exact=True``, the default).  A write whose reply is lost with the
connection may or may not have been applied, and a retry would then count it twice (the peers' counters
do).  So the write goes in a transaction that also writes a fresh token into the object's *witness*
(:mod:`zklock.witness`), a child ``<path>/zklock-w-<uuid>`` read after a lost reply.  The witness is
deleted by ``aclose()`` (``async with``); a process that dies leaves one small node per counter object.
Peers never list a counter's children, so witnesses do not disturb them (the peers cannot delete the
counter node while one is there).  ``exact=False`` writes like the peers do: one op, no witness, and a
lost reply may count twice.
"""

from __future__ import annotations

import struct
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Self

from zkwire import (
    BadVersionError,
    Client,
    ConnectionLossError,
    Create,
    InvalidArgumentError,
    NodeExistsError,
    NoNodeError,
    SessionExpiredError,
    SessionSource,
    SetData,
    Stat,
    current_client,
    validate_path,
    watch_data,
)

from .errors import ContentionError, CounterDataError
from .mutex import Mutex
from .retrying import repeat
from .witness import WITNESS_PREFIX, Witnessed

__all__ = [
    "AtomicInteger",
    "AtomicLong",
    "AtomicValue",
    "Counter",
    "SharedCount",
    "VersionedValue",
    "WITNESS_PREFIX",
]

Number = int | float


@dataclass(frozen=True, slots=True)
class VersionedValue:
    """A counter's value and the node's data version it was read at (``-1``: the node did not exist)."""

    value: int
    version: int


@dataclass(frozen=True, slots=True)
class AtomicValue:
    """The outcome of an atomic operation (Curator's ``AtomicValue``): whether it was applied, the value
    before and the value after (both the current value when it was not applied)."""

    succeeded: bool
    pre_value: int
    post_value: int


class _Codec:
    """How one layout writes a number into the node's data."""

    def __init__(self, size: int | None, default: Number) -> None:
        self.size = size
        self.default = default
        self.kind = type(default)
        self.format = {4: ">i", 8: ">q"}.get(size or 0, "")

    def decode(self, path: str, data: bytes) -> Number:
        if not data:
            return self.default
        if self.size is not None:
            if len(data) != self.size:
                raise CounterDataError(path, f"{len(data)} bytes where a {self.size}-byte integer is stored")
            value: Number = struct.unpack(self.format, data)[0]
            return value
        try:
            return self.kind(data.decode("ascii"))
        except (UnicodeDecodeError, ValueError):
            raise CounterDataError(path, f"{data[:40]!r} is not a {self.kind.__name__} written as text") from None

    def encode(self, path: str, value: Number) -> bytes:
        if self.size is not None:
            if not isinstance(value, int) or isinstance(value, bool):
                raise InvalidArgumentError(path, f"the counter holds integers, not {type(value).__name__}")
            bits = self.size * 8
            if not -(2 ** (bits - 1)) <= value < 2 ** (bits - 1):
                raise InvalidArgumentError(path, f"{value} does not fit in {bits} bits")
            return struct.pack(self.format, value)
        if type(value) is not self.kind:
            raise InvalidArgumentError(path, f"the counter holds {self.kind.__name__}s, not {type(value).__name__}")
        return repr(value).encode("ascii")


class _Cell:
    """One counter node: exact compare-and-set updates (see the module documentation)."""

    def __init__(
        self, source: SessionSource, path: str, codec: _Codec, *, exact: bool, max_attempts: int, seed: bytes | None
    ) -> None:
        self.source = source
        self.path = validate_path(path)
        if self.path == "/":
            raise InvalidArgumentError(path, "the root cannot be a counter")
        if max_attempts < 1:
            raise InvalidArgumentError(path, f"max_attempts must be at least 1, not {max_attempts}")
        self.codec = codec
        self.exact = exact
        self.max_attempts = max_attempts
        self.seed = seed  # the data a missing node is created with by a read (None: reads create nothing)
        self._witness = Witnessed(source, self.path)

    async def client(self) -> Client:
        return await current_client(self.source)

    async def read(self, zk: Client) -> tuple[Number, Stat | None]:
        """The value and the node's Stat (None: missing)."""
        while True:
            try:
                data, stat = await zk.get_data(self.path)
            except ConnectionLossError:
                continue
            except NoNodeError:
                if self.seed is not None:
                    await self._create_seed(zk)
                    continue
                return self.codec.default, None
            return self.codec.decode(self.path, data), stat

    async def _create_seed(self, zk: Client) -> None:
        assert self.seed is not None
        try:
            await zk.ensure_path(self.path, data=self.seed, container=False)
        except ConnectionLossError:
            pass

    async def update(self, compute: Callable[[Number], Number | None]) -> tuple[Number, Number] | None:
        """Apply ``compute`` (old value -> new value, or None to give up) by compare-and-set; returns
        (old, new), or None if ``compute`` gave up.

        Raises:
            ContentionError: ``max_attempts`` conflicting writes in a row.
            SessionExpiredError: the source is one client and its session ended; with ``exact``, an
                update in flight at that moment may have been applied (a :class:`zkwire.Sessions`
                stream settles it in the next session instead).
        """
        return await self.compare_and_set(lambda old, _stat: compute(old), self.max_attempts)

    async def compare_and_set(
        self, compute: Callable[[Number, Stat | None], Number | None], attempts: int
    ) -> tuple[Number, Number] | None:
        """:meth:`update` with ``compute`` also given the Stat read (None: no node), at most
        ``attempts`` times.  A lost connection and, with a stream, an expiry only start the attempt
        again (an update in flight is settled by its witness first)."""
        tried = 0
        while tried < attempts:
            zk = await self.client()
            try:
                old, stat = await self.read(zk)
                new = compute(old, stat)
                if new is None:
                    return None
                if await self.write(zk, stat, new):
                    return old, new
            except ConnectionLossError:
                continue
            except SessionExpiredError:
                if isinstance(self.source, Client):
                    raise
                continue
            tried += 1
        raise ContentionError(self.path, attempts)

    async def current(self) -> tuple[Number, Stat | None]:
        """The value and Stat now (see :meth:`read`), read again after a lost connection or, with a
        stream, an expiry."""
        return await repeat(self.source, self.read)

    async def write(self, zk: Client, stat: Stat | None, value: Number) -> bool:
        """Write ``value`` if the node is still at ``stat`` (None: still missing); whether it was."""
        data = self.codec.encode(self.path, value)
        op = Create(self.path, data) if stat is None else SetData(self.path, data, stat.version)
        if not self.exact:
            return await self._plain(zk, op)
        while True:
            try:
                await self._witness.apply(zk, [op])
                return True
            except (BadVersionError, NodeExistsError):
                return False
            except NoNodeError:
                if stat is not None:
                    return False  # deleted since it was read
                await zk.ensure_path(self.path.rsplit("/", 1)[0] or "/", container=True)

    async def _plain(self, zk: Client, op: Create | SetData) -> bool:
        while True:
            try:
                if isinstance(op, Create):
                    await zk.create(op.path, op.data)
                else:
                    await zk.set_data(op.path, op.data, op.version)
                return True
            except (BadVersionError, NodeExistsError):
                return False
            except NoNodeError:
                if isinstance(op, SetData):
                    return False
                await zk.ensure_path(op.path.rsplit("/", 1)[0] or "/", container=True)
            except ConnectionLossError:
                return False  # read again; the write may have been applied (not exact)

    async def aclose(self) -> None:
        """Delete the witness of the last settled update."""
        await self._witness.aclose()


class _CounterBase:
    _cell: _Cell

    @property
    def path(self) -> str:
        return self._cell.path

    async def aclose(self) -> None:
        """Delete what exact updates left (their last witness); the counter stays usable."""
        await self._cell.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self._cell.aclose()


class SharedCount(_CounterBase):
    """Curator's ``SharedCount``: a 32-bit count any client may set, with versioned compare-and-set.

    A missing node is created with ``seed`` by the first read (as Curator's ``start()`` does).

    Raises:
        InvalidPathError, InvalidArgumentError: a bad ``path``, ``seed`` or ``max_attempts``.
    """

    def __init__(
        self, source: SessionSource, path: str, seed: int = 0, *, exact: bool = True, max_attempts: int = 1000
    ) -> None:
        codec = _Codec(4, 0)
        self._cell = _Cell(source, path, codec, exact=exact, max_attempts=max_attempts, seed=codec.encode(path, seed))

    async def get(self) -> int:
        """The count now."""
        return (await self.get_versioned()).value

    async def get_versioned(self) -> VersionedValue:
        """The count and the version it was read at, for :meth:`try_set`."""
        value, stat = await self._cell.current()
        assert isinstance(value, int) and stat is not None
        return VersionedValue(value, stat.version)

    async def set(self, value: int) -> None:
        """Set the count whatever it is now."""
        await self._cell.update(lambda _: value)

    async def try_set(self, previous: VersionedValue, value: int) -> bool:
        """Set the count if it has not changed since ``previous`` was read; whether it was set."""
        try:
            done = await self._cell.compare_and_set(
                lambda _old, stat: value if stat is not None and stat.version == previous.version else None, 1
            )
        except ContentionError:
            return False
        return done is not None

    async def add(self, delta: int) -> int:
        """Add ``delta`` (exactly once); returns the new count.

        Raises:
            ContentionError: ``max_attempts`` conflicting writes in a row.
        """
        old_new = await self._cell.update(lambda old: int(old) + delta)
        assert old_new is not None
        return int(old_new[1])

    async def watch(self) -> AsyncIterator[int]:
        """The count now, then after each change (coalesced; see :func:`zkwire.watch_data`)."""
        codec, path = self._cell.codec, self.path
        async for node in watch_data(self._cell.source, path):
            if node is not None:
                yield int(codec.decode(path, node.data))


class AtomicLong(_CounterBase):
    """Curator's ``DistributedAtomicLong``: a 64-bit value changed by optimistic compare-and-set,
    optionally promoted to a lock after ``max_attempts`` conflicts (``promote_to_lock``: a lock path,
    taken with :class:`~zklock.Mutex` in Curator's layout, as Curator's ``PromotedToLock`` does).

    Operations return an :class:`AtomicValue`; ``succeeded`` is False only when the attempts (and the
    promoted attempts) ran out, or when :meth:`compare_and_set` found another value.
    """

    size = 8

    def __init__(
        self,
        source: SessionSource,
        path: str,
        *,
        exact: bool = True,
        max_attempts: int = 100,
        promote_to_lock: str | None = None,
    ) -> None:
        self._cell = _Cell(source, path, _Codec(self.size, 0), exact=exact, max_attempts=max_attempts, seed=None)
        self.promote_to_lock = validate_path(promote_to_lock) if promote_to_lock is not None else None

    async def get(self) -> AtomicValue:
        """The value now (0 when the node does not exist)."""
        value, _ = await self._cell.current()
        return AtomicValue(True, int(value), int(value))

    async def _apply(self, compute: Callable[[Number], Number | None]) -> AtomicValue:
        try:
            done = await self._cell.update(compute)
        except ContentionError:
            if self.promote_to_lock is None:
                current = await self.get()
                return AtomicValue(False, current.pre_value, current.pre_value)
            async with Mutex(await self._cell.client(), self.promote_to_lock):
                try:
                    done = await self._cell.update(compute)
                except ContentionError:
                    current = await self.get()
                    return AtomicValue(False, current.pre_value, current.pre_value)
        if done is None:
            current = await self.get()
            return AtomicValue(False, current.pre_value, current.pre_value)
        return AtomicValue(True, int(done[0]), int(done[1]))

    async def add(self, delta: int) -> AtomicValue:
        """Add ``delta`` (exactly once, when it succeeds)."""
        return await self._apply(lambda old: int(old) + delta)

    async def subtract(self, delta: int) -> AtomicValue:
        return await self.add(-delta)

    async def increment(self) -> AtomicValue:
        return await self.add(1)

    async def decrement(self) -> AtomicValue:
        return await self.add(-1)

    async def compare_and_set(self, expected: int, value: int) -> AtomicValue:
        """Set ``value`` if the value now is ``expected`` (a missing node counts as 0)."""
        return await self._apply(lambda old: value if old == expected else None)

    async def try_set(self, value: int) -> AtomicValue:
        """Set ``value`` whatever the value is now (optimistically: it fails only under contention)."""
        return await self._apply(lambda _: value)

    async def force_set(self, value: int) -> None:
        """Set ``value`` whatever the value is now, waiting out any contention."""
        while not (await self.try_set(value)).succeeded:
            pass

    async def initialize(self, value: int) -> bool:
        """Create the node with ``value`` if it does not exist; whether it was created."""
        try:
            done = await self._cell.compare_and_set(lambda _old, stat: value if stat is None else None, 1)
        except ContentionError:
            return False  # made by someone else meanwhile
        return done is not None


class AtomicInteger(AtomicLong):
    """Curator's ``DistributedAtomicInteger``: :class:`AtomicLong` with a 32-bit value."""

    size = 4


class Counter(_CounterBase):
    """kazoo's ``Counter``: an int or a float (the type of ``default``) written as ``repr()`` text; with
    ``curator=True`` a 32-bit integer in Curator's ``SharedCount`` layout (kazoo's
    ``support_curator=True``).

    Raises:
        InvalidPathError, InvalidArgumentError: a bad ``path``, ``default`` (an int or a float; an int
            with ``curator=True``) or ``max_attempts``.
    """

    def __init__(
        self,
        source: SessionSource,
        path: str,
        default: int | float = 0,
        *,
        curator: bool = False,
        exact: bool = True,
        max_attempts: int = 1000,
    ) -> None:
        if type(default) not in (int, float) or (curator and type(default) is not int):
            raise InvalidArgumentError(path, f"default must be an int{'' if curator else ' or a float'}")
        codec = _Codec(4 if curator else None, default)
        self._cell = _Cell(source, path, codec, exact=exact, max_attempts=max_attempts, seed=b"")
        #: The value before and after this object's last change (kazoo's ``pre_value``/``post_value``).
        self.pre_value: Number | None = None
        self.post_value: Number | None = None

    async def value(self) -> int | float:
        """The value now (``default`` while the node is empty; the node is created empty if missing)."""
        value, _ = await self._cell.current()
        return value

    async def add(self, delta: int | float) -> int | float:
        """Add ``delta`` (of the counter's type; exactly once); returns the new value.

        Raises:
            InvalidArgumentError: ``delta`` is not of the counter's type.
            ContentionError: ``max_attempts`` conflicting writes in a row.
        """
        if type(delta) is not self._cell.codec.kind:
            raise InvalidArgumentError(self.path, f"the counter holds {self._cell.codec.kind.__name__}s")
        done = await self._cell.update(lambda old: old + delta)
        assert done is not None
        self.pre_value, self.post_value = done
        return done[1]

    async def subtract(self, delta: int | float) -> int | float:
        return await self.add(-delta)
