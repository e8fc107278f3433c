"""The tracing proxy's decoding worker: decoding and printing in another process, off the forwarding path.

Decoding a large frame can hold an interpreter for a tenth of a second and more; sharing it with the
forwarding path delays every connection's bytes by as much (and that delay would be reported as the
server's latency).  So the decoding, filtering, counting and printing run in a process of their own
(:mod:`~zkwire.trace.decodeproc`), and the proxy's process only copies what it has forwarded into a
pipe to it, each piece with the time it was read.

What waits to be written into the pipe is bounded in bytes
(:attr:`~zkwire.trace.output.TraceOptions.max_queued_bytes`; the pipe itself holds at most 1 MiB
more).  Nothing here blocks the caller: when the queue is full the bytes are skipped (and said to be),
and the pumps follow the frame boundaries by the length prefixes alone (:class:`TracedConnection`)
so that decoding picks up again at the next frame.

The decoding process writes to the output's file descriptor itself when there is one (a stalled
output stalls only it); otherwise its lines come back here and are written to the output.  Its
statistics come back when it ends and are set on ``options.stats``.  A failed output (a closed pipe)
stops the tracer (:attr:`DecodingWorker.failed`, :attr:`DecodingWorker.failure`).
"""

from __future__ import annotations

import errno
import fcntl
import os
import pickle
import signal
import subprocess
import sys
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import trio

from ..constants import DEFAULT_MAX_FRAME
from .decodeproc import JOB, RESULT, options_config
from .frames import CLIENT, SERVER, Direction
from .output import FdWriter, TraceOptions
from .resync import FrameTracker

__all__ = ["DecodingWorker", "TracedConnection", "open_decoding_worker"]

_F_SETPIPE_SZ = 1031
_PIPE_SIZE = 1 << 20
#: Most bytes written into the pipe at once.
_BATCH = 256 << 10


class _Direction:
    __slots__ = ("bounds", "skipped", "skipping")

    def __init__(self, max_frame: int) -> None:
        self.bounds = FrameTracker(max_frame)
        self.skipping = False
        self.skipped = 0


class TracedConnection:
    """One proxied connection as the forwarding path follows it (frame boundaries, what it skips)."""

    __slots__ = ("id", "sides")

    def __init__(self, conn_id: int, max_frame: int = DEFAULT_MAX_FRAME) -> None:
        self.id = conn_id
        self.sides: dict[Direction, _Direction] = {CLIENT: _Direction(max_frame), SERVER: _Direction(max_frame)}


def _output_fd(options: TraceOptions) -> int | None:
    """The output's file descriptor, if it has one (flushed first)."""
    out = options.out
    if isinstance(out, FdWriter):
        return out.fd
    try:
        fd = out.fileno()
    except (AttributeError, OSError, ValueError):
        return None
    out.flush()
    return fd


