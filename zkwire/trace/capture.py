"""Packet captures to TCP byte streams: pcap and pcapng files, and TCP reassembly.

Standard library only.  :func:`read_packets` reads a capture file (classic pcap in either byte order,
micro- or nanosecond timestamps; pcapng with any number of interfaces and their own timestamp
resolutions) and yields the TCP segments in it (Ethernet with VLAN tags, Linux cooked v1/v2, raw IP,
BSD loopback; IPv4 and IPv6).  :class:`TcpReassembler` turns segments into each connection's two byte
streams, in capture order: retransmitted and overlapping bytes are delivered once, segments that come
early are held until the gap before them fills, and a gap that never fills (a lost packet, a capture
that starts mid-connection, a snap length shorter than the packet) is reported as such, with its size,
so that a decoder can resynchronise on the next frame boundary.  A gap is known not to fill when the
peer acknowledges the bytes after it (the capture, not the network, lost them), when too much is held
behind it, or at the end of the capture.

Why our own reader: the maintained pure-Python choices (scapy, dpkt, pyshark) either pull in a large
dependency, need tshark, or do no TCP reassembly; the formats are small and fully specified, and a
reader that bounds every length it reads is easy to fuzz.  Nothing here trusts the file: every length
is checked against what is there, and a malformed file raises :class:`CaptureError` (or, for a
damaged packet, skips it and counts it in :attr:`PacketReader.skipped`).
"""

from __future__ import annotations

import socket
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import BinaryIO

from ..errors import ZKError
from .frames import Direction

__all__ = [
    "CaptureError",
    "TcpSegment",
    "PacketReader",
    "read_packets",
    "is_capture",
    "tcp_segment",
    "StreamData",
    "StreamEnd",
    "TcpReassembler",
    "FIN",
    "SYN",
    "RST",
    "ACK",
]

FIN, SYN, RST, PSH, ACK = 0x01, 0x02, 0x04, 0x08, 0x10

_PCAP_MAGICS = {
    b"\xd4\xc3\xb2\xa1": ("<", 1e-6),
    b"\xa1\xb2\xc3\xd4": (">", 1e-6),
    b"\x4d\x3c\xb2\xa1": ("<", 1e-9),
    b"\xa1\xb2\x3c\x4d": (">", 1e-9),
}
_PCAPNG_SHB = b"\x0a\x0d\x0d\x0a"
#: Largest block or packet record accepted (a capture's snap length is at most 256 KiB in practice).
MAX_RECORD = 16 << 20
#: Bytes of a pcap file read at a time.
_BLOCK = 1 << 20

# Link types (LINKTYPE_* values of the pcap format).
_LINK_NULL, _LINK_ETHERNET, _LINK_RAW, _LINK_LOOP, _LINK_SLL, _LINK_SLL2 = 0, 1, 101, 108, 113, 276
_LINK_IPV4, _LINK_IPV6 = 228, 229


class CaptureError(ZKError, ValueError):
    """The file is not a capture this reader understands, or it is damaged beyond a single packet."""


def is_capture(head: bytes) -> bool:
    """True if ``head`` (the first bytes of a file) starts a pcap or pcapng capture."""
    return head[:4] in _PCAP_MAGICS or head[:4] == _PCAPNG_SHB


# TcpSegment and StreamData are values (equal and hashed by their fields) and nothing changes one once
# made; they are not frozen because one is made for every packet, and a frozen dataclass's __init__
# costs five times as much (an object.__setattr__ call per field).


@dataclass(slots=True, unsafe_hash=True)
class TcpSegment:
    """One TCP segment: capture time (seconds since the epoch), endpoints, header fields, payload.

    ``missing`` counts payload bytes the capture did not keep (snap length): they follow ``payload``.
    A value, not to be changed once made.
    """

    ts: float
    src: tuple[str, int]
    dst: tuple[str, int]
    seq: int
    ack: int
    flags: int
    payload: bytes
    missing: int = 0


