"""Live capture of TCP segments from a network interface (Linux AF_PACKET; standard library and trio).

No proxy and no libpcap: a packet socket on the interface, with a classic BPF program
(:mod:`zkwire.trace.bpf`) attached so that only TCP segments of the ports asked for reach Python, and
a memory-mapped TPACKET_V3 ring (:mod:`zkwire.trace.ring`) that the kernel fills while Python decodes.
Each segment carries the kernel's receive time, so reply latencies stay right when decoding lags.
The ring is the queue between the kernel and the decoder, bounded by its size (``ring_bytes``): when
decoding cannot keep up, the kernel drops packets and counts them (:attr:`Sniffer.dropped`), and the
sniffer says so rather than growing.  Where the ring cannot be set up, one ``recvmsg`` per packet
(:class:`RecvReader`, with the kernel's timestamp as ancillary data) does the same work more slowly.

Needs root or the CAP_NET_RAW capability; without it :func:`open_sniffer` raises
:class:`~zkwire.trace.capture.CaptureError` saying so.  On the loopback interface the kernel shows each
packet twice (leaving and arriving): the filter keeps only the arriving copy.
"""

from __future__ import annotations

import math
import socket
import struct
import sys
from collections.abc import AsyncIterator, Callable, Iterable

import trio

from .afpacket import ARPHRD_ETHER, ARPHRD_LOOPBACK, ETH_P_ALL, PACKET_OUTGOING, PACKET_STATISTICS, SOL_PACKET
from .bpf import MAX_PORTS, attach_filter, port_filter
from .capture import CaptureError, TcpSegment, tcp_segment
from .ring import BLOCK_SIZE, PacketRing, RingPacket, RingStatistics

__all__ = ["DEFAULT_RING_BYTES", "RecvReader", "Sniffer", "open_sniffer"]

_LINK_ETHERNET, _LINK_RAW = 1, 101
_SO_TIMESTAMPNS = 35
_TIMESPEC = struct.Struct("=qq")
#: Largest frame read by :class:`RecvReader` (with GSO a "packet" can exceed the MTU by far).
_BUFFER = 262144
#: The ring's default size: about 5 s of 40k small packets a second.
DEFAULT_RING_BYTES = 64 << 20


class RecvReader:
    """The plain reader: one ``recvmsg`` per packet from the socket's receive buffer.  It reads as
    :class:`~zkwire.trace.ring.PacketRing` does (the sniffer takes either), and has no backlog to tell."""

    #: Batches taken between two reads of the kernel's drop counter.
    counts_every = 16

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        sock.setsockopt(socket.SOL_SOCKET, _SO_TIMESTAMPNS, 1)

    @property
    def buffer_bytes(self) -> int:
        """The most memory packets waiting for Python take in the kernel: the receive buffer."""
        return int(self._sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF))

    def ready(self) -> bool:
        """Whether to try :meth:`take` (always: it says itself when nothing waits)."""
        return True

    def backlog_fraction(self) -> float:
        return 0.0

    def take(self) -> list[RingPacket]:
        """The packets waiting (up to 64), empty when none."""
        out: list[RingPacket] = []
        for _ in range(64):
            try:
                data, ancillary, _flags, address = self._sock.recvmsg(_BUFFER, 64)
            except BlockingIOError:
                break
            ts = 0.0
            for level, kind, value in ancillary:
                if level == socket.SOL_SOCKET and kind == _SO_TIMESTAMPNS and len(value) >= _TIMESPEC.size:
                    sec, nsec = _TIMESPEC.unpack_from(value)
                    ts = sec + nsec * 1e-9
            out.append(RingPacket(ts, int(address[3]), int(address[2]), data, 0))
        return out

    def statistics(self) -> RingStatistics:
        """The kernel's counts since the last call (``struct tpacket_stats``: packets, drops)."""
        raw = self._sock.getsockopt(SOL_PACKET, PACKET_STATISTICS, 8)
        packets, drops = struct.unpack("=II", raw)
        return RingStatistics(packets, drops, 0)

    def close(self) -> None:
        pass


