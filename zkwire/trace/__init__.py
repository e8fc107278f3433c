"""The tracer: decodes ZooKeeper traffic with a second, independent description of every record.

* :mod:`~zkwire.trace.schema` -- construct schemas of every record layout (also the differential tests'
  reference);
* :mod:`~zkwire.trace.decoder` -- a conversation decoder: client and server byte streams -> decoded frames;
* :mod:`~zkwire.trace.client_frames`, :mod:`~zkwire.trace.server_frames` -- its two sides' frames, over
  :mod:`~zkwire.trace.streams` (one direction's bytes) and :mod:`~zkwire.trace.pairing` (replies to requests);
* :mod:`~zkwire.trace.frames` -- the decoded frame, its kinds and directions;
* :mod:`~zkwire.trace.bodies` -- how the decoder reads records (the construct schemas, behind an interface);
* :mod:`~zkwire.trace.masking`, :mod:`~zkwire.trace.notes` -- where a frame's secrets are, what its note says;
* :mod:`~zkwire.trace.render` -- a frame as one line of text or as JSON;
* :mod:`~zkwire.trace.capture` -- pcap/pcapng files and TCP reassembly;
* :mod:`~zkwire.trace.resync` -- frame boundaries in a stream whose beginning was not seen;
* :mod:`~zkwire.trace.conversations` -- captured TCP segments to decoded frames, per connection;
* :mod:`~zkwire.trace.filters` -- which frames are shown (path, op, session, client, errors, slow replies);
* :mod:`~zkwire.trace.stats` -- the summary: requests, errors, latency, events, bytes, sessions;
* :mod:`~zkwire.trace.upstream` -- the proxy's servers: several tried in order, TLS;
* :mod:`~zkwire.trace.tracer` -- the command line: ``zkwire trace`` (a proxy) and ``zkwire decode`` (captures
  and raw streams), ``zkwire sniff`` (live);
* :mod:`~zkwire.trace.output` -- what is printed and where (:class:`~zkwire.trace.output.TraceOptions`);
* :mod:`~zkwire.trace.proxy`, :mod:`~zkwire.trace.worker`, :mod:`~zkwire.trace.decodeproc` -- the tracing
  proxy, the queue to its decoding process, and that process;
* :mod:`~zkwire.trace.sniff`, :mod:`~zkwire.trace.ring`, :mod:`~zkwire.trace.bpf`,
  :mod:`~zkwire.trace.sniffing` -- live capture: the packet socket, its TPACKET_V3 ring, its kernel port
  filter, and ``zkwire sniff``'s loop.
"""
