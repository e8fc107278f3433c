"""Service discovery on one base path with Curator 5.4's curator-x-discovery (Debian's
libcurator-discovery-java): each side finds the other's instances, and sees updates and removals."""

from __future__ import annotations

import json

import pytest
import trio
from helpers.curator import CuratorDiscovery, curator_discovery
from helpers.sessiontools import expire

import zklock
import zkwire


async def _eventually_java(java: CuratorDiscovery, command: str, service: str, expected: list[str]) -> None:
    with trio.fail_after(15):
        while (got := await java.instances(command, service)) != expected:
            await trio.sleep(0.05)
    assert got == expected


async def _eventually_ours(cache: zklock.ServiceCache, expected: list[tuple[str, int | None, object]]) -> None:
    def now() -> list[tuple[str, int | None, object]]:
        return [(i.id, i.port, i.payload) for i in cache.instances]

    with trio.fail_after(15):
        while now() != expected:
            await trio.sleep(0.05)


async def test_each_side_finds_updates_and_loses_the_others_instances(
    zk_hosts: str, zk_path: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    base = f"{zk_path}/services"
    async with curator_discovery(tmp_path_factory, zk_hosts, base) as java, zkwire.open_client(zk_hosts) as zk:
        discovery = zklock.ServiceDiscovery(zk, base)
        await java.ask("register", "api", "java-1", "10.0.0.1", 8080, "eu")
        java_seen = await discovery.query_for_instance("api", "java-1")
        assert java_seen is not None
        assert (java_seen.address, java_seen.port, java_seen.payload) == ("10.0.0.1", 8080, {"zone": "eu"})
        assert java_seen.payload_class == "java.util.HashMap" and java_seen.service_type == "DYNAMIC"
        async with discovery.open_cache("api") as cache:
            mine = zklock.ServiceInstance("api", id="py-1", address="10.0.0.2", port=9090, payload={"zone": "us"})
            async with discovery.registration(mine) as registration:
                with trio.fail_after(10):
                    await registration.wait_registered()
                expected_java = ["java-1@10.0.0.1:8080/eu", "py-1@10.0.0.2:9090/us"]
                assert await java.instances("query", "api") == expected_java
                await _eventually_java(java, "cache", "api", expected_java)
                await _eventually_ours(cache, [("java-1", 8080, {"zone": "eu"}), ("py-1", 9090, {"zone": "us"})])
                assert await java.ask("names") == "NAMES api"
                assert await discovery.query_for_names() == ["api"]
                # Updates both ways.
                await registration.update(
                    zklock.ServiceInstance("api", id="py-1", address="10.0.0.2", port=9191, payload={"zone": "us"})
                )
                await java.ask("update", "api", "java-1", "10.0.0.1", 8181, "eu")
                await _eventually_java(java, "cache", "api", ["java-1@10.0.0.1:8181/eu", "py-1@10.0.0.2:9191/us"])
                await _eventually_ours(cache, [("java-1", 8181, {"zone": "eu"}), ("py-1", 9191, {"zone": "us"})])
                # Curator's provider hands out ours too.
                picked = {(await java.ask("provider", "api", "round-robin")).split()[1] for _ in range(4)}
                assert picked == {"java-1", "py-1"}
                provider = zklock.ServiceProvider(cache)
                assert {provider.get_instance().id for _ in range(4)} == {"java-1", "py-1"}  # type: ignore[union-attr]
                # Removals both ways.
                await java.ask("unregister", "api", "java-1")
                await _eventually_ours(cache, [("py-1", 9191, {"zone": "us"})])
            await _eventually_java(java, "cache", "api", [])
            assert await discovery.query_for_instances("api") == []


async def test_our_json_is_curators(zk_hosts: str, zk_path: str) -> None:
    """The node holds Curator's fields in Curator's order, the dict payload tagged for Jackson."""
    async with zkwire.open_client(zk_hosts) as zk:
        discovery = zklock.ServiceDiscovery(zk, f"{zk_path}/services")
        instance = zklock.ServiceInstance(
            "api",
            id="i",
            address="h",
            port=1,
            payload={"k": "v"},
            registration_time_utc=5,
            uri_spec=zklock.UriSpec((("{scheme}://", True), ("x", False))),
        )
        async with discovery.registration(instance) as registration:
            path = await registration.wait_registered()
            data, stat = await zk.get_data(path)
        obj = json.loads(data)
        assert list(obj) == [
            "name",
            "id",
            "address",
            "port",
            "sslPort",
            "payload",
            "registrationTimeUTC",
            "serviceType",
            "uriSpec",
        ]
        assert obj["payload"] == {"@class": "java.util.HashMap", "k": "v"} and stat.ephemeral_owner == zk.session_id
        assert zklock.ServiceInstance.from_json(data) == instance
        with pytest.raises(zklock.InstanceDataError):
            zklock.ServiceInstance.from_json(b'{"name": "api"}')
        with pytest.raises(zklock.InstanceDataError):
            zklock.ServiceInstance.from_json(b"\xff")
        with pytest.raises(zkwire.InvalidArgumentError):
            zklock.ServiceInstance("a/b")


async def test_a_registration_is_back_after_expiry_and_curator_sees_it(
    zk_hosts: str, zk_path: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    base = f"{zk_path}/services"
    async with curator_discovery(tmp_path_factory, zk_hosts, base) as java:
        async with zkwire.sessions(zk_hosts, session_timeout=4) as stream:
            discovery = zklock.ServiceDiscovery(stream, base)
            async with discovery.registration(zklock.ServiceInstance("api", id="py", address="a", port=1)) as reg:
                with trio.fail_after(10):
                    await reg.wait_registered()
                await _eventually_java(java, "cache", "api", ["py@a:1/null"])
                old = stream.current
                assert old is not None
                await expire(old, zk_hosts)
                with trio.fail_after(15):
                    while stream.current is old:
                        await trio.sleep(0.05)
                    await reg.wait_registered()
                await _eventually_java(java, "cache", "api", ["py@a:1/null"])
