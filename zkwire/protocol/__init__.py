"""Layer 1: bytes <-> records, standard library only.

* :mod:`~zkwire.protocol.jute` -- the jute primitives (every read bounded; only ``ProtocolError`` escapes);
* :mod:`~zkwire.protocol.records` -- every request and reply record of ZooKeeper 3.8 as a NamedTuple;
* :mod:`~zkwire.protocol.subops` -- the op table's rows of the ops a multi may hold, and the multi tables;
* :mod:`~zkwire.protocol.multi` -- the records of ``multi`` and ``multiRead``;
* :mod:`~zkwire.protocol.optable` -- the one op table: op code -> request record, reply record, name;
* :mod:`~zkwire.protocol.framing` -- the length prefix and the request/reply headers;
* :mod:`~zkwire.protocol.codec` -- whole frames: encode a request, decode a reply or a notification;
* :mod:`~zkwire.protocol.fourletter` -- the four-letter-word exchange (``ruok``, ``srvr``...) without the socket.

Nothing here knows about sessions or time, and nothing here does I/O.
"""
