"""zklock.naming without a server: parsing of every node kind, ordering, malformed names, the bounded
parse cache; and the recipes' pure decisions (who blocks whom, the foreign-node warning)."""

from __future__ import annotations

import itertools
import logging
import re
import uuid
from typing import Any, cast

import pytest
from hypothesis import given
from hypothesis import strategies as st

import zklock
from zklock import naming
from zklock.naming import (
    ELECTION_MARKERS,
    EXCLUSIVE_MARKERS,
    FOREIGN,
    KAZOO_LEASE,
    KAZOO_LOCK,
    KAZOO_READ,
    LATCH,
    LEASE,
    LOCK_MARKERS,
    MUTEX,
    READ,
    SHARED_MARKERS,
    WRITE,
    Contender,
    check_naming,
    family_of,
    lease_contenders,
    new_node_prefix,
    parse_contender,
    sort_contenders,
)
from zklock.recipe import _WARNED_PATHS

U = "0f8fad5b-d9cb-469f-a165-70867728950e"
H = "9b2c4d8e0a1f4b6c8d0e2f4a6b8c0d1e"
ALL_MARKERS = (MUTEX, READ, WRITE, LEASE, LATCH, KAZOO_LOCK, KAZOO_READ)


def seq(n: int) -> str:
    """The server's sequence suffix for n (``%010d``)."""
    return f"{n:010d}"


# ---------------------------------------------------------------------------------------- parsing


@pytest.mark.parametrize(
    ("name", "markers", "expected"),
    [
        # Curator's protected names, one per recipe
        (f"_c_{U}-lock-{seq(7)}", LOCK_MARKERS, Contender(7, f"_c_{U}-lock-{seq(7)}", MUTEX, U)),
        (f"_c_{U}-__READ__{seq(8)}", LOCK_MARKERS, Contender(8, f"_c_{U}-__READ__{seq(8)}", READ, U)),
        (f"_c_{U}-__WRIT__{seq(9)}", LOCK_MARKERS, Contender(9, f"_c_{U}-__WRIT__{seq(9)}", WRITE, U)),
        (f"_c_{U}-latch-{seq(10)}", ELECTION_MARKERS, Contender(10, f"_c_{U}-latch-{seq(10)}", LATCH, U)),
        (f"_c_{U}-lease-{seq(11)}", (LEASE,), Contender(11, f"_c_{U}-lease-{seq(11)}", LEASE, U)),
        # kazoo's names
        (f"{H}__lock__{seq(12)}", LOCK_MARKERS, Contender(12, f"{H}__lock__{seq(12)}", KAZOO_LOCK, H)),
        (f"{H}__rlock__{seq(13)}", LOCK_MARKERS, Contender(13, f"{H}__rlock__{seq(13)}", KAZOO_READ, H)),
        (f"{H}__lock__{seq(14)}", ELECTION_MARKERS, Contender(14, f"{H}__lock__{seq(14)}", KAZOO_LOCK, H)),
        # kazoo's uuid is compared in lower case (kazoo writes lower case)
        (f"{H.upper()}__lock__{seq(1)}", LOCK_MARKERS, Contender(1, f"{H.upper()}__lock__{seq(1)}", KAZOO_LOCK, H)),
        # a marker with no uuid before it (an unprotected Curator node, a hand-made kazoo node)
        (f"lock-{seq(3)}", LOCK_MARKERS, Contender(3, f"lock-{seq(3)}", MUTEX, None)),
        (f"x__lock__{seq(3)}", LOCK_MARKERS, Contender(3, f"x__lock__{seq(3)}", KAZOO_LOCK, None)),
        (f"_c_{U}lock-{seq(3)}", LOCK_MARKERS, Contender(3, f"_c_{U}lock-{seq(3)}", MUTEX, None)),  # no dash
        (f"_c_{U[:-1]}-lock-{seq(3)}", LOCK_MARKERS, Contender(3, f"_c_{U[:-1]}-lock-{seq(3)}", MUTEX, None)),
        (f"{H[:-1]}__lock__{seq(3)}", LOCK_MARKERS, Contender(3, f"{H[:-1]}__lock__{seq(3)}", KAZOO_LOCK, None)),
        # negative sequences (the parent's counter wrapped), including int32's minimum (11 characters)
        (f"_c_{U}-lock--000000005", LOCK_MARKERS, Contender(-5, f"_c_{U}-lock--000000005", MUTEX, U)),
        (f"{H}__lock__-2147483648", LOCK_MARKERS, Contender(-(2**31), f"{H}__lock__-2147483648", KAZOO_LOCK, H)),
        # the last marker counts: an earlier occurrence is part of the head
        (f"lock-lock-{seq(2)}", LOCK_MARKERS, Contender(2, f"lock-lock-{seq(2)}", MUTEX, None)),
    ],
)
def test_parse_every_kind(name: str, markers: tuple[str, ...], expected: Contender) -> None:
    assert parse_contender(name, markers) == expected
    assert sort_contenders([name], markers) == [expected]


