"""An ensemble's configuration: the text of the ``/zookeeper/config`` node, parsed and written.

What a 3.5+ server keeps in that node (protocol-notes/reconfig.md has what was observed): one line per
member, then the configuration's version, lines joined by ``\\n``::

    server.1=10.0.0.1:2888:3888:participant;10.0.0.1:2181
    server.4=[fd00::4]:2888:3888|10.1.0.4:2888:3888:observer;0.0.0.0:2181
    version=100000008

A member line is ``server.<id>=<quorum address>[|<more>...]:<role>[;<client address>]``, each quorum
address ``host:quorumPort:electionPort`` (IPv6 in brackets).  The client address is missing when the
member's client port came from its static ``zoo.cfg``; a bare port there is written ``0.0.0.0:<port>``.
The version is the zxid of the reconfiguration that made the configuration, in hexadecimal without
``0x``.  A standalone server's node is empty.  Hierarchical quorums add ``group.N=`` and ``weight.N=``
lines, kept here as they are.

:func:`parse_config` is strict (a config node with anything else in it raises
:class:`~zkwire.errors.EnsembleConfigError`: the client then keeps the host list it has);
:meth:`Member.spec` writes a line back in the form ``reconfig`` takes.

:func:`client_hosts` is the rule that turns a configuration into the host list a client connects to
(see there).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from ..errors import EnsembleConfigError, InvalidArgumentError
from ..protocol.records import Stat
from .hosts import HostPort, parse_host_port

__all__ = [
    "CONFIG_PATH",
    "EnsembleConfig",
    "EnsembleConfigWarning",
    "Member",
    "Role",
    "client_hosts",
    "parse_config",
    "parse_member",
    "WILDCARD_HOSTS",
]

#: The node a 3.5+ server keeps its configuration in (read past any chroot).
CONFIG_PATH = "/zookeeper/config"

#: Client hosts that mean "every address of the member" (what a bare client port is written as).
WILDCARD_HOSTS = frozenset({"0.0.0.0", "::", "0:0:0:0:0:0:0:0"})

#: The most member lines a configuration may have (a guard against a hostile node; real ensembles have
#: a handful of voters and perhaps tens of observers).
MAX_MEMBERS = 1000

HEX_DIGITS = frozenset("0123456789abcdefABCDEF")


class EnsembleConfigWarning(UserWarning):
    """A configuration a client following its ensemble did not apply (unreadable, older than the one it
    has, naming no client address): the host list it has is kept.  Issued with :mod:`warnings` and
    logged."""


class Role(StrEnum):
    """A member's part in the ensemble."""

    PARTICIPANT = "participant"
    OBSERVER = "observer"


@dataclass(frozen=True, slots=True)
class Member:
    """One server of an ensemble, as its configuration names it."""

    #: The server's id (its ``myid``).
    id: int
    #: Its quorum addresses: host and quorum port, one per network it is reachable on.
    quorum: tuple[HostPort, ...]
    #: Its leader-election ports, one per quorum address (same hosts).
    election_ports: tuple[int, ...]
    role: Role = Role.PARTICIPANT
    #: Where clients connect (None: the member's client port is in its static configuration only).
    client: HostPort | None = None

    def spec(self) -> str:
        """The member's line, as the config node writes it and ``reconfig`` takes it."""
        addresses = "|".join(
            f"{_bracket(q.host)}:{q.port}:{e}" for q, e in zip(self.quorum, self.election_ports, strict=True)
        )
        line = f"server.{self.id}={addresses}:{self.role.value}"
        if self.client is not None:
            line += f";{self.client}"
        return line

    def __str__(self) -> str:
        return self.spec()


@dataclass(frozen=True, slots=True)
class EnsembleConfig:
    """An ensemble's configuration: its version and members (by id)."""

    #: The zxid of the reconfiguration that made it (0 for a standalone server's empty node).
    version: int
    members: tuple[Member, ...] = ()
    #: ``group.N`` and ``weight.N`` lines of a hierarchical quorum, as they were.
    extra: tuple[tuple[str, str], ...] = ()
    #: The config node's Stat, when the configuration was read from a server (its ``version`` is
    #: always -1: the configuration's own version is :attr:`version`).
    stat: Stat | None = field(default=None, compare=False)

    @property
    def participants(self) -> tuple[Member, ...]:
        return tuple(m for m in self.members if m.role is Role.PARTICIPANT)

    @property
    def observers(self) -> tuple[Member, ...]:
        return tuple(m for m in self.members if m.role is Role.OBSERVER)

    def member(self, member_id: int) -> Member | None:
        """The member with id ``member_id`` (None: not a member)."""
        for m in self.members:
            if m.id == member_id:
                return m
        return None

    def text(self) -> str:
        """The configuration as the config node holds it (members by id)."""
        if not self.members and not self.version:
            return ""
        lines = [m.spec() for m in self.members]
        lines += [f"{key}={value}" for key, value in self.extra]
        lines.append(f"version={self.version:x}")
        return "\n".join(lines)

    def client_connect_string(self) -> str:
        """``<version hex> host:port,...`` of the members with a client address (zkCli's ``config -c``)."""
        hosts = ",".join(str(m.client) for m in self.members if m.client is not None)
        return f"{self.version:x} {hosts}"


