"""The servers of a session: connect strings, and the order and pace in which they are tried.

Connect strings: ``host1:port1,host2:port2[/chroot]``; IPv6 hosts in brackets; port 2181 by default.

Parsing is strict: a port is 1 to 5 ASCII digits (no sign, underscore, space or other digits), ``host:``
with nothing after the colon is an error (leave out the colon for the default port), and a host name
must be something a resolver could be asked about.  Spaces around each ``host:port`` item are allowed.
:func:`parse_host_port` reads one item; everything in the project that takes a ``host:port`` uses it.

:class:`HostRotation` walks a session's servers and says how long to wait before the next attempt (the
session core asks it; the I/O layer only sleeps), and when failed attempts mean that no attempt can
succeed (a certificate refused, by the server or by the client: see :meth:`HostRotation.failed`).
"""

from __future__ import annotations

import ipaddress
import math
import random
from collections.abc import Sequence
from typing import NamedTuple

from ..errors import InvalidArgumentError, ZKError
from .backoff import Backoff
from .paths import validate_chroot

__all__ = [
    "HostPort",
    "HostRotation",
    "is_ip_address",
    "MoveTargets",
    "move_decision",
    "parse_connect_string",
    "parse_host_port",
    "DEFAULT_PORT",
    "SHORT_CONNECTION",
]

DEFAULT_PORT = 2181

#: A connection that ends sooner than this (seconds) after it was made, having answered no request,
#: counts toward back-off even when its handshake succeeded: a server that accepts and drops every
#: session is not hammered.
SHORT_CONNECTION = 1.0
#: Before the next server of a lap: a wait drawn from 0 to this many seconds (the next server may be up).
NEXT_HOST_JITTER = 0.05


