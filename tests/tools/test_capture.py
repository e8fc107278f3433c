"""zkwire.trace.capture: pcap/pcapng reading and TCP reassembly, on synthetic captures (every container and
link layer, reordering, retransmission, loss, a capture that starts mid-connection, hostile files) and on
a real capture of zkwire's traffic to the real server made with tcpdump."""

from __future__ import annotations

import io
import os
import shutil
import signal
import struct

import pytest
import trio
from helpers.addresses import first_server
from helpers.captureproof import kernel_drops, start_tcpdump, stop_tcpdump, until_captured
from hypothesis import given, settings
from hypothesis import strategies as st

import zkwire
from zkwire.trace.capture import (
    ACK,
    FIN,
    RST,
    SYN,
    CaptureError,
    PacketReader,
    StreamData,
    StreamEnd,
    TcpReassembler,
    TcpSegment,
    _plain_ethernet_tcp,
    is_capture,
    read_packets,
    tcp_segment,
)
from zkwire.trace.decoder import ConversationDecoder

CLIENT = ("10.0.0.1", 40000)
SERVER = ("10.0.0.2", 2181)


# ---------------------------------------------------------------------------------------------- writers


def ipv4_tcp(src: tuple[str, int], dst: tuple[str, int], seq: int, flags: int, payload: bytes, ack: int = 0) -> bytes:
    tcp = struct.pack(">HHIIHHHH", src[1], dst[1], seq, ack, (5 << 12) | flags, 65535, 0, 0) + payload
    ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), 0, 0x4000, 64, 6, 0, _v4(src[0]), _v4(dst[0]))
    return ip + tcp


def _v4(addr: str) -> bytes:
    return bytes(int(x) for x in addr.split("."))


def ethernet(ip: bytes, *, vlan: bool = False) -> bytes:
    tag = b"\x81\x00\x00\x05" if vlan else b""
    return b"\x00" * 12 + tag + b"\x08\x00" + ip


def pcap(
    packets: list[tuple[float, bytes]], *, linktype: int = 1, big_endian: bool = False, nano: bool = False
) -> bytes:
    order = ">" if big_endian else "<"
    magic = 0xA1B23C4D if nano else 0xA1B2C3D4
    out = struct.pack(order + "IHHiIII", magic, 2, 4, 0, 0, 65535, linktype)
    for ts, data in packets:
        sec = int(ts)
        frac = round((ts - sec) * (1e9 if nano else 1e6))
        out += struct.pack(order + "IIII", sec, frac, len(data), len(data)) + data
    return out


def pcapng(packets: list[tuple[float, bytes]], *, linktype: int = 1, tsresol: int | None = 9) -> bytes:
    def block(btype: int, body: bytes) -> bytes:
        body += b"\x00" * (-len(body) % 4)
        n = len(body) + 12
        return struct.pack("<II", btype, n) + body + struct.pack("<I", n)

    out = block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1))
    opts = b""
    unit = 1e-6
    if tsresol is not None:
        opts = struct.pack("<HHB3x", 9, 1, tsresol) + struct.pack("<HH", 0, 0)
        unit = 10.0**-tsresol
    out += block(1, struct.pack("<HHI", linktype, 0, 65535) + opts)
    for ts, data in packets:
        t = round(ts / unit)
        out += block(6, struct.pack("<IIIII", 0, t >> 32, t & 0xFFFFFFFF, len(data), len(data)) + data)
    return out


def frames(*payloads: bytes) -> bytes:
    return b"".join(struct.pack(">i", len(p)) + p for p in payloads)


def streams(reasm: TcpReassembler, segs: list[TcpSegment]) -> dict[str, bytes]:
    got: dict[str, bytes] = {"client": b"", "server": b""}
    for seg in segs:
        for ev in reasm.add(seg):
            if isinstance(ev, StreamData):
                got[ev.direction] += ev.data
    for ev in reasm.finish():
        if isinstance(ev, StreamData):
            got[ev.direction] += ev.data
    return got


