"""Addresses of the servers under test, read by the client's own parser (:mod:`zkwire.sansio.hosts`)."""

from __future__ import annotations

from zkwire.sansio.hosts import parse_connect_string


def first_server(hosts: str) -> tuple[str, int]:
    """The first server of a connect string (``host:port,...[/chroot]``, IPv6 in brackets) as
    ``(host, port)``.

    Raises:
        InvalidArgumentError: ``hosts`` is not a connect string.
    """
    servers, _chroot = parse_connect_string(hosts)
    return servers[0].host, servers[0].port
