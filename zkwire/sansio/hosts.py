"""Connect strings: ``host1:port1,host2:port2[/chroot]``; IPv6 hosts in brackets; port 2181 by default.

Parsing is strict: a port is 1 to 5 ASCII digits (no sign, underscore, space or other digits), ``host:``
with nothing after the colon is an error (leave out the colon for the default port), and a host name
must be something a resolver could be asked about.  Spaces around each ``host:port`` item are allowed.
:func:`parse_host_port` reads one item; everything in the project that takes a ``host:port`` uses it.
"""

from __future__ import annotations

import ipaddress

from ..errors import InvalidArgumentError
from .paths import validate_chroot
from .session import HostPort

__all__ = ["parse_connect_string", "parse_host_port", "DEFAULT_PORT"]

DEFAULT_PORT = 2181


def _check_host_name(host: str, item: str) -> None:
    if any(ch.isspace() or ord(ch) < 32 or ord(ch) == 127 for ch in host):
        raise InvalidArgumentError(f"host name contains a space or control character in {item!r}")
    try:
        host.encode("idna")
    except UnicodeError:
        raise InvalidArgumentError(f"not a valid host name in {item!r}") from None


def parse_host_port(
    text: str,
    *,
    default_port: int | None = DEFAULT_PORT,
    default_host: str | None = None,
    allow_port_zero: bool = False,
) -> HostPort:
    """One ``host:port`` item (``[v6addr]:port`` for IPv6), by the rules of a connect string.

    ``default_port`` is used when the item has no ``:port`` (None: the port is required).  With a
    ``default_host``, the host may be left out (``:2181``, or just ``2181``).  Port 0 ("any free
    port", for an address to listen on) is refused unless ``allow_port_zero``.
    """
    if not isinstance(text, str):
        raise InvalidArgumentError(f"address must be a str, not {type(text).__name__}")
    item = text.strip()
    no_host = not item or item.startswith(":") or (item.isascii() and item.isdigit())
    if default_host is not None and no_host:
        host, has_port, port_text = default_host, bool(item), item.removeprefix(":")
    elif item.startswith("["):
        end = item.find("]")
        if end == -1:
            raise InvalidArgumentError(f"unterminated IPv6 address in {item!r}")
        host, rest = item[1:end], item[end + 1 :]
        if rest and not rest.startswith(":"):
            raise InvalidArgumentError(f"unexpected text after IPv6 address in {item!r}")
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            raise InvalidArgumentError(f"not an IPv6 address in brackets in {item!r}") from None
        has_port, port_text = bool(rest), rest[1:]
    elif item.count(":") > 1:
        raise InvalidArgumentError(f"IPv6 address must be written in brackets: {item!r}")
    else:
        host, sep, port_text = item.partition(":")
        has_port = bool(sep)
        if not host:
            raise InvalidArgumentError(f"empty host in {item!r}")
        _check_host_name(host, item)
    if not has_port:
        if default_port is None:
            raise InvalidArgumentError(f"not HOST:PORT: {item!r}")
        return HostPort(host, default_port)
    if not (port_text.isascii() and port_text.isdigit() and len(port_text) <= 5):
        raise InvalidArgumentError(f"port must be 1 to 5 ASCII digits in {item!r}")
    port = int(port_text)
    if not (0 if allow_port_zero else 1) <= port < 65536:
        raise InvalidArgumentError(f"port out of range in {item!r}")
    return HostPort(host, port)


def parse_connect_string(text: str) -> tuple[list[HostPort], str]:
    """Hosts and chroot ("" when none) of a connect string."""
    if not isinstance(text, str):
        raise InvalidArgumentError(f"connect string must be a str, not {type(text).__name__}")
    if not text.strip():
        raise InvalidArgumentError("connect string is empty")
    text = text.strip()
    slash = text.find("/")
    hosts_part, chroot = (text, "") if slash == -1 else (text[:slash], text[slash:])
    hosts = [parse_host_port(item) for item in hosts_part.split(",") if item.strip()]
    if not hosts:
        raise InvalidArgumentError(f"no hosts in connect string {text!r}")
    return hosts, validate_chroot(chroot)