@pytest.mark.parametrize(
    "name",
    [
        "",
        "locks",
        "leases",
        "lock-",
        f"_c_{U}-lock-",  # no sequence
        f"_c_{U}-lock-{seq(1)[:-1]}",  # nine digits
        f"_c_{U}-lock-12345678901",  # eleven digits
        f"_c_{U}-lock-{seq(1)}x",  # trailing junk
        f"_c_{U}-lock-000000001a",
        f"_c_{U}-lock-+000000001",
        f"_c_{U}-lock- 000000001",
        f"_c_{U}-lock-{seq(1)}-lock-",  # the last marker has no sequence after it
        f"_c_{U}-lock-{seq(1)}\n",
        f"_c_{U}-lease-{seq(1)}",  # a semaphore's lease is no lock contender
        f"_c_{U}-latch-{seq(1)}",  # nor is a LeaderLatch node
        f"{H}__lock__{seq(1)}".replace("__lock__", "__lock_"),
        f"{H}__LOCK__{seq(1)}",  # markers are case-sensitive
        f"_c_{U}-__read__{seq(1)}",
        f"{H}-lock_{seq(1)}",
        H,  # a kazoo lease is no lock contender
    ],
)
def test_malformed_or_foreign_names_are_not_lock_contenders(name: str) -> None:
    assert parse_contender(name, LOCK_MARKERS) is None
    assert sort_contenders([name], LOCK_MARKERS) == []


def test_markers_are_not_suffixes_of_each_other() -> None:
    # Only the marker right before the sequence can match, so a name has at most one reading.
    for a, b in itertools.permutations(ALL_MARKERS, 2):
        assert not a.endswith(b), (a, b)


def test_election_and_lock_queues_see_their_own_kinds() -> None:
    latch = f"_c_{U}-latch-{seq(1)}"
    mutex = f"_c_{U}-lock-{seq(2)}"
    kazoo = f"{H}__lock__{seq(3)}"
    assert [c.name for c in sort_contenders([latch, mutex, kazoo], ELECTION_MARKERS)] == [latch, kazoo]
    assert [c.name for c in sort_contenders([latch, mutex, kazoo], LOCK_MARKERS)] == [mutex, kazoo]


def test_lease_parent_children_all_take_a_lease() -> None:
    curator = f"_c_{U}-lease-{seq(4)}"
    earlier = f"_c_{U}-lease-{seq(2)}"
    kazoo = H
    other = "somebody-elses-node"
    got = lease_contenders([curator, other, kazoo, earlier])
    assert [c.marker for c in got] == [KAZOO_LEASE, FOREIGN, LEASE, LEASE]
    assert [c.name for c in got] == [kazoo, other, earlier, curator]  # sequence 0 first, by name
    assert got[0].uuid == H and got[2].uuid == U and got[1].uuid is None
    assert lease_contenders([]) == []
    assert lease_contenders([H.upper()])[0] == Contender(0, H.upper(), KAZOO_LEASE, H)