def _bracket(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def _split_address(text: str, line: str) -> list[str]:
    """``host:port:port[:role]`` split at its colons, an IPv6 host in brackets kept whole."""
    if text.startswith("["):
        end = text.find("]")
        if end == -1:
            raise EnsembleConfigError(f"unterminated IPv6 address in {line!r}")
        host, rest = text[1:end], text[end + 1 :]
        try:
            host = ipaddress.IPv6Address(host).compressed  # one spelling, as the connect string's
        except ValueError:
            raise EnsembleConfigError(f"not an IPv6 address in brackets in {line!r}") from None
        if not rest.startswith(":"):
            raise EnsembleConfigError(f"no ports after {text[: end + 1]} in {line!r}")
        return [host, *rest[1:].split(":")]
    return text.split(":")


def _port(text: str, line: str) -> int:
    if not (text.isascii() and text.isdigit() and len(text) <= 5) or not 0 < int(text) < 65536:
        raise EnsembleConfigError(f"not a port: {text!r} in {line!r}")
    return int(text)


def parse_member(line: str) -> Member:
    """One member line: ``server.<id>=<spec>`` (or ``<id>=<spec>``, as ``reconfig`` also takes it).

    The role may be left out (participant).  Raises :class:`~zkwire.errors.EnsembleConfigError`.
    """
    key, sep, spec = line.partition("=")
    if not sep:
        raise EnsembleConfigError(f"not a member line: {line!r}")
    id_text = key.strip().removeprefix("server.")
    if not (id_text.isascii() and id_text.isdigit() and len(id_text) <= 19):
        raise EnsembleConfigError(f"not a server id: {key!r} in {line!r}")
    member_id = int(id_text)
    if member_id >= 1 << 63:
        raise EnsembleConfigError(f"server id out of range in {line!r}")
    server_part, semicolon, client_part = spec.strip().partition(";")
    client: HostPort | None = None
    if semicolon:
        try:
            client = parse_host_port(client_part, default_port=None, default_host="0.0.0.0")
        except InvalidArgumentError as e:
            raise EnsembleConfigError(f"bad client address in {line!r}: {e}") from None
    addresses = server_part.split("|")
    quorum: list[HostPort] = []
    election: list[int] = []
    role = Role.PARTICIPANT
    for i, address in enumerate(addresses):
        parts = _split_address(address.strip(), line)
        if i == len(addresses) - 1 and len(parts) == 4:
            try:
                role = Role(parts.pop())
            except ValueError:
                raise EnsembleConfigError(f"unknown role in {line!r}") from None
        if len(parts) != 3:
            raise EnsembleConfigError(f"a quorum address is host:port:port in {line!r}")
        host = parts[0]
        if not host or any(ch.isspace() or ord(ch) < 32 or ord(ch) == 127 for ch in host):
            raise EnsembleConfigError(f"bad host in {line!r}")
        quorum.append(HostPort(host, _port(parts[1], line)))
        election.append(_port(parts[2], line))
    return Member(member_id, tuple(quorum), tuple(election), role, client)


def parse_config(data: bytes | str, stat: Stat | None = None) -> EnsembleConfig:
    """The configuration a config node holds (see the module); empty data gives version 0, no members.

    Raises:
        EnsembleConfigError: anything else (not UTF-8, an unknown line, a member given twice, no
            version, more than :data:`MAX_MEMBERS` members).
    """
    if isinstance(data, bytes | bytearray | memoryview):
        try:
            text = bytes(data).decode("utf-8")
        except UnicodeDecodeError:
            raise EnsembleConfigError("the configuration is not UTF-8 text") from None
    else:
        text = data
    if not text.strip():
        return EnsembleConfig(0, stat=stat)
    members: dict[int, Member] = {}
    extra: list[tuple[str, str]] = []
    version: int | None = None
    for raw in text.split("\n"):
        line = raw.strip()
        if not line:
            continue
        key, sep, value = line.partition("=")
        key = key.strip()
        if not sep:
            raise EnsembleConfigError(f"not a configuration line: {_show(line)}")
        if key.startswith("server."):
            member = parse_member(line)
            if member.id in members:
                raise EnsembleConfigError(f"server.{member.id} is given twice")
            if len(members) >= MAX_MEMBERS:
                raise EnsembleConfigError(f"more than {MAX_MEMBERS} members")
            members[member.id] = member
        elif key == "version":
            value = value.strip()
            if version is not None:
                raise EnsembleConfigError("the version is given twice")
            try:
                version = int(value, 16)
            except ValueError:
                raise EnsembleConfigError(f"not a hexadecimal version: {_show(value)}") from None
            if not 0 <= version < 1 << 63 or not all(c in HEX_DIGITS for c in value):
                raise EnsembleConfigError(f"not a configuration version: {_show(value)}")
        elif key.startswith(("group.", "weight.")):
            extra.append((key, value.strip()))
        else:
            raise EnsembleConfigError(f"unknown configuration line: {_show(line)}")
    if version is None:
        raise EnsembleConfigError("the configuration has no version line")
    ordered = tuple(members[i] for i in sorted(members))
    return EnsembleConfig(version, ordered, tuple(extra), stat)


def _show(text: str, limit: int = 80) -> str:
    """``text`` for an error message: quoted (control characters escaped) and cut to ``limit``."""
    shown = repr(text[:limit])
    return shown + "..." if len(text) > limit else shown


def client_hosts(config: EnsembleConfig, aliases: Mapping[HostPort, HostPort] | None = None) -> list[HostPort]:
    """The host list a client connects to for ``config``: the members' client addresses, by id.

    The rule, in order, for each member (participants and observers: both serve clients):

    1. A member without a client address is left out (its client port is not in the node).
    2. A wildcard client host (``0.0.0.0``, ``::``; what a bare client port is written as) is replaced
       by the host of the member's first quorum address: the address its peers know it by.
    3. An address found in ``aliases`` is replaced by what it maps to: the client passes the addresses
       its connect string's host names resolved to, mapped to those names (so a name in the connect
       string -- a DNS name that may later point elsewhere, a TLS server name -- is kept, and the same
       server is not listed twice under two spellings).

    The result may be empty (no member has a client address); duplicates are dropped.
    """
    found: list[HostPort] = []
    for member in config.members:
        if member.client is None:
            continue
        host = member.client
        if host.host in WILDCARD_HOSTS or not host.host:
            host = HostPort(member.quorum[0].host, host.port)
        if aliases:
            host = aliases.get(host, host)
        if host not in found:
            found.append(host)
    return found


def _checked_spec(member: Member) -> str:
    """A Member's line, checked to read back as the same member (a field of the wrong type, a host with a
    comma that the server would split into a second member, an id out of range: InvalidArgumentError)."""
    try:
        spec = member.spec()
        back = parse_member(spec)
    except (EnsembleConfigError, ValueError, TypeError, AttributeError) as e:
        raise InvalidArgumentError(f"not a valid member: {member!r} ({e})") from None
    if "," in spec or "\n" in spec or back != member or isinstance(member.id, bool):
        raise InvalidArgumentError(f"not a valid member: {member!r}")
    return spec


def member_specs(members: Iterable[Member | str]) -> str:
    """Members for a ``reconfig`` request: each a :class:`Member` or a line, checked, joined by commas.

    Raises:
        InvalidArgumentError: a line that is not a member line.
    """
    specs: list[str] = []
    for m in members:
        if isinstance(m, Member):
            specs.append(_checked_spec(m))
            continue
        if not isinstance(m, str):
            raise InvalidArgumentError(f"a member is a Member or a 'server.N=...' line, not {type(m).__name__}")
        try:
            parsed = parse_member(m if "=" in m else f"{m}=")
        except EnsembleConfigError as e:
            raise InvalidArgumentError(str(e)) from None
        if "," in m or "\n" in m:
            raise InvalidArgumentError(f"one member per item: {m!r}")
        specs.append(m.strip() if m.strip().startswith("server.") else f"server.{parsed.id}={m.partition('=')[2]}")
    return ",".join(specs)
