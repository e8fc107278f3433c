"""A memory-mapped TPACKET_V3 receive ring on a packet socket (Linux; standard library only).

The kernel writes packets into blocks of a ring shared with this process and hands over a block at a
time (when it is full, or ``block_timeout_ms`` after its first packet); Python reads every packet of a
block with no system call and gives the block back.  Each packet carries the kernel's receive time.
When every block is still held by the reader, the kernel drops packets and counts them: those counts
(``PACKET_STATISTICS``, :meth:`PacketRing.statistics`) are the sniffer's only source of truth about loss.

Layouts (``linux/if_packet.h``), all in the machine's byte order:

* ``struct tpacket_req3`` (setsockopt ``PACKET_RX_RING``): block size, block count, frame size, frame
  count, block retire timeout (ms), private area size, feature word; seven ``u32``.
* ``struct tpacket_block_desc``: ``u32 version, u32 offset_to_priv``, then ``struct tpacket_hdr_v1``:
  ``u32 block_status, u32 num_pkts, u32 offset_to_first_pkt, u32 blk_len, u64 seq_num``, ...
* ``struct tpacket3_hdr``: ``u32 tp_next_offset, tp_sec, tp_nsec, tp_snaplen, tp_len, tp_status;
  u16 tp_mac, tp_net``, ... (48 bytes with alignment), followed by a ``struct sockaddr_ll`` whose
  ``sll_hatype`` (u16) is at +8 and ``sll_pkttype`` (u8) at +10.
* ``struct tpacket_stats_v3``: ``u32 tp_packets, tp_drops, tp_freeze_q_cnt`` (read and reset by
  getsockopt; ``tp_packets`` includes the drops).
"""

from __future__ import annotations

import mmap
import socket
import struct
from collections.abc import Iterator
from dataclasses import dataclass

from .afpacket import PACKET_RX_RING, PACKET_STATISTICS, PACKET_VERSION, SOL_PACKET, TPACKET_V3

__all__ = [
    "BLOCK_SIZE",
    "BLOCK_TIMEOUT_MS",
    "PacketRing",
    "RingPacket",
    "RingStatistics",
    "TP_STATUS_USER",
    "block_packets",
]

TP_STATUS_KERNEL = 0
TP_STATUS_USER = 1
_TP_STATUS_COPY = 1 << 1  # the packet was longer than the block: only part of it is here
_FRAME_SIZE = 2048  # only checked by the kernel against the block size in TPACKET_V3

_BLOCK_HDR = struct.Struct("=IIIIIIQ")  # version, offset_to_priv, status, num_pkts, first, blk_len, seq
_PKT_HDR = struct.Struct("=IIIIIIHH")  # next, sec, nsec, snaplen, len, status, mac, net
_SLL_OFFSET = 48  # TPACKET_ALIGN(sizeof(struct tpacket3_hdr))
_SLL = struct.Struct("=HBB")  # sll_hatype, sll_pkttype, sll_halen (at +8 of struct sockaddr_ll)
_STATS_V3 = struct.Struct("=III")

#: Default block size: a packet must fit in one block (loopback packets reach 64 KiB with GSO).  The
#: kernel hands a block over when full or ``block_timeout_ms`` after its first packet, so at a low
#: rate each block holds only that long's packets: small blocks and a long timeout waste less.
BLOCK_SIZE = 256 << 10
#: Default block timeout (ms): the longest a packet waits in a block that is not full.
BLOCK_TIMEOUT_MS = 64


@dataclass(frozen=True, slots=True)
class RingPacket:
    """One packet of a block: the kernel's receive time (seconds since the epoch), link type
    (``ARPHRD_*``), packet type (``PACKET_*``), its bytes from the link-layer header, and how many more
    bytes the packet had than the ring kept."""

    ts: float
    hatype: int
    pkttype: int
    data: bytes
    cut: int


@dataclass(frozen=True, slots=True)
class RingStatistics:
    """What the kernel counted since the last reading: packets the filter passed (kept or dropped),
    packets dropped because the ring was full, and times the ring was full."""

    packets: int
    drops: int
    freezes: int