def seg(src: tuple[str, int], dst: tuple[str, int], seq: int, data: bytes = b"", flags: int = ACK) -> TcpSegment:
    return TcpSegment(1.0, src, dst, seq % (1 << 32), 0, flags, data)


# ---------------------------------------------------------------------------------------------- containers


@pytest.mark.parametrize(
    "make",
    [
        lambda p: pcap(p),
        lambda p: pcap(p, big_endian=True),
        lambda p: pcap(p, nano=True),
        lambda p: pcapng(p),
        lambda p: pcapng(p, tsresol=None),
        lambda p: pcapng(p, tsresol=3),
    ],
    ids=["pcap-le", "pcap-be", "pcap-ns", "pcapng-ns", "pcapng-us", "pcapng-ms"],
)
def test_every_container_gives_the_same_segments(make) -> None:  # type: ignore[no-untyped-def]
    pkt = ethernet(ipv4_tcp(CLIENT, SERVER, 1000, ACK | 0x08, b"hello"))
    data = make([(1700000000.25, pkt), (1700000001.5, pkt)])
    assert is_capture(data)
    reader = PacketReader(io.BytesIO(data))
    got = list(reader)
    assert [s.payload for s in got] == [b"hello", b"hello"]
    assert got[0].src == CLIENT and got[0].dst == SERVER and got[0].seq == 1000
    assert got[0].ts == pytest.approx(1700000000.25, abs=1e-3)
    assert got[1].ts == pytest.approx(1700000001.5, abs=1e-3)
    assert reader.packets == 2 and reader.skipped == 0


@pytest.mark.parametrize(
    ("linktype", "wrap"),
    [
        (1, lambda ip: ethernet(ip, vlan=True)),
        (113, lambda ip: b"\x00\x00\x03\x04\x00\x06" + b"\x00" * 8 + b"\x08\x00" + ip),
        (276, lambda ip: b"\x08\x00" + b"\x00" * 18 + ip),
        (101, lambda ip: ip),
        (0, lambda ip: struct.pack("<I", 2) + ip),
    ],
    ids=["vlan", "sll", "sll2", "raw", "null"],
)
def test_link_layers(linktype: int, wrap) -> None:  # type: ignore[no-untyped-def]
    pkt = wrap(ipv4_tcp(CLIENT, SERVER, 5, ACK, b"xyz"))
    [s] = PacketReader(io.BytesIO(pcap([(1.0, pkt)], linktype=linktype)))
    assert s.payload == b"xyz"


def test_ipv6() -> None:
    tcp = struct.pack(">HHIIHHHH", 40000, 2181, 7, 0, (5 << 12) | ACK, 1, 0, 0) + b"v6"
    ip = struct.pack(">IHBB16s16s", 6 << 28, len(tcp), 6, 64, b"\x00" * 15 + b"\x01", b"\x00" * 15 + b"\x01") + tcp
    [s] = PacketReader(io.BytesIO(pcap([(1.0, b"\x00" * 12 + b"\x86\xdd" + ip)])))
    assert s.src == ("::1", 40000) and s.payload == b"v6"


def test_non_tcp_packets_are_skipped_and_counted() -> None:
    udp = bytearray(ipv4_tcp(CLIENT, SERVER, 1, ACK, b"x"))
    udp[9] = 17
    reader = PacketReader(io.BytesIO(pcap([(1.0, ethernet(bytes(udp))), (1.0, b"\x00" * 5)])))
    assert list(reader) == [] and reader.skipped == 2