# ---------------------------------------------------------------------------------------- ordering


def test_order_is_by_parsed_sequence_across_families_and_signs() -> None:
    names = [
        f"{H}__lock__{seq(100)}",
        f"_c_{U}-lock-{seq(9)}",
        f"_c_{U}-__READ__{seq(10)}",
        f"{H}__rlock__{seq(2)}",
        f"_c_{U}-__WRIT__-000000003",
        f"{H}__lock__-2147483648",
    ]
    got = [c.sequence for c in sort_contenders(names, LOCK_MARKERS)]
    assert got == [-(2**31), -3, 2, 9, 10, 100]


def test_equal_sequences_are_ordered_by_name() -> None:
    # One parent's counter never repeats; names from different parents merged by a caller still sort
    # deterministically.
    a, b = f"_c_{U}-lock-{seq(5)}", f"{H}__lock__{seq(5)}"
    assert [c.name for c in sort_contenders([b, a], LOCK_MARKERS)] == sorted([a, b])
    assert [c.name for c in sort_contenders([a, b], LOCK_MARKERS)] == sorted([a, b])


@given(st.lists(st.tuples(st.sampled_from(LOCK_MARKERS), st.integers(-(2**31), 2**31 - 1)), unique_by=lambda t: t[1]))
def test_sorting_is_numeric_for_any_mix(entries: list[tuple[str, int]]) -> None:
    names = [f"_c_{U}-{m}{n:010d}" if m not in (KAZOO_LOCK, KAZOO_READ) else f"{H}{m}{n:010d}" for m, n in entries]
    got = sort_contenders(names, LOCK_MARKERS)
    assert [c.sequence for c in got] == sorted(n for _, n in entries)
    assert all(c.marker == m for c in got for m, n in entries if n == c.sequence)


# ------------------------------------------------- what the peers' default parsers make of our names
#
# Models of the peers' documented behaviour (not their code): Curator orders the children of a lock path
# by the text after the last occurrence of its recipe's marker (the whole name if absent), compared as
# strings; kazoo's Lock counts only children whose names end with "__lock__" and ten digits (optionally
# signed), comparing those digits as strings.


def curator_key(name: str, marker: str) -> str:
    at = name.rfind(marker)
    return name[at + len(marker) :] if at >= 0 else name


def kazoo_sees(name: str) -> bool:
    return re.search(r"(?:__lock__)(-?\d{10})$", name) is not None


@pytest.mark.parametrize("n", [1, 42, 2**31 - 1])
def test_each_naming_suits_its_own_peer_only(n: int) -> None:
    _, curator_prefix = new_node_prefix("curator", MUTEX)
    _, kazoo_prefix = new_node_prefix("kazoo", KAZOO_LOCK)
    curator_name, kazoo_name = curator_prefix + seq(n), kazoo_prefix + seq(n)
    assert curator_key(curator_name, MUTEX) == seq(n)  # Curator orders it by its sequence
    assert not kazoo_sees(curator_name)  # a default kazoo Lock does not see it
    assert kazoo_sees(kazoo_name)
    assert curator_key(kazoo_name, MUTEX) == kazoo_name  # Curator orders it by its uuid: wrongly


@given(st.text(alphabet=st.characters(codec="ascii", exclude_characters="/\x00"), max_size=60))
def test_no_name_is_read_right_by_both_default_parsers(prefix: str) -> None:
    # Whatever comes before the server's sequence, Curator's mutex and kazoo's Lock cannot both read it.
    name = prefix + seq(17)
    assert not (kazoo_sees(name) and curator_key(name, MUTEX) == seq(17))