class PacketReader:
    """Iterates over the TCP segments of a capture file; other packets are counted and skipped."""

    def __init__(self, stream: BinaryIO) -> None:
        self._stream = stream
        #: Packets that were not TCP over IP, or were damaged, fragments or truncated before TCP.
        self.skipped = 0
        #: Packets read in all.
        self.packets = 0

    def __iter__(self) -> Iterator[TcpSegment]:
        head = self._read(4, "file header")
        if head in _PCAP_MAGICS:
            return self._pcap(head)
        if head == _PCAPNG_SHB:
            return self._pcapng(head)
        raise CaptureError(f"not a pcap or pcapng file (starts with {head.hex()})")

    # -------------------------------------------------------------- containers

    def _read(self, n: int, what: str) -> bytes:
        data = self._stream.read(n)
        if len(data) != n:
            raise CaptureError(f"capture ends inside the {what} ({len(data)} of {n} bytes)")
        return data

    def _pcap(self, magic: bytes) -> Iterator[TcpSegment]:
        order, unit = _PCAP_MAGICS[magic]
        rest = self._read(20, "pcap file header")
        linktype = struct.unpack(order + "I", rest[16:20])[0] & 0x0FFFFFFF
        unpack_record = struct.Struct(order + "IIII").unpack_from
        read = self._stream.read
        plain = _plain_ethernet_tcp if linktype == _LINK_ETHERNET else None
        # Read in blocks of _BLOCK bytes and cut the records out of them: one read per packet costs more
        # than the packet's decoding.  What is held is one block and one record at most, whatever the size
        # of the file.
        buf, pos, size = b"", 0, 0  # size: len(buf)
        while True:
            if size - pos < 16:
                more = read(_BLOCK)
                if not more:
                    if size > pos:
                        raise CaptureError("capture ends inside a packet record header")
                    return
                buf, pos = buf[pos:] + more, 0
                size = len(buf)
                continue
            sec, frac, incl, orig = unpack_record(buf, pos)
            if incl > MAX_RECORD:
                raise CaptureError(f"packet record of {incl} bytes")
            start = pos + 16
            if size - start < incl:
                more = read(max(_BLOCK, incl))
                if not more:
                    raise CaptureError("capture ends inside a packet")
                buf, pos = buf[pos:] + more, 0
                size = len(buf)
                continue
            pos = start + incl
            self.packets += 1
            ts, cut = sec + frac * unit, (orig - incl if orig > incl else 0)
            segment = plain(buf, start, pos, ts, cut) if plain else None
            if segment is None:
                segment = tcp_segment(linktype, ts, buf[start:pos], cut)
            if segment is None:
                self.skipped += 1
            else:
                yield segment

    def _pcapng(self, first: bytes) -> Iterator[TcpSegment]:
        order = "<"
        interfaces: list[tuple[int, float]] = []  # (link type, seconds per timestamp unit)
        block_type = first
        while True:
            length_raw = self._read(4, "block length")
            if block_type == _PCAPNG_SHB:
                bom = self._read(4, "section header")
                if bom == b"\x4d\x3c\x2b\x1a":
                    order = "<"
                elif bom == b"\x1a\x2b\x3c\x4d":
                    order = ">"
                else:
                    raise CaptureError("pcapng section header with an unknown byte-order mark")
                length = struct.unpack(order + "I", length_raw)[0]
                body = bom + self._read_block_rest(length, 12, "section header")
                interfaces = []
            else:
                length = struct.unpack(order + "I", length_raw)[0]
                body = self._read_block_rest(length, 8, "block")
            btype = struct.unpack(order + "I", block_type)[0]
            if btype == 1:  # Interface Description Block
                interfaces.append(_interface(order, body))
            elif btype == 6 and len(body) >= 20:  # Enhanced Packet Block
                iface, hi, lo, cap, orig = struct.unpack_from(order + "IIIII", body, 0)
                yield from self._ng_packet(interfaces, iface, (hi << 32) | lo, body[20 : 20 + cap], orig)
            elif btype == 3 and len(body) >= 4:  # Simple Packet Block (interface 0, no timestamp)
                orig = struct.unpack_from(order + "I", body, 0)[0]
                yield from self._ng_packet(interfaces, 0, None, body[4 : 4 + orig], orig)
            elif btype == 2 and len(body) >= 20:  # obsolete Packet Block
                iface, _, hi, lo, cap, orig = struct.unpack_from(order + "HHIIII", body, 0)
                yield from self._ng_packet(interfaces, iface, (hi << 32) | lo, body[20 : 20 + cap], orig)
            nxt = self._stream.read(4)
            if not nxt:
                return
            if len(nxt) < 4:
                raise CaptureError("capture ends inside a block header")
            block_type = nxt

    def _read_block_rest(self, length: int, already: int, what: str) -> bytes:
        if length % 4 or length < already + 4 or length > MAX_RECORD:
            raise CaptureError(f"pcapng {what} of impossible length {length}")
        rest = self._read(length - already, what)
        return rest[:-4]  # the trailing copy of the length

    def _ng_packet(
        self, interfaces: list[tuple[int, float]], iface: int, ts: int | None, data: bytes, orig: int
    ) -> Iterator[TcpSegment]:
        if iface >= len(interfaces):
            self.packets += 1
            self.skipped += 1
            return
        linktype, unit = interfaces[iface]
        yield from self._packet(linktype, 0.0 if ts is None else ts * unit, data, max(orig, len(data)))

    # -------------------------------------------------------------- layers

    def _packet(self, linktype: int, ts: float, data: bytes, orig: int) -> Iterator[TcpSegment]:
        self.packets += 1
        segment = tcp_segment(linktype, ts, data, orig - len(data))
        if segment is None:
            self.skipped += 1
        else:
            yield segment