@pytest.mark.parametrize(
    "data",
    [b"", b"\xd4\xc3\xb2", b"GET / HTTP/1.1\r\n", pcap([(1.0, b"x" * 40)])[:30], pcapng([(1.0, b"y" * 60)])[:-10]],
    ids=["empty", "short magic", "text", "cut record header", "cut block"],
)
def test_damaged_files_raise_capture_error(data: bytes) -> None:
    with pytest.raises(CaptureError):
        list(PacketReader(io.BytesIO(data)))


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.data())
def test_mutated_captures_raise_only_capture_error(data: st.DataObject) -> None:
    base = data.draw(st.sampled_from([pcap, pcapng]))(
        [
            (1.0, ethernet(ipv4_tcp(CLIENT, SERVER, 1, ACK, b"abc"))),
            (2.0, ethernet(ipv4_tcp(SERVER, CLIENT, 9, ACK, b"d"))),
        ]
    )
    blob = bytearray(base)
    for _ in range(data.draw(st.integers(1, 8))):
        i = data.draw(st.integers(0, len(blob) - 1))
        blob[i] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(blob)))
    try:
        segs = list(PacketReader(io.BytesIO(bytes(blob[:cut]))))
    except CaptureError:
        return
    reasm = TcpReassembler()
    for s in segs:
        reasm.add(s)
    reasm.finish()


@settings(max_examples=400, deadline=None, derandomize=True)
@given(st.data())
def test_the_plain_ethernet_path_reads_a_frame_as_the_layers_do(data: st.DataObject) -> None:
    """PacketReader's quick path for Ethernet, IPv4 and TCP without options (_plain_ethernet_tcp) gives
    what tcp_segment gives, or leaves the frame to it, whatever the header bytes, length and cut."""
    frame = bytearray(ethernet(ipv4_tcp(CLIENT, SERVER, 7, ACK, b"payload-bytes", ack=3)))
    assert _plain_ethernet_tcp(bytes(frame), 0, len(frame), 1.5, 0) == tcp_segment(1, 1.5, bytes(frame))
    for _ in range(data.draw(st.integers(0, 6))):
        frame[data.draw(st.integers(0, 14 + 20 + 20 - 1))] = data.draw(st.integers(0, 255))
    kept = bytes(frame[: data.draw(st.integers(0, len(frame)))])
    cut = data.draw(st.sampled_from([0, 1, 13, 70000]))
    pad = data.draw(st.sampled_from([b"", b"xyz"]))  # the frame inside a larger block, as the reader has it
    block = pad + kept + pad
    plain = _plain_ethernet_tcp(block, len(pad), len(pad) + len(kept), 2.5, cut)
    assert plain is None or plain == tcp_segment(1, 2.5, kept, cut)


# ---------------------------------------------------------------------------------------------- reassembly


class _NoPlainReassembler(TcpReassembler):
    """The reassembler without its quick path for the plain case: the design it must agree with."""

    def _plain(self, seg: TcpSegment, route: object) -> None:
        return None


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.data())
def test_reassembly_is_the_same_without_its_plain_path(data: st.DataObject) -> None:
    """Segments of two connections lost, repeated, reordered, cut short, reset or ended at any point:
    the plain path of TcpReassembler.add changes nothing of what it returns."""
    other = ("10.0.0.3", 40001)
    segs: list[TcpSegment] = []
    seqs = {(CLIENT, SERVER): 100, (SERVER, CLIENT): 900, (other, SERVER): 5, (SERVER, other): (1 << 32) - 3}
    for _ in range(data.draw(st.integers(1, 40))):
        src, dst = data.draw(st.sampled_from(sorted(seqs)))
        size = data.draw(st.integers(0, 6))
        flags = data.draw(st.sampled_from([ACK, ACK, ACK, ACK | 0x08, 0, SYN, SYN | ACK, FIN | ACK, RST]))
        seq = (seqs[src, dst] + data.draw(st.sampled_from([0, 0, 0, -2, 3]))) % (1 << 32)
        missing = data.draw(st.sampled_from([0, 0, 0, 2]))
        ack = (seqs[dst, src] + data.draw(st.sampled_from([0, 4]))) % (1 << 32)
        segs.append(TcpSegment(1.0 + len(segs), src, dst, seq, ack, flags, b"x" * size, missing))
        seqs[src, dst] = (seq + size + missing + (flags & SYN != 0)) % (1 << 32)
    plain, layered = TcpReassembler(hold_limit=8), _NoPlainReassembler(hold_limit=8)
    for s in segs:
        assert plain.add(s) == layered.add(s)
    assert plain.finish() == layered.finish()
    assert plain.duplicate_bytes == layered.duplicate_bytes


