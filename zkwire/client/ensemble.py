"""Following the ensemble: a client keeps its host list in step with the ensemble's configuration.

:class:`EnsembleFollower` is one task of a client (on by default; ``open_client(follow_ensemble=False)``
turns it off).  It reads ``/zookeeper/config`` with a watch whenever the session is connected and
again each time the watch fires, and applies each newer configuration:

1. the configuration's client addresses become the host list by the rule of
   :func:`~zkwire.sansio.ensemble.client_hosts` (a wildcard client host replaced by the member's quorum
   host; an address the connect string's host names resolve to replaced by that name: the names, and
   the chroot, are kept; the names are resolved again at each change).  A configuration that names
   none of the servers the client uses (by name, or by address and port) is not followed: the client
   reaches the ensemble by other addresses (through a proxy, NAT, a container's published ports), which
   the configuration cannot know;
2. the session core decides whether this session moves (:meth:`~zkwire.sansio.session.SessionCore.update_hosts`:
   sessions spread evenly over the new members, each move a planned one, spread over time).

A configuration that cannot be used -- unreadable, older than the newest seen, naming no client
address -- is not applied: the host list is kept and an :class:`~zkwire.sansio.ensemble.EnsembleConfigWarning`
is issued (and logged).  A server without a configuration node (before 3.5, or standalone) ends the
task quietly.  The task never fails the client: any error it meets is logged and it goes on.

A TLS client does not follow by default: a configuration names the members' plain client ports, not
their TLS ones.

Also here: the argument conversions of :meth:`~zkwire.Client.reconfig` (members as
:class:`~zkwire.sansio.ensemble.Member` objects or lines, ids as ints).
"""

from __future__ import annotations

import ipaddress
import logging
import socket
import warnings
from collections.abc import Iterable, Sequence
from typing import Protocol, TypeVar

import trio

from ..errors import (
    ClientClosedError,
    ConnectionLossError,
    EnsembleConfigError,
    InvalidArgumentError,
    NoNodeError,
    ZKError,
)
from ..sansio.backoff import Backoff
from ..sansio.ensemble import (
    EnsembleConfig,
    EnsembleConfigWarning,
    Member,
    client_hosts,
    member_specs,
    parse_config,
)
from ..sansio.hosts import HostPort, is_ip_address, parse_connect_string, parse_host_port
from ..sansio.requests import Request, RequestBuilder
from ..sansio.session import SessionState
from .calls import ClientCore
from .connection import ConnectionDriver
from .watchers import Watch, Watcher

#: How long after the session first connects the follower reads the configuration: the application's
#: first requests go out first (a new session's first answer is not delayed by the follower's read).
FIRST_READ_DELAY = 0.05

#: Between attempts to read the configuration that failed (a server refusing it, answering nonsense).
READ_BACKOFF = Backoff(1.0, 60.0)

__all__ = ["EnsembleFollower", "host_list", "joining_arg", "leaving_arg", "members_arg"]

log = logging.getLogger("zkwire.ensemble")

T = TypeVar("T")


class FollowedClient(Protocol):
    """What the follower uses of its client (:class:`~zkwire.client.handle.SessionHandle`)."""

    _core: ClientCore
    _driver: ConnectionDriver
    _requests: RequestBuilder[Watcher]

    @property
    def state(self) -> SessionState: ...

    async def wait_connected(self) -> None: ...

    async def _send(self, request: Request[T, Watcher]) -> T: ...


def host_list(hosts: str | Iterable[str | HostPort]) -> list[HostPort]:
    """Hosts given to :meth:`~zkwire.Client.update_hosts`: a connect string without a chroot, or items.

    Raises:
        InvalidArgumentError: a malformed item, no host, or a chroot (it cannot change).
    """
    if isinstance(hosts, str):
        parsed, chroot = parse_connect_string(hosts)
        if chroot:
            raise InvalidArgumentError(f"update_hosts takes hosts only; the chroot ({chroot}) cannot change")
        return parsed
    items = [parse_host_port(_as_text(h)) for h in hosts]
    if not items:
        raise InvalidArgumentError("at least one host is needed")
    return items


