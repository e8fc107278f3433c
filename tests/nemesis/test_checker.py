"""The checker on synthetic histories: every defect it exists to find is found, and clean runs pass."""

from __future__ import annotations

from typing import Any

from .checker import CheckConfig, FinalState, build_holds, check, stall_excess, union_length
from .history import Record

T = 4.0


class Story:
    """Builds worker and parent records by hand (times in seconds from 0)."""

    def __init__(self) -> None:
        self.workers: list[Record] = []
        self.parent: list[Record] = []
        self.cycles: dict[int, int] = {}
        self.incs = 0

    def rec(self, t: float, ev: str, w: int, **fields: Any) -> None:
        self.workers.append({"t": t, "ev": ev, "w": w, "pid": 1000 + w, "inc": 0, "sid": 0x100 + w, **fields})

    def parent_rec(self, t: float, ev: str, **fields: Any) -> None:
        self.parent.append({"t": t, "ev": ev, **fields})

    def hold(
        self,
        w: int,
        grant: float,
        end: float | None,
        token: int,
        *,
        role: str = "mutex",
        how: str = "release",
        attempt: float | None = None,
        inc: bool = True,
        contender: int | None = None,
    ) -> int:
        """One hold of worker ``w`` (of its contender ``contender``, if given: cycles count per process)."""
        cycle = self.cycles.get(w, 0) + 1
        self.cycles[w] = cycle
        c: dict[str, Any] = {} if contender is None else {"c": contender}
        self.rec(grant - 0.01 if attempt is None else attempt, "attempt", w, cycle=cycle, role=role, **c)
        self.rec(grant, "grant", w, cycle=cycle, role=role, token=token, node=f"/l/n{token}", lost=False, **c)
        if inc and role in ("mutex", "write", "lease"):
            self.incs += 1
            self.rec(grant + 0.001, "inc_write", w, cycle=cycle, expected_version=self.incs - 1, value=self.incs, **c)
            self.rec(
                grant + 0.002, "inc_ok", w, cycle=cycle, value=self.incs, version=self.incs, t0=grant + 0.0005, **c
            )
        if end is not None:
            if how == "release":
                self.rec(end, "release", w, cycle=cycle, **c)
                self.rec(end + 0.001, "outcome", w, cycle=cycle, exc=None, **c)
            else:
                self.rec(end, "lost", w, cycle=cycle, reason="connection lost", via="wait_lost", exc=None, **c)
                self.rec(end + 0.001, "outcome", w, cycle=cycle, exc="LockLostError", **c)
        return cycle

    def run_window(self, start: float, stop: float) -> None:
        self.parent_rec(start, "phase", name="running")
        self.parent_rec(stop, "phase", name="stopping")

    def verdict(self, recipe: str = "mutex", final: FinalState | None = None, max_leases: int = 1) -> Any:
        self.workers.sort(key=lambda r: r["t"])
        self.parent.sort(key=lambda r: r["t"])
        if final is None:
            final = FinalState(counter_value=self.incs, counter_version=self.incs)
        return check(CheckConfig(recipe, T, max_leases), self.workers, self.parent, final)


def _sequential(n: int = 6, workers: int = 3) -> Story:
    s = Story()
    s.run_window(0.0, n * 0.2 + 1)
    for i in range(n):
        s.hold(i % workers, 0.1 + i * 0.2, 0.2 + i * 0.2, token=10 + i)
    return s


def test_clean_history_passes() -> None:
    v = _sequential().verdict()
    assert v.ok, v.failures
    assert v.holds == 6
    assert v.counter.ok == 6


def test_overlap_is_found_with_its_length() -> None:
    s = _sequential()
    s.hold(5, 0.45, 0.75, token=100)  # inside the holds at 0.5-0.6 and 0.7-0.8
    v = s.verdict()
    assert not v.ok
    assert len(v.overlaps) == 2
    lengths = sorted(round(f.data["length"], 3) for f in v.overlaps)
    assert lengths == [0.05, 0.1]


def test_overlap_after_a_signalled_loss_is_fine() -> None:
    s = Story()
    s.run_window(0, 10)
    s.hold(0, 1.0, 2.0, token=10, how="lost")  # loss seen at 2.0
    s.hold(1, 2.5, 3.0, token=20)  # granted after that: no overlap
    assert s.verdict().ok


def test_unsignalled_loss_is_an_overlap() -> None:
    s = Story()
    s.run_window(0, 10)
    s.hold(0, 1.0, 6.0, token=10, how="lost")  # loss seen only at 6.0
    s.hold(1, 5.0, 5.5, token=20)
    v = s.verdict()
    assert [round(f.data["length"], 3) for f in v.overlaps] == [0.5]


