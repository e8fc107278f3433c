"""The peers of bench/run.py: each metric of each Python client, run in a child process of its own.

Every function takes (hosts, path, n) and returns a dict of figures.  ``path`` names an existing node
holding 100 bytes; lock metrics work under ``path``.
"""

from __future__ import annotations

import asyncio
import socket
import struct
import threading
import time
from collections.abc import Callable
from typing import Any

Result = dict[str, float]


def _pcts(lat: list[float]) -> Result:
    lat.sort()
    return {"p50_us": lat[len(lat) // 2] * 1e6, "p99_us": lat[int(len(lat) * 0.99)] * 1e6}


# ------------------------------------------------------------------------------------------- zkwire


def zkwire_run(metric: str, hosts: str, path: str, n: int) -> Result:
    import trio

    import zklock
    import zkwire

    async def main() -> Result:
        async with zkwire.open_client(hosts) as zk:
            if metric == "seq":
                for _ in range(n // 2):
                    await zk.get_data(path)
                lat = []
                for _ in range(n):
                    t = time.perf_counter()
                    await zk.get_data(path)
                    lat.append(time.perf_counter() - t)
                return _pcts(lat)
            if metric == "pipelined":

                async def worker(k: int) -> None:
                    for _ in range(k):
                        await zk.get_data(path)

                best = 0.0
                for _ in range(2):  # the first pass warms up
                    t = time.perf_counter()
                    async with trio.open_nursery() as nursery:
                        for _ in range(128):
                            nursery.start_soon(worker, n // 128)
                    best = (n // 128 * 128) / (time.perf_counter() - t)
                return {"ops_per_s": best}
            if metric == "create_delete":
                t = time.perf_counter()
                for _ in range(n):
                    p = await zk.create(f"{path}/cd-", ephemeral=True, sequential=True)
                    await zk.delete(p)
                return {"ops_per_s": n / (time.perf_counter() - t)}
            if metric == "lock_cycle":
                mutex = zklock.Mutex(zk, f"{path}/zklock-cycle")
                for _ in range(n // 2):
                    async with mutex:
                        pass
                t = time.perf_counter()
                for _ in range(n):
                    async with mutex:
                        pass
                return {"ms": (time.perf_counter() - t) / n * 1e3}
            if metric == "contended":
                seconds = n / 1000
                grants = 0
                async with zkwire.open_client(hosts) as zk2:

                    async def worker(client: zkwire.Client, stop: float) -> None:
                        nonlocal grants
                        mutex = zklock.Mutex(client, f"{path}/zklock-contended")
                        while trio.current_time() < stop:
                            async with mutex:
                                grants += 1

                    stop = trio.current_time() + seconds
                    async with trio.open_nursery() as nursery:
                        for i in range(4):
                            nursery.start_soon(worker, zk if i % 2 else zk2, stop)
                return {"grants_per_s": grants / seconds}
        raise ValueError(metric)

    return trio.run(main)


# ------------------------------------------------------------------------------------------- raw socket


def raw_run(metric: str, hosts: str, path: str, n: int) -> Result:
    """A minimal blocking-socket client: the floor for Python."""
    from zkwire.codec import encode_connect_request, encode_request
    from zkwire.records import ConnectRequest, GetDataRequest

    host, port = hosts.split(",")[0].rsplit(":", 1)
    sock = socket.create_connection((host, int(port)))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    buf = bytearray()

    def frame() -> bytes:
        while True:
            if len(buf) >= 4:
                size = struct.unpack_from(">i", buf)[0]
                if len(buf) >= 4 + size:
                    out = bytes(buf[4 : 4 + size])
                    del buf[: 4 + size]
                    return out
            buf.extend(sock.recv(262144))

    sock.sendall(encode_connect_request(ConnectRequest(0, 0, 10000, 0, bytes(16), False)))
    frame()
    xid = 0

    def request() -> bytes:
        nonlocal xid
        xid += 1
        return bytes(encode_request(xid, 4, GetDataRequest(path, False)))

    if metric == "seq":
        for _ in range(n // 2):
            sock.sendall(request())
            frame()
        lat = []
        for _ in range(n):
            t = time.perf_counter()
            sock.sendall(request())
            frame()
            lat.append(time.perf_counter() - t)
        return _pcts(lat)
    if metric == "pipelined":
        t = time.perf_counter()
        for _ in range(n // 128):
            sock.sendall(b"".join(request() for _ in range(128)))
            for _ in range(128):
                frame()
        return {"ops_per_s": (n // 128 * 128) / (time.perf_counter() - t)}
    raise NotImplementedError(metric)


# ------------------------------------------------------------------------------------------- kazoo


def kazoo_run(metric: str, hosts: str, path: str, n: int) -> Result:
    from kazoo.client import KazooClient

    kz = KazooClient(hosts=hosts)
    kz.start(timeout=20)
    try:
        if metric == "seq":
            for _ in range(n // 2):
                kz.get(path)
            lat = []
            for _ in range(n):
                t = time.perf_counter()
                kz.get(path)
                lat.append(time.perf_counter() - t)
            return _pcts(lat)
        if metric == "pipelined":
            t = time.perf_counter()
            window: list[Any] = []
            for _ in range(n):
                window.append(kz.get_async(path))
                if len(window) >= 128:
                    window.pop(0).get()
            for r in window:
                r.get()
            return {"ops_per_s": n / (time.perf_counter() - t)}
        if metric == "create_delete":
            t = time.perf_counter()
            for _ in range(n):
                p = kz.create(f"{path}/cd-", ephemeral=True, sequence=True)
                kz.delete(p)
            return {"ops_per_s": n / (time.perf_counter() - t)}
        if metric == "lock_cycle":
            lock = kz.Lock(f"{path}/kazoo-cycle")
            for _ in range(n // 2):
                with lock:
                    pass
            t = time.perf_counter()
            for _ in range(n):
                with lock:
                    pass
            return {"ms": (time.perf_counter() - t) / n * 1e3}
        if metric == "contended":
            seconds = n / 1000
            kz2 = KazooClient(hosts=hosts)
            kz2.start(timeout=20)
            grants = [0]
            stop = time.monotonic() + seconds

            def worker(client: KazooClient) -> None:
                lock = client.Lock(f"{path}/kazoo-contended")
                while time.monotonic() < stop:
                    with lock:
                        grants[0] += 1

            threads = [threading.Thread(target=worker, args=(kz if i % 2 else kz2,)) for i in range(4)]
            for th in threads:
                th.start()
            for th in threads:
                th.join()
            kz2.stop()
            kz2.close()
            return {"grants_per_s": grants[0] / seconds}
        raise ValueError(metric)
    finally:
        kz.stop()
        kz.close()


# ------------------------------------------------------------------------------------------- aiozk


def aiozk_run(metric: str, hosts: str, path: str, n: int) -> Result:
    from aiozk import ZKClient

    async def main() -> Result:
        zk = ZKClient(hosts)
        await zk.start()
        try:
            if metric == "seq":
                for _ in range(n // 2):
                    await zk.get_data(path)
                lat = []
                for _ in range(n):
                    t = time.perf_counter()
                    await zk.get_data(path)
                    lat.append(time.perf_counter() - t)
                return _pcts(lat)
            if metric == "pipelined":

                async def worker(k: int) -> None:
                    for _ in range(k):
                        await zk.get_data(path)

                t = time.perf_counter()
                await asyncio.gather(*(worker(n // 128) for _ in range(128)))
                return {"ops_per_s": (n // 128 * 128) / (time.perf_counter() - t)}
            if metric == "create_delete":
                t = time.perf_counter()
                for _ in range(n):
                    p = await zk.create(f"{path}/cd-", ephemeral=True, sequential=True)
                    await zk.delete(p)
                return {"ops_per_s": n / (time.perf_counter() - t)}
            if metric == "lock_cycle":
                lock = zk.recipes.Lock(f"{path}/aiozk-cycle")
                for _ in range(n // 2):
                    async with lock:
                        pass
                t = time.perf_counter()
                for _ in range(n):
                    async with lock:
                        pass
                return {"ms": (time.perf_counter() - t) / n * 1e3}
            raise NotImplementedError(metric)
        finally:
            await zk.close()

    return asyncio.run(main())


PEERS: dict[str, Callable[[str, str, str, int], Result]] = {
    "zkwire": zkwire_run,
    "raw": raw_run,
    "kazoo": kazoo_run,
    "aiozk": aiozk_run,
}
