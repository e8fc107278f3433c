"""Live capture of TCP segments from a network interface (Linux AF_PACKET; standard library and trio).

No proxy and no libpcap: a packet socket on the interface hands us every frame, which is parsed like
a capture file's (:mod:`zkwire.trace.capture`) and filtered by TCP port.  Needs root or the CAP_NET_RAW
capability; without it :func:`open_sniffer` raises :class:`~zkwire.trace.capture.CaptureError` saying so.

On the loopback interface the kernel shows each packet twice (leaving and arriving): only the arriving
copy is kept.
"""

from __future__ import annotations

import socket
import sys
import time
from collections.abc import AsyncIterator, Iterable

import trio

from .capture import CaptureError, TcpSegment, tcp_segment

__all__ = ["Sniffer", "open_sniffer"]

_ETH_P_ALL = 0x0003
_PACKET_OUTGOING = 4
_ARPHRD_ETHER = 1
_ARPHRD_LOOPBACK = 772
_ARPHRD_NONE = 0xFFFE
_ARPHRD_IPGRE = 778
_LINK_ETHERNET, _LINK_RAW = 1, 101
#: Largest frame read (with GRO/TSO a "packet" can exceed the MTU by far).
_BUFFER = 262144


class Sniffer:
    """A packet socket on one interface; iterate with ``async for segment in sniffer``."""

    def __init__(self, sock: socket.socket, iface: str, ports: frozenset[int]) -> None:
        self._sock = sock
        self.iface = iface
        self.ports = ports
        #: Frames read, and how many of them were TCP segments on the ports asked for.
        self.frames = 0
        self.matched = 0

    def close(self) -> None:
        self._sock.close()

    def __enter__(self) -> Sniffer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _parse(self, data: bytes, address: tuple[object, ...]) -> TcpSegment | None:
        pkttype, hatype = int(address[2]), int(address[3])  # type: ignore[call-overload]
        if hatype == _ARPHRD_LOOPBACK and pkttype == _PACKET_OUTGOING:
            return None  # the arriving copy of the same packet comes too
        linktype = _LINK_ETHERNET if hatype in (_ARPHRD_ETHER, _ARPHRD_LOOPBACK) else _LINK_RAW
        seg = tcp_segment(linktype, time.time(), data, 0)
        if seg is None or (self.ports and seg.src[1] not in self.ports and seg.dst[1] not in self.ports):
            return None
        return seg

    async def __aiter__(self) -> AsyncIterator[TcpSegment]:
        sock = self._sock
        while True:
            try:
                data, address = sock.recvfrom(_BUFFER)
            except BlockingIOError:
                await trio.lowlevel.wait_readable(sock)
                continue
            self.frames += 1
            seg = self._parse(data, address)
            if seg is not None:
                self.matched += 1
                yield seg
            if self.frames % 64 == 0:
                await trio.lowlevel.checkpoint()


def open_sniffer(iface: str, ports: Iterable[int] = ()) -> Sniffer:
    """A :class:`Sniffer` on ``iface`` keeping TCP segments to or from ``ports`` (all TCP if empty).

    Raises:
        CaptureError: not on Linux, no such interface, or not permitted (root or CAP_NET_RAW needed).
    """
    if not sys.platform.startswith("linux") or not hasattr(socket, "AF_PACKET"):
        raise CaptureError("live capture needs Linux (AF_PACKET); capture to a file with tcpdump and decode it")
    try:
        sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(_ETH_P_ALL))
    except PermissionError:
        raise CaptureError(
            "live capture needs root or the CAP_NET_RAW capability "
            "(e.g. sudo setcap cap_net_raw+ep on the Python binary), or capture with tcpdump and decode the file"
        ) from None
    try:
        sock.bind((iface, 0))
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    except OSError as e:
        sock.close()
        raise CaptureError(f"cannot capture on interface {iface!r}: {e.strerror or e}") from None
    sock.setblocking(False)
    return Sniffer(sock, iface, frozenset(ports))
