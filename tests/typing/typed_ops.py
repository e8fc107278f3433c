"""User code calling the ops that have overloads: each call's result is the overload's, not the union."""

from __future__ import annotations

from typing import Any, assert_type

import zkwire
from zkwire import ACL, Stat, Watch, ZKError


async def reads(zk: zkwire.Client) -> None:
    assert_type(await zk.get_data("/a"), tuple[bytes, Stat])
    assert_type(await zk.get_data("/a", watch=False), tuple[bytes, Stat])
    assert_type(await zk.get_data("/a", watch=True), tuple[bytes, Stat, Watch])
    data, stat = await zk.get_data("/a")
    assert_type((data, stat), tuple[bytes, Stat])
    data, stat, watch = await zk.get_data("/a", watch=True)
    assert_type((data, stat, watch), tuple[bytes, Stat, Watch])
    _, _, watch = await zk.get_data("/a")  # type: ignore[misc]  # two values, not three

    assert_type(await zk.exists("/a"), Stat | None)
    assert_type(await zk.exists("/a", watch=False), Stat | None)
    assert_type(await zk.exists("/a", watch=True), tuple[Stat | None, Watch])

    assert_type(await zk.get_children("/a"), list[str])
    assert_type(await zk.get_children("/a", sort=False), list[str])
    assert_type(await zk.get_children("/a", watch=True), tuple[list[str], Watch])
    assert_type(await zk.get_children("/a", watch=True, sort=False), tuple[list[str], Watch])
    (await zk.get_children("/a")).no_such_method()  # type: ignore[attr-defined]

    assert_type(await zk.get_children_with_stat("/a"), tuple[list[str], Stat])
    assert_type(await zk.get_children_with_stat("/a", watch=True), tuple[list[str], Stat, Watch])
    assert_type(await zk.get_acl("/a"), tuple[list[ACL], Stat])
    await zk.get_data(b"/a")  # type: ignore[call-overload]  # paths are str


async def writes(zk: zkwire.Client) -> None:
    assert_type(await zk.create("/a"), str)
    assert_type(await zk.create("/a", b"x", ephemeral=True, sequential=True), str)
    assert_type(await zk.create("/a", container=True), str)
    assert_type(await zk.create("/a", ttl=1000), str)
    assert_type(await zk.create_with_stat("/a", b"x", ephemeral=True), tuple[str, Stat])
    assert_type(await zk.set_data("/a", b"x", version=1), Stat)
    assert_type(await zk.delete("/a"), None)
    assert_type(await zk.ensure_path("/a/b"), bool)
    assert_type(await zk.delete_recursive("/a"), int)
    assert_type(await zk.multi([zkwire.Create("/a"), zkwire.Delete("/b")]), list[str | Stat | None])
    assert_type(await zk.transaction().create("/a").set_data("/b", b"").commit(), list[str | Stat | None])
    await zk.create("/a", "text")  # type: ignore[arg-type]  # data is bytes


async def pipelines(zk: zkwire.Client) -> None:
    assert_type(await zk.pipeline([zkwire.GetData("/a")]), list[tuple[bytes, Stat] | ZKError])
    assert_type(await zk.pipeline([zkwire.GetChildren("/a")]), list[list[str] | tuple[list[str], Stat] | ZKError])
    assert_type(await zk.pipeline([zkwire.Create("/a")]), list[tuple[str, Stat] | ZKError])
    assert_type(await zk.pipeline([zkwire.SetData("/a", b"")]), list[Stat | ZKError])
    assert_type(await zk.pipeline([zkwire.Delete("/a")]), list[ZKError | None])
    assert_type(await zk.pipeline([zkwire.Delete("/a"), zkwire.GetData("/b")]), list[Any])
