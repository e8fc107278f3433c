"""Watch records: checkWatches, removeWatches and addWatch, the setWatches that re-arm watches after a
reconnect, and the WatcherEvent a notification carries."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Self

from ..jute import Reader, write_int, write_long, write_string_vector, write_ustring
from .base import opt_tuple

__all__ = [
    "CheckWatchesRequest",
    "RemoveWatchesRequest",
    "AddWatchRequest",
    "SetWatches",
    "SetWatches2",
    "WatcherEvent",
]


@dataclass(frozen=True, slots=True)
class _PathType:
    path: str | None
    type: int

    def write(self, out: bytearray) -> None:
        write_ustring(out, self.path)
        write_int(out, self.type)

    @classmethod
    def read(cls, r: Reader) -> Self:
        return cls(r.ustring(), r.int32())


@dataclass(frozen=True, slots=True)
class CheckWatchesRequest(_PathType):
    """checkWatches (17); ``type`` is a :class:`~zkwire.constants.WatcherType`."""


@dataclass(frozen=True, slots=True)
class RemoveWatchesRequest(_PathType):
    """removeWatches (18); ``type`` is a :class:`~zkwire.constants.WatcherType`."""


@dataclass(frozen=True, slots=True)
class AddWatchRequest:
    """addWatch (106); ``mode`` is an :class:`~zkwire.constants.AddWatchMode`."""

    path: str | None
    mode: int

    def write(self, out: bytearray) -> None:
        write_ustring(out, self.path)
        write_int(out, self.mode)

    @classmethod
    def read(cls, r: Reader) -> AddWatchRequest:
        return cls(r.ustring(), r.int32())


_WatchPaths = tuple[str | None, ...] | None


def _write_watch_lists(out: bytearray, relative_zxid: int, lists: tuple[_WatchPaths, ...]) -> None:
    write_long(out, relative_zxid)
    for paths in lists:
        write_string_vector(out, paths)


def _read_watch_lists(r: Reader, n: int) -> list[_WatchPaths]:
    return [opt_tuple(r.string_vector()) for _ in range(n)]


@dataclass(frozen=True, slots=True)
class SetWatches:
    """setWatches (101): re-arm one-shot watches after a reconnect."""

    relative_zxid: int
    data_watches: tuple[str | None, ...] | None
    exist_watches: tuple[str | None, ...] | None
    child_watches: tuple[str | None, ...] | None

    def write(self, out: bytearray) -> None:
        _write_watch_lists(out, self.relative_zxid, (self.data_watches, self.exist_watches, self.child_watches))

    @classmethod
    def read(cls, r: Reader) -> SetWatches:
        z = r.int64()
        return cls(z, *_read_watch_lists(r, 3))


@dataclass(frozen=True, slots=True)
class SetWatches2:
    """setWatches2 (105): like setWatches, plus persistent and persistent-recursive watches."""

    relative_zxid: int
    data_watches: tuple[str | None, ...] | None
    exist_watches: tuple[str | None, ...] | None
    child_watches: tuple[str | None, ...] | None
    persistent_watches: tuple[str | None, ...] | None
    persistent_recursive_watches: tuple[str | None, ...] | None

    def write(self, out: bytearray) -> None:
        one_shot = (self.data_watches, self.exist_watches, self.child_watches)
        persistent = (self.persistent_watches, self.persistent_recursive_watches)
        _write_watch_lists(out, self.relative_zxid, one_shot + persistent)

    @classmethod
    def read(cls, r: Reader) -> SetWatches2:
        z = r.int64()
        return cls(z, *_read_watch_lists(r, 5))


@dataclass(frozen=True, slots=True)
class WatcherEvent:
    """A watch notification's body (sent with xid -1).  ``path`` is the server's absolute path."""

    type: int
    state: int
    path: str | None

    def write(self, out: bytearray) -> None:
        write_int(out, self.type)
        write_int(out, self.state)
        write_ustring(out, self.path)

    @classmethod
    def read(cls, r: Reader) -> WatcherEvent:
        return cls(r.int32(), r.int32(), r.ustring())
