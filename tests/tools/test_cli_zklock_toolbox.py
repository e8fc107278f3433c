"""``zklock status`` on the paths of the coordination toolbox, written by zklock and by kazoo."""

from __future__ import annotations

import datetime
import json

import trio
from helpers.interop import kazoo_client
from test_cli_zklock import zkl

import zklock
import zkwire


async def test_status_describes_every_toolbox_layout(zk_hosts: str, zk_path: str) -> None:
    async with zkwire.open_client(zk_hosts) as zk, kazoo_client(zk_hosts) as kz:
        queue = zklock.LockingQueue(zk, f"{zk_path}/jobs")
        await queue.put(b"a", priority=1)
        await queue.put(b"b", priority=2)
        assert await queue.get() == b"a"
        plain = zklock.Queue(zk, f"{zk_path}/plain")
        await plain.put(b"x", priority=7)
        await trio.to_thread.run_sync(lambda: kz.Queue(f"{zk_path}/plain").put(b"y", priority=7))
        await zklock.SharedCount(zk, f"{zk_path}/count", seed=41).add(1)
        await zklock.Counter(zk, f"{zk_path}/kcount", 2.5).add(0.5)
        hour = datetime.timedelta(hours=1)
        assert await zklock.non_blocking_lease(zk, f"{zk_path}/lease", hour, identifier="host-a")
        discovery = zklock.ServiceDiscovery(zk, f"{zk_path}/services")
        instance = zklock.ServiceInstance("api", id="i1", address="10.0.0.1", port=80)
        async with zklock.Party(zk, f"{zk_path}/party", "p1"), zklock.ShallowParty(zk, f"{zk_path}/sparty", "s1"):
            async with discovery.registration(instance) as registration:
                await registration.wait_registered()
                expected = {
                    "jobs": f"{zk_path}/jobs: locking queue, 2 items, 1 taken",
                    "plain": f"{zk_path}/plain: queue (kazoo layout), 2 items (priority 007: 2)",
                    "count": f"{zk_path}/count: counter, 42 (int32), version 1",
                    "kcount": f"{zk_path}/kcount: counter, 3.0 (text), version 1",
                    "party": f"{zk_path}/party: party of 1: p1",
                    "sparty": f"{zk_path}/sparty: shallow party of 1: s1",
                    "services": f"{zk_path}/services: service discovery, 1 services",
                }
                for name, first_line in expected.items():
                    r = await zkl("status", zk_hosts, f"{zk_path}/{name}")
                    assert (r.code, r.out.splitlines()[0]) == (0, first_line), (name, r.out, r.err)
                r = await zkl("status", zk_hosts, f"{zk_path}/lease")
                assert r.out.startswith(f"{zk_path}/lease: timed lease held by host-a until ")
                r = await zkl("status", zk_hosts, "--json", f"{zk_path}/services/api")
                doc = json.loads(r.out)
                assert (doc["recipe"], doc["instances"]) == ("service", ["i1"])
                r = await zkl("status", zk_hosts, "--json", f"{zk_path}/jobs")
                doc = json.loads(r.out)
                assert doc["recipe"] == "locking queue" and list(doc["taken"].values()) == [queue.id.decode()]
        async with zklock.SetPartitioner(zk, f"{zk_path}/parts", [1, 2], identifier="w1", time_boundary=0) as parts:
            await parts.__anext__()
            r = await zkl("status", zk_hosts, f"{zk_path}/parts")
            assert r.out.splitlines() == [
                f"{zk_path}/parts: partitioner, 1 members: w1",
                "  partition 1: w1",
                "  partition 2: w1",
            ], r.out