def test_long_sigstop_of_the_holder_is_excused_a_short_one_is_not() -> None:
    for pause, excused in ((6.0, True), (1.0, False)):
        s = Story()
        s.run_window(0, 20)
        s.hold(0, 1.0, 1.2 + pause + 0.1, token=10, how="lost")  # frozen from 1.2, loss seen after SIGCONT
        s.parent_rec(1.2, "sigstop", w=0, pid=1000)
        s.parent_rec(1.2 + pause, "sigcont", w=0, pid=1000)
        s.hold(1, 1.2 + min(pause, 4.5), 1.2 + min(pause, 4.5) + 0.2, token=20)
        v = s.verdict()
        if excused:
            assert v.ok, v.failures
            assert len(v.excused) == 1
        else:
            assert len(v.overlaps) == 1 and not v.excused


def test_killed_holder_ends_at_the_kill() -> None:
    s = Story()
    s.run_window(0, 20)
    s.hold(0, 1.0, None, token=10)  # no end record: SIGKILLed
    s.parent_rec(1.5, "kill", w=0, pid=1000)
    s.hold(1, 6.0, 6.2, token=20)
    v = s.verdict()
    assert v.ok, v.failures
    holds = build_holds(s.workers, s.parent)
    assert holds[0].ended_by == "killed" and holds[0].end == 1.5


def test_hold_without_any_end_overlaps_everything_after_it() -> None:
    s = Story()
    s.run_window(0, 20)
    s.hold(0, 1.0, None, token=10)
    s.hold(1, 6.0, 6.2, token=20)
    assert len(s.verdict().overlaps) == 1


def test_token_inversion_is_found() -> None:
    s = _sequential()
    s.hold(4, 2.0, 2.1, token=12)  # token 12 was granted (and ended) at 0.5-0.6 already... duplicate
    s.hold(5, 2.3, 2.4, token=11)  # older token after holds with 12..15 ended
    v = s.verdict()
    assert any("granted twice" in f.message for f in v.tokens)
    inversions = [f for f in v.tokens if "after" in f.message]
    assert len(inversions) >= 2
    assert "token 11" in inversions[-1].message


def test_token_order_waits_for_the_end_not_the_grant() -> None:
    # An older token granted while a younger hold still runs is an overlap (a), not an inversion (b).
    s = Story()
    s.run_window(0, 10)
    s.hold(0, 1.0, 3.0, token=20, how="lost")
    s.hold(1, 2.0, 2.5, token=10)
    v = s.verdict()
    assert not v.tokens and len(v.overlaps) == 1


def test_token_grant_recorded_after_a_pause_uses_the_stop_time() -> None:
    s = Story()
    s.run_window(0, 20)
    s.hold(1, 1.0, 1.5, token=20)
    # worker 0 attempted at 0.5, was stopped at 0.8 and wrote its grant (token 10) only at 7.0
    s.hold(0, 7.0, 7.0, token=10, how="lost", attempt=0.5)
    s.parent_rec(0.8, "sigstop", w=0, pid=1000)
    s.parent_rec(6.9, "sigcont", w=0, pid=1000)
    assert not s.verdict().tokens


def test_readers_may_share_and_reorder_but_not_with_writers() -> None:
    s = Story()
    s.run_window(0, 10)
    s.hold(0, 1.0, 2.0, token=10, role="read")
    s.hold(1, 1.1, 1.3, token=12, role="read")  # overlaps the first reader: fine
    s.hold(2, 1.5, 1.6, token=11, role="read")  # older token after a reader ended: fine for readers
    v = s.verdict("rwlock")
    assert v.ok, v.failures
    s.hold(3, 1.7, 1.8, token=30, role="write")  # a writer inside the first read hold
    s.hold(4, 3.0, 3.1, token=25, role="read")  # a reader with an older token after that writer ended
    v = s.verdict("rwlock")
    assert len(v.overlaps) == 1
    assert len(v.tokens) == 1 and "token 25" in v.tokens[0].message


def test_semaphore_counts_concurrent_leases() -> None:
    s = Story()
    s.run_window(0, 10)
    s.hold(0, 1.0, 2.0, token=10, role="lease", inc=False)
    s.hold(1, 1.2, 2.2, token=11, role="lease", inc=False)
    v = s.verdict("semaphore", max_leases=2)
    assert v.ok, v.failures
    s.hold(2, 1.5, 1.8, token=12, role="lease", inc=False)
    v = s.verdict("semaphore", max_leases=2)
    assert len(v.overlaps) == 1
    assert round(v.overlaps[0].data["length"], 3) == 0.3
    assert len(v.overlaps[0].data["holders"]) == 3