def _as_text(host: object) -> str:
    """A ``host:port`` item or a HostPort as the text the one host-port rule reads (so both are checked
    alike: the port's range, the host's characters)."""
    if isinstance(host, HostPort):
        if not isinstance(host.host, str) or isinstance(host.port, bool) or not isinstance(host.port, int):
            raise InvalidArgumentError(f"a HostPort holds a str host and an int port, not {host!r}")
        return str(host)
    if not isinstance(host, str):
        raise InvalidArgumentError(f"a host is a 'host:port' str or a HostPort, not {type(host).__name__}")
    return host


def _specs(name: str, members: object) -> str:
    if isinstance(members, bytes | bytearray | memoryview) or not isinstance(members, Iterable):
        raise InvalidArgumentError(
            f"{name} must be members (Member objects or lines) or a str, not {type(members).__name__}"
        )
    try:
        return member_specs(members)
    except InvalidArgumentError as e:
        raise InvalidArgumentError(f"{name}: {e}") from None


def _normal(address: str) -> str:
    """An IP address in its one canonical spelling (IPv6 compressed, lower case)."""
    return ipaddress.ip_address(address).compressed


def joining_arg(joining: str | Iterable[Member | str] | None) -> str | None:
    """``joining`` as the request carries it (see :meth:`~zkwire.Client.reconfig`)."""
    if joining is None or isinstance(joining, str):
        return joining
    return _specs("joining", joining)


def members_arg(members: str | EnsembleConfig | Iterable[Member | str] | None) -> str | None:
    """``members`` as the request carries it."""
    if members is None or isinstance(members, str):
        return members
    if isinstance(members, EnsembleConfig):
        return _specs("members", members.members)
    return _specs("members", members)


def leaving_arg(leaving: str | int | Iterable[int] | None) -> str | None:
    """``leaving`` as the request carries it (ids joined by commas)."""
    if leaving is None or isinstance(leaving, str):
        return leaving
    if isinstance(leaving, bytes | bytearray | memoryview) or not isinstance(leaving, int | Iterable):
        raise InvalidArgumentError(f"leaving must be server ids or a str, not {type(leaving).__name__}")
    ids = [leaving] if isinstance(leaving, int) else list(leaving)
    for i in ids:
        if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < 1 << 63:
            raise InvalidArgumentError(f"leaving takes server ids (ints >= 0), not {i!r}")
    return ",".join(str(i) for i in ids)


