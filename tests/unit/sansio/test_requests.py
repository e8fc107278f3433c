"""The request builders of zkwire.sansio.requests, without a server: arguments -> op code, record, path,
watch registration, and reply bodies -> results."""

from __future__ import annotations

import pytest
from helpers.fakeserver import STAT

from zkwire.constants import AddWatchMode, CreateMode, EventType, OpCode, WatcherType
from zkwire.errors import (
    BadVersionError,
    DataTooLargeError,
    InvalidArgumentError,
    InvalidPathError,
    NodeExistsError,
    NoNodeError,
    RuntimeInconsistencyError,
)
from zkwire.protocol.multi import MultiResponse, MultiResult
from zkwire.protocol.records import (
    AddWatchRequest,
    CheckVersionRequest,
    Create2Response,
    CreateRequest,
    CreateResponse,
    CreateTTLRequest,
    DeleteRequest,
    ErrorResponse,
    ExistsRequest,
    ExistsResponse,
    GetChildren2Request,
    GetChildren2Response,
    GetChildrenRequest,
    GetChildrenResponse,
    GetDataRequest,
    GetDataResponse,
    GetEphemeralsResponse,
    SetDataRequest,
    SetDataResponse,
    SyncResponse,
)
from zkwire.sansio.ops import Check, Create, Delete, GetChildren, GetData, SetData, create_op
from zkwire.sansio.requests import (
    RequestBuilder,
    check_watcher_type,
    child_names,
    removed_watch_kinds,
    sorted_names,
)
from zkwire.sansio.watches import WatchKind, WatchRegistry


def builder(chroot: str = "", max_frame: int = 1 << 20) -> RequestBuilder[str]:
    return RequestBuilder(chroot, WatchRegistry[str](), max_frame)


def test_get_data_without_and_with_a_watch() -> None:
    b = builder("/app")
    req = b.get_data("/a")
    assert (req.op, req.record, req.path, req.watch) == (
        OpCode.GET_DATA,
        GetDataRequest("/app/a", False),
        "/app/a",
        None,
    )
    assert req.convert(GetDataResponse(None, STAT)) == (b"", STAT)  # null data reads as b""
    watched = b.get_data("/a", "w")
    assert watched.record == GetDataRequest("/app/a", True)
    assert watched.watch is not None
    assert (watched.watch.kind, watched.watch.path, watched.watch.watcher) == (WatchKind.DATA, "/app/a", "w")


def test_a_watch_covered_by_a_persistent_one_is_kept_locally_only() -> None:
    b = builder()
    b.watches.add(WatchKind.PERSISTENT, "/a", "p")
    for req in (b.get_data("/a", "w"), b.exists("/a", "w")):
        assert req.record in (GetDataRequest("/a", False), ExistsRequest("/a", False))
        assert req.watch is not None  # still registered locally
    b.watches.add(WatchKind.RECURSIVE, "/r", "p")
    assert b.get_data("/r/x", "w").record == GetDataRequest("/r/x", True)  # recursive covers ancestors' events
    assert b.get_data("/r", "w").record == GetDataRequest("/r", False)
    assert b.get_children("/r", "w").record == GetChildrenRequest("/r", True)  # no child events from recursive


def test_a_watch_on_a_path_too_long_to_re_register_is_refused() -> None:
    b = builder(max_frame=1024)
    path = "/" + "x" * 2000
    b.get_data(path)  # no watch: fine
    with pytest.raises(DataTooLargeError):
        b.get_data(path, "w")
    with pytest.raises(DataTooLargeError):
        b.add_watch(path, "w", recursive=False)


def test_children_sorted_or_in_server_order() -> None:
    b = builder()
    body = GetChildrenResponse(("b", None, "a"))
    assert b.get_children("/p").convert(body) == ["a", "b"]
    assert b.get_children("/p", sort=False).convert(body) == ["b", "a"]
    req = b.get_children2("/p", "w")
    assert req.record == GetChildren2Request("/p", True) and req.op == OpCode.GET_CHILDREN2
    assert req.convert(GetChildren2Response(("z", "y"), STAT)) == (["y", "z"], STAT)
    assert sorted_names(None) == [] and child_names(("q", "p")) == ["q", "p"]
    # Only a null is dropped: an empty name (no server sends one either) is a name.
    assert child_names(["q", "", None, "p"]) == ["q", "", "p"] and sorted_names(["q", "", None]) == ["", "q"]
    names = ["q", "p"]
    assert child_names(names) is names  # a list without nulls is handed back, not copied


