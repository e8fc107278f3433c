"""The ensemble follower against a server whose configuration node misbehaves: garbage, a member given
twice, no client address any more, a version going backwards.  Each is refused with an
EnsembleConfigWarning, the host list applied before is kept, the session carries on; a newer good
configuration is applied after them."""

from __future__ import annotations

import warnings
from collections.abc import Awaitable, Callable

import pytest
import trio
from helpers.fakeserver import STAT, ClientRequest
from helpers.hostileserver import HostileConnection, Script, bounded, honest, open_hostile_server, reply_for

import zkwire
from zkwire import EventType, HostPort, SessionState
from zkwire.client.ensemble import EnsembleFollower
from zkwire.constants import OpCode
from zkwire.protocol.records import GetDataRequest, GetDataResponse
from zkwire.sansio.ensemble import EnsembleConfigWarning


def member_lines(port: int, *others: int) -> str:
    lines = [f"server.1=127.0.0.1:1:2:participant;127.0.0.1:{port}"]
    lines += [f"server.{i + 2}=127.0.0.1:1:2:participant;127.0.0.1:{p}" for i, p in enumerate(others)]
    return "\n".join(lines)


ConfigAnswer = Callable[[HostileConnection, ClientRequest], Awaitable[None]]


def config_server(answer: ConfigAnswer) -> Script:
    """An honest server whose reads of the config node are answered by ``answer``."""

    async def script(conn: HostileConnection) -> None:
        if await conn.accept() is None:
            return
        while (req := await conn.request()) is not None:
            if isinstance(req.record, GetDataRequest) and req.record.path == "/zookeeper/config":
                await answer(conn, req)
                continue
            reply = reply_for(req)
            if reply is not None:
                await conn.send(reply)
            if req.op == OpCode.CLOSE_SESSION:
                return

    return script


async def test_hostile_configurations_are_refused_and_the_list_kept() -> None:
    served: list[bytes] = []
    configs: list[bytes] = []

    async def next_config(conn: HostileConnection, req: ClientRequest) -> None:
        data = configs[min(len(served), len(configs) - 1)]
        served.append(data)
        await conn.send(conn.fake.reply(req, GetDataResponse(data, STAT)))
        if len(served) < len(configs):
            await conn.send(conn.fake.event(EventType.NODE_DATA_CHANGED, "/zookeeper/config"))

    async with open_hostile_server(config_server(next_config)) as server:
        port = int(server.hosts.rpartition(":")[2])
        good = f"{member_lines(port, 1001)}\nversion=100".encode()
        configs += [
            good,
            b"\xffgarbage\x00",
            f"{member_lines(port, 1001)}\nserver.2=127.0.0.1:1:2;127.0.0.1:1003\nversion=101".encode(),
            b"server.1=127.0.0.1:1:2:participant\nversion=102",
            f"{member_lines(port, 1005)}\nversion=99".encode(),
            f"{member_lines(port, 1001, 1002)}\nversion=200".encode(),
        ]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            async with bounded(20), zkwire.open_client(server.hosts, move_spread=600) as zk:
                while len(served) < len(configs):
                    await trio.sleep(0.01)
                while zk.ensemble is None or zk.ensemble.version != 0x200:
                    await trio.sleep(0.01)
                assert await zk.get_data("/x") == (b"honest", STAT)  # the session carried on
                hosts = set(zk._core.hosts)
    assert hosts == {HostPort("127.0.0.1", p) for p in (port, 1001, 1002)}
    refused = [str(w.message) for w in caught if issubclass(w.category, EnsembleConfigWarning)]
    assert len(refused) == 4, refused
    assert "cannot be read (the configuration is not UTF-8" in refused[0]
    assert "server.2 is given twice" in refused[1]
    assert "names no client address" in refused[2]
    assert "version 99 is older than 102" in refused[3]
    # Each refusal names the list kept (the one of version 100).
    assert all(f"127.0.0.1:{port}" in r and "127.0.0.1:1001" in r for r in refused)