def _interface(order: str, body: bytes) -> tuple[int, float]:
    if len(body) < 8:
        raise CaptureError("pcapng interface description block too short")
    linktype = struct.unpack_from(order + "H", body, 0)[0]
    unit = 1e-6
    pos = 8
    while pos + 4 <= len(body):
        code, size = struct.unpack_from(order + "HH", body, pos)
        pos += 4
        if code == 0:
            break
        value = body[pos : pos + size]
        pos += (size + 3) & ~3
        if code == 9 and value:  # if_tsresol
            r = value[0]
            unit = 2.0 ** -(r & 0x7F) if r & 0x80 else 10.0 ** -(r & 0x7F)
    return linktype, unit


def tcp_segment(linktype: int, ts: float, data: bytes, cut: int = 0) -> TcpSegment | None:
    """The TCP segment in one link-layer frame of ``linktype``, or None if it holds none (``cut``: bytes
    of the packet the capture did not keep)."""
    if linktype == _LINK_ETHERNET:
        if len(data) < 14:
            return None
        ethertype, pos = (data[12] << 8) | data[13], 14
        while ethertype in (0x8100, 0x88A8) and len(data) >= pos + 4:  # VLAN tags
            ethertype, pos = struct.unpack_from(">H", data, pos + 2)[0], pos + 4
    elif linktype == _LINK_SLL:
        if len(data) < 16:
            return None
        ethertype, pos = struct.unpack_from(">H", data, 14)[0], 16
    elif linktype == _LINK_SLL2:
        if len(data) < 20:
            return None
        ethertype, pos = struct.unpack_from(">H", data, 0)[0], 20
    elif linktype in (_LINK_NULL, _LINK_LOOP):
        if len(data) < 4:
            return None
        family = struct.unpack_from("<I", data, 0)[0]
        if family > 0xFFFF:
            family = struct.unpack_from(">I", data, 0)[0]
        ethertype, pos = (0x0800 if family == 2 else 0x86DD), 4
    elif linktype in (_LINK_RAW, _LINK_IPV4, _LINK_IPV6):
        if not data:
            return None
        ethertype, pos = (0x0800 if data[0] >> 4 == 4 else 0x86DD), 0
    else:
        return None
    if ethertype == 0x0800:
        return _ipv4(ts, data, pos, cut)
    if ethertype == 0x86DD:
        return _ipv6(ts, data, pos, cut)
    return None


_ADDRESSES: dict[bytes, str] = {}


