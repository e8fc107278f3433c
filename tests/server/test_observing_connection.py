"""The connection events an observer is told (zkwire.observing.ConnectionEvent), against the real server
with faults from the TCP proxy: a sever, a freeze and an expiry each give exactly the events expected,
and every request in flight when the connection failed is reported once, failed."""

from __future__ import annotations

import trio
from helpers.addresses import first_server
from helpers.observing import Recorder, sever_and_reattach
from helpers.sessiontools import expire

import zkwire
from zkwire import SessionState
from zkwire.observing import ConnectionEventKind

K = ConnectionEventKind


def collapse_attempts(kinds: list[K]) -> list[K]:
    """Runs of failed attempts and their CONNECTINGs as one ATTEMPT_FAILED (how many depends on timing)."""
    out: list[K] = []
    for kind in kinds:
        if kind is K.ATTEMPT_FAILED and out and out[-1] is K.ATTEMPT_FAILED:
            continue
        out.append(kind)
    return out


async def test_sever_gives_lost_suspended_connecting_reattached(zk_hosts: str, zk_path: str, faultproxy) -> None:
    rec = Recorder()
    async with faultproxy.open_fault_proxy(*first_server(zk_hosts)) as proxy:
        async with zkwire.open_client(proxy.hosts, session_timeout=6, observers=[rec], follow_ensemble=False) as zk:
            sid = zk.session_id
            await zk.create(zk_path)
            await sever_and_reattach(zk, proxy)
            await zk.get_data(zk_path)
            assert await zk.flush_observers()
            during = rec.connection()
        assert await zk.flush_observers()
    assert [e.kind for e in during] == [K.CONNECTING, K.CONNECTED, K.LOST, K.SUSPENDED, K.CONNECTING, K.REATTACHED]
    assert [e.kind for e in rec.connection()][len(during) :] == [K.CLOSED]
    server = zkwire.HostPort(*first_server(proxy.hosts))
    lost = during[2]
    assert lost.server == server and lost.cause == "the server closed the connection"
    assert all(e.session_id == sid for e in during[1:])
    assert during[3].server is None or during[3].server == server
    times = [e.at for e in rec.connection()]
    assert all(t is not None for t in times) and times == sorted(times)


async def test_freeze_gives_suspended_lost_and_the_requests_in_flight_failed_once(
    zk_hosts: str, zk_path: str, faultproxy
) -> None:
    rec = Recorder()
    async with faultproxy.open_fault_proxy(*first_server(zk_hosts)) as proxy:
        async with zkwire.open_client(proxy.hosts, session_timeout=3, observers=[rec], follow_ensemble=False) as zk:
            await zk.create(zk_path)
            outcomes: list[str] = []

            async def one(i: int) -> None:
                try:
                    await zk.set_data(zk_path, str(i).encode())
                    outcomes.append("ok")
                except zkwire.ConnectionLossError:
                    outcomes.append("loss")

            assert await zk.flush_observers()
            before = len(rec.connection())
            proxy.freeze()
            with trio.fail_after(15):
                async with trio.open_nursery() as nursery:
                    for i in range(20):
                        nursery.start_soon(one, i)
                proxy.thaw(drop=True)
                await zk.wait_connected()
            assert await zk.flush_observers()
            kinds = [e.kind for e in rec.connection()[before:]]
            causes = [e.cause for e in rec.connection()[before:]]
            failed = [e for e in rec.requests() if e.error is zkwire.ConnectionLossError]
    assert outcomes.count("loss") == 20
    assert len(failed) == 20 and len({e.xid for e in failed}) == 20
    # Which of the liveness clocks fires first (the suspension, or the drop of a connection with nothing
    # answered) depends on when the last ping went out; both come before the reconnection.
    kinds = collapse_attempts(kinds)
    assert sorted(kinds[:2], key=str) == sorted([K.SUSPENDED, K.LOST], key=str)
    assert kinds[2:] == [K.CONNECTING, K.REATTACHED]
    lost = causes[kinds.index(K.LOST)]
    assert lost is not None and "answered" in lost


async def test_expiry_gives_expired_with_the_server_as_cause(zk_hosts: str, zk_path: str, faultproxy) -> None:
    rec = Recorder()
    async with (
        faultproxy.open_fault_proxy(*first_server(zk_hosts)) as proxy,
        zkwire.open_client(proxy.hosts, session_timeout=10, observers=[rec], follow_ensemble=False) as zk,
    ):
        await zk.create(zk_path)
        assert await zk.flush_observers()
        before = len(rec.connection())
        proxy.refuse(True)  # the client cannot come back until the session is gone
        await proxy.sever()
        await expire(zk, zk_hosts, wait=False)
        proxy.refuse(False)
        with trio.fail_after(10):
            await zk.wait_for_state(SessionState.EXPIRED)
        assert await zk.flush_observers()
        events = rec.connection()[before:]
    kinds = collapse_attempts([e.kind for e in events])
    assert kinds[:2] == [K.LOST, K.SUSPENDED]
    assert kinds[-2:] == [K.CONNECTING, K.EXPIRED]
    assert set(kinds[2:-2]) <= {K.CONNECTING, K.ATTEMPT_FAILED}
    assert events[-1].cause is not None and "expired" in events[-1].cause.lower()
    # nothing after the expiry (the session's end is EXPIRED, not a CLOSED on top)
    assert [e.kind for e in rec.connection()][-1] is K.EXPIRED
