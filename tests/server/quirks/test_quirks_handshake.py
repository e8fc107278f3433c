"""What a ZooKeeper 3.8.0 server really does in the handshake: expired and refused sessions, the length of
the ConnectResponse, the session timeout it grants, a client ahead of it, requests sent before its answer.  Through
helpers/quirks.py: raw sessions, no session logic."""

from __future__ import annotations

import struct

from helpers.quirks import in_thread, server_conf
from helpers.rawwire import RawConn, open_session

from zkwire.constants import OpCode
from zkwire.protocol.codec import encode_connect_request, encode_request
from zkwire.protocol.records import ConnectRequest, ExistsRequest

# ---------------------------------------------------------------------------------------- handshake


EXPIRED_37 = bytes.fromhex("00000025 00000000 00000000 0000000000000000 00000010") + bytes(16) + b"\x00"


async def test_expired_connect_response(zk_hosts: str) -> None:
    def body() -> None:
        without_ro = b"\x00\x00\x00\x24" + EXPIRED_37[4:-1]
        for read_only, expected in ((False, EXPIRED_37), (True, EXPIRED_37), (None, without_ro)):
            with RawConn(zk_hosts) as c:
                resp = c.handshake(session_id=0x0123456789ABCDEF, passwd=b"not-the-password", read_only=read_only)
                assert c.connect_raw == expected, (read_only, c.connect_raw.hex())
                assert resp.expired and resp.session_id == 0 and resp.passwd == bytes(16)
                # the RO byte is false even when the client asked for read-only
                assert resp.read_only is (None if read_only is None else False)
                assert c.is_closed_by_server()

    await in_thread(body)


async def test_wrong_password_looks_like_expiry(zk_hosts: str) -> None:
    def body() -> None:
        with open_session(zk_hosts) as live:
            assert live.connect_response is not None
            sid = live.connect_response.session_id
            with RawConn(zk_hosts) as c:
                c.handshake(session_id=sid, passwd=bytes(16))
                assert c.connect_raw == EXPIRED_37
                assert c.is_closed_by_server()
            # the real session is untouched, and reattaching with the right password works
            with RawConn(zk_hosts) as c:
                resp = c.handshake(session_id=sid, passwd=live.connect_response.passwd)
                assert resp.session_id == sid and resp.timeout == live.connect_response.timeout

    await in_thread(body)


async def test_connect_response_length_follows_read_only_byte(zk_hosts: str) -> None:
    def body() -> None:
        for read_only, length in ((False, 37), (None, 36), (True, 37)):
            with RawConn(zk_hosts) as c:
                resp = c.handshake(read_only=read_only)
                assert len(c.connect_raw) == 4 + length
                assert c.connect_raw[:4] == struct.pack(">i", length)
                assert resp.protocol_version == 0 and resp.session_id != 0 and resp.timeout > 0
                assert resp.passwd is not None and len(resp.passwd) == 16
                assert resp.read_only is (None if read_only is None else False)
                # the session works either way
                f = c.call(1, OpCode.EXISTS, ExistsRequest("/", False))
                assert f.header.err == 0

    await in_thread(body)


async def test_session_timeout_is_clamped(zk_hosts: str) -> None:
    def body() -> None:
        conf = server_conf(zk_hosts)
        tick = int(conf["tickTime"])
        low = int(conf.get("minSessionTimeout", 2 * tick))
        high = int(conf.get("maxSessionTimeout", 20 * tick))
        assert low == 2 * tick  # the default: two ticks
        got = {}
        for asked in (1, low + 1, high + 1_000_000):
            with RawConn(zk_hosts) as c:
                got[asked] = c.handshake(timeout_ms=asked).timeout
        assert got == {1: low, low + 1: low + 1, high + 1_000_000: high}

    await in_thread(body)


async def test_client_ahead_of_server_gets_no_answer(zk_hosts: str) -> None:
    def body() -> None:
        with RawConn(zk_hosts) as c:
            c.send_raw(encode_connect_request(ConnectRequest(0, 1 << 50, 4000, 0, bytes(16), False)))
            assert c.is_closed_by_server()

    await in_thread(body)


async def test_requests_pipelined_behind_connect_wait(zk_hosts: str) -> None:
    def body() -> None:
        with RawConn(zk_hosts) as c:
            req = ConnectRequest(0, 0, 4000, 0, bytes(16), False)
            c.send_raw(encode_connect_request(req) + encode_request(1, OpCode.EXISTS, ExistsRequest("/", False)))
            first = c.recv_raw()
            assert len(first) == 4 + 37
            f = c.recv()
            assert f.header.xid == 1 and f.header.err == 0

    await in_thread(body)
