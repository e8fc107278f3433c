"""zktraffic's decoding rate on a capture file, for ``bench/decode_bench.py``'s table: how many TCP
segments per second zktraffic 0.2.0's sniffer turns into messages, fed from a pcap (Ethernet or Linux
loopback frames) without its live capture.

zktraffic reads one ZooKeeper message per TCP segment: a segment carrying several frames (pipelined
requests, a burst of replies) gives it the first one, and a frame split over segments gives it nothing
or a decoding error.  So besides segments per second the script reports the messages it decoded, to
read beside the number of frames the capture holds.

zktraffic is Python 2-era: its command lines import ``twitter.common`` packages that do not run on
Python 3, and it pins scapy 2.4.2, whose import fails on Python 3.11.  Its decoding classes do run:
this script stands in a ``logging`` logger for ``twitter.common.log`` and needs scapy 2.5 beside it.
It runs in a virtualenv of its own, never the project's:

    python3 -m venv /tmp/zkt && /tmp/zkt/bin/pip install zktraffic 'scapy==2.5.0'
    /tmp/zkt/bin/python bench/zktraffic_decode.py capture.pcap --port 2181 [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
import types
from typing import Any

#: The link type this script reads (pcap's LINKTYPE_ETHERNET; captures on Linux's lo use it).
_ETHERNET = 1


class _Packet:
    """What zktraffic's sniffer reads of a scapy packet: the link-layer bytes and the capture time."""

    __slots__ = ("load", "time")

    def __init__(self, load: bytes, at: float) -> None:
        self.load = load
        self.time = at


def _zktraffic(port: int) -> Any:
    common = types.ModuleType("twitter.common")
    common.log = logging.getLogger("zktraffic")  # type: ignore[attr-defined]
    sys.modules.setdefault("twitter.common", common)
    sys.modules.setdefault("twitter.common.log", common.log)  # type: ignore[attr-defined]
    from zktraffic.base.sniffer import Sniffer, SnifferConfig

    config = SnifferConfig(iface="eth0")
    config.zookeeper_port = port
    config.track_replies = True
    config.include_pings()
    config.update_filter()
    return Sniffer(config)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("pcap")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--json")
    args = p.parse_args()
    import dpkt  # zktraffic's own dependency

    with open(args.pcap, "rb") as f:
        reader = dpkt.pcap.Reader(f)
        if reader.datalink() != _ETHERNET:
            raise SystemExit(f"{args.pcap}: link type {reader.datalink()}; this script reads Ethernet frames")
        packets = [_Packet(bytes(buf), ts) for ts, buf in reader]
    sniffer = _zktraffic(args.port)
    from zktraffic.base.network import BadPacket
    from zktraffic.base.util import StringTooLong
    from zktraffic.base.zookeeper import DeserializationError

    decoded = failed = empty = 0
    started = time.process_time()
    for packet in packets:
        try:
            message = sniffer.message_from_packet(packet)
        except (BadPacket, StringTooLong, DeserializationError):
            failed += 1  # what its sniffer skips
            continue
        except Exception:  # struct errors and the like on a partial frame: skipped too
            failed += 1
            continue
        if message is None:
            empty += 1
        else:
            decoded += 1
    seconds = time.process_time() - started
    result = {
        "packets": len(packets),
        "segments_with_data": len(packets) - empty,
        "messages": decoded,
        "failed": failed,
        "cpu_s": seconds,
        "segments_per_s": (len(packets) - empty) / seconds if seconds else 0.0,
        "messages_per_s": decoded / seconds if seconds else 0.0,
    }
    print(json.dumps(result))
    if args.json:
        with open(args.json, "w") as out:
            json.dump(result, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