@pytest.mark.parametrize("ephemeral", [False, True, 0, 1])
@pytest.mark.parametrize("sequential", [False, True, 0, 1])
def test_create_op_picks_the_mode_of_each_flag_combination(ephemeral: bool, sequential: bool) -> None:
    op, mode = create_op(ephemeral=ephemeral, sequential=sequential, container=False, ttl=None)
    assert op == OpCode.CREATE and type(mode) is CreateMode
    assert mode.is_ephemeral == bool(ephemeral) and mode.is_sequential == bool(sequential)
    assert mode.value == (1 if ephemeral else 0) | (2 if sequential else 0)  # the server's flag bits


def test_create_ops_and_results() -> None:
    b = builder("/app")
    req = b.create(Create("/n", b"d", ephemeral=True))
    assert req.op == OpCode.CREATE and isinstance(req.record, CreateRequest)
    assert req.record.flags == CreateMode.EPHEMERAL and req.record.path == "/app/n"
    assert req.convert(CreateResponse("/app/n")) == ("/n", None)
    assert b.create(Create("/n"), with_stat=True).op == OpCode.CREATE2
    assert b.create(Create("/n", container=True), with_stat=True).op == OpCode.CREATE_CONTAINER
    ttl = b.create(Create("/n", ttl=1000))
    assert ttl.op == OpCode.CREATE_TTL and isinstance(ttl.record, CreateTTLRequest)
    assert ttl.convert(Create2Response("/app/n", STAT)) == ("/n", STAT)
    seq = b.create(Create("/", sequential=True))
    assert seq.path == "/app/"  # children of the chroot, not siblings of it
    with pytest.raises(InvalidArgumentError):
        b.create(Create("/n", ephemeral=True, ttl=5))
    with pytest.raises(InvalidArgumentError):
        b.create(Create("/n", "text"))  # type: ignore[arg-type]
    with pytest.raises(InvalidPathError):
        b.create(Create("no-slash"))


def test_writes_check_versions() -> None:
    b = builder()
    assert b.delete(Delete("/a", 3)).record == DeleteRequest("/a", 3)
    assert b.set_data(SetData("/a", b"x")).record == SetDataRequest("/a", b"x", -1)
    assert b.set_data(SetData("/a", b"x")).convert(SetDataResponse(STAT)) == STAT
    assert b.check(Check("/a", 2)).record == CheckVersionRequest("/a", 2)
    with pytest.raises(InvalidArgumentError):
        b.delete(Delete("/a", True))  # type: ignore[arg-type]


def test_exists_sync_ephemerals_strip_the_chroot() -> None:
    b = builder("/app")
    assert b.exists("/a").convert(ExistsResponse(STAT)) == STAT
    assert b.sync("/a").convert(SyncResponse("/app/a")) == "/a"
    assert b.get_ephemerals("/").path == "/app"
    assert b.get_ephemerals("/").convert(GetEphemeralsResponse(("/app/z", "/app/b"))) == ["/b", "/z"]
    assert builder().get_ephemerals("/").path == ""  # the whole tree


def test_pipelined_ops_are_the_same_requests() -> None:
    b = builder()
    assert b.pipelined(GetData("/a")) == b.get_data("/a")
    assert b.pipelined(GetChildren("/a", with_stat=True, sort=False)).op == OpCode.GET_CHILDREN2
    assert b.pipelined(Create("/a")).op == OpCode.CREATE2  # a pipelined create returns (path, stat)
    assert b.pipelined(Delete("/a")).convert(None) is None
    with pytest.raises(InvalidArgumentError, match="not an op for pipeline"):
        b.pipelined(Check("/a", 1))