def _address(family: int, raw: bytes) -> str:
    """The text of an IPv4 or IPv6 address (a capture holds few: they are remembered, up to a bound)."""
    text = _ADDRESSES.get(raw)
    if text is None:
        text = socket.inet_ntop(family, raw)
        if len(_ADDRESSES) < 4096:
            _ADDRESSES[raw] = text
    return text


_IPV4 = struct.Struct(">BxHxxHxB2x4s4s")  # version/IHL, total length, flags/fragment, protocol, addresses
_TCP = struct.Struct(">HHIIH")


def _ipv4(ts: float, data: bytes, pos: int, cut: int) -> TcpSegment | None:
    if len(data) < pos + 20:
        return None
    vihl, total, frag, proto, src_raw, dst_raw = _IPV4.unpack_from(data, pos)
    ihl = (vihl & 0x0F) * 4
    if vihl >> 4 != 4 or proto != 6 or ihl < 20 or frag & 0x3FFF:  # not TCP, bad header, or a fragment
        return None
    src = _ADDRESSES.get(src_raw) or _address(socket.AF_INET, src_raw)
    dst = _ADDRESSES.get(dst_raw) or _address(socket.AF_INET, dst_raw)
    end = pos + total if total else len(data) + cut  # total 0: TCP segmentation offload
    return _tcp(ts, data, pos + ihl, end, src, dst)


# The three headers without options; the addresses and ports (12 bytes in a row) as one key of _ENDPOINTS.
_ETHERNET_IPV4_TCP = struct.Struct(">12xH" + "BxHxxHxB2x" + "12s" + "IIH")
_PLAIN_SIZE = 14 + 20 + 20
_ENDPOINTS: dict[bytes, tuple[tuple[str, int], tuple[str, int]]] = {}


def _endpoints(raw: bytes) -> tuple[tuple[str, int], tuple[str, int]]:
    """The source and destination of the IPv4 addresses and TCP ports ``raw`` (remembered, up to a bound)."""
    sport, dport = struct.unpack_from(">HH", raw, 8)
    ends = (_address(socket.AF_INET, raw[:4]), sport), (_address(socket.AF_INET, raw[4:8]), dport)
    if len(_ENDPOINTS) < 4096:
        _ENDPOINTS[raw] = ends
    return ends


def _plain_ethernet_tcp(buf: bytes, start: int, stop: int, ts: float, cut: int) -> TcpSegment | None:
    """The TCP segment of the Ethernet frame ``buf[start:stop]`` if it is the plain case (IPv4 without
    options, no VLAN tag, not a fragment, a sound TCP header), else None: then :func:`tcp_segment` says.

    The same as ``tcp_segment(_LINK_ETHERNET, ts, buf[start:stop], cut)`` for that case (the plain design),
    read from the capture's block with one unpack, without copying the frame out of it or going through
    a function per layer: nearly every packet of a capture is this case."""
    if stop - start < _PLAIN_SIZE:
        return None
    ethertype, vihl, total, frag, proto, ends_raw, seq, ack, off_flags = _ETHERNET_IPV4_TCP.unpack_from(buf, start)
    if ethertype != 0x0800 or vihl != 0x45 or proto != 6 or frag & 0x3FFF:
        return None
    offset = (off_flags >> 12) * 4
    data_start = start + 34 + offset
    end = start + 14 + total if total else stop + cut  # total 0: TCP segmentation offload
    if offset < 20 or end < data_start:
        return None
    src, dst = _ENDPOINTS.get(ends_raw) or _endpoints(ends_raw)
    if end <= stop:
        return TcpSegment(ts, src, dst, seq, ack, off_flags & 0x3F, buf[data_start:end], 0)
    # the capture kept less than the packet (snap length)
    return TcpSegment(ts, src, dst, seq, ack, off_flags & 0x3F, buf[data_start:stop], end - max(data_start, stop))