def config_refusing(err: int, reads: list[float]) -> Script:
    """A server that answers every read of the config node with error ``err``."""

    async def refuse(conn: HostileConnection, req: ClientRequest) -> None:
        reads.append(trio.current_time())
        await conn.send(conn.fake.reply(req, None, err=err))

    return config_server(refuse)


async def test_a_server_refusing_the_configuration_is_asked_again_slowly(caplog: pytest.LogCaptureFixture) -> None:
    """NoAuth, or a ConnectionLoss code answered on a live connection: the follower waits longer after each
    failure (1 s, 2 s, ...), says so once, and the session is not disturbed."""
    for err in (zkwire.NoAuthError.code, zkwire.ConnectionLossError.code):
        reads: list[float] = []
        async with open_hostile_server(config_refusing(err, reads)) as server:
            async with bounded(20), zkwire.open_client(server.hosts) as zk:
                await trio.sleep(3.2)
                assert await zk.get_data("/x") == (b"honest", STAT)
        assert 2 <= len(reads) <= 3, reads  # at 0, ~1 and ~3 s (the waits are jittered down to half)
    warned = [r for r in caplog.records if "reading the ensemble's configuration failed" in r.getMessage()]
    assert len(warned) == 2  # once per kind of failure


async def test_a_host_name_the_resolver_refuses_is_a_server_not_reached() -> None:
    """A configuration naming a host that IDNA 2008 refuses (trio's resolver raises UnicodeError): the
    follower does not die and the client does not crash; the session stays where it is."""
    configs: list[bytes] = []

    async def the_config(conn: HostileConnection, req: ClientRequest) -> None:
        await conn.send(conn.fake.reply(req, GetDataResponse(configs[0], STAT)))

    async with open_hostile_server(config_server(the_config)) as server:
        port = int(server.hosts.rpartition(":")[2])
        configs.append(
            f"server.1=127.0.0.1:1:2;127.0.0.1:{port}\nserver.2=\u2603.example:1:2;\u2603.example:{port}\nversion=1".encode()
        )
        async with bounded(20), zkwire.open_client(server.hosts, move_spread=0) as zk:
            with trio.fail_after(5):
                while zk.ensemble is None:
                    await trio.sleep(0.01)
            await trio.sleep(1.0)  # a move to the snowman, if one was decided, fails and goes on
            assert await zk.get_data("/x") == (b"honest", STAT)
            assert zk.state is SessionState.CONNECTED


async def test_an_unreadable_configuration_keeps_no_watch() -> None:
    async with open_hostile_server(honest) as server:  # answers b"honest" to the config read
        async with bounded(10), zkwire.open_client(server.hosts, follow_ensemble=False) as zk:
            with pytest.raises(zkwire.EnsembleConfigError):
                await zk.get_config(watch=True)
            assert not zk._core.watches


async def test_the_ensemble_shown_is_never_ahead_of_the_host_list(monkeypatch: pytest.MonkeyPatch) -> None:
    """``Client.ensemble`` shows a configuration once its host list is decided: while the follower looks
    up the connect string's names (here held up), the client shows the configuration before it."""
    looking_up, go_on = trio.Event(), trio.Event()
    look_up = EnsembleFollower._aliases

    async def slow_look_up(self: EnsembleFollower) -> dict[HostPort, HostPort]:
        looking_up.set()
        await go_on.wait()
        return await look_up(self)

    monkeypatch.setattr(EnsembleFollower, "_aliases", slow_look_up)
    port = 0

    async def answer(conn: HostileConnection, req: ClientRequest) -> None:
        data = f"{member_lines(port, 1001)}\nversion=100".encode()
        await conn.send(conn.fake.reply(req, GetDataResponse(data, STAT)))

    async with open_hostile_server(config_server(answer)) as server:
        port = int(server.hosts.rpartition(":")[2])
        async with bounded(20), zkwire.open_client(server.hosts, move_spread=600) as zk:
            await looking_up.wait()
            assert zk.ensemble is None
            go_on.set()
            while zk.ensemble is None:
                await trio.sleep(0.01)
            assert set(zk._core.hosts) == {HostPort("127.0.0.1", port), HostPort("127.0.0.1", 1001)}