def test_semaphore_token_rule_uses_the_attempt() -> None:
    s = Story()
    s.run_window(0, 10)
    s.hold(0, 1.0, 1.2, token=20, role="lease", inc=False)
    s.hold(1, 2.0, 2.2, token=15, role="lease", inc=False, attempt=1.9)  # node older than an ended lease
    v = s.verdict("semaphore", max_leases=2)
    assert len(v.tokens) == 1


def test_lost_update_duplicate_version_is_found() -> None:
    s = _sequential()
    s.rec(5.0, "inc_ok", 0, cycle=1, value=3, version=3, t0=4.9)
    v = s.verdict()
    messages = " | ".join(f.message for f in v.counter_findings)
    assert "two acknowledged writes produced version 3" in messages
    assert "stale write" in messages  # read after value 6 was acknowledged, yet wrote 3


def test_lost_update_value_behind_version_is_found() -> None:
    s = _sequential()
    v = s.verdict(final=FinalState(counter_value=5, counter_version=6))
    assert any("an update was lost" in f.message for f in v.counter_findings)
    assert any("< 6 acknowledged" in f.message for f in v.counter_findings)


def test_writes_of_unknown_outcome_account_for_extra_versions() -> None:
    s = _sequential()  # 6 acknowledged writes, versions 1..6
    s.rec(3.0, "attempt", 0, cycle=50, role="mutex")
    s.rec(3.01, "grant", 0, cycle=50, role="mutex", token=99, node="/l/n99", lost=False)
    s.rec(3.02, "inc_write", 0, cycle=50, expected_version=6, value=7)
    s.rec(
        3.05,
        "inc_fail",
        0,
        cycle=50,
        err="ConnectionLossError",
        stage="write",
        indeterminate=True,
        expected_version=6,
        value=7,
    )
    s.rec(3.06, "lost", 0, cycle=50, reason="x", via="exception", exc="ConnectionLossError")
    v = s.verdict(final=FinalState(counter_value=7, counter_version=7))
    assert v.ok, v.failures
    assert v.counter.applied_indeterminate == 1
    # ...but a version no write of unknown outcome can explain is a phantom
    v = s.verdict(final=FinalState(counter_value=8, counter_version=8))
    assert any("nobody attempted" in f.message for f in v.counter_findings)


def test_stuck_queue_is_found_and_faults_extend_the_bound() -> None:
    s = Story()
    s.run_window(0.0, 40.0)
    s.hold(0, 1.0, 1.1, token=10)
    s.rec(2.0, "attempt", 1, cycle=1, role="mutex")  # waits until the end: nobody is ever granted
    s.rec(2.0, "attempt", 2, cycle=1, role="mutex")
    v = s.verdict()
    assert len(v.liveness) == 1
    assert round(v.liveness[0].data["length"], 1) == 38.0
    # The same stall under faults for all but 10 s of it is within the bound (3T = 12 s).
    s.parent_rec(2.0, "fault", kind="freeze_long", start=2.0, end=30.0)
    assert not s.verdict().liveness


def test_watchdog_stuck_and_ghost_records_fail_the_verdict() -> None:
    s = _sequential()
    s.parent_rec(1.0, "stuck", message="no grant for 13 s")
    s.parent_rec(1.0, "ghost", message="2 nodes for one acquire")
    v = s.verdict()
    assert len(v.stuck) == 1 and len(v.ghosts) == 1 and not v.ok


def test_orphan_nodes_fail_the_verdict() -> None:
    s = _sequential()
    final = FinalState(counter_value=6, counter_version=6, leftover_nodes=[{"path": "/l/n1", "owner": 0x105}])
    v = s.verdict(final=final)
    assert len(v.orphans) == 1 and "/l/n1" in v.orphans[0].message


def test_interval_helpers() -> None:
    assert union_length([(0, 2), (1, 3), (5, 6)], 0, 10) == 4
    assert union_length([(0, 2), (1, 3), (5, 6)], 2.5, 5.5) == 1.0
    assert stall_excess(0, 20, [(5, 10)], 12) == 3


