"""One back-off (zkwire.sansio.backoff.Backoff) behind every wait: between connection attempts and after
connections that end at once (decided by the session core, sans I/O), between retries and between
sessions.  Every draw comes from the generator given: a seeded one gives the same waits every run."""

from __future__ import annotations

import random

import pytest

from zkwire.client.retry import RetryPolicy
from zkwire.sansio.backoff import SHARED_RNG, Backoff
from zkwire.sansio.hosts import SHORT_CONNECTION, HostPort, HostRotation
from zkwire.sansio.session import SessionCore

H1, H2 = HostPort("zk1", 2181), HostPort("zk2", 2181)


def test_caps_grow_by_the_multiplier_to_the_maximum() -> None:
    b = Backoff(0.05, 1.0)
    assert [b.cap(n) for n in range(6)] == [0.05, 0.1, 0.2, 0.4, 0.8, 1.0]
    assert b.cap(10**6) == 1.0  # no overflow however many failures
    assert Backoff(0.1, 5.0, multiplier=3).cap(2) == pytest.approx(0.9)


@pytest.mark.parametrize(("jitter", "low"), [(0.5, 0.5), (1.0, 0.0), (0.0, 1.0)])
def test_waits_are_drawn_within_the_jitter(jitter: float, low: float) -> None:
    b = Backoff(0.1, 10.0, jitter=jitter, rng=random.Random(5))
    for n in range(8):
        cap = b.cap(n)
        waits = [b.delay(n) for _ in range(100)]
        assert all(low * cap - 1e-12 <= w <= cap for w in waits)
    assert b.delay(20, at_most=0.3) <= 0.3


def test_a_seeded_generator_gives_the_same_waits_and_no_global_state_is_used() -> None:
    random.seed(1)
    state = random.getstate()
    first = [Backoff(0.05, 1.0, rng=random.Random(9)).delay(n) for n in range(10)]
    again = [Backoff(0.05, 1.0, rng=random.Random(9)).delay(n) for n in range(10)]
    assert first == again
    Backoff(0.05, 1.0).delay(3)  # the shared generator, not the random module's
    assert random.getstate() == state
    assert Backoff(1, 2).rng is SHARED_RNG


def test_retry_policy_waits_are_full_jitter_from_a_backoff() -> None:
    policy = RetryPolicy(initial_delay=0.1, max_delay=1.0, multiplier=2.0)
    assert policy.backoff().jitter == 1.0
    assert [policy.delay(n, random.Random(3)) for n in range(5)] == [
        Backoff(0.1, 1.0, jitter=1.0, rng=random.Random(3)).delay(n) for n in range(5)
    ]


def test_rotation_waits_only_a_little_within_a_lap_and_backs_off_per_full_lap() -> None:
    hosts = HostRotation([H1, H2], random.Random(2))
    assert hosts.delay() == 0.0
    hosts.failed()
    assert 0.0 <= hosts.delay() <= 0.05
    hosts.failed()  # a full lap
    assert all(0.05 <= hosts.delay() <= 0.1 for _ in range(50))
    assert all(hosts.delay(at_most=0.02) <= 0.02 for _ in range(50))
    hosts.reached()
    assert hosts.delay() == 0.0


def test_short_connections_back_off_until_one_lasts_or_answers() -> None:
    hosts = HostRotation([H1], random.Random(4))
    for n in range(1, 8):
        hosts.ended(SHORT_CONNECTION / 2, answered=False)
        cap = min(1.0, 0.05 * 2 ** (n - 1))
        assert all(cap / 2 <= hosts.delay() <= cap for _ in range(50))
    hosts.ended(0.1, answered=True)
    assert hosts.delay() == 0.0
    hosts.ended(0.1, answered=False)
    hosts.ended(SHORT_CONNECTION, answered=False)
    assert hosts.delay() == 0.0


def test_the_core_decides_the_wait_after_a_connection_that_ended_at_once() -> None:
    """The driver tells the core that a connection ended and whether it answered anything; the core,
    seeded, says how long to wait: the same waits every run."""

    def waits(seed: int) -> list[float]:
        core = SessionCore([H1], session_timeout=9.0, rng=random.Random(seed))
        out = []
        for i in range(6):
            core.next_host()
            core.connection_made(H1, 10.0 * i)
            core.connection_lost(10.0 * i + 0.2)
            core.connection_ended(10.0 * i + 0.2, answered=False)
            out.append(core.reconnect_delay())
        return out

    drawn = waits(11)
    assert drawn == waits(11)
    caps = [min(1.0, 0.1 * 2**n) for n in range(6)]  # failed handshakes: one lap each, one host
    assert all(cap / 2 <= d <= cap for d, cap in zip(drawn, caps, strict=True))


def test_a_connection_that_served_resets_the_cores_wait() -> None:
    core = SessionCore([H1], session_timeout=9.0, rng=random.Random(1))
    core.connection_made(H1, 0.0)
    core.connection_ended(0.5, answered=False)  # reached the I/O layer, not a session
    assert core.reconnect_delay() > 0.0
    core.connection_made(H1, 1.0)
    core.connection_ended(1.5, answered=True)
    assert core.reconnect_delay() == 0.0
    core.connection_ended(1.6, answered=False)  # no connection made since: nothing to count
    assert core.reconnect_delay() == 0.0
