"""Connect strings: ``host1:port1,host2:port2[/chroot]``; IPv6 hosts in brackets; port 2181 by default.

Parsing is strict: a port is 1 to 5 ASCII digits (no sign, underscore, space or other digits), ``host:``
with nothing after the colon is an error (leave out the colon for the default port), and a host name
must be something a resolver could be asked about.  Spaces around each ``host:port`` item are allowed.
"""

from __future__ import annotations

import ipaddress

from ..errors import InvalidArgumentError
from .paths import validate_chroot
from .session import HostPort

__all__ = ["parse_connect_string", "DEFAULT_PORT"]

DEFAULT_PORT = 2181


def _check_host_name(host: str, item: str) -> None:
    if any(ch.isspace() or ord(ch) < 32 or ord(ch) == 127 for ch in host):
        raise InvalidArgumentError(f"host name contains a space or control character in {item!r}")
    try:
        host.encode("idna")
    except UnicodeError:
        raise InvalidArgumentError(f"not a valid host name in {item!r}") from None


def _parse_host(item: str) -> HostPort:
    if item.startswith("["):
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
        return HostPort(host, DEFAULT_PORT)
    if not (port_text.isascii() and port_text.isdigit() and len(port_text) <= 5):
        raise InvalidArgumentError(f"port must be 1 to 5 ASCII digits in {item!r}")
    port = int(port_text)
    if not 0 < port < 65536:
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
    hosts = [_parse_host(item.strip()) for item in hosts_part.split(",") if item.strip()]
    if not hosts:
        raise InvalidArgumentError(f"no hosts in connect string {text!r}")
    return hosts, validate_chroot(chroot)
