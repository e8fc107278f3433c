"""A classic BPF program that keeps TCP segments to or from given ports, attached to a packet socket
(``SO_ATTACH_FILTER``) so that other traffic never reaches Python.

The program is assembled here from the opcodes of ``linux/filter.h`` (no libpcap).  With ``link``, the
length of the interface's link-layer header (14 for Ethernet and loopback, 0 for IP tunnels), it reads:

* the loopback interface only: the packet type (ancillary ``SKF_AD_PKTTYPE``); an outgoing copy is
  refused, since the kernel shows every loopback packet twice (leaving, then arriving);
* the protocol (ancillary ``SKF_AD_PROTOCOL``, the link layer's EtherType): IPv4 or IPv6, else refused;
* IPv4: protocol 6 (TCP), not a fragment past the first, the header length from the IHL nibble
  (``ldxb 4*([n]&0xf)``), then the TCP source and destination ports;
* IPv6: next header 6 (TCP) at the fixed header's end, then the ports; a packet with extension headers
  (next header 0, 43 or 60) is accepted and matched in Python, where they are walked.

A match returns the whole packet (``ACCEPT``), anything else 0 (dropped in the kernel).  Without ports
every TCP segment matches.  :func:`port_filter` gives the instructions, :func:`attach_filter` attaches
them.
"""

from __future__ import annotations

import ctypes
import socket
import struct
from collections.abc import Sequence
from dataclasses import dataclass

from .afpacket import PACKET_OUTGOING

__all__ = ["ACCEPT", "Insn", "MAX_PORTS", "attach_filter", "detach_filter", "port_filter"]

# Opcodes (linux/bpf_common.h).
_LD, _LDX, _JMP, _RET = 0x00, 0x01, 0x05, 0x06
_W, _H, _B = 0x00, 0x08, 0x10
_ABS, _IND, _MSH = 0x20, 0x40, 0xA0
_JEQ, _JSET = 0x10, 0x40
_K = 0x00
# Ancillary loads (linux/filter.h): SKF_AD_OFF + field.
_AD_OFF = -0x1000 & 0xFFFFFFFF
_AD_PROTOCOL, _AD_PKTTYPE = 0, 4
_SO_ATTACH_FILTER, _SO_DETACH_FILTER = 26, 27

#: What a matching packet returns: its length to keep (all of it).
ACCEPT = 0x40000
#: Most ports one program matches (its jumps are 8-bit offsets).
MAX_PORTS = 32


@dataclass(frozen=True, slots=True)
class Insn:
    """One ``struct sock_filter``: opcode, jump-if-true and jump-if-false offsets, constant."""

    code: int
    jt: int
    jf: int
    k: int

    def pack(self) -> bytes:
        return struct.pack("=HBBI", self.code, self.jt, self.jf, self.k)


# An instruction before its jumps are resolved: targets are label names (None: the next instruction).
_Pending = tuple[int, str | None, str | None, int]


def _ld(size: int, k: int) -> _Pending:
    return (_LD | size | _ABS, None, None, k & 0xFFFFFFFF)


def _jeq(k: int, yes: str | None, no: str | None) -> _Pending:
    return (_JMP | _JEQ | _K, yes, no, k)


def port_filter(ports: Sequence[int], *, link: int, loopback: bool) -> list[Insn]:
    """The program keeping TCP segments to or from ``ports`` (every TCP segment if empty); see the
    module docstring.

    Raises:
        ValueError: more than :data:`MAX_PORTS` ports, a port outside 1..65535, or a negative ``link``.
    """
    ports = sorted(set(ports))
    if len(ports) > MAX_PORTS:
        raise ValueError(f"at most {MAX_PORTS} ports can be filtered in the kernel, not {len(ports)}")
    if any(not 0 < p < 65536 for p in ports) or link < 0:
        raise ValueError(f"ports are 1..65535 and the link header 0 or more bytes: {ports}, {link}")
    code: list[_Pending | str] = []  # a str is a label for the next instruction
    if loopback:
        code += [_ld(_W, _AD_OFF + _AD_PKTTYPE), _jeq(PACKET_OUTGOING, "drop", None)]
    code += [
        _ld(_W, _AD_OFF + _AD_PROTOCOL),
        _jeq(0x0800, None, "v6"),
        _ld(_B, link + 9),  # IPv4 protocol
        _jeq(6, None, "drop"),
        _ld(_H, link + 6),  # flags and fragment offset
        (_JMP | _JSET | _K, "drop", None, 0x1FFF),
        (_LDX | _B | _MSH, None, None, link),  # X = IPv4 header length
    ]
    code += _ports_at(ports, _IND, 0, link)
    code += [
        "v6",
        _jeq(0x86DD, None, "drop"),
        _ld(_B, link + 6),  # IPv6 next header
        _jeq(0, "accept", None),
        _jeq(43, "accept", None),
        _jeq(60, "accept", None),
        _jeq(6, None, "drop"),
    ]
    code += _ports_at(ports, _ABS, link + 40, 0)
    code += ["drop", (_RET | _K, None, None, 0), "accept", (_RET | _K, None, None, ACCEPT)]
    return _resolve(code)


def _ports_at(ports: Sequence[int], mode: int, base: int, link: int) -> list[_Pending | str]:
    """Source, then destination port of the TCP header at ``base`` (``_IND``: X + ``link``)."""
    if not ports:
        return [(_JMP | _JEQ | _K, "accept", "accept", 0)]  # any TCP segment
    out: list[_Pending | str] = []
    for offset in (0, 2):
        out.append((_LD | _H | mode, None, None, base + link + offset))
        out += [_jeq(p, "accept", None) for p in ports]
    out.append((_JMP | _JEQ | _K, "drop", "drop", 0))
    return out


def _resolve(code: list[_Pending | str]) -> list[Insn]:
    labels: dict[str, int] = {}
    at = 0
    for item in code:
        if isinstance(item, str):
            labels[item] = at
        else:
            at += 1
    out: list[Insn] = []
    for item in code:
        if isinstance(item, str):
            continue
        op, yes, no, k = item
        here = len(out) + 1
        jt = labels[yes] - here if yes is not None else 0
        jf = labels[no] - here if no is not None else 0
        if not (0 <= jt < 256 and 0 <= jf < 256):
            raise ValueError("the filter program is too long for its jumps")
        out.append(Insn(op, jt, jf, k))
    return out


def attach_filter(sock: socket.socket, program: Sequence[Insn]) -> None:
    """Attach ``program`` to ``sock`` (the kernel copies it; raises OSError if it refuses it)."""
    raw = b"".join(insn.pack() for insn in program)
    buf = ctypes.create_string_buffer(raw, len(raw))
    # struct sock_fprog: unsigned short len; struct sock_filter *filter (native alignment).
    fprog = struct.pack("HP", len(program), ctypes.addressof(buf))
    sock.setsockopt(socket.SOL_SOCKET, _SO_ATTACH_FILTER, fprog)


def detach_filter(sock: socket.socket) -> None:
    sock.setsockopt(socket.SOL_SOCKET, _SO_DETACH_FILTER, 0)
