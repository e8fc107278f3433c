"""The one-line view: create modes and created paths, auth schemes without credentials, what a SetWatches
re-registers, each sub-result of a multi (a failed multi is not OK), zxids in one notation."""

from __future__ import annotations

import re

from test_capture_decode import _body, _reply

from zkwire.constants import OpCode
from zkwire.protocol.codec import encode_connect_request, encode_request
from zkwire.protocol.multi import MultiOp, MultiRequest, MultiResponse, MultiResult
from zkwire.protocol.records import (
    AuthPacket,
    ConnectRequest,
    Create2Response,
    CreateRequest,
    CreateResponse,
    CreateTTLRequest,
    DeleteRequest,
    ErrorResponse,
    SetDataRequest,
    SetDataResponse,
    SetWatches,
    SetWatches2,
    Stat,
)
from zkwire.trace.decoder import ConversationDecoder, format_frame, format_zxid

STAT = Stat(0x10, 0x2F, 3, 4, 0, 0, 0, 0, 0, 0, 0x31)


def _lines(*exchanges: bytes | tuple[str, bytes]) -> list[str]:
    decoder = ConversationDecoder(handshake=False)
    frames = []
    for item in exchanges:
        direction, data = item if isinstance(item, tuple) else ("client", item)
        frames += decoder.feed(direction, data)
    return [format_frame(f) for f in frames]


def test_create_shows_its_mode_and_the_path_created() -> None:
    request, reply = _lines(
        encode_request(1, OpCode.CREATE, CreateRequest("/q/item-", b"", None, 3)),
        ("server", _reply(1, 0x64, 0, _body(CreateResponse("/q/item-0000000012")))),
    )
    assert "create /q/item- " in request and "[mode ephemeral sequential]" in request
    assert "[created /q/item-0000000012]" in reply
    [ttl] = _lines(encode_request(2, OpCode.CREATE_TTL, CreateTTLRequest("/t", b"", None, 5, 60000)))
    assert "[mode persistent with ttl, ttl 60000 ms]" in ttl
    [container] = _lines(encode_request(3, OpCode.CREATE_CONTAINER, CreateRequest("/c", b"", None, 4)))
    assert "[mode container]" in container


def test_auth_shows_its_scheme_never_its_credential() -> None:
    [line] = _lines(encode_request(-4, OpCode.AUTH, AuthPacket(0, "digest", b"alice:s3cret-pass")))
    assert "[scheme digest]" in line
    assert "s3cret" not in line and "alice" not in line


def test_set_watches_says_what_it_re_registers() -> None:
    [line] = _lines(encode_request(-8, OpCode.SET_WATCHES, SetWatches(0x1F, ("/a", "/b"), ("/c",), ("/d",))))
    assert "[re-registers after zxid 0x1f: data 2 [/a, /b]; exist 1 [/c]; child 1 [/d]]" in line
    [line2] = _lines(
        encode_request(-8, OpCode.SET_WATCHES2, SetWatches2(0, (), (), (), ("/p",), ("/r", "/s"))),
    )
    assert "[re-registers after zxid 0x0: persistent 1 [/p]; recursive 2 [/r, /s]]" in line2
    many = tuple(f"/n{i}" for i in range(50))
    [long] = _lines(encode_request(-8, OpCode.SET_WATCHES, SetWatches(1, many, (), ())))
    assert "data 50 [/n0, " in long and "... 30 more]" in long


def test_each_sub_result_of_a_multi_and_a_failed_multi_is_not_ok() -> None:
    ops = MultiRequest(
        (
            MultiOp(OpCode.CREATE, CreateRequest("/m", b"", None, 2)),
            MultiOp(OpCode.DELETE, DeleteRequest("/x", -1)),
            MultiOp(OpCode.SET_DATA, SetDataRequest("/y", b"", -1)),
        )
    )
    failed = MultiResponse(
        (
            MultiResult(-1, 0, ErrorResponse(0)),
            MultiResult(-1, -101, ErrorResponse(-101)),
            MultiResult(-1, -2, ErrorResponse(-2)),
        )
    )
    ok = MultiResponse(
        (
            MultiResult(1, 0, CreateResponse("/m0000000001")),
            MultiResult(2, 0, None),
            MultiResult(5, 0, SetDataResponse(STAT)),
        )
    )
    lines = _lines(
        encode_request(1, OpCode.MULTI, ops),
        ("server", _reply(1, 0x40, 0, _body(failed))),
        encode_request(2, OpCode.MULTI, ops),
        ("server", _reply(2, 0x41, 0, _body(ok))),
    )
    assert "[ops: create /m (persistent sequential), delete /x, setData /y]" in lines[0]
    assert " OK " not in lines[1] and " FAILED " in lines[1]
    assert "[FAILED: 1 of 3 ops failed: create /m ok, delete /x NONODE, setData /y not run]" in lines[1]
    assert " OK " in lines[3] and "[3 ops ok: create /m0000000001 ok, delete /x ok, setData /y ok]" in lines[3]


def test_zxids_are_written_one_way_everywhere() -> None:
    assert (format_zxid(0), format_zxid(0x1F), format_zxid(-1)) == ("0x0", "0x1f", "-1")
    decoder = ConversationDecoder()
    frames = decoder.feed("client", encode_connect_request(ConnectRequest(0, 0x2A, 10000, 0, bytes(16), False)))
    frames += decoder.feed("server", _reply(5, 0x2B, 0))  # unpaired, before any handshake reply: mid-conversation
    texts = [format_frame(f, verbose=True) for f in frames]
    assert "zxid=0x2a" in texts[0] and "'last_zxid_seen': 0x2a" in texts[0]
    d = ConversationDecoder(handshake=False)
    d.feed("client", encode_request(1, OpCode.CREATE2, CreateRequest("/a", b"", None, 0)))
    [reply] = d.feed("server", _reply(1, 0x30, 0, _body(Create2Response("/a", STAT))))
    text = format_frame(reply, verbose=True)
    assert "zxid=0x30" in text and "'czxid': 0x10" in text and "'mzxid': 0x2f" in text and "'pzxid': 0x31" in text
    # no zxid is written in decimal on the line
    assert not re.search(r"zxid[=:' ]+\d", text.replace("0x", "x"))
