"""Layer 2: the session core, without I/O and without trio.

Bytes and time go in, events and bytes come out (:class:`~zkwire.sansio.session.SessionCore`, its events in
:mod:`~zkwire.sansio.events`).  The core composes one part per job: the routing of incoming frames
(:mod:`~zkwire.sansio.routing`), host lists with rotation and back-off
(:mod:`~zkwire.sansio.hosts`, on the one jittered back-off of :mod:`~zkwire.sansio.backoff`), the
liveness clocks (:mod:`~zkwire.sansio.liveness`), the handshake phases and credentials
(:mod:`~zkwire.sansio.handshake`), request matching (:mod:`~zkwire.sansio.matching`) and the watch
registry (:mod:`~zkwire.sansio.watches`).  Beside it: paths and chroot (:mod:`~zkwire.sansio.paths`),
option checks (:mod:`~zkwire.sansio.options`) and the request builders that turn an op's arguments into a
record (:mod:`~zkwire.sansio.ops`, :mod:`~zkwire.sansio.requests`).  Imports :mod:`zkwire.protocol` only.
"""
