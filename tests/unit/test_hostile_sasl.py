"""The SASL exchange against a hostile server (``hostileserver.py``): garbage, a huge token, no answer.
Each ends in a typed error or a dropped connection and a retry, bounded in time and memory; an honest
DIGEST-MD5 server (written here from RFC 2831) then lets the session in."""

from __future__ import annotations

import pytest
import trio
from helpers.hostileserver import HostileConnection, bounded, open_hostile_server, serve

import zkwire
from zkwire.constants import OpCode
from zkwire.protocol.records import GetSASLRequest, SetSASLResponse
from zkwire.sasl import DigestMD5
from zkwire.sasl.digest import digest_values, parse_challenge

PASSWORD = "hostile-test-pw"
NONCE = "bm9uY2Utb2YtdGhlLXRlc3Q="


async def sasl_request(conn: HostileConnection) -> GetSASLRequest | None:
    req = await conn.request(answer_pings=False)
    if req is None:
        return None
    assert req.op == OpCode.SASL and isinstance(req.record, GetSASLRequest), req
    return req.record


async def honest_digest(conn: HostileConnection) -> None:
    """A DIGEST-MD5 server for user alice: challenge, check the response, rspauth; then serve."""
    if await conn.accept() is None or await sasl_request(conn) is None:
        return
    challenge = f'realm="zk-sasl-md5",nonce="{NONCE}",qop="auth",charset=utf-8,algorithm=md5-sess'
    await conn.send(conn.fake.answer(SetSASLResponse(challenge.encode())))
    record = await sasl_request(conn)
    if record is None or record.token is None:
        return
    d = parse_challenge(record.token)
    response, rspauth = digest_values(
        b"alice", b"zk-sasl-md5", PASSWORD.encode(), NONCE, d["cnonce"][0], d["nc"][0], d["digest-uri"][0]
    )
    if d["response"] != [response]:
        await conn.send(conn.fake.answer(SetSASLResponse(None), err=-115))
        return
    await conn.send(conn.fake.answer(SetSASLResponse(b"rspauth=" + rspauth)))
    await serve(conn)


async def garbage_challenge(conn: HostileConnection) -> None:
    if await conn.accept() is None or await sasl_request(conn) is None:
        return
    await conn.send(conn.fake.answer(SetSASLResponse(b"\x00\xff\x13 not a challenge \x7f" * 40)))
    await conn.hold()


async def huge_token(conn: HostileConnection) -> None:
    if await conn.accept() is None or await sasl_request(conn) is None:
        return
    header = conn.fake.answer(SetSASLResponse(b"x"))
    length = 200 << 20  # announced; the client skips what it reads of it, then drops the connection
    await conn.send(length.to_bytes(4, "big") + header[4:20] + (length - 16).to_bytes(4, "big"))
    with trio.move_on_after(5):
        while not conn.closed_by_client:
            await conn.send(bytes(1 << 16))
    await conn.hold()


async def no_answer(conn: HostileConnection) -> None:
    if await conn.accept() is None:
        return
    await conn.hold()


def alice(password: str = PASSWORD) -> DigestMD5:
    return DigestMD5("alice", password)


async def test_the_honest_digest_server_lets_alice_in_and_refuses_a_wrong_password() -> None:
    async with open_hostile_server(honest_digest) as server, bounded(10):
        async with zkwire.open_client(server.hosts, sasl=alice()) as zk:
            assert await zk.get_data("/a")
        with pytest.raises(zkwire.AuthFailedError, match="AUTHFAILED"):
            async with zkwire.open_client(server.hosts, sasl=alice("wrong")):
                pass


async def test_a_garbage_challenge_is_a_typed_refusal() -> None:
    async with open_hostile_server(garbage_challenge) as server, bounded(10):
        with pytest.raises(zkwire.AuthFailedError, match="DIGEST-MD5 challenge"):
            async with zkwire.open_client(server.hosts, sasl=alice()):
                pass
        assert server.connections == 1  # refused: not retried


async def test_a_huge_token_is_skipped_and_the_next_connection_gets_in() -> None:
    async with open_hostile_server(huge_token, honest_digest) as server, bounded(20, mib=16):
        async with zkwire.open_client(server.hosts, sasl=alice(), max_frame=1 << 20) as zk:
            assert zk.state is zkwire.SessionState.CONNECTED
        assert server.connections == 2


async def test_no_answer_to_the_first_token_drops_the_connection_within_the_read_timeout() -> None:
    async with open_hostile_server(no_answer, honest_digest) as server, bounded(15):
        start = trio.current_time()
        async with zkwire.open_client(server.hosts, sasl=alice(), session_timeout=3) as zk:
            took = trio.current_time() - start
            assert zk.state is zkwire.SessionState.CONNECTED
        assert server.connections == 2 and took < 3 + 1