def test_new_node_prefixes_round_trip_their_uuid() -> None:
    u, prefix = new_node_prefix("curator", WRITE)
    assert prefix == f"_c_{u}-__WRIT__" and uuid.UUID(u)
    c = parse_contender(prefix + seq(3), LOCK_MARKERS)
    assert c is not None and c.uuid == u and c.marker == WRITE
    u, prefix = new_node_prefix("kazoo", KAZOO_READ)
    assert prefix == f"{u}__rlock__" and re.fullmatch("[0-9a-f]{32}", u)
    c = parse_contender(prefix + seq(3), LOCK_MARKERS)
    assert c is not None and c.uuid == u and c.marker == KAZOO_READ
    u, prefix = new_node_prefix("kazoo", KAZOO_LEASE)
    assert prefix == u and lease_contenders([prefix])[0].uuid == u
    assert new_node_prefix("kazoo", KAZOO_LOCK)[0] != new_node_prefix("kazoo", KAZOO_LOCK)[0]


def test_check_naming_and_families() -> None:
    assert check_naming("curator") == "curator" and check_naming("kazoo") == "kazoo"
    for bad in ("Curator", "kazo", "", None, 1):
        with pytest.raises(ValueError, match="naming must be"):
            check_naming(bad)
    assert {family_of(m) for m in (MUTEX, READ, WRITE, LEASE, LATCH)} == {"curator"}
    assert {family_of(m) for m in (KAZOO_LOCK, KAZOO_READ, KAZOO_LEASE)} == {"kazoo"}
    assert family_of(FOREIGN) is None
    assert set(LOCK_MARKERS) == EXCLUSIVE_MARKERS | SHARED_MARKERS
    assert not EXCLUSIVE_MARKERS & SHARED_MARKERS


# ---------------------------------------------------------------------------------------- the cache