def test_handshake_orients_and_in_order_data_flows() -> None:
    r = TcpReassembler()
    got = streams(
        r,
        [
            seg(CLIENT, SERVER, 100, flags=SYN),
            seg(SERVER, CLIENT, 500, flags=SYN | ACK),
            seg(CLIENT, SERVER, 101, b"abc"),
            seg(SERVER, CLIENT, 501, b"XY"),
            seg(CLIENT, SERVER, 104, b"def"),
        ],
    )
    assert got == {"client": b"abcdef", "server": b"XY"}


def test_out_of_order_and_retransmitted_segments_are_delivered_once_in_order() -> None:
    r = TcpReassembler()
    out: list[StreamData | StreamEnd] = []
    for s in [
        seg(CLIENT, SERVER, 100, flags=SYN),
        seg(CLIENT, SERVER, 107, b"ghi"),  # early
        seg(CLIENT, SERVER, 101, b"abc"),
        seg(CLIENT, SERVER, 101, b"abc"),  # retransmission
        seg(CLIENT, SERVER, 102, b"bcdef"),  # overlaps what was delivered, fills the hole
        seg(CLIENT, SERVER, 110, b"", flags=FIN | ACK),
    ]:
        out += r.add(s)
    data = [e for e in out if isinstance(e, StreamData)]
    assert b"".join(e.data for e in data) == b"abcdefghi"
    assert all(e.gap == 0 for e in data)
    assert r.duplicate_bytes == 3 + 2
    assert isinstance(out[-1], StreamEnd) and not out[-1].reset


def test_sequence_numbers_wrap() -> None:
    r = TcpReassembler(server_ports={2181})
    top = (1 << 32) - 2
    got = streams(r, [seg(CLIENT, SERVER, top, b"ab"), seg(CLIENT, SERVER, 0, b"cd"), seg(CLIENT, SERVER, top, b"ab")])
    assert got["client"] == b"abcd"


def test_a_lost_segment_is_reported_as_a_gap_of_its_size() -> None:
    r = TcpReassembler(hold_limit=8)
    out: list[StreamData | StreamEnd] = []
    for s in [
        seg(CLIENT, SERVER, 100, flags=SYN),
        seg(CLIENT, SERVER, 101, b"abc"),
        seg(CLIENT, SERVER, 110, b"jklmn"),  # 104..109 never come
        seg(CLIENT, SERVER, 115, b"opqrs"),
    ]:
        out += r.add(s)
    data = [e for e in out if isinstance(e, StreamData)]
    assert [(e.data, e.gap) for e in data] == [(b"abc", 0), (b"jklmn", 6), (b"opqrs", 0)]


def test_held_data_is_delivered_at_the_end_of_the_capture_with_its_gap() -> None:
    r = TcpReassembler()
    r.add(seg(CLIENT, SERVER, 100, flags=SYN))
    r.add(seg(CLIENT, SERVER, 101, b"a"))
    assert r.add(seg(CLIENT, SERVER, 105, b"e")) == []
    [ev] = r.finish()
    assert isinstance(ev, StreamData) and (ev.data, ev.gap) == (b"e", 3)