def test_multi_results_and_failure() -> None:
    b = builder("/app")
    req = b.multi([Create("/a"), SetData("/b", b"x"), Delete("/c"), Check("/d", 1)])
    assert req is not None and req.op == OpCode.MULTI
    assert [sub.op for sub in req.record.ops] == [OpCode.CREATE, OpCode.SET_DATA, OpCode.DELETE, OpCode.CHECK]  # type: ignore[union-attr]
    ok = MultiResponse(
        (
            MultiResult(OpCode.CREATE, 0, CreateResponse("/app/a")),
            MultiResult(OpCode.SET_DATA, 0, SetDataResponse(STAT)),
            MultiResult(OpCode.DELETE, 0, None),
            MultiResult(OpCode.CHECK, 0, None),
        )
    )
    assert req.convert(ok) == ["/a", STAT, None, None]
    failed = MultiResponse(
        (
            MultiResult(OpCode.ERROR, 0, ErrorResponse(0)),
            MultiResult(OpCode.ERROR, NodeExistsError.code, ErrorResponse(NodeExistsError.code)),
            MultiResult(OpCode.ERROR, RuntimeInconsistencyError.code, ErrorResponse(RuntimeInconsistencyError.code)),
            MultiResult(OpCode.ERROR, BadVersionError.code, ErrorResponse(BadVersionError.code)),
        )
    )
    with pytest.raises(NodeExistsError) as info:
        req.convert(failed)
    assert info.value.path == "/b"
    assert len(info.value.results) == 4
    assert b.multi([]) is None
    with pytest.raises(InvalidArgumentError, match="not a write op"):
        b.multi([GetData("/a")])  # type: ignore[list-item]


def test_multi_read_results() -> None:
    b = builder()
    req = b.multi_read([GetData("/a"), GetChildren("/b"), GetData("/c")])
    assert req is not None and req.op == OpCode.MULTI_READ
    body = MultiResponse(
        (
            MultiResult(OpCode.GET_DATA, 0, GetDataResponse(None, STAT)),
            MultiResult(OpCode.GET_CHILDREN, 0, GetChildrenResponse(("y", "x"))),
            MultiResult(OpCode.ERROR, NoNodeError.code, ErrorResponse(NoNodeError.code)),
        )
    )
    data, names, error = req.convert(body)
    assert data == (b"", STAT) and names == ["x", "y"]
    assert isinstance(error, NoNodeError) and error.path == "/c"
    assert b.multi_read([]) is None
    with pytest.raises(InvalidArgumentError):
        b.multi_read([Delete("/a")])  # type: ignore[list-item]


def test_watch_administration() -> None:
    b = builder()
    req = b.add_watch("/a", "p", recursive=True)
    assert req.record == AddWatchRequest("/a", AddWatchMode.PERSISTENT_RECURSIVE)
    assert req.watch is not None and req.watch.kind is WatchKind.RECURSIVE
    assert req.convert(None) is None
    with pytest.raises(NoNodeError):
        req.convert(ErrorResponse(NoNodeError.code))
    assert b.remove_watches("/a", WatcherType.DATA).op == OpCode.REMOVE_WATCHES
    with pytest.raises(InvalidArgumentError, match="watcher_type"):
        b.check_watches("/a", 9)
    with pytest.raises(InvalidArgumentError):
        check_watcher_type(True)
    assert [k for k, _ in removed_watch_kinds(WatcherType.CHILDREN)] == [WatchKind.CHILD]
    assert removed_watch_kinds(WatcherType.DATA) == [
        (WatchKind.DATA, EventType.DATA_WATCH_REMOVED),
        (WatchKind.EXIST, EventType.DATA_WATCH_REMOVED),
    ]
    assert len(removed_watch_kinds(WatcherType.ANY)) == 5


def test_reconfig_and_who_am_i() -> None:
    b = builder()
    config = b.reconfig("server.4=h:1:2;3", None, None, -1).convert(
        GetDataResponse(b"server.4=h:1:2;h:3\nversion=a", STAT)
    )
    assert config.version == 10 and config.member(4) is not None and config.stat == STAT
    with pytest.raises(InvalidArgumentError, match="joining"):
        b.reconfig("\ud800", None, None, -1)
    with pytest.raises(InvalidArgumentError, match="from_config"):
        b.reconfig(None, None, None, 1 << 63)
    assert b.who_am_i().record is None
