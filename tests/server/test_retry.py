"""zkwire.client.retry: transient errors retried with back-off and jitter, within the caller's cancel scope."""

from __future__ import annotations

import random

import pytest
import trio
from helpers.addresses import first_server

import zkwire
from zkwire.client.retry import RetryPolicy, retry, retry_with
from zkwire.constants import OpCode


def test_delay_is_full_jitter_capped() -> None:
    policy = RetryPolicy(initial_delay=0.1, max_delay=1.0, multiplier=2.0)
    rng = random.Random(1)
    for attempt in range(12):
        cap = min(1.0, 0.1 * 2**attempt)
        for _ in range(50):
            assert 0.0 <= policy.delay(attempt, rng) <= cap
    assert max(policy.delay(30, rng) for _ in range(200)) > 0.5  # it does grow to the cap


async def test_transient_errors_are_retried_until_success() -> None:
    calls = 0

    async def flaky(x: int) -> int:
        nonlocal calls
        calls += 1
        if calls < 4:
            raise [zkwire.ConnectionLossError, zkwire.ThrottledOpError, zkwire.OperationTimeoutError][calls - 1]()
        return x * 2

    assert await retry_with(RetryPolicy(initial_delay=0.001), flaky, 21) == 42
    assert calls == 4


@pytest.mark.parametrize("error", [zkwire.SessionExpiredError, zkwire.ClientClosedError, zkwire.AuthFailedError])
async def test_final_errors_are_never_retried(error: type[zkwire.ZKError]) -> None:
    calls = 0

    async def gone() -> None:
        nonlocal calls
        calls += 1
        raise error()

    # Even a policy that asks for every ZKError to be retried.
    with pytest.raises(error):
        await retry_with(RetryPolicy(initial_delay=0.001, retry_on=(zkwire.ZKError,)), gone)
    assert calls == 1


async def test_other_errors_pass_through_and_max_attempts() -> None:
    calls = 0

    async def missing() -> None:
        nonlocal calls
        calls += 1
        raise zkwire.NoNodeError("/x")

    with pytest.raises(zkwire.NoNodeError):
        await retry(missing)
    assert calls == 1

    async def lossy() -> None:
        nonlocal calls
        calls += 1
        raise zkwire.ConnectionLossError("/x")

    calls = 0
    with pytest.raises(zkwire.ConnectionLossError):
        await retry_with(RetryPolicy(initial_delay=0.001, max_attempts=3), lossy)
    assert calls == 3


async def test_the_deadline_is_the_callers_cancel_scope() -> None:
    calls = 0

    async def lossy() -> None:
        nonlocal calls
        calls += 1
        raise zkwire.ConnectionLossError()

    start = trio.current_time()
    with trio.move_on_after(0.3) as scope:
        await retry_with(RetryPolicy(initial_delay=0.01, max_delay=0.05), lossy)
    assert scope.cancelled_caught
    assert 0.29 <= trio.current_time() - start < 1.0
    assert calls > 3


async def test_read_retried_through_a_severed_connection(zk_hosts: str, zk_path: str, faultproxy) -> None:
    async with faultproxy.open_fault_proxy(*first_server(zk_hosts)) as proxy:
        async with zkwire.open_client(proxy.hosts, session_timeout=6) as zk:
            await zk.create(zk_path, b"v1")
            rule = proxy.drop_request(op=OpCode.GET_DATA, path_prefix=zk_path)
            with pytest.raises(zkwire.ConnectionLossError):
                await zk.get_data(zk_path)
            assert rule.triggered
            rule = proxy.drop_request(op=OpCode.GET_DATA, path_prefix=zk_path)
            with trio.fail_after(10):
                data, _ = await retry(zk.get_data, zk_path)
            assert rule.triggered and data == b"v1"


async def test_unconditional_set_data_retried_after_a_lost_reply(zk_hosts: str, zk_path: str, faultproxy) -> None:
    async with faultproxy.open_fault_proxy(*first_server(zk_hosts)) as proxy:
        async with zkwire.open_client(proxy.hosts, session_timeout=6) as zk:
            await zk.create(zk_path, b"v1")
            lost = proxy.swallow_reply(op=OpCode.SET_DATA, path_prefix=zk_path)
            with trio.fail_after(10):
                stat = await retry(zk.set_data, zk_path, b"v2")
            assert lost.triggered
            assert stat.version == 2  # applied twice, same data
            assert (await zk.get_data(zk_path))[0] == b"v2"
