"""The verdict over a run's histories: pure functions of the records, no I/O.

Terms.  A *hold* is one grant of the lock to one worker, from its ``grant`` record to its *end*: the
earliest of its ``release`` record (written before the node is deleted), its ``lost`` record (the
worker saw the loss), its ``body_error`` record, and the moment the parent killed the process or saw
it exit (``kill`` / ``exit``).  A hold's interval ``[grant, end]`` is therefore inside the time the
worker could believe it held the lock; every recorded time is a ``time.monotonic()`` reading.

(a) Unsignalled overlaps.  Exclusive holds must not overlap: for a mutex every pair, for a read/write
    lock every pair in which one side writes; for a semaphore no more than ``max_leases`` holds at any
    instant.  One exception, which is inherent and reported apart ("excused"): a process stopped by
    SIGSTOP cannot notice anything, so while a holder is frozen for longer than its session can live,
    its session may expire and another worker be granted.  The excused window of such a pause is
    ``[stop + 2T/3 - 0.25 s, cont + grace]`` (T: the session timeout; the server may expire a session
    2T/3 after the client's last ping at the earliest, as the client pings after T/3 of silence; grace:
    the time the resumed process needs to run its overdue timers).  A hold's part inside an excused
    window of its own process does not count; every other overlap is reported with its length.

(b) Fencing-token order.  The rule: if hold H ended before hold G was granted, then G's token is
    greater than H's (for a read/write lock: unless both are reads; tokens are the lock node's czxid).
    Why it is sound: suppose token(G) < token(H), so G's node was created first.  The recipes grant a
    writer (or a mutex holder) only when every older node is gone, and a reader only when the nearest
    older writer -- which itself waited for every node before it -- is gone; so H, younger than G, was
    granted only after G's node had been deleted.  Then G observed its grant (at ``grant``, after H's
    end, hence after H's grant) for a node that no longer existed: G was handed a lock it did not hold,
    and a resource fenced with H's token would have seen G's older token afterwards.  A correct lock
    never does that (its lease is marked lost at once when the session is not connected: such grants,
    ``lost`` at hand-over, are left out).  The grant time used is the ``grant`` record, or the moment
    the process was stopped if a SIGSTOP fell between the ``attempt`` and the ``grant`` records (the
    grant may have been seen before the pause and written after it).  For a semaphore, whose leases
    are held concurrently, the comparison point is G's ``attempt`` record instead (a lease node
    created after H ended must carry a greater czxid): weaker, but sound without any ordering between
    leases.  Tokens must also be unique across grants.

(c) The counter.  Each worker, holding the lock, reads the counter and writes value+1 with the version
    it read.  Starting from "0" at version 0, every applied write leaves value == version.  Checked:
    every acknowledged write (``inc_ok``) has value == version, no two share a version, real-time order
    holds (a write whose read was sent after another write was acknowledged must produce a greater
    value), the final value equals the final version, and the final version equals the acknowledged
    writes plus the unacknowledged ones that were applied (a version no acknowledged write accounts for
    must be explained by a write attempt of unknown outcome -- connection loss, expiry, cancellation,
    a killed process -- that expected the version before it; anything else is a phantom write).

(d) Liveness.  A stall is a time span with no grant while at least one worker waits in acquire.  Its
    length minus the fault time inside it must stay below ``stall_bound`` (default 3T); the watchdog
    applies the same rule during the run and names the node at the head of the queue.

(e) Orphans: lock nodes still present after every worker shut down cleanly and the sessions of killed
    workers had time to expire.

Several contenders per worker.  A worker may run several contenders (records with ``c``) on one or
more sessions of its process.  Each contender is a client of its own for every rule above: its holds,
waits and counter writes are its own (a hold is named ``w<worker>.<incarnation>/c<contender>#<cycle>``,
cycles counted per process), so two contenders of one process holding exclusively at once is an
overlap like any other.  What they share is the process and the session: a SIGSTOP, a kill or the
loss of the session reaches all of them at once, which the rules already take per process (pauses,
kills) and per hold (each lease must be seen lost by its own contender).
"""

from __future__ import annotations

from .intervals import stall_excess, union_length
from .model import CheckConfig, FinalState, Finding, Hold, build_holds, pause_windows
from .verdict import Verdict, check

__all__ = [
    "CheckConfig",
    "FinalState",
    "Finding",
    "Hold",
    "Verdict",
    "build_holds",
    "check",
    "pause_windows",
    "stall_excess",
    "union_length",
]