class HostPort(NamedTuple):
    host: str
    port: int

    def __str__(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"


class HostRotation:
    """A session's servers in the order they are tried, and how long to wait before the next attempt.

    The list is shuffled once (clients given the same list spread over its servers), then walked round
    robin; :meth:`prefer` puts one server first for the next attempt only.

    Two counts of failures in a row decide the wait (:meth:`delay`, the longer of two):

    * attempts that reached no session (no connection, no handshake answer, a refused answer): within a
      lap of the list only a little jitter (:data:`NEXT_HOST_JITTER`), since the next server may be up;
      after each full lap a pause doubling from 0.1 s to 1 s (:attr:`laps`), reset when a session is
      reached;
    * connections that reached a session but ended within :data:`SHORT_CONNECTION` having answered no
      request: a pause doubling from 50 ms to 1 s (:attr:`shorts`), reset by any other connection.

    A failed attempt may come with a *reason*: an error another attempt at that server would meet
    again (the server refused the client's certificate, the client did not trust the server's).  Once
    every server has been tried since a session was last reached, none reached one, and the newest
    attempt at some server failed with a reason, :meth:`failed` returns that reason: the session
    cannot be had, and retrying until the caller's deadline would only hide why.  A server that is
    merely down (refused, timed out, reset: no reason) never ends anything by itself.
    """

    __slots__ = (
        "_current",
        "_failed",
        "_hosts",
        "_index",
        "_opened_at",
        "_outcomes",
        "_preferred",
        "_rng",
        "_short",
        "_targets",
        "laps",
        "shorts",
    )

    def __init__(self, hosts: Sequence[HostPort], rng: random.Random) -> None:
        if not hosts:
            raise InvalidArgumentError("at least one host is needed")
        self._hosts = list(hosts)
        rng.shuffle(self._hosts)
        self._rng = rng
        self._index = -1
        self._preferred: HostPort | None = None
        #: The server of the current attempt (the last :meth:`next`).
        self._current: HostPort | None = None
        self._failed = 0
        #: Since a session was last reached: each server tried, with the reason of its newest failure
        #: (None: no reason, e.g. the server is down).
        self._outcomes: dict[HostPort, ZKError | None] = {}
        self._short = 0
        #: When the current connection reached the I/O layer (None between connections).
        self._opened_at: float | None = None
        #: The pause after ``n`` full laps of failed attempts: ``laps.delay(n)``.
        self.laps = Backoff(0.05, 1.0, rng=rng)
        #: The pause after ``n + 1`` short connections in a row: ``shorts.delay(n)``.
        self.shorts = Backoff(0.05, 1.0, rng=rng)
        #: After :meth:`update` decided to move: where the next attempts go (None: round robin).
        self._targets: MoveTargets | None = None

    @property
    def hosts(self) -> list[HostPort]:
        """The servers, in the order they are tried (a copy)."""
        return list(self._hosts)

    def __len__(self) -> int:
        return len(self._hosts)

    def next(self) -> HostPort:
        """The server to try now (after :meth:`update` decided to move: one of the move's targets, until
        a session is reached or every target was tried)."""
        if self._preferred is not None:
            host, self._preferred = self._preferred, None
        elif self._targets is not None and (target := self._targets.pick(self._rng)) is not None:
            self._index = self._hosts.index(target)
            host = target
        else:
            self._targets = None
            self._index = (self._index + 1) % len(self._hosts)
            host = self._hosts[self._index]
        self._current = host
        return host

    @property
    def current(self) -> HostPort | None:
        """The server of the current attempt (the last :meth:`next`), None before any."""
        return self._current

    def prefer(self, host: HostPort) -> None:
        """Try ``host`` next, then carry on with the lap where it was."""
        self._preferred = host

    def failed(self, reason: ZKError | None = None) -> ZKError | None:
        """The attempt at the server of the last :meth:`next` reached no session; ``reason``: why, when
        another attempt there would fail the same way (None: the server may merely be down).

        Returns the reason the session ends with, or None to go on trying: once every server has been
        tried since a session was last reached, the newest reason among the servers' newest failures
        (see the class).
        """
        self._failed += 1
        if self._current is not None:
            self._outcomes.pop(self._current, None)  # the newest outcome last
            self._outcomes[self._current] = reason
        if len(self._outcomes) < len(set(self._hosts)):
            return None
        reasons = [r for r in self._outcomes.values() if r is not None]
        return reasons[-1] if reasons else None

    @property
    def every_host_refused(self) -> bool:
        """Every server's newest attempt in this pass failed for a reason (none merely down)."""
        return len(self._outcomes) >= len(set(self._hosts)) and all(r is not None for r in self._outcomes.values())

    def reached(self) -> None:
        """A server answered the handshake: the next failure starts a new count (and a new pass), and a
        move (:meth:`update`) is over."""
        self._failed = 0
        self._outcomes.clear()
        self._targets = None

    def update(self, hosts: Sequence[HostPort], current: HostPort | None) -> bool:
        """Install a new list of servers; True when the session on ``current`` (the server it is
        connected to; None: not connected) should move, so that sessions spread evenly over the new
        list.  The decision is random, each session deciding alone; see :func:`move_decision` for the
        rule.  When moving, :meth:`next` picks the move's targets first.

        Raises:
            InvalidArgumentError: ``hosts`` is empty.
        """
        fresh = list(dict.fromkeys(hosts))
        if not fresh:
            raise InvalidArgumentError("at least one host is needed")
        self._rng.shuffle(fresh)
        me = current if current is not None else self._current if self._current is not None else self._hosts[0]
        decision = move_decision(self._hosts, fresh, me, self._rng)
        self._hosts = fresh
        self._preferred = None
        self._outcomes = {h: r for h, r in self._outcomes.items() if h in fresh}
        if current is not None and current in fresh:
            self._index = fresh.index(current)
        else:
            self._index = -1
        self._targets = decision
        return decision is not None

    def opened(self, now: float) -> None:
        """A connection reached the I/O layer at ``now`` (timed for :meth:`closed`)."""
        self._opened_at = now

    def closed(self, now: float, answered: bool) -> None:
        """The connection of :meth:`opened` is over at ``now`` (:meth:`ended`; once per connection)."""
        opened, self._opened_at = self._opened_at, None
        if opened is not None:
            self.ended(now - opened, answered)

    def ended(self, lasted: float, answered: bool) -> None:
        """A connection that reached the I/O layer ended after ``lasted`` seconds; ``answered``: some
        request on it was answered."""
        if lasted < SHORT_CONNECTION and not answered:
            self._short += 1
        else:
            self._short = 0

    def delay(self, at_most: float = math.inf) -> float:
        """How long to wait before the next attempt (0 after a success); ``at_most`` caps the pause
        after a full lap of failures (a tenth of the session timeout, so a session that is still alive
        gets its chances)."""
        wait = 0.0
        if self._failed:
            laps, within = divmod(self._failed, len(self._hosts))
            wait = self._rng.uniform(0.0, NEXT_HOST_JITTER) if within else self.laps.delay(laps, at_most)
        if self._short:
            wait = max(wait, self.shorts.delay(self._short - 1))
        return wait


class MoveTargets:
    """Where a session that decided to move tries to go: the servers new to the list (``fresh``) with
    probability ``p_fresh``, else the ones it already had (``kept``); once one group has been tried
    whole, the other; once both, the rotation's round robin again."""

    __slots__ = ("fresh", "kept", "p_fresh")

    def __init__(self, fresh: list[HostPort], kept: list[HostPort], p_fresh: float) -> None:
        self.fresh = fresh
        self.kept = kept
        self.p_fresh = p_fresh

    def pick(self, rng: random.Random) -> HostPort | None:
        """The next target (each tried once), or None when all have been."""
        take_fresh = rng.random() < self.p_fresh
        if self.fresh and (take_fresh or not self.kept):
            return self.fresh.pop(0)
        if self.kept:
            return self.kept.pop(0)
        return None


def move_decision(
    old: Sequence[HostPort], new: Sequence[HostPort], me: HostPort, rng: random.Random
) -> MoveTargets | None:
    """Whether a session on server ``me`` moves when the list ``old`` becomes ``new``, and where to.

    The rule (the one of ZooKeeper's own client, ZOOKEEPER-1355), with M servers before and N after,
    sessions spread evenly over the M before, and each session deciding alone:

    * The list grew (N > M).  A session whose server stays moves with probability 1 - M/N, to a server
      new to the list; a session whose server left moves to a new server.  Each kept server keeps M/N
      of its share, 1/N of all sessions; the servers new to the list get the rest, 1/N each.
    * The list shrank or kept its size (N <= M).  A session whose server stays stays.  A session whose
      server left moves: to one of the K servers kept with probability K(M - N) / (N(M - K)), else to a
      server new to the list, which fills every server to 1/N in expectation.

    Returns None to stay, else the targets in the order to try them (see :class:`MoveTargets`).
    """
    before = set(old)
    kept = [h for h in new if h in before]
    fresh = [h for h in new if h not in before]
    m, n = len(before), len(new)
    stays = me in new
    if n > m:
        if stays and rng.random() >= 1.0 - m / n:
            return None
        return MoveTargets(fresh, kept, 1.0)
    if stays:
        return None
    k = len(kept)
    p_kept = k * (m - n) / (n * (m - k)) if m > k else 0.0
    return MoveTargets(fresh, kept, 1.0 - p_kept)


def is_ip_address(host: str) -> bool:
    """Whether ``host`` is an IPv4 or IPv6 address (not a name to resolve)."""
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


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
            host = ipaddress.IPv6Address(host).compressed  # one spelling: [FD00:0::1] is [fd00::1]
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
