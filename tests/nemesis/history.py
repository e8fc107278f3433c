"""History records: one JSON object per line, written the moment something is observed.

Every record has ``t`` (``time.monotonic()``: CLOCK_MONOTONIC, one clock for every process of the
machine, so worker and parent records can be compared) and ``ev`` (the kind).  Worker records also
carry ``w`` (worker id), ``pid``, ``inc`` (incarnation: a restarted worker is a new incarnation) and
``sid`` (the session id the worker had at that moment, 0 when it had none).

Worker events (``worker.py``), per hold ``cycle`` (a counter of acquire attempts per incarnation):

=============== ======================================================================================
``start``        the process is up (``recipe``, ``role`` policy)
``session``      a new zkwire session is established (``sid``)
``session_end``  that session is left (``reason``; ``connected``: whether it was connected at close)
``server``       the server the session is connected to changed (``host``: "host:port", or None
                 while it has no connection)
``attempt``      an acquire begins (``role``: mutex, read, write or lease)
``grant``        the acquire returned a lease (``token``: lease.fencing_token, ``node``, ``lost``:
                 whether the lease was already lost when handed over)
``inc_write``    the counter write is about to be sent (``expected_version``, ``value``)
``inc_ok``       the write succeeded (``value``, ``version``: the new stat version, ``t0``: when the
                 read that preceded it was sent)
``inc_fail``     it failed (``err``: exception class, ``stage``: read or write, ``indeterminate``:
                 a write whose outcome is unknown, ``expected_version``)
``extend``       the nemesis asked (SIGUSR1) that the hold last until ``until`` (see ``faults``)
``idle``         the nemesis asked (SIGUSR2) that no acquire start before ``until``
``read``         a reader's view of the counter (``value``, ``when``: start or end of its hold)
``release``      the body finished normally; recorded *before* the lock node is deleted
``lost``         the loss was observed (``reason``, ``via``: the lease's wait_lost() or the exception
                 that ended the body, ``exc``)
``body_error``   the body raised while the lease was not lost (``exc``)
``body_exc``     the exception that ended the body of a lost lease (``exc``)
``outcome``      what came out of ``async with`` (``exc`` or None)
``acquire_fail`` the acquire gave up (``exc``: AcquireTimeout, Stopped, or an exception class)
``exit``         the worker leaves (``reason``)
=============== ======================================================================================

Parent records (``fleet.py``, ``nemesis.py``, ``watchdog.py``): ``spawn``, ``exit`` (``rc``), ``kill``,
``sigstop``, ``sigcont`` (each with ``w``/``pid`` where it applies), ``fault`` (``kind``, ``target``,
``start``, ``end``, details), ``stuck`` and ``ghost`` (watchdog findings), ``phase``.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

__all__ = ["Record", "HistoryWriter", "ParentLog", "read_records", "load_dir", "Tail"]

#: One history record, as decoded from its line.
Record = dict[str, Any]


class _LineWriter:
    """Appends JSON lines with one ``write`` each (O_APPEND): a line is in the kernel as soon as it
    is written, so a record survives a SIGKILL of its writer a moment later."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def _append(self, record: Record) -> None:
        os.write(self._fd, (json.dumps(record, separators=(",", ":")) + "\n").encode())

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


class HistoryWriter(_LineWriter):
    """A worker's history file."""

    def __init__(self, path: Path, worker: int, incarnation: int) -> None:
        super().__init__(path)
        self.worker = worker
        self.incarnation = incarnation
        self.pid = os.getpid()
        self.session_id = 0

    def write(self, ev: str, t: float | None = None, **fields: Any) -> float:
        """Record ``ev`` now (or at ``t``); returns the time recorded."""
        now = time.monotonic() if t is None else t
        record: Record = {"t": now, "ev": ev, "w": self.worker, "pid": self.pid, "inc": self.incarnation}
        record["sid"] = self.session_id
        record.update(fields)
        self._append(record)
        return now


class ParentLog(_LineWriter):
    """The parent's record of what it did to the system (faults, signals, processes, findings)."""

    def write(self, ev: str, t: float | None = None, **fields: Any) -> Record:
        record: Record = {"t": time.monotonic() if t is None else t, "ev": ev, **fields}
        self._append(record)
        return record


def _decode(lines: Iterable[str], where: str) -> Iterator[Record]:
    for n, line in enumerate(lines, 1):
        line = line.strip()
        if not line:
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as e:  # a torn last line of a killed writer is the only excuse
            raise ValueError(f"{where}:{n}: not a JSON record: {e}") from None
        if not isinstance(record, dict) or "t" not in record or "ev" not in record:
            raise ValueError(f"{where}:{n}: not a history record: {line[:100]}")
        yield record


def read_records(path: Path) -> list[Record]:
    """The records of one file, in file order."""
    text = path.read_text()
    if text and not text.endswith("\n"):
        text = text[: text.rfind("\n") + 1]  # a line cut by SIGKILL mid-write (os.write is atomic, but be safe)
    return list(_decode(text.splitlines(), str(path)))


def load_dir(directory: Path) -> tuple[list[Record], list[Record]]:
    """(all worker records, parent records) of one run directory, each sorted by time."""
    workers: list[Record] = []
    for path in sorted(directory.glob("w*.jsonl")):
        workers.extend(read_records(path))
    parent_path = directory / "parent.jsonl"
    parent = read_records(parent_path) if parent_path.exists() else []
    workers.sort(key=lambda r: r["t"])
    parent.sort(key=lambda r: r["t"])
    return workers, parent


class Tail:
    """Follows a file that another process appends to: ``poll()`` returns the records added since."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._offset = 0
        self._partial = b""

    def poll(self) -> list[Record]:
        try:
            with self.path.open("rb") as f:
                f.seek(self._offset)
                data = f.read(1 << 20)
        except FileNotFoundError:
            return []
        self._offset += len(data)
        data = self._partial + data
        cut = data.rfind(b"\n") + 1
        self._partial = data[cut:]
        return list(_decode(data[:cut].decode().splitlines(), str(self.path)))
