"""The tracing proxy's decoding worker: decoding and printing off the forwarding path.

One thread takes what each pump has already forwarded from a queue bounded in bytes
(:attr:`~zkwire.trace.output.TraceOptions.max_queued_bytes`) and feeds it to that connection's
:class:`~zkwire.trace.decoder.ConversationDecoder`.  Nothing here blocks the caller: when the queue is
full the bytes are skipped (and said to be), and the pumps follow the frame boundaries by the length
prefixes alone so that decoding picks up again at the next frame.  The work items are typed
(:data:`Job`): a note, bytes of one direction, bytes skipped, a connection's end.
"""

from __future__ import annotations

import queue
import threading
import time
from dataclasses import dataclass

import trio

from .decoder import ConversationDecoder
from .frames import CLIENT, SERVER, DecodedFrame, Direction
from .output import TraceOptions
from .resync import FrameTracker

__all__ = ["DataJob", "DecodingWorker", "FinishJob", "Job", "NoteJob", "SkipJob", "TracedConnection"]


class _Direction:
    __slots__ = ("bounds", "skipped", "skipping")

    def __init__(self, max_frame: int) -> None:
        self.bounds = FrameTracker(max_frame)
        self.skipping = False
        self.skipped = 0


class TracedConnection:
    """One proxied connection as the worker decodes it."""

    __slots__ = ("broken", "decoder", "id", "sides")

    def __init__(self, conn_id: int) -> None:
        self.id = conn_id
        self.decoder = ConversationDecoder()
        self.sides: dict[Direction, _Direction] = {
            CLIENT: _Direction(self.decoder.max_frame),
            SERVER: _Direction(self.decoder.max_frame),
        }
        self.broken = False  # the decoder failed (a bug): the rest of the connection is not decoded


@dataclass(frozen=True, slots=True)
class NoteJob:
    """A line about connection ``conn`` (0: the whole trace)."""

    conn: int
    text: str
    wall: float


@dataclass(frozen=True, slots=True)
class DataJob:
    """Bytes ``direction`` sent, forwarded at ``now`` (trio's clock, from the connection's start);
    ``data`` counts against the queue's bound until it is decoded."""

    conn: TracedConnection
    direction: Direction
    data: bytes
    now: float
    wall: float


@dataclass(frozen=True, slots=True)
class SkipJob:
    """``nbytes`` of ``direction`` went by undecoded (the queue was full)."""

    conn: TracedConnection
    direction: Direction
    nbytes: int
    now: float
    wall: float


@dataclass(frozen=True, slots=True)
class FinishJob:
    """The connection closed."""

    conn: TracedConnection
    now: float
    wall: float


Job = NoteJob | DataJob | SkipJob | FinishJob


class DecodingWorker:
    """The worker thread and its queue.  A failed output (a closed pipe) stops the tracer
    (:attr:`failed` is set, :attr:`failure` holds the error)."""

    def __init__(self, options: TraceOptions) -> None:
        self.options = options
        self.limit = max(options.max_queued_bytes, 1)
        self.failure: BaseException | None = None
        self.failed = trio.Event()
        self._jobs: queue.SimpleQueue[Job | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._queued = 0
        self._discard = False
        self._token = trio.lowlevel.current_trio_token()
        self._thread = threading.Thread(target=self._run, name="zkwire trace decoder", daemon=True)
        self._thread.start()

    # ------------------------------------------------------------------ forwarding side (trio)

    def note(self, conn: int, text: str) -> None:
        self._jobs.put(NoteJob(conn, text, time.time()))

    def data(self, conn: TracedConnection, direction: Direction, data: bytes, now: float) -> None:
        side = conn.sides[direction]
        first = side.bounds.feed(data)
        size = len(data)
        wall = time.time()
        if side.skipping:
            if first is not None and self._reserve(size - first, resume=True):
                self._jobs.put(SkipJob(conn, direction, side.skipped + first, now, wall))
                self._jobs.put(DataJob(conn, direction, data[first:], now, wall))
                side.skipping, side.skipped = False, 0
            else:
                side.skipped += size
        elif self._reserve(size):
            self._jobs.put(DataJob(conn, direction, data, now, wall))
        else:
            side.skipping, side.skipped = True, size

    def finish(self, conn: TracedConnection, now: float) -> None:
        wall = time.time()
        for direction, side in conn.sides.items():
            if side.skipping:
                self._jobs.put(SkipJob(conn, direction, side.skipped, now, wall))
        self._jobs.put(FinishJob(conn, now, wall))

    def _reserve(self, size: int, *, resume: bool = False) -> bool:
        with self._lock:
            if self._queued + size > (self.limit // 2 if resume else self.limit):
                return False
            self._queued += size
            return True

    async def aclose(self) -> None:
        """Let the worker print what is queued (for up to ``drain_seconds``), then stop it."""
        self._jobs.put(None)
        with trio.CancelScope(shield=True):
            with trio.move_on_after(self.options.drain_seconds):
                await trio.to_thread.run_sync(self._thread.join, abandon_on_cancel=True)
            self._discard = True
            with trio.move_on_after(1.0):
                await trio.to_thread.run_sync(self._thread.join, abandon_on_cancel=True)

    # ------------------------------------------------------------------ worker thread

    def _run(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            try:
                if not self._discard:
                    self._do(job)
            except BaseException as e:  # the output failed: stop the tracer
                self._fail(e)
            finally:
                if isinstance(job, DataJob):
                    with self._lock:
                        self._queued -= len(job.data)

    def _do(self, job: Job) -> None:
        options = self.options
        if isinstance(job, NoteJob):
            options.note(job.conn, job.text, job.wall)
            return
        conn = job.conn
        if not conn.broken:
            try:
                frames = self._decode(job)
            except Exception as e:  # a decoder bug must not stop the tracer
                conn.broken = True
                options.note(conn.id, f"decoder error: {e!r}; the rest of this connection is not decoded", job.wall)
                frames = []
            for frame in frames:
                options.emit(conn.id, frame, job.wall)
        if isinstance(job, FinishJob):
            options.note(conn.id, "closed", job.wall)
            options.close_connection(conn.id)

    @staticmethod
    def _decode(job: DataJob | SkipJob | FinishJob) -> list[DecodedFrame]:
        decoder = job.conn.decoder
        if isinstance(job, DataJob):
            return decoder.feed(job.direction, job.data, job.now)
        if isinstance(job, SkipJob):
            return decoder.skip(job.direction, job.nbytes, job.now, reason="not decoded: decoding fell behind")
        return decoder.finish(job.now)

    def _fail(self, error: BaseException) -> None:
        if self.failure is None:
            self.failure = error
            self._discard = True
            try:
                self._token.run_sync_soon(self.failed.set)
            except trio.RunFinishedError:
                pass
