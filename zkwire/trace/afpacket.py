"""Linux packet-socket constants (linux/if_packet.h, linux/if_arp.h, linux/if_ether.h), in one place for
the sniffer, its ring and its kernel filter."""

from __future__ import annotations

__all__ = [
    "ARPHRD_ETHER",
    "ARPHRD_LOOPBACK",
    "ETH_P_ALL",
    "PACKET_OUTGOING",
    "PACKET_RX_RING",
    "PACKET_STATISTICS",
    "PACKET_VERSION",
    "SOL_PACKET",
    "TPACKET_V3",
]

#: The socket level of packet-socket options.
SOL_PACKET = 263
#: Socket options: a receive ring, the drop counters, the ring's layout version.
PACKET_RX_RING = 5
PACKET_STATISTICS = 6
PACKET_VERSION = 10
#: The ring layout with blocks of packets.
TPACKET_V3 = 2
#: A packet's type as the kernel tags it: sent by this host (loopback shows each packet sent and received).
PACKET_OUTGOING = 4
#: Every protocol (for a packet socket's bind).
ETH_P_ALL = 0x0003
#: Link types of an interface: Ethernet and loopback.
ARPHRD_ETHER = 1
ARPHRD_LOOPBACK = 772