class DecodingWorker:
    """The decoding process, its queue and the tasks that feed it and read what it says; made by
    :func:`open_decoding_worker`.  Every method is called from the proxy's trio thread."""

    def __init__(self, options: TraceOptions, proc: trio.Process) -> None:
        self.options = options
        self.limit = max(options.max_queued_bytes, 1)
        self.failure: BaseException | None = None
        self.failed = trio.Event()
        self._proc = proc
        self._jobs: deque[tuple[bytes, bytes]] = deque()  # (header, payload): joined once, when written
        self._queued = 0  # bytes of data in _jobs
        self._wakeup = trio.Event()
        self._ended = trio.Event()  # the process has said all it will say
        self._finishing = False

    # ------------------------------------------------------------------ the forwarding side

    def _put(self, kind: bytes, conn: int, direction: Direction, now: float, payload: bytes, size: int = -1) -> None:
        if self._ended.is_set():
            return  # the process has gone: nothing would take the job, and the proxy may run on for long
        side = 1 if direction == SERVER else 0
        head = JOB.pack(kind[0], conn, side, now, time.time(), len(payload) if size < 0 else size)
        self._jobs.append((head, payload))
        self._wakeup.set()

    def note(self, conn: int, text: str) -> None:
        self._put(b"N", conn, CLIENT, 0.0, text.encode("utf-8", "backslashreplace"))

    def open(self, conn: TracedConnection, client: str) -> None:
        self._put(b"O", conn.id, CLIENT, 0.0, client.encode("utf-8", "backslashreplace"))

    def summary(self, always: bool) -> None:
        """Have the process print the summary so far (after the frames queued before this call)."""
        self._put(b"S", 0, SERVER if always else CLIENT, 0.0, b"")

    def data(self, conn: TracedConnection, direction: Direction, data: bytes, now: float) -> None:
        """``data`` of ``direction``, read at ``now`` (the connection's clock): queued, or skipped."""
        side = conn.sides[direction]
        first = side.bounds.feed(data)
        size = len(data)
        if side.skipping:
            if first is not None and self._reserve(size - first, resume=True):
                self._put(b"K", conn.id, direction, now, b"", side.skipped + first)
                self._put(b"D", conn.id, direction, now, data[first:])
                side.skipping, side.skipped = False, 0
            else:
                side.skipped += size
        elif self._reserve(size):
            self._put(b"D", conn.id, direction, now, data)
        else:
            side.skipping, side.skipped = True, size

    def finish(self, conn: TracedConnection, now: float) -> None:
        for direction, side in conn.sides.items():
            if side.skipping:
                self._put(b"K", conn.id, direction, now, b"", side.skipped)
        self._put(b"F", conn.id, CLIENT, now, b"")

    def _reserve(self, size: int, *, resume: bool = False) -> bool:
        if self._queued + size > (self.limit // 2 if resume else self.limit):
            return False
        self._queued += size
        return True

    # ------------------------------------------------------------------ tasks

    async def _feed(self) -> None:
        """Write the queued jobs into the process's pipe as it takes them."""
        stdin = self._proc.stdin
        assert stdin is not None
        try:
            while True:
                if not self._jobs:
                    await self._wakeup.wait()
                    self._wakeup = trio.Event()
                    continue
                batch: list[bytes] = []
                size = data = 0
                while self._jobs and size < _BATCH:
                    head, payload = self._jobs.popleft()
                    batch.append(head)
                    batch.append(payload)
                    size += len(head) + len(payload)
                    if head[0] == ord("D"):
                        data += len(payload)
                await stdin.send_all(b"".join(batch))
                self._queued -= data
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            self._jobs.clear()  # the process has gone: said by _read

    async def _read(self) -> None:
        """What the process sends back: lines to print, its statistics, an output failure."""
        stdout = self._proc.stdout
        assert stdout is not None
        buf = bytearray()
        try:
            while chunk := await stdout.receive_some(1 << 16):
                buf += chunk
                while len(buf) >= RESULT.size:
                    kind, size = RESULT.unpack_from(buf)
                    if len(buf) < RESULT.size + size:
                        break
                    payload = bytes(buf[RESULT.size : RESULT.size + size])
                    del buf[: RESULT.size + size]
                    self._result(kind, payload)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        finally:
            self._ended.set()
            if not self._finishing and self.failure is None:  # killed, or a bug: the traffic goes on
                print("zkwire trace: the decoding process ended; forwarding goes on without decoding", file=sys.stderr)

    def _result(self, kind: int, payload: bytes) -> None:
        if kind == ord("T"):
            if self.failure is None:
                self.options.out.write(payload.decode("utf-8", "replace"))
                self.options.out.flush()
        elif kind == ord("S") and self.options.stats is not None:
            vars(self.options.stats).update(pickle.loads(payload))  # from the process this one started
        elif kind == ord("X"):
            text = payload.decode("utf-8", "replace")
            self._fail(BrokenPipeError(errno.EPIPE, "output closed") if text == "EPIPE" else OSError(text))

    def _fail(self, error: BaseException) -> None:
        if self.failure is None:
            self.failure = error
            self.failed.set()

    async def _finish(self) -> None:
        """Let the process print what is queued (for up to ``drain_seconds``; then it skips the rest and
        sends its statistics), then stop it."""
        self._finishing = True
        self._put(b"E", 0, CLIENT, 0.0, b"")
        with trio.move_on_after(self.options.drain_seconds):
            await self._ended.wait()
        if not self._ended.is_set() and self._proc.returncode is None:
            # Out of time: what is not yet in the pipe is dropped, what is in it skipped, so that the
            # statistics so far still come back.
            self._jobs.clear()
            self._put(b"E", 0, CLIENT, 0.0, b"")
            self._proc.send_signal(signal.SIGUSR2)
            with trio.move_on_after(3.0):
                await self._ended.wait()
        if self._proc.returncode is None:
            self._proc.kill()
        with trio.move_on_after(1.0):
            await self._proc.wait()


def _child_env() -> dict[str, str]:
    """The environment of the decoding process: this one, with this package importable."""
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join([root, *filter(None, [env.get("PYTHONPATH")])])
    return env


@asynccontextmanager
async def open_decoding_worker(options: TraceOptions, reading: str = "fast") -> AsyncIterator[DecodingWorker]:
    """Start the decoding process and the tasks around it; on the way out, let it finish (bounded) and
    stop it.  While it runs, ``options.summary`` goes through it (the statistics are there)."""
    fd = _output_fd(options)
    out_fd = os.dup(fd) if fd is not None else None  # a number of its own (the output may be fd 1)
    try:
        proc = await trio.lowlevel.open_process(
            [sys.executable, "-m", "zkwire.trace.decodeproc"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            pass_fds=(out_fd,) if out_fd is not None else (),
            env=_child_env(),
        )
    finally:
        if out_fd is not None:
            os.close(out_fd)
    assert isinstance(proc.stdin, trio.lowlevel.FdStream)
    try:
        fcntl.fcntl(proc.stdin.fileno(), _F_SETPIPE_SZ, _PIPE_SIZE)
    except OSError:
        pass  # the default pipe size (64 KiB) does too
    worker = DecodingWorker(options, proc)
    worker._put(b"C", 0, CLIENT, 0.0, options_config(options, out_fd, reading))
    scopes: list[trio.CancelScope] = []

    async def shielded(task: Callable[[], Awaitable[None]]) -> None:
        with trio.CancelScope(shield=True) as scope:  # stopped below, after the drain
            scopes.append(scope)
            await task()

    previous = options.summary_via
    options.summary_via = worker.summary
    async with trio.open_nursery() as nursery:
        nursery.start_soon(shielded, worker._feed)
        nursery.start_soon(shielded, worker._read)
        try:
            yield worker
        finally:
            options.summary_via = previous
            with trio.CancelScope(shield=True):
                await worker._finish()
            for scope in scopes:
                scope.cancel()
