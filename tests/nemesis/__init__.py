"""A nemesis suite for the lock recipes: worker processes contend for a lock on a 3-member ensemble
while faults are injected, and a checker then judges the recorded histories.

Modules, one job each:

- ``history``: the JSON-lines records workers and the parent write, and their loading.
- ``worker``: one worker process (one zkwire session at a time, a lock loop, a guarded counter).
- ``fleet``: starts, signals, restarts and stops the worker processes; follows their histories live.
- ``proxies``: one fault proxy per ensemble member per worker; ``members``: the ensemble's members
  (leader by ``srvr``, kill and restart, SIGSTOP of a member's JVM).
- ``faults``: the fault kinds, each bounded in time; ``nemesis``: the seeded scheduler that applies them.
- ``watchdog``: liveness during the run (no grant while workers wait) and a census of the lock nodes.
- ``checker``: the verdict over all histories (overlaps, fencing tokens, counter, liveness, orphans).
- ``report``: the summary as text and JSON.
- ``harness``: one run from start to verdict; ``__main__``: the command line.

``python -m tests.nemesis --help`` (from the repository root) for a long run;
``tests/nemesis/test_nemesis.py`` for the bounded runs in the test suite.
"""
