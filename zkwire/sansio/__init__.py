"""Layer 2: the session core, without I/O and without trio.

Bytes and time go in, events and bytes come out (:class:`~zkwire.sansio.session.SessionCore`).  Beside
it: the watch registry (:mod:`~zkwire.sansio.watches`), host lists with rotation and back-off
(:mod:`~zkwire.sansio.hosts`, on the one jittered back-off of :mod:`~zkwire.sansio.backoff`), paths and chroot (:mod:`~zkwire.sansio.paths`), option checks
(:mod:`~zkwire.sansio.options`) and the request builders that turn an op's arguments into a record
(:mod:`~zkwire.sansio.ops`, :mod:`~zkwire.sansio.requests`).  Imports :mod:`zkwire.protocol` only.
"""