def _ipv6(ts: float, data: bytes, pos: int, cut: int) -> TcpSegment | None:
    if len(data) < pos + 40 or data[pos] >> 4 != 6:
        return None
    payload_len = struct.unpack_from(">H", data, pos + 4)[0]
    nxt = data[pos + 6]
    src = _address(socket.AF_INET6, data[pos + 8 : pos + 24])
    dst = _address(socket.AF_INET6, data[pos + 24 : pos + 40])
    end = pos + 40 + payload_len
    pos += 40
    for _ in range(8):  # extension headers: hop-by-hop, routing, destination options
        if nxt not in (0, 43, 60) or len(data) < pos + 8:
            break
        nxt, size = data[pos], (data[pos + 1] + 1) * 8
        pos += size
    if nxt != 6:
        return None
    return _tcp(ts, data, pos, end, src, dst)


def _tcp(ts: float, data: bytes, pos: int, end: int, src: str, dst: str) -> TcpSegment | None:
    if len(data) < pos + 20:
        return None
    sport, dport, seq, ack, off_flags = _TCP.unpack_from(data, pos)
    offset = (off_flags >> 12) * 4
    if offset < 20 or end < pos + offset:
        return None
    start = pos + offset
    payload = data[start:end]
    missing = max(0, end - max(start, len(data)))
    return TcpSegment(ts, (src, sport), (dst, dport), seq, ack, off_flags & 0x3F, payload, missing)


def read_packets(path: str) -> Iterator[TcpSegment]:
    """The TCP segments of the capture file at ``path`` (raises :class:`CaptureError` if it is not one)."""
    with open(path, "rb") as f:
        yield from PacketReader(f)


# ------------------------------------------------------------------ reassembly

Endpoint = tuple[str, int]


@dataclass(slots=True, unsafe_hash=True)
class StreamData:
    """Bytes of one direction of a connection, in stream order.

    ``conn`` is ``(client, server)``; ``direction`` is ``"client"`` (sent by the client) or
    ``"server"``.  ``gap`` > 0: that many bytes before these are missing (lost, or before the capture
    began when ``gap`` is -1: the size is unknown), so the data may start inside a frame.  A value, like
    :class:`TcpSegment` (and, like it, not frozen: one is made for every segment with data).
    """

    ts: float
    conn: tuple[Endpoint, Endpoint]
    direction: Direction
    data: bytes
    gap: int = 0


@dataclass(frozen=True, slots=True)
class StreamEnd:
    """One direction of a connection ended (FIN), or the whole connection was reset (RST)."""

    ts: float
    conn: tuple[Endpoint, Endpoint]
    direction: Direction
    reset: bool


_MOD = 1 << 32
#: Flags that take a segment out of TcpReassembler's plain case.
_NOT_PLAIN = SYN | FIN | RST


def _delta(a: int, b: int) -> int:
    """``a - b`` in 32-bit sequence space, as a signed number."""
    d = (a - b) % _MOD
    return d - _MOD if d >= 1 << 31 else d


@dataclass
class _Direction:
    next_seq: int | None = None  # the next byte expected; None until the first segment
    started_mid: bool = False
    held: dict[int, tuple[float, bytes]] = field(default_factory=dict)  # early segments by seq
    held_bytes: int = 0
    gap: int = 0  # bytes known lost before the next delivery
    fin_seq: int | None = None
    ended: bool = False


#: A connection, the direction of a segment in it, and that direction's and the other's state.
_Route = tuple[tuple[Endpoint, Endpoint], Direction, _Direction, _Direction]