def test_a_capture_that_starts_mid_connection_says_so() -> None:
    r = TcpReassembler()  # no SYN: port 2181 marks the server
    [ev] = r.add(seg(SERVER, CLIENT, 7777, b"tail of a frame"))
    assert isinstance(ev, StreamData) and ev.direction == "server" and ev.gap == -1
    assert ev.conn == (CLIENT, SERVER)
    [ev2] = r.add(seg(SERVER, CLIENT, 7777 + 15, b"next"))
    assert isinstance(ev2, StreamData) and ev2.gap == 0


def test_reset_ends_both_directions() -> None:
    r = TcpReassembler()
    r.add(seg(CLIENT, SERVER, 100, flags=SYN))
    ends = r.add(seg(SERVER, CLIENT, 1, flags=RST))
    assert sorted((e.direction, e.reset) for e in ends if isinstance(e, StreamEnd)) == [
        ("client", True),
        ("server", True),
    ]


def test_truncated_packets_count_their_missing_bytes_as_a_gap() -> None:
    r = TcpReassembler(server_ports={2181})
    out = r.add(TcpSegment(1.0, CLIENT, SERVER, 10, 0, ACK, b"abc", missing=5))
    out += r.add(seg(CLIENT, SERVER, 18, b"xyz"))
    assert [(e.data, e.gap) for e in out if isinstance(e, StreamData)] == [(b"abc", -1), (b"xyz", 5)]


def test_pcap_snaplen_cut_shows_as_missing() -> None:
    pkt = ethernet(ipv4_tcp(CLIENT, SERVER, 1, ACK, b"0123456789"))
    cut = pkt[:-4]
    blob = pcap([])
    blob += struct.pack("<IIII", 1, 0, len(cut), len(pkt)) + cut
    [s] = PacketReader(io.BytesIO(blob))
    assert (s.payload, s.missing) == (b"012345", 4)


# ---------------------------------------------------------------------------------------------- real traffic


def _decode_capture(path: str, port: int) -> dict[str, list[str]]:
    """Decode every ZooKeeper conversation in a capture; op names per direction."""
    reasm = TcpReassembler(server_ports={port})
    decoders: dict[object, ConversationDecoder] = {}
    ops: dict[str, list[str]] = {"client": [], "server": []}

    def handle(ev: StreamData | StreamEnd) -> None:
        if not isinstance(ev, StreamData):
            return
        dec = decoders.setdefault(ev.conn, ConversationDecoder())
        feed = dec.feed_client if ev.direction == "client" else dec.feed_server
        for frame in feed(ev.data, ev.ts):
            ops[ev.direction].append(frame.op_name or frame.kind)

    for s in read_packets(path):
        for ev in reasm.add(s):
            handle(ev)
    for ev in reasm.finish():
        handle(ev)
    return ops


