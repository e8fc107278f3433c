"""Requests in flight per connection are bounded: a burst waits for replies instead of piling up in the
server (which stops reading a connection with ~1,000 outstanding requests and buffers every reply)."""

from __future__ import annotations

import trio
from helpers.addresses import first_server
from helpers.faultproxy import open_fault_proxy

import zkwire


async def test_concurrent_requests_beyond_the_bound_wait_for_replies(zk_hosts: str, zk_path: str) -> None:
    async with (
        open_fault_proxy(*first_server(zk_hosts)) as proxy,
        zkwire.open_client(proxy.hosts, follow_ensemble=False) as zk,
    ):
        await zk.create(zk_path, b"x")
        zk.max_in_flight = 8
        results: list[bytes] = []

        async def get() -> None:
            data, _ = await zk.get_data(zk_path)
            results.append(data)

        [conn] = proxy.live
        sent_before = conn.forwarded("to_server")
        proxy.freeze(to_server=False)  # replies are held: nothing makes room
        with trio.fail_after(10):
            async with trio.open_nursery() as nursery:
                for _ in range(100):
                    nursery.start_soon(get)
                while conn.forwarded("to_server") - sent_before < 8:
                    await trio.sleep(0.01)
                await trio.sleep(0.2)
                assert conn.forwarded("to_server") - sent_before == 8  # the rest wait in the client
                proxy.thaw()
        assert results == [b"x"] * 100
        assert conn.forwarded("to_server") - sent_before == 100


async def test_a_pipeline_longer_than_the_bound_goes_out_in_bursts(zk_hosts: str, zk_path: str) -> None:
    async with (
        open_fault_proxy(*first_server(zk_hosts)) as proxy,
        zkwire.open_client(proxy.hosts, follow_ensemble=False) as zk,
    ):
        await zk.create(zk_path)
        zk.max_in_flight = 16
        [conn] = proxy.live
        sent_before = conn.forwarded("to_server")
        ops = [zkwire.Create(f"{zk_path}/n", str(i).encode(), sequential=True) for i in range(50)]
        proxy.freeze(to_server=False)
        with trio.fail_after(10):
            async with trio.open_nursery() as nursery:
                outcome: list[list[object]] = []

                async def run() -> None:
                    outcome.append(await zk.pipeline(ops))

                nursery.start_soon(run)
                while conn.forwarded("to_server") - sent_before < 16:
                    await trio.sleep(0.01)
                await trio.sleep(0.2)
                assert conn.forwarded("to_server") - sent_before == 16
                proxy.thaw()
        [created] = outcome
        assert [path for path, _ in created] == [f"{zk_path}/n{i:010d}" for i in range(50)]  # type: ignore[misc]


async def test_a_pipeline_whose_replies_drain_for_longer_than_the_session_timeout_keeps_its_connection(
    zk_hosts: str, zk_path: str
) -> None:
    """The server's answers reach the client one every 50 ms (a slow link; the proxy paces them): 120
    pipelined reads take about 6 s, longer than the session timeout, the pings queued behind them.  The
    session is told SUSPENDED once nothing sent in the last read timeout is answered, but the connection
    stays: every read succeeds, no reconnect, and the ping answered after the backlog confirms the same
    session again (CONNECTED)."""
    async with open_fault_proxy(*first_server(zk_hosts)) as proxy:
        async with zkwire.open_client(proxy.hosts, session_timeout=4.0) as zk:
            await zk.create(zk_path, b"x")
            session = zk.session_id
            timeout = zk.session_timeout
            assert timeout is not None
            states: list[zkwire.SessionState] = []
            zk.add_state_listener(states.append)
            proxy.set_pace(0.05)
            started = trio.current_time()
            with trio.fail_after(60):
                results = await zk.pipeline([zkwire.GetData(zk_path) for _ in range(120)])
            took = trio.current_time() - started
            assert [r if isinstance(r, zkwire.ZKError) else r[0] for r in results] == [b"x"] * 120
            assert took > timeout, f"the replies drained in {took:.2f}s: nothing was tested"
            proxy.set_pace(0)
            with trio.fail_after(timeout):
                while zk.state is not zkwire.SessionState.CONNECTED:
                    await trio.sleep(0.05)
            assert states == [zkwire.SessionState.SUSPENDED, zkwire.SessionState.CONNECTED]
            assert zk.session_id == session
            assert proxy.connections == 1
