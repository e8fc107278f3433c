"""zkwire.trace.bpf and zkwire.trace.ring: the port filter attached to a real packet socket on lo (IPv4 and
IPv6, the ports asked for pass, others and loopback's outgoing copies do not), the program's checks,
and the ring's block and packet headers parsed from blocks written here as the kernel lays them out."""

from __future__ import annotations

import io
import os
import socket
import struct

import pytest

from zkwire.trace.bpf import ACCEPT, MAX_PORTS, attach_filter, port_filter
from zkwire.trace.ring import TP_STATUS_USER, block_packets
from zkwire.trace.sniff import open_sniffer
from zkwire.trace.sniffing import DropWarning
from zkwire.trace.stats import TraceStats

root = pytest.mark.skipif(os.geteuid() != 0, reason="packet sockets need root or CAP_NET_RAW")


def _exchange(family: int, host: str) -> int:
    """A TCP connection on lo carrying a few bytes each way; returns the listening port."""
    with socket.socket(family) as listener:
        listener.bind((host, 0))
        listener.listen()
        port = int(listener.getsockname()[1])
        with socket.create_connection((host, port), timeout=5) as client:
            server, _ = listener.accept()
            with server:
                client.sendall(b"ping")
                assert server.recv(16) == b"ping"
                server.sendall(b"pong")
                assert client.recv(16) == b"pong"
    return port


def _count(sock: socket.socket) -> list[bytes]:
    sock.settimeout(0.3)
    got: list[bytes] = []
    for _ in range(1000):  # bounded: the traffic of one test
        try:
            got.append(sock.recv(70000))
        except TimeoutError:
            break
    return got


def _tcp_ports(frame: bytes) -> tuple[int, int]:
    ip = frame[14:]
    tcp = ip[(ip[0] & 0x0F) * 4 :] if ip[0] >> 4 == 4 else ip[40:]
    sport, dport = struct.unpack_from(">HH", tcp)
    return sport, dport


@root
@pytest.mark.parametrize(("family", "host"), [(socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")])
def test_the_filter_passes_the_ports_asked_for_once_and_blocks_the_rest(family: int, host: str) -> None:
    # The port to watch is the one the next exchange will listen on: find it by a first exchange with
    # the filter off, then filter for a port that is certainly not in use and one that is.
    with socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0) as sock:
        sock.bind(("lo", 0))
        with socket.socket(family) as probe:
            probe.bind((host, 0))
            watched = int(probe.getsockname()[1])
            probe.listen()
            attach_filter(sock, port_filter([watched], link=14, loopback=True))
            sock.bind(("lo", 3))
            other = _exchange(family, host)  # another port: nothing passes
            assert other != watched
            assert _count(sock) == []
            with socket.create_connection((host, watched), timeout=5) as client:
                server, _ = probe.accept()
                with server:
                    client.sendall(b"ping")
                    assert server.recv(16) == b"ping"
            got = _count(sock)
    assert got, "nothing of the watched port passed"
    assert all(watched in _tcp_ports(frame) for frame in got)
    # Loopback shows each packet twice; only the arriving copy passes. How many segments an exchange
    # takes varies (a delayed ACK may or may not ride on the FIN), so what is checked is that each
    # passed once, and that the handshake and the data are among them.
    assert len(set(got)) == len(got), "a packet passed twice"
    flags = [_tcp_flags(frame) for frame in got]
    assert flags.count(_SYN) == 1 and flags.count(_SYN | _ACK) == 1
    assert sum(frame.endswith(b"ping") for frame in got) == 1
    assert len(got) <= 12


_SYN, _ACK = 0x02, 0x10


def _tcp_flags(frame: bytes) -> int:
    ip = frame[14:]
    tcp = ip[(ip[0] & 0x0F) * 4 :] if ip[0] >> 4 == 4 else ip[40:]
    return tcp[13] & 0x3F


@root
def test_without_ports_every_tcp_segment_passes_and_udp_does_not() -> None:
    with socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0) as sock:
        sock.bind(("lo", 0))
        attach_filter(sock, port_filter([], link=14, loopback=True))
        sock.bind(("lo", 3))
        port = _exchange(socket.AF_INET, "127.0.0.1")
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
            udp.sendto(b"x", ("127.0.0.1", 9))
        got = _count(sock)
    assert got and any(port in _tcp_ports(f) for f in got)
    assert all(f[14 + 9] == 6 for f in got if f[14] >> 4 == 4)  # IPv4 protocol: TCP only


def test_the_program_checks_what_it_is_given() -> None:
    with pytest.raises(ValueError, match="at most"):
        port_filter(range(1, MAX_PORTS + 2), link=14, loopback=False)
    with pytest.raises(ValueError, match=r"1\.\.65535"):
        port_filter([0], link=14, loopback=False)
    with pytest.raises(ValueError, match=r"1\.\.65535"):
        port_filter([70000], link=0, loopback=False)
    program = port_filter(range(1, MAX_PORTS + 1), link=14, loopback=True)  # the longest still fits
    assert program[-1].code == 0x06 and program[-1].k == ACCEPT and program[-2].k == 0
    assert all(insn.jt < 256 and insn.jf < 256 for insn in program)
    # No link header (an IP tunnel): the IPv4 protocol byte is read at offset 9.
    tunnel = port_filter([2181], link=0, loopback=False)
    assert any(insn.code == 0x30 and insn.k == 9 for insn in tunnel)


@root
def test_a_sniffer_on_lo_uses_the_ring_and_the_filter() -> None:
    with open_sniffer("lo", [2181], ring_bytes=4 << 20) as sniffer:
        assert sniffer.ring and sniffer.filtered and sniffer.buffer_bytes == 4 << 20
        assert sniffer.update_counts() == 0
    with open_sniffer("lo", [2181], ring=False) as plain:
        assert not plain.ring and plain.filtered


# ---------------------------------------------------------------------------------------------- ring


def _block(packets: list[tuple[int, int, int, int, bytes]], size: int = 4096, *, bad: int | None = None) -> bytes:
    """A block as the kernel writes it: ``(sec, nsec, hatype, pkttype, data)`` per packet."""
    first = 48  # after struct tpacket_block_desc (and its private area, none here)
    out = bytearray(size)
    pos = first
    for n, (sec, nsec, hatype, pkttype, data) in enumerate(packets):
        mac = 48 + 20 + 2  # after struct tpacket3_hdr and struct sockaddr_ll, aligned
        length = mac + len(data)
        nxt = (length + 15) // 16 * 16 if n + 1 < len(packets) else 0
        struct.pack_into("=IIIIIIHH", out, pos, nxt, sec, nsec, len(data), len(data) + 3, 1, mac, mac + 14)
        struct.pack_into("=HHiHBB", out, pos + 48, 17, 3, 1, hatype, pkttype, 6)
        out[pos + mac : pos + mac + len(data)] = data
        pos += nxt
    struct.pack_into("=IIIIIIQ", out, 0, 1, 48, TP_STATUS_USER, len(packets), first if bad is None else bad, pos, 7)
    return bytes(out)


def test_ring_blocks_parse_into_packets_with_the_kernels_times() -> None:
    block = _block([(1700000000, 250_000_000, 772, 0, b"first"), (1700000001, 5, 1, 4, b"second packet")])
    got = list(block_packets(block, 0, len(block)))
    assert [p.data for p in got] == [b"first", b"second packet"]
    assert got[0].ts == pytest.approx(1700000000.25) and got[1].ts == pytest.approx(1700000001.000000005)
    assert (got[0].hatype, got[0].pkttype, got[1].hatype, got[1].pkttype) == (772, 0, 1, 4)
    assert got[0].cut == 3  # tp_len - tp_snaplen
    # The same block further into a larger buffer (the ring's n-th block).
    padded = bytes(8192) + block
    assert [p.data for p in block_packets(padded, 8192, len(block))] == [b"first", b"second packet"]
    assert list(block_packets(_block([]), 0, 4096)) == []


def test_a_corrupted_block_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="outside its block"):
        list(block_packets(_block([(1, 0, 772, 0, b"x")], bad=4090), 0, 4096))
    big = _block([(1, 0, 772, 0, b"y" * 100)])
    with pytest.raises(ValueError, match="outside its block"):
        list(block_packets(big, 0, 48 + 70 + 50))  # the data runs past the block's end