def test_loss_seen_only_at_the_expiry_is_reported() -> None:
    s = Story()
    s.run_window(0, 20)
    s.hold(0, 1.0, 5.0, token=10, how="lost")
    s.rec(5.2, "session_end", 0, reason="session expired", connected=False, state="expired")
    s.hold(1, 5.05, 5.3, token=20)
    v = s.verdict()
    assert v.ok  # not a failure: the holder won the race
    assert len(v.margins) == 1 and "50 ms" in v.margins[0].message
    s2 = Story()
    s2.run_window(0, 20)
    s2.hold(0, 1.0, 5.0, token=10, how="lost")
    s2.rec(5.2, "session_end", 0, reason="session expired", connected=False, state="expired")
    s2.hold(1, 6.4, 6.5, token=20)  # T/3 later, as designed
    assert not s2.verdict().margins
    s3 = Story()
    s3.run_window(0, 20)
    s3.hold(0, 1.0, 5.0, token=10, how="lost")  # lost on a sever, released at once: no expiry then
    s3.hold(1, 5.05, 5.3, token=20)
    s3.hold(0, 6.0, 6.1, token=30)
    s3.rec(9.0, "session_end", 0, reason="session expired", connected=False, state="expired")
    assert not s3.verdict().margins


def test_loss_reported_as_connection_loss_is_listed() -> None:
    s = Story()
    s.run_window(0, 20)
    s.hold(0, 1.0, None, token=10, inc=False)
    s.rec(1.5, "lost", 0, cycle=1, reason="connection lost", via="exception", exc="ConnectionLossError")
    s.rec(1.6, "outcome", 0, cycle=1, exc="ConnectionLossError")
    v = s.verdict()
    assert len(v.reporting) == 1 and "ConnectionLossError" in v.reporting[0].message


# ------------------------------------------------------------------------------------------ contenders


def test_contenders_of_one_process_are_clients_of_their_own() -> None:
    s = Story()
    s.run_window(0, 10)
    s.hold(0, 1.0, 1.5, token=10, contender=0)
    s.hold(0, 1.6, 2.0, token=20, contender=1)  # one after the other in one process: fine
    assert s.verdict().ok
    s.hold(0, 2.5, 3.5, token=30, contender=2)
    s.hold(0, 3.0, 3.2, token=40, contender=3)  # two contenders of one process at once: an overlap
    v = s.verdict()
    assert [round(f.data["length"], 3) for f in v.overlaps] == [0.2]
    assert "w0.0/c3#4" in v.overlaps[0].message and "w0.0/c2#3" in v.overlaps[0].message


def test_a_lost_session_must_be_seen_by_every_contender_that_held() -> None:
    def story(second_sees_it: bool) -> Any:
        s = Story()
        s.run_window(0, 20)
        s.hold(0, 1.0, 3.0, token=10, role="read", how="lost", contender=0)  # the session is lost at 3.0
        s.hold(0, 1.1, 3.0 if second_sees_it else 3.6, token=11, role="read", how="lost", contender=1)
        s.hold(1, 3.4, 3.8, token=20, role="write")
        return s.verdict("rwlock")

    assert story(True).ok
    v = story(False)
    assert len(v.overlaps) == 1 and "w0.0/c1#2" in v.overlaps[0].message
    assert round(v.overlaps[0].data["length"], 3) == 0.2


def test_loss_reporting_is_judged_per_contender() -> None:
    s = Story()
    s.run_window(0, 20)
    s.hold(0, 1.0, 2.0, token=10, role="read", how="lost", contender=0)  # told as LockLostError
    s.hold(0, 1.1, None, token=11, role="read", contender=1)
    s.rec(2.0, "lost", 0, cycle=2, c=1, reason="session expired", via="exception", exc="SessionExpiredError")
    s.rec(2.1, "outcome", 0, cycle=2, c=1, exc="SessionExpiredError")
    v = s.verdict("rwlock")
    assert [f.data["hold"].split()[0] for f in v.reporting] == ["w0.0/c1#2"]


def test_waits_of_contenders_end_with_their_own_session() -> None:
    s = Story()
    s.run_window(0.0, 40.0)
    s.hold(1, 1.0, 1.1, token=10)
    s.rec(2.0, "attempt", 0, cycle=1, c=0, role="mutex", sid=0xA)  # never granted
    s.rec(2.0, "attempt", 0, cycle=2, c=1, role="mutex", sid=0xB)
    s.rec(3.0, "session_end", 0, s=1, sid=0xB, reason="session expired", connected=False, state="expired")
    v = s.verdict()
    assert len(v.liveness) == 1 and round(v.liveness[0].data["length"], 1) == 38.0
    s.rec(3.0, "session_end", 0, s=0, sid=0xA, reason="session expired", connected=False, state="expired")
    assert not s.verdict().liveness