class Sniffer:
    """A packet socket on one interface; iterate with ``async for segment in sniffer``.

    :attr:`packets` counts the packets read, :attr:`matched` the TCP segments kept among them,
    :attr:`dropped` the packets the kernel dropped (its queue was full) as of the last
    :meth:`update_counts`, which the iteration calls as it goes.  ``on_drops`` is called with the new
    total whenever it grows.
    """

    def __init__(
        self,
        sock: socket.socket,
        iface: str,
        ports: frozenset[int],
        reader: PacketRing | RecvReader,
        *,
        filtered: bool,
    ) -> None:
        self._sock = sock
        self._reader = reader
        self.iface = iface
        self.ports = ports
        #: True when the kernel filters by port (and drops loopback's outgoing copies) already.
        self.filtered = filtered
        self.packets = 0
        self.matched = 0
        self.dropped = 0
        self.on_drops: Callable[[int], object] | None = None
        #: Called with the ring's filled fraction when it is half full or more (decoding is behind).
        self.on_behind: Callable[[float], object] | None = None

    @property
    def ring(self) -> bool:
        """True when reading from the memory-mapped ring."""
        return isinstance(self._reader, PacketRing)

    @property
    def buffer_bytes(self) -> int:
        """The most memory packets waiting for Python take in the kernel."""
        return self._reader.buffer_bytes

    def close(self) -> None:
        self._reader.close()
        self._sock.close()

    def __enter__(self) -> Sniffer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def backlog(self) -> float:
        """How full the ring is (0 to 1): packets waiting for Python (0 for the plain reader)."""
        return self._reader.backlog_fraction()

    def update_counts(self) -> int:
        """Read the kernel's drop counter; returns the total dropped so far."""
        drops = self._reader.statistics().drops
        if drops:
            self.dropped += drops
            if self.on_drops is not None:
                self.on_drops(self.dropped)
        return self.dropped

    def segment(self, packet: RingPacket) -> TcpSegment | None:
        """The TCP segment of one packet, if it is one of the ports asked for (and not loopback's
        outgoing copy, when the kernel did not filter it)."""
        if packet.hatype == ARPHRD_LOOPBACK and packet.pkttype == PACKET_OUTGOING:
            return None
        linktype = _LINK_ETHERNET if packet.hatype in (ARPHRD_ETHER, ARPHRD_LOOPBACK) else _LINK_RAW
        seg = tcp_segment(linktype, packet.ts, packet.data, packet.cut)
        if seg is None or (self.ports and seg.src[1] not in self.ports and seg.dst[1] not in self.ports):
            return None
        return seg

    def __aiter__(self) -> AsyncIterator[TcpSegment]:
        return self.segments()

    async def segments(self, idle: float | None = None) -> AsyncIterator[TcpSegment]:
        """The segments as they come; with ``idle``, stop once none came for that many seconds."""
        reader = self._reader
        batches = 0
        while True:
            packets = reader.take() if reader.ready() else []
            if not packets:
                self.update_counts()
                with trio.move_on_after(idle if idle is not None else math.inf) as waited:
                    await trio.lowlevel.wait_readable(self._sock)
                if waited.cancelled_caught:
                    return
                continue
            self.packets += len(packets)
            for packet in packets:
                seg = self.segment(packet)
                if seg is not None:
                    self.matched += 1
                    yield seg
            batches += 1
            if batches % reader.counts_every == 0:
                self.update_counts()
            if self.on_behind is not None:  # a ring's scan stops at the first block not ready
                full = reader.backlog_fraction()
                if full >= 0.5:
                    self.on_behind(full)
            await trio.lowlevel.checkpoint()


def _link_header(sock: socket.socket, iface: str) -> tuple[int, int]:
    """The interface's link type (``ARPHRD_*``) and link-layer header length; binds ``sock`` to it with
    no protocol, so that nothing is received yet."""
    sock.bind((iface, 0))
    hatype = int(sock.getsockname()[3])
    return hatype, 14 if hatype in (ARPHRD_ETHER, ARPHRD_LOOPBACK) else 0


def open_sniffer(
    iface: str, ports: Iterable[int] = (), *, ring: bool = True, kernel_filter: bool = True, ring_bytes: int = 0
) -> Sniffer:
    """A :class:`Sniffer` on ``iface`` keeping TCP segments to or from ``ports`` (all TCP if empty).

    ``ring`` reads through a TPACKET_V3 ring of ``ring_bytes`` (default :data:`DEFAULT_RING_BYTES`;
    the plain reader if the kernel refuses it); ``kernel_filter`` attaches the BPF program (Ethernet,
    loopback and IP-tunnel interfaces, at most :data:`~zkwire.trace.bpf.MAX_PORTS` ports; otherwise
    the ports are matched in Python).

    Raises:
        CaptureError: not on Linux, no such interface, or not permitted (root or CAP_NET_RAW needed).
    """
    if not sys.platform.startswith("linux") or not hasattr(socket, "AF_PACKET"):
        raise CaptureError("live capture needs Linux (AF_PACKET); capture to a file with tcpdump and decode it")
    try:
        sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)  # no protocol: receives nothing yet
    except PermissionError:
        raise CaptureError(
            "live capture needs root or the CAP_NET_RAW capability "
            "(e.g. sudo setcap cap_net_raw+ep on the Python binary), or capture with tcpdump and decode the file"
        ) from None
    port_set = frozenset(ports)
    try:
        hatype, link = _link_header(sock, iface)
        filtered = kernel_filter and len(port_set) <= MAX_PORTS
        if filtered:
            attach_filter(sock, port_filter(sorted(port_set), link=link, loopback=hatype == ARPHRD_LOOPBACK))
        reader: PacketRing | RecvReader | None = None
        if ring:
            reader = _ring(sock, ring_bytes or DEFAULT_RING_BYTES)
        if reader is None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
            reader = RecvReader(sock)
        sock.bind((iface, ETH_P_ALL))
    except OSError as e:
        sock.close()
        raise CaptureError(f"cannot capture on interface {iface!r}: {e.strerror or e}") from None
    sock.setblocking(False)
    return Sniffer(sock, iface, port_set, reader, filtered=filtered)


def _ring(sock: socket.socket, size: int) -> PacketRing | None:
    """A ring of about ``size`` bytes, or None if the kernel refuses one (the plain reader then)."""
    try:
        return PacketRing(sock, block_count=max(2, size // BLOCK_SIZE))
    except OSError:
        return None
