"""Connect strings: ``host1:port1,host2:port2[/chroot]``; IPv6 hosts in brackets; port 2181 by default."""

from __future__ import annotations

from .errors import InvalidArgumentError
from .paths import validate_chroot
from .session import HostPort

__all__ = ["parse_connect_string", "DEFAULT_PORT"]

DEFAULT_PORT = 2181


def _parse_host(item: str) -> HostPort:
    if item.startswith("["):
        end = item.find("]")
        if end == -1:
            raise InvalidArgumentError(f"unterminated IPv6 address in {item!r}")
        host, rest = item[1:end], item[end + 1 :]
        if rest and not rest.startswith(":"):
            raise InvalidArgumentError(f"unexpected text after IPv6 address in {item!r}")
        port_text = rest[1:] if rest else ""
    elif item.count(":") > 1:
        raise InvalidArgumentError(f"IPv6 address must be written in brackets: {item!r}")
    else:
        host, _, port_text = item.partition(":")
    if not host:
        raise InvalidArgumentError(f"empty host in {item!r}")
    if port_text == "":
        port = DEFAULT_PORT
    else:
        try:
            port = int(port_text)
        except ValueError:
            raise InvalidArgumentError(f"port is not a number in {item!r}") from None
        if not 0 < port < 65536:
            raise InvalidArgumentError(f"port out of range in {item!r}")
    return HostPort(host, port)


def parse_connect_string(text: str) -> tuple[list[HostPort], str]:
    """Hosts and chroot ("" when none) of a connect string."""
    if not isinstance(text, str) or not text.strip():
        raise InvalidArgumentError("connect string is empty")
    text = text.strip()
    slash = text.find("/")
    hosts_part, chroot = (text, "") if slash == -1 else (text[:slash], text[slash:])
    hosts = [_parse_host(item.strip()) for item in hosts_part.split(",") if item.strip()]
    if not hosts:
        raise InvalidArgumentError(f"no hosts in connect string {text!r}")
    return hosts, validate_chroot(chroot)