def test_the_summary_and_the_warning_say_what_the_kernel_dropped() -> None:
    stats = TraceStats()
    stats.capture = {"packets": 10, "kernel_dropped": 0}
    assert "capture: 10 packets read, kernel dropped 0" in stats.lines()
    stats.capture = {"packets": 10, "kernel_dropped": 5}
    assert "capture: 10 packets read, kernel dropped 5 (the figures are partial)" in stats.lines()
    assert stats.to_json()["capture"]["kernel_dropped"] == 5
    stats.capture = {"packets": 10, "kernel_dropped": 0, "ring_full_percent": 60}
    assert "capture: 10 packets read, kernel dropped 0, ring 60 % full (decoding is behind)" in stats.lines()
    err = io.StringIO()
    warn = DropWarning(err, every=3600)
    warn(3)
    warn(7)  # within the interval: not again
    assert err.getvalue() == "zkwire sniff: kernel dropped 3 packets: the figures below are partial\n"


def test_a_ring_size_out_of_range_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    from zkwire.shell.main import main as zkwire_main

    for bad in ("1", "5000", "2.5", "x"):
        with pytest.raises(SystemExit) as exit_info:
            zkwire_main(["sniff", "--iface", "lo", "--ring-mb", bad])
        assert exit_info.value.code == 2
        err = capsys.readouterr().err
        assert "--ring-mb" in err and len(err.strip().splitlines()) == 1, err


@root
@pytest.mark.parametrize("ring", [True, False], ids=["ring", "plain"])
async def test_both_readers_give_each_segment_once_with_the_kernels_time(ring: bool) -> None:
    import time

    import trio

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
        probe.listen()
        with open_sniffer("lo", [port], ring=ring, ring_bytes=2 << 20) as sniffer:
            before = time.time()
            with socket.create_connection(("127.0.0.1", port), timeout=5) as client:
                server, _ = probe.accept()
                with server:
                    client.sendall(b"hello")
                    assert server.recv(16) == b"hello"
            after = time.time()
            got = []
            with trio.fail_after(10):
                async for seg in sniffer.segments(idle=0.5):
                    got.append(seg)
    assert any(seg.payload == b"hello" for seg in got)
    assert all(port in (seg.src[1], seg.dst[1]) for seg in got)
    assert all(before - 0.01 <= seg.ts <= after + 0.01 for seg in got), [(seg.ts, before, after) for seg in got]
    keys = [(seg.src, seg.seq, seg.flags, seg.payload) for seg in got]
    assert len(keys) == len(set(keys))  # loopback's two copies: one kept
    assert sniffer.packets == sniffer.matched == len(got) and sniffer.dropped == 0