class TcpReassembler:
    """Per-connection, per-direction reassembly of :class:`TcpSegment` s (sans I/O).

    ``server_ports``: ports that mark the server side; without them the side that sent the SYN is the
    client, and for a connection caught without its SYN, a well-known ZooKeeper port (2181, 2281) or
    else the lower port is the server's.  ``hold_limit`` bounds the bytes held per direction while
    waiting for a missing segment; beyond it, the gap is declared lost and delivery goes on.
    """

    WELL_KNOWN = frozenset({2181, 2281})

    def __init__(self, server_ports: frozenset[int] | set[int] | None = None, *, hold_limit: int = 4 << 20) -> None:
        self.server_ports = frozenset(server_ports or ())
        self.hold_limit = hold_limit
        self._conns: dict[tuple[Endpoint, Endpoint], dict[Direction, _Direction]] = {}
        # What _orient and _conns say of a segment from src to dst, by (src, dst): for _plain (an entry
        # per known connection and way, gone with the connection: see _forget).
        self._routes: dict[tuple[Endpoint, Endpoint], _Route] = {}
        #: Segments delivered again (retransmissions) or overlapping what was delivered, in bytes.
        self.duplicate_bytes = 0

    def _orient(self, seg: TcpSegment) -> tuple[tuple[Endpoint, Endpoint], Direction]:
        a, b = seg.src, seg.dst
        if (a, b) in self._conns:
            return (a, b), "client"
        if (b, a) in self._conns:
            return (b, a), "server"
        if self.server_ports:
            client_sends = b[1] in self.server_ports or a[1] not in self.server_ports
        elif seg.flags & SYN:
            client_sends = not seg.flags & ACK
        elif (a[1] in self.WELL_KNOWN) != (b[1] in self.WELL_KNOWN):
            client_sends = b[1] in self.WELL_KNOWN
        else:
            client_sends = b[1] < a[1]
        conn = (a, b) if client_sends else (b, a)
        client, server = _Direction(), _Direction()
        self._conns[conn] = {"client": client, "server": server}
        self._routes[conn[1], conn[0]] = (conn, "server", server, client)
        self._routes[conn] = (conn, "client", client, server)  # after: a connection to itself is the client's
        return conn, "client" if client_sends else "server"

    def _forget(self, conn: tuple[Endpoint, Endpoint]) -> dict[Direction, _Direction]:
        self._routes.pop(conn, None)
        self._routes.pop((conn[1], conn[0]), None)
        return self._conns.pop(conn)

    def add(self, seg: TcpSegment) -> list[StreamData | StreamEnd]:
        route = self._routes.get((seg.src, seg.dst))
        if route is not None and not seg.flags & _NOT_PLAIN and not seg.missing:
            plain = self._plain(seg, route)
            if plain is not None:
                return plain
        conn, direction = self._orient(seg)
        d = self._conns[conn][direction]
        out: list[StreamData | StreamEnd] = []
        if seg.flags & RST:
            for name, side in self._forget(conn).items():
                if not side.ended:
                    out.append(StreamEnd(seg.ts, conn, name, True))
            return out
        if seg.flags & ACK:
            self._acked(conn, "server" if direction == "client" else "client", seg.ack, out)
        if d.ended:
            return out
        seq = seg.seq
        if seg.flags & SYN:
            d.next_seq = (seq + 1) % _MOD
            d.held.clear()
            d.held_bytes = 0
            seq = (seq + 1) % _MOD
        elif d.next_seq is None:
            d.next_seq = seq
            d.started_mid = True
        data = seg.payload
        if seg.flags & FIN:
            d.fin_seq = (seq + len(data) + seg.missing) % _MOD
        if data or seg.missing:
            self._take(d, conn, direction, seg.ts, seq, data, seg.missing, out)
        if d.fin_seq is not None and d.next_seq == d.fin_seq and not d.held:
            d.ended = True
            out.append(StreamEnd(seg.ts, conn, direction, False))
            if all(side.ended for side in self._conns[conn].values()):
                self._forget(conn)
        return out

    def _plain(self, seg: TcpSegment, route: _Route) -> list[StreamData | StreamEnd] | None:
        """What :meth:`add` returns for ``seg`` in the plain case, else None (then :meth:`add` says).

        The plain case: the segment (neither SYN, FIN nor RST, nothing cut off) of a known connection
        starts at the next byte expected, nothing is held either way and the direction has not ended or
        seen its FIN.  Then the whole of :meth:`add` comes down to delivering the payload, and nearly
        every segment of a capture is this case."""
        conn, direction, d, peer = route
        seq = seg.seq
        if d.next_seq != seq or d.held or peer.held or d.ended or d.fin_seq is not None:
            return None
        data = seg.payload
        if not data:
            return []
        gap = -1 if d.started_mid else d.gap
        d.started_mid = False
        d.gap = 0
        d.next_seq = (seq + len(data)) % _MOD
        return [StreamData(seg.ts, conn, direction, data, gap)]

    def _take(
        self,
        d: _Direction,
        conn: tuple[Endpoint, Endpoint],
        direction: Direction,
        ts: float,
        seq: int,
        data: bytes,
        missing: int,
        out: list[StreamData | StreamEnd],
    ) -> None:
        assert d.next_seq is not None
        ahead = _delta(seq, d.next_seq)
        if ahead < 0:  # starts with bytes already delivered (a retransmission or an overlap)
            self.duplicate_bytes += min(-ahead, len(data))
            if -ahead >= len(data):
                return
            data = data[-ahead:]
            seq = d.next_seq
            ahead = 0
        if ahead > 0:  # early: hold it until the bytes before it come
            held = d.held.get(seq)
            if held is None or len(held[1]) < len(data):
                d.held_bytes += len(data) - (len(held[1]) if held else 0)
                d.held[seq] = (ts, data)
            if d.held_bytes > self.hold_limit:
                self._give_up_gap(d, conn, direction, out)
            return
        self._deliver(d, conn, direction, ts, data, out)
        if missing:  # the capture cut this packet short: those bytes are lost
            d.next_seq = (d.next_seq + missing) % _MOD
            d.gap += missing
        self._drain(d, conn, direction, out)

    def _deliver(
        self,
        d: _Direction,
        conn: tuple[Endpoint, Endpoint],
        direction: Direction,
        ts: float,
        data: bytes,
        out: list[StreamData | StreamEnd],
    ) -> None:
        assert d.next_seq is not None
        gap = -1 if d.started_mid else d.gap
        d.started_mid = False
        d.gap = 0
        if data:
            out.append(StreamData(ts, conn, direction, data, gap))
        d.next_seq = (d.next_seq + len(data)) % _MOD

    def _drain(
        self, d: _Direction, conn: tuple[Endpoint, Endpoint], direction: Direction, out: list[StreamData | StreamEnd]
    ) -> None:
        """Deliver held segments that now follow on."""
        while d.held:
            assert d.next_seq is not None
            nxt = d.next_seq
            ready = next((s for s in d.held if _delta(s, nxt) <= 0), None)
            if ready is None:
                return
            ts, data = d.held.pop(ready)
            d.held_bytes -= len(data)
            behind = -_delta(ready, nxt)
            self.duplicate_bytes += min(behind, len(data))
            if behind < len(data):
                self._deliver(d, conn, direction, ts, data[behind:], out)

    def _acked(
        self, conn: tuple[Endpoint, Endpoint], direction: Direction, ack: int, out: list[StreamData | StreamEnd]
    ) -> None:
        """The peer of ``direction`` acknowledged up to ``ack``: bytes before held segments that it has
        received were lost by the capture, not in the network, and will not come; say so now rather than
        hold everything after them to the end of the capture."""
        d = self._conns[conn][direction]
        if not d.held or d.next_seq is None:
            return
        nxt = d.next_seq
        furthest = max(_delta(s, nxt) + len(data) for s, (_, data) in d.held.items())
        if 0 < _delta(ack, nxt) <= furthest:
            while d.held and d.next_seq is not None and _delta(ack, d.next_seq) > 0:
                before = d.next_seq
                self._give_up_gap(d, conn, direction, out)
                if d.next_seq == before:
                    break

    def _give_up_gap(
        self, d: _Direction, conn: tuple[Endpoint, Endpoint], direction: Direction, out: list[StreamData | StreamEnd]
    ) -> None:
        """The bytes before the earliest held segment are not coming: count them lost and go on."""
        assert d.next_seq is not None
        nxt = d.next_seq
        first = min(d.held, key=lambda s: _delta(s, nxt))
        d.gap += _delta(first, nxt)
        d.next_seq = first
        self._drain(d, conn, direction, out)

    def finish(self) -> list[StreamData | StreamEnd]:
        """End of the capture: deliver what is held (declaring the gaps before it lost)."""
        out: list[StreamData | StreamEnd] = []
        for conn, sides in list(self._conns.items()):
            for name, d in sides.items():
                while d.held:
                    self._give_up_gap(d, conn, name, out)
        return out