def test_parse_cache_is_bounded_and_stays_correct(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(naming, "_PARSED", {})
    monkeypatch.setattr(naming, "_PARSED_LIMIT", 8)
    names = [f"_c_{U}-lock-{seq(i)}" for i in range(50)] + [f"junk-{i}" for i in range(50)]
    for start in range(0, 100, 7):
        batch = names[start : start + 7]
        got = sort_contenders(batch, LOCK_MARKERS)
        assert [c.sequence for c in got] == list(range(start, min(start + 7, 50)))
        assert len(naming._PARSED[LOCK_MARKERS]) <= 8
    for i, name in enumerate(names):
        c = parse_contender(name, LOCK_MARKERS)
        assert (c.sequence if c else None) == (i if i < 50 else None)
        assert len(naming._PARSED[LOCK_MARKERS]) <= 8
    for i in range(30):
        lease_contenders([f"_c_{U}-lease-{seq(i)}", H])
        assert all(len(t) <= 8 for t in naming._PARSED.values())


def test_parse_cache_is_per_marker_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(naming, "_PARSED", {})
    name = f"{H}__lock__{seq(1)}"
    assert parse_contender(name, (MUTEX,)) is None  # remembered as "not a contender" for this set only
    assert parse_contender(name, LOCK_MARKERS) is not None
    assert parse_contender(name, (MUTEX,)) is None
    assert set(naming._PARSED) == {(MUTEX,), LOCK_MARKERS}


# ------------------------------------------------------------------- the recipes' pure decisions


def queue(*specs: tuple[str, int]) -> list[Contender]:
    names = [f"{H}{m}{n:010d}" if m in (KAZOO_LOCK, KAZOO_READ) else f"_c_{U}-{m}{n:010d}" for m, n in specs]
    return sort_contenders(names, LOCK_MARKERS)


NO_CLIENT = cast(Any, None)


def test_who_waits_for_whom() -> None:
    rw = zklock.ReadWriteLock(NO_CLIENT, "/rw")
    mutex = zklock.Mutex(NO_CLIENT, "/rw")
    # kazoo reader, our mutex, Curator reader, kazoo writer, our reader
    q = queue((KAZOO_READ, 1), (MUTEX, 2), (READ, 3), (KAZOO_LOCK, 4), (READ, 5))
    assert [rw.read_lock._blocker(q, i) for i in range(5)] == [None, None, q[1], q[1], q[3]]
    assert [rw.write_lock._blocker(q, i) for i in range(5)] == [None, q[0], q[1], q[2], q[3]]
    assert [mutex._blocker(q, i) for i in range(5)] == [None, q[0], q[1], q[2], q[3]]
    readers = queue((READ, 1), (KAZOO_READ, 2), (READ, 3))
    assert [rw.read_lock._blocker(readers, i) for i in range(3)] == [None, None, None]


def test_semaphore_counts_every_child_of_its_lease_parent() -> None:
    sem = zklock.Semaphore(NO_CLIENT, "/sem", max_leases=2)
    leases = lease_contenders([f"_c_{U}-lease-{seq(1)}", H])
    assert sem._blocker(leases, 1) is None
    leases = lease_contenders([f"_c_{U}-lease-{seq(1)}", H, "other"])
    assert sem._blocker(leases, 2) is zklock.recipe.ANY_CHANGE
    assert (sem.path, sem._guard.path) == ("/sem/leases", "/sem/locks")
    kazoo = zklock.Semaphore(NO_CLIENT, "/sem", max_leases=2, naming="kazoo")
    assert (kazoo.path, kazoo._guard.path, kazoo._guard.naming) == ("/sem", "/sem-__lock__", "kazoo")
    assert kazoo.sequential is False and sem.sequential is True


@pytest.mark.parametrize(
    ("make", "curator_marker", "kazoo_marker"),
    [
        (lambda n: zklock.Mutex(NO_CLIENT, "/p", naming=n), MUTEX, KAZOO_LOCK),
        (lambda n: zklock.ReadWriteLock(NO_CLIENT, "/p", naming=n).read_lock, READ, KAZOO_READ),
        (lambda n: zklock.ReadWriteLock(NO_CLIENT, "/p", naming=n).write_lock, WRITE, KAZOO_LOCK),
        (lambda n: zklock.Election(NO_CLIENT, "/p", naming=n), LATCH, KAZOO_LOCK),
        (lambda n: zklock.Semaphore(NO_CLIENT, "/p", 1, naming=n), LEASE, KAZOO_LEASE),
    ],
)
def test_naming_picks_the_marker(make: Any, curator_marker: str, kazoo_marker: str) -> None:
    assert make("curator").marker == curator_marker
    assert make("kazoo").marker == kazoo_marker
    with pytest.raises(ValueError, match="naming must be"):
        make("zookeeper")


def test_foreign_nodes_are_logged_once_per_path(caplog: pytest.LogCaptureFixture) -> None:
    _WARNED_PATHS.clear()
    caplog.set_level(logging.WARNING, logger="zklock")
    curator = zklock.Mutex(NO_CLIENT, "/a")
    kazoo = zklock.Mutex(NO_CLIENT, "/b", naming="kazoo")
    mixed = queue((MUTEX, 1), (KAZOO_LOCK, 2))
    curator._warn_foreign(queue((MUTEX, 1), (READ, 2), (WRITE, 3)))
    kazoo._warn_foreign(queue((KAZOO_LOCK, 1), (KAZOO_READ, 2)))
    assert caplog.records == []
    for _ in range(3):
        curator._warn_foreign(mixed)
        kazoo._warn_foreign(mixed)
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 2
    assert "/a holds" in messages[0] and "default kazoo client" in messages[0] and "naming='kazoo'" in messages[0]
    assert "/b holds" in messages[1] and "Curator client" in messages[1] and "naming='curator'" in messages[1]
    # a kazoo-layout semaphore warns about a Curator layout's children
    sem = zklock.Semaphore(NO_CLIENT, "/c", 2, naming="kazoo")
    sem._warn_foreign(lease_contenders([H]))
    sem._warn_foreign(lease_contenders([H, "leases", "locks"]))
    assert len(caplog.records) == 3 and "/c holds" in caplog.records[2].getMessage()
    _WARNED_PATHS.clear()
