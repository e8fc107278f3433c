"""Test helpers for session ends: expire a live session from outside, as the server would."""

from __future__ import annotations

import socket

import trio

import zkwire
from helpers.addresses import first_server
from zkwire.constants import OpCode
from zkwire.protocol.codec import encode_connect_request, encode_request
from zkwire.protocol.records import ConnectRequest


def _close_elsewhere(server: tuple[str, int], session_id: int, passwd: bytes) -> None:
    # ConnectRequest and closeSession go out back to back: the client whose connection the takeover
    # closes cannot re-attach between the two (it would own the session again and the close would fail).
    with socket.create_connection(server, timeout=5) as sock:
        request = encode_connect_request(ConnectRequest(0, 0, 10000, session_id, passwd, False))
        sock.sendall(request + encode_request(1, OpCode.CLOSE_SESSION))
        try:  # read until the server closes: the outcome is judged by the client's state
            while sock.recv(4096):
                pass
        except OSError:
            pass


async def expire(zk: zkwire.Client, server_hosts: str, *, wait: bool = True) -> None:
    """End ``zk``'s session on the server (another connection takes it over and closes it).

    The server then closes ``zk``'s connection; its reconnect is told the session expired.
    """
    for _ in range(20):
        await trio.to_thread.run_sync(_close_elsewhere, first_server(server_hosts), zk.session_id, zk._core._passwd)
        if not wait:
            return
        with trio.move_on_after(1):
            await zk.wait_for_state(zkwire.SessionState.EXPIRED)
            return
    raise AssertionError(f"session 0x{zk.session_id:x} could not be expired")