class EnsembleFollower:
    """One client's task following its ensemble's configuration (see the module)."""

    def __init__(self, client: FollowedClient, seeds: Sequence[HostPort], spread: float) -> None:
        self._client = client
        #: The hosts of the connect string: their names are kept when they resolve to a member.
        self._seeds = list(seeds)
        self._spread = spread
        #: The newest configuration seen (applied, or found to name no client address).
        self.config: EnsembleConfig | None = None
        #: Configurations applied (each a host-list change) and moves decided, for tests and metrics.
        self.applied = 0
        self.moves = 0
        #: The newest configuration not followed because it does not name the client's server.
        self._foreign: int | None = None

    async def run(self) -> None:
        client = self._client
        failures = 0
        reported: set[str] = set()
        await client.wait_connected()
        await trio.sleep(FIRST_READ_DELAY)
        while not client.state.is_terminal:
            try:
                await client.wait_connected()
                watch = Watch("/zookeeper/config")
                data, stat = await client._send(client._requests.get_config_data(watch))
            except NoNodeError:
                log.debug("the servers keep no configuration node (before 3.5): not following the ensemble")
                return
            except ZKError as e:
                if client.state.is_terminal or isinstance(e, ClientClosedError):
                    return
                if not isinstance(e, ConnectionLossError) or client.state.is_connected:
                    # Refused, or a connection loss the server answered while the session stays connected:
                    # the next attempt waits (growing), and each kind of failure is logged once.
                    if str(e) not in reported:
                        reported.add(str(e))
                        log.warning("reading the ensemble's configuration failed: %s", e)
                    await trio.sleep(READ_BACKOFF.delay(failures))
                    failures += 1
                continue
            failures = 0
            try:
                await self.apply(parse_config(data, stat))
            except EnsembleConfigError as e:
                self._refuse(f"the ensemble's configuration cannot be read ({e})")
            try:
                await watch.wait()
            except ZKError:
                continue  # the session ended (the loop ends) or the watch was dropped: read again

    async def apply(self, config: EnsembleConfig) -> bool:
        """Apply ``config`` if it is newer than the last one; True when the host list changed."""
        if not config.members:
            log.debug("the server is standalone (empty configuration): not following the ensemble")
            return False
        if self.config is not None:
            if config.version < self.config.version:
                self._refuse(
                    f"configuration version {config.version:x} is older than {self.config.version:x}, the newest seen"
                )
                return False
            if config.version == self.config.version:
                return False
        # ``config`` becomes :attr:`config` (what zkwire.Client.ensemble shows) only once its host list
        # is decided, after the name lookups below: never ahead of the client's hosts.
        previous = self.config
        hosts = client_hosts(config, await self._aliases())
        core = self._client._core
        same = set(hosts) == set(core.hosts)
        shares = not hosts or same or await self._shares_a_server(hosts, core.hosts)
        self.config = config
        if not hosts:
            if previous is None or not client_hosts(previous):
                # The members' client ports are in their static configuration: a deployment, not an
                # anomaly; there is nothing to follow.
                log.info("the ensemble's configuration names no client address: not following it")
            else:
                self._refuse(f"configuration version {config.version:x} names no client address")
            return False
        if same:
            return False
        if not shares:
            if self._foreign is None:
                log.info(
                    "the ensemble's configuration names none of the servers this client uses (%s): the client "
                    "reaches the ensemble by other addresses (a proxy, NAT, published ports); keeping them",
                    ",".join(str(h) for h in core.hosts),
                )
            self._foreign = config.version
            return False
        log.info("ensemble configuration %x: %s", config.version, ",".join(str(h) for h in hosts))
        self.applied += 1
        if core.update_hosts(hosts, trio.current_time(), self._spread):
            self.moves += 1
        self._client._driver.wake_timer()
        return True

    def _refuse(self, why: str) -> None:
        message = f"{why}; keeping the host list {','.join(str(h) for h in self._client._core.hosts)}"
        log.warning("%s", message)
        try:
            warnings.warn(EnsembleConfigWarning(message), stacklevel=2)
        except Warning:
            pass  # warnings turned into errors: the log line says it, and the follower goes on

    async def _shares_a_server(self, hosts: list[HostPort], mine: list[HostPort]) -> bool:
        """Whether ``hosts`` (a configuration's) name one of the servers the client uses now (``mine``),
        written the same way or resolving to the same address and port.  If none, the configuration's
        addresses are not the ones this client reaches the ensemble by, and following them would lead it
        nowhere."""
        if set(hosts) & set(mine):
            return True
        theirs: set[tuple[str, int]] = set()
        for host in hosts:
            theirs |= {(a, host.port) for a in await self._addresses(host)}
        for host in mine:
            if {(a, host.port) for a in await self._addresses(host)} & theirs:
                return True
        return False

    async def _addresses(self, host: HostPort) -> set[str]:
        """The addresses ``host`` resolves to now (itself for an address; none if it does not resolve)."""
        if is_ip_address(host.host):
            return {_normal(host.host)}
        with trio.move_on_after(self._client._core.connect_timeout):
            try:
                found = await trio.socket.getaddrinfo(host.host, host.port, type=socket.SOCK_STREAM)
            except (OSError, UnicodeError) as e:  # UnicodeError: a name IDNA 2008 refuses
                log.info("resolving %s failed: %s", host.host, e)
                return set()
            return {_normal(str(sockaddr[0]).partition("%")[0]) for *_, sockaddr in found}
        return set()

    async def _aliases(self) -> dict[HostPort, HostPort]:
        """The addresses the connect string's host names resolve to now, each mapped to its name."""
        aliases: dict[HostPort, HostPort] = {}
        for seed in self._seeds:
            if is_ip_address(seed.host):
                continue
            for address in await self._addresses(seed):
                aliases.setdefault(HostPort(address, seed.port), seed)
        return aliases