def block_packets(buf: bytes | memoryview | mmap.mmap, start: int, size: int) -> Iterator[RingPacket]:
    """The packets of the block at ``start`` (``size`` bytes) in ``buf``, whatever its status.

    Raises:
        ValueError: the block's offsets point outside it (a corrupted ring).
    """
    _, _, _, count, offset, _, _ = _BLOCK_HDR.unpack_from(buf, start)
    end = start + size
    pos = start + offset
    for _ in range(count):
        if not start < pos <= end - _SLL_OFFSET - _SLL.size - 8:
            raise ValueError(f"packet header outside its block at {pos - start}")
        nxt, sec, nsec, snaplen, length, _status, mac, _net = _PKT_HDR.unpack_from(buf, pos)
        hatype, pkttype, _ = _SLL.unpack_from(buf, pos + _SLL_OFFSET + 8)
        first = pos + mac
        if first + snaplen > end:
            raise ValueError(f"packet data outside its block at {pos - start}")
        yield RingPacket(sec + nsec * 1e-9, hatype, pkttype, bytes(buf[first : first + snaplen]), length - snaplen)
        if not nxt:
            break
        pos += nxt


class PacketRing:
    """A TPACKET_V3 receive ring of ``block_count`` blocks of ``block_size`` bytes on ``sock`` (a packet
    socket not yet bound to its protocol: set the ring up before any packet can come).

    Raises:
        OSError: the kernel refused the version or the ring (no TPACKET_V3, sizes, memory).
    """

    def __init__(
        self,
        sock: socket.socket,
        *,
        block_size: int = BLOCK_SIZE,
        block_count: int = 32,
        block_timeout_ms: int = BLOCK_TIMEOUT_MS,
    ) -> None:
        page = mmap.PAGESIZE
        if block_size < page or block_size % page or block_count < 2:
            raise ValueError(f"blocks are whole pages, at least two of them: {block_size} x {block_count}")
        self.block_size = block_size
        self.block_count = block_count
        sock.setsockopt(SOL_PACKET, PACKET_VERSION, TPACKET_V3)
        frames = block_size // _FRAME_SIZE * block_count
        req = struct.pack("=7I", block_size, block_count, _FRAME_SIZE, frames, block_timeout_ms, 0, 0)
        sock.setsockopt(SOL_PACKET, PACKET_RX_RING, req)
        self._sock = sock
        protection = mmap.PROT_READ | mmap.PROT_WRITE
        self._map = mmap.mmap(sock.fileno(), block_size * block_count, mmap.MAP_SHARED, protection)
        self._next = 0

    #: Blocks taken between two reads of the kernel's drop counter (each block holds many packets).
    counts_every = 1

    @property
    def size(self) -> int:
        """Bytes of the ring (the most memory it takes)."""
        return self.block_size * self.block_count

    @property
    def buffer_bytes(self) -> int:
        """The most memory packets waiting for Python take in the kernel: the ring."""
        return self.size

    def backlog_fraction(self) -> float:
        """How full the ring is (0 to 1)."""
        return self.backlog() / self.block_count

    def ready(self) -> bool:
        """True when the kernel has handed over the next block."""
        return bool(_status(self._map, self._next * self.block_size) & TP_STATUS_USER)

    def backlog(self) -> int:
        """Blocks handed over and not yet taken (how far behind the reader is)."""
        count = 0
        while count < self.block_count:
            start = (self._next + count) % self.block_count * self.block_size
            if not _status(self._map, start) & TP_STATUS_USER:
                break
            count += 1
        return count

    def take(self) -> list[RingPacket]:
        """The packets of the next block, which is given back to the kernel; call when :meth:`ready`."""
        start = self._next * self.block_size
        try:
            return list(block_packets(self._map, start, self.block_size))
        finally:
            struct.pack_into("=I", self._map, start + 8, TP_STATUS_KERNEL)
            self._next = (self._next + 1) % self.block_count

    def statistics(self) -> RingStatistics:
        """The kernel's counts since the last call (reading resets them)."""
        raw = self._sock.getsockopt(SOL_PACKET, PACKET_STATISTICS, _STATS_V3.size)
        return RingStatistics(*_STATS_V3.unpack(raw))

    def close(self) -> None:
        self._map.close()


def _status(buf: mmap.mmap, start: int) -> int:
    return int(struct.unpack_from("=I", buf, start + 8)[0])