@pytest.mark.skipif(shutil.which("tcpdump") is None or os.geteuid() != 0, reason="needs tcpdump and root")
async def test_the_suites_tcpdump_keeps_a_burst_while_it_waits_for_a_core(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The capture tests' tcpdump is stopped (as a loaded machine may keep it from running) while 60
    small messages cross: the kernel must keep every packet (with the default buffer it drops them)."""
    listener = trio.socket.socket()
    await listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]
    proc = await start_tcpdump(port, tmp_path / "burst.pcap")
    try:
        with trio.fail_after(10):
            client = trio.socket.socket()
            await client.connect(("127.0.0.1", port))
            server, _ = await listener.accept()
            proc.send_signal(signal.SIGSTOP)
            try:
                for _ in range(60):
                    await client.send(b"x" * 50)
                    assert await server.recv(100)
            finally:
                proc.send_signal(signal.SIGCONT)
            client.close()
            server.close()
    finally:
        report = await stop_tcpdump(proc)
        listener.close()
    assert "packets captured" in report, report
    assert kernel_drops(report) == 0, report


@pytest.mark.skipif(shutil.which("tcpdump") is None or os.geteuid() != 0, reason="needs tcpdump and root")
@pytest.mark.parametrize("fmt", ["micro", "nano"])
async def test_a_real_capture_of_zkwire_traffic_decodes(zk_hosts: str, zk_path: str, tmp_path, fmt: str) -> None:  # type: ignore[no-untyped-def]
    port = first_server(zk_hosts)[1]
    out = tmp_path / "capture.pcap"
    for _attempt in range(3):  # a capture the kernel dropped packets of proves nothing about the decoder
        proc = await start_tcpdump(port, out, f"--time-stamp-precision={fmt}")
        try:
            async with zkwire.open_client(zk_hosts) as zk:
                await zk.create(zk_path, b"captured")
                for i in range(20):
                    await zk.set_data(zk_path, str(i).encode())
                await zk.get_data(zk_path)
                await zk.delete(zk_path)
            await until_captured(out, 1)  # tcpdump may lag behind under load: its backlog is lost when it stops
        finally:
            report = await stop_tcpdump(proc)
        if kernel_drops(report) == 0:
            break
    assert kernel_drops(report) == 0, report
    ops = _decode_capture(str(out), port)
    assert ops["client"].count("setData") == 20
    assert ops["server"].count("setData") == 20
    assert "closeSession" in ops["client"] and "delete" in ops["client"]
    # The same packets in a pcapng container decode the same.
    packets = []
    blob = out.read_bytes()
    order = "<" if blob[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    linktype = struct.unpack_from(order + "I", blob, 20)[0]
    pos = 24
    while pos < len(blob):
        sec, frac, incl, _ = struct.unpack_from(order + "IIII", blob, pos)
        packets.append((sec + frac * (1e-9 if fmt == "nano" else 1e-6), blob[pos + 16 : pos + 16 + incl]))
        pos += 16 + incl
    ng = tmp_path / "capture.pcapng"
    ng.write_bytes(pcapng(packets, linktype=linktype))
    assert _decode_capture(str(ng), port) == ops


# ---------------------------------------------------------------------------------------------- live capture


def test_sniffing_without_the_capability_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    import socket as socket_module

    from zkwire.trace import sniff

    def refuse(*args: object) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(socket_module, "socket", refuse)
    with pytest.raises(CaptureError, match="CAP_NET_RAW"):
        sniff.open_sniffer("lo", [2181])


@pytest.mark.skipif(os.geteuid() != 0, reason="live capture needs root")
def test_sniffing_an_unknown_interface_is_a_clear_error() -> None:
    from zkwire.trace.sniff import open_sniffer

    with pytest.raises(CaptureError, match="no-such-if0"):
        open_sniffer("no-such-if0")


@pytest.mark.skipif(os.geteuid() != 0, reason="live capture needs root")
async def test_live_sniffing_on_loopback_sees_each_request_once(zk_hosts: str, zk_path: str) -> None:
    from zkwire.trace.sniff import open_sniffer

    port = first_server(zk_hosts)[1]
    reasm = TcpReassembler(server_ports={port})
    ops: list[str] = []
    decoders: dict[object, ConversationDecoder] = {}
    done = trio.Event()

    async def sniff_until_done(sniffer) -> None:  # type: ignore[no-untyped-def]
        async for s in sniffer:
            for ev in reasm.add(s):
                if isinstance(ev, StreamData) and ev.direction == "client":
                    dec = decoders.setdefault(ev.conn, ConversationDecoder())
                    ops.extend(f.op_name or f.kind for f in dec.feed_client(ev.data, ev.ts))
            if ops.count("closeSession"):
                done.set()

    with open_sniffer("lo", [port]) as sniffer, trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(sniff_until_done, sniffer)
            async with zkwire.open_client(zk_hosts) as zk:
                await zk.create(zk_path)
                for i in range(10):
                    await zk.set_data(zk_path, str(i).encode())
                await zk.delete(zk_path)
            await done.wait()
            nursery.cancel_scope.cancel()
    assert ops.count("setData") == 10
    assert ops.count("create") == 1 and ops.count("delete") == 1
