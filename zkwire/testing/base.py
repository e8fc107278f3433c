"""What every test backend shares: the server options, the wire probes and the two base classes.

A backend runs ZooKeeper somewhere -- JVMs started from the local package (:mod:`.embedded`), Docker
containers (:mod:`.containers`), JVMs in network namespaces (:mod:`.netns`) -- and offers one of two
shapes:

* :class:`ZooKeeperServer`: one server (``hosts``, ``start``/``stop``/``restart``, ``log_tail``, ...);
* :class:`ZooKeeperEnsemble`: numbered members (``member_hosts(i)``, ``stop_member(i)``,
  ``leader_index()``, ...), whose waiting and leader logic lives here, on top of a few per-member
  primitives that each backend implements; a backend that can also change the membership at run time
  (dynamic reconfiguration) implements ``add_member``/``remove_member``.

:class:`ServerOptions` describes the server the same way for all of them: it becomes a ``zoo.cfg`` and
JVM system properties for a local JVM, and the official image's environment variables for a container.

The errors are :mod:`.errors`; the probes on the wire (four-letter words, a session opened by hand for
fixtures) are :mod:`.wire`, on the project's codec.  Their public names are importable from here too.

Standard library only (no pytest, no trio, no docker).
"""

from __future__ import annotations

import dataclasses
import ipaddress
import os
import random
import socket
import time
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, NamedTuple, Self, TypedDict, Unpack

from ..errors import InvalidArgumentError
from .errors import (
    EmbeddedZooKeeperError,
    PortInUseError,
    ReconfigError,
    ServerRefusedError,
    ZooKeeperNotInstalledError,
    ZooKeeperStartError,
)
from .wire import (
    PROBE_TIMEOUT,
    RawSession,
    client_address_seen_by,
    delete_tree,
    ensure_path,
    four_letter_word,
    serving,
    split_address,
    srvr_mode,
)

__all__ = [
    "AuthCredential",
    "EmbeddedZooKeeperError",
    "ExternalZooKeeper",
    "LocalPortServer",
    "PortInUseError",
    "ReconfigError",
    "ServerOptions",
    "ServerRefusedError",
    "ZooKeeperEnsemble",
    "ZooKeeperNotInstalledError",
    "ZooKeeperServer",
    "ZooKeeperStartError",
    "ServerOptionChanges",
    "check_port_free",
    "client_address_seen_by",
    "delete_tree",
    "ensure_path",
    "four_letter_word",
    "free_port",
    "split_address",
    "srvr_mode",
]

#: The node holding the ensemble's configuration (never under a chroot).
CONFIG_NODE = "/zookeeper/config"

# Commands the readiness checks need; always added to the 4lw whitelist.
REQUIRED_4LW = ("ruok", "srvr", "conf")


# --------------------------------------------------------------------------------------------------------
# options


@dataclass(frozen=True)
class ServerOptions:
    """How a test server is configured, whatever runs it.

    The defaults suit tests: a 200 ms tick (sessions may last from 400 ms), sessions of up to a minute,
    every four-letter word, TTL and container nodes (``extended_types``), container nodes checked every
    second. ``init_limit``/``sync_limit`` (in ticks) only matter for ensembles. ``extra_config`` is added
    to ``zoo.cfg`` last (it wins); ``jvm_flags`` come after the backend's own JVM flags (they win).
    """

    tick_time_ms: int = 200
    extended_types: bool = True
    four_letter_words: str = "*"
    read_only_mode: bool = False
    min_session_timeout_ms: int | None = None
    max_session_timeout_ms: int = 60_000
    container_check_interval_ms: int = 1000
    init_limit: int = 50
    sync_limit: int = 10
    extra_config: Mapping[str, str] = field(default_factory=dict)
    jvm_flags: Sequence[str] = ()

    def replace(self, **changes: Unpack[ServerOptionChanges]) -> ServerOptions:
        """A copy with ``changes`` applied; changes whose value is None are ignored."""
        given: dict[str, Any] = {key: value for key, value in changes.items() if value is not None}
        if changes.get("extra_config") is not None:
            given["extra_config"] = dict(changes["extra_config"] or {})
        if changes.get("jvm_flags") is not None:
            given["jvm_flags"] = tuple(changes["jvm_flags"] or ())
        return dataclasses.replace(self, **given)

    def whitelist(self) -> str:
        words = [w.strip() for w in self.four_letter_words.split(",") if w.strip()]
        if "*" in words:
            return "*"
        return ",".join(dict.fromkeys([*words, *REQUIRED_4LW]))

    def zoo_cfg(self, *, ensemble: bool = False) -> dict[str, str]:
        """``zoo.cfg`` entries (without the data directory, ports and server list)."""
        cfg = {
            "tickTime": str(self.tick_time_ms),
            "maxClientCnxns": "0",
            "maxSessionTimeout": str(self.max_session_timeout_ms),
            "admin.enableServer": "false",
            "4lw.commands.whitelist": self.whitelist(),
        }
        if self.min_session_timeout_ms is not None:
            cfg["minSessionTimeout"] = str(self.min_session_timeout_ms)
        if ensemble:
            cfg.update(
                {
                    "initLimit": str(self.init_limit),
                    "syncLimit": str(self.sync_limit),
                    "reconfigEnabled": "false",
                    "standaloneEnabled": "false",
                }
            )
            if self.read_only_mode:
                # Since 3.7 a read-only server only accepts new sessions as local sessions.
                cfg["localSessionsEnabled"] = "true"
                cfg["localSessionsUpgradingEnabled"] = "true"
        return cfg

    def system_properties(self, *, ensemble: bool = False) -> dict[str, str]:
        props = {
            "zookeeper.admin.enableServer": "false",
            "zookeeper.extendedTypesEnabled": "true" if self.extended_types else "false",
            "readonlymode.enabled": "true" if self.read_only_mode else "false",
            "znode.container.checkIntervalMs": str(self.container_check_interval_ms),
            # Test servers: no fsync per transaction, small preallocated log files.
            "zookeeper.forceSync": "no",
            "zookeeper.preAllocSize": "4096",
        }
        if ensemble:
            props["zookeeper.fastleader.maxNotificationInterval"] = "1000"
        return props

    def container_env(self, *, ensemble: bool = False) -> dict[str, str]:
        """The environment of a container of the official ``zookeeper`` image (or of ours).

        The image writes its own ``zoo.cfg`` from these; entries it has no variable for go through
        ``ZOO_CFG_EXTRA`` and the system properties through ``JVMFLAGS``.
        """
        cfg = self.zoo_cfg(ensemble=ensemble)
        env = {
            "ZOO_TICK_TIME": cfg.pop("tickTime"),
            "ZOO_MAX_CLIENT_CNXNS": cfg.pop("maxClientCnxns"),
            "ZOO_ADMINSERVER_ENABLED": cfg.pop("admin.enableServer"),
            "ZOO_4LW_COMMANDS_WHITELIST": cfg.pop("4lw.commands.whitelist"),
        }
        if ensemble:
            env["ZOO_INIT_LIMIT"] = cfg.pop("initLimit")
            env["ZOO_SYNC_LIMIT"] = cfg.pop("syncLimit")
            env["ZOO_STANDALONE_ENABLED"] = cfg.pop("standaloneEnabled")
        cfg.update(self.extra_config)
        for key, value in cfg.items():
            if any(c.isspace() for c in key + value):
                raise ValueError(f"{key}={value!r}: a container's ZOO_CFG_EXTRA cannot hold white space")
        env["ZOO_CFG_EXTRA"] = " ".join(f"{key}={value}" for key, value in cfg.items())
        flags = [f"-D{key}={value}" for key, value in self.system_properties(ensemble=ensemble).items()]
        env["JVMFLAGS"] = " ".join([*flags, *self.jvm_flags])
        return env


class ServerOptionChanges(TypedDict, total=False):
    """The fields of :class:`ServerOptions` as keywords (the backends' constructors take them too): each
    replaces the field of the options given, None leaves it as it is."""

    tick_time_ms: int | None
    extended_types: bool | None
    four_letter_words: str | None
    read_only_mode: bool | None
    min_session_timeout_ms: int | None
    max_session_timeout_ms: int | None
    container_check_interval_ms: int | None
    init_limit: int | None
    sync_limit: int | None
    extra_config: Mapping[str, str] | None
    jvm_flags: Sequence[str] | None


class AuthCredential(NamedTuple):
    """A ``(scheme, credential)`` pair for :func:`zkwire.open_client`'s ``auth``, whose ``repr`` hides
    the credential (an ensemble's super user: ``open_client(hosts, auth=[ensemble.super_auth])``)."""

    scheme: str
    credential: bytes

    def __repr__(self) -> str:
        return f"AuthCredential(scheme={self.scheme!r}, credential=<{len(self.credential)} bytes hidden>)"

    def __str__(self) -> str:
        return repr(self)


# --------------------------------------------------------------------------------------------------------
# ports and addresses


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that is free on ``host`` right now (the kernel's choice)."""
    return free_ports(1, host)[0]


def free_ports(count: int, host: str = "127.0.0.1") -> list[int]:
    """``count`` distinct free TCP ports (all sockets stay bound until every port is chosen)."""
    socks: list[socket.socket] = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            socks.append(sock)
            sock.bind((host, 0))
        return [sock.getsockname()[1] for sock in socks]
    finally:
        for sock in socks:
            sock.close()


def check_port_free(host: str, port: int) -> None:
    """Raise :class:`PortInUseError` when a server could not listen on ``port`` of ``host`` now.

    Bound as a server binds (``SO_REUSEADDR``: connections of an earlier run still in TIME_WAIT do not
    count), so a port another socket listens on or is bound to is refused before anything is started.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            raise PortInUseError(host, port, exc.strerror or str(exc)) from None


def free_subnet(pool: ipaddress.IPv4Network, used: Iterable[ipaddress.IPv4Network]) -> ipaddress.IPv4Network:
    """A random /24 of ``pool`` that overlaps none of the networks ``used`` (default routes aside).

    Raises:
        ZooKeeperStartError: no free /24 was found in 200 tries.
    """
    taken = [network for network in used if network.prefixlen > 0]
    rng = random.Random()
    for _ in range(200):
        start = int(pool.network_address) + 256 * rng.randrange(pool.num_addresses // 256)
        candidate = ipaddress.IPv4Network((start, 24))
        if not any(candidate.overlaps(network) for network in taken):
            return candidate
    raise ZooKeeperStartError(f"no free /24 in {pool} for the ensemble's network")


def pid_alive(pid: int) -> bool:
    """A process ``pid`` exists on this machine (perhaps another user's)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def tail_file(path: Path, lines: int) -> str:
    """The last ``lines`` lines of a (possibly large) text file; "" if it cannot be read."""
    try:
        with path.open("rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            chunk = min(size, max(4096, lines * 400))
            f.seek(size - chunk)
            data = f.read()
    except OSError:
        return ""
    text = data.decode("utf-8", "replace").splitlines()
    if chunk < size:
        text = text[1:]  # the first line is probably cut
    return "\n".join(text[-lines:]) if lines > 0 else ""


def last_lines(text: str, lines: int) -> str:
    return "\n".join(text.splitlines()[-lines:]) if lines > 0 else ""


# --------------------------------------------------------------------------------------------------------
# one server


class _Started(ABC):
    """``with`` starts it and stops it again."""

    @abstractmethod
    def start(self, timeout: float = 30.0) -> None: ...

    @abstractmethod
    def stop(self) -> None: ...

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


class ZooKeeperServer(_Started):
    """One ZooKeeper server, whatever runs it.

    ``hosts`` is the connect string; ``client_address`` the address the server sees this machine's
    clients connect from (``who_am_i``, ``ip`` ACLs): 127.0.0.1 for a local JVM, the network's gateway
    for a container. ``controllable`` is False for a server this process did not start (it can
    neither be stopped nor restarted, and has no log).
    """

    #: Short name of the backend: "local", "docker", "external"...
    backend = "?"
    controllable = True

    @property
    @abstractmethod
    def hosts(self) -> str: ...

    _client_address: str | None = None

    @property
    def client_address(self) -> str:
        """Asked of the server once (whoAmI), then remembered."""
        if self._client_address is None:
            self._client_address = client_address_seen_by(self.hosts)
        return self._client_address

    @property
    @abstractmethod
    def running(self) -> bool: ...

    @abstractmethod
    def start(self, timeout: float = 30.0) -> None:
        """Start the server (again, with the data it had) and wait until it serves."""

    @abstractmethod
    def stop(self, *, keep_data: bool = False, kill: bool = False, grace: float = 5.0) -> None:
        """Stop the server (SIGTERM, or SIGKILL with ``kill``); ``keep_data`` to :meth:`start` it again."""

    def restart(self, timeout: float = 30.0, *, kill: bool = False) -> None:
        """Stop and start again on the same address with the same data."""
        self.stop(keep_data=True, kill=kill)
        self.start(timeout)

    @abstractmethod
    def log_tail(self, lines: int = 200) -> str:
        """The last ``lines`` lines of the server's log ("" when there is none)."""

    def four_letter_word(self, cmd: str, timeout: float = 5.0) -> str:
        return four_letter_word(self.hosts, cmd, timeout)


class LocalPortServer(ZooKeeperServer):
    """A server this process starts, reached at ``host``:``port`` (the port chosen at the first start
    unless it was given, then kept across restarts)."""

    host: str
    _port: int | None

    @property
    def port(self) -> int:
        if self._port is None:
            raise EmbeddedZooKeeperError("the server has no port yet: start it first")
        return self._port

    @property
    def hosts(self) -> str:
        """The connect string, ``"host:port"``."""
        return f"{self.host}:{self.port}"


class ExternalZooKeeper(ZooKeeperServer):
    """A server (or ensemble) started by someone else: a connect string and nothing more."""

    backend = "external"
    controllable = False

    def __init__(self, hosts: str) -> None:
        self._hosts = hosts

    @property
    def hosts(self) -> str:
        return self._hosts

    @property
    def running(self) -> bool:
        return True

    def start(self, timeout: float = 30.0) -> None:
        pass

    def stop(self, *, keep_data: bool = False, kill: bool = False, grace: float = 5.0) -> None:
        pass

    def restart(self, timeout: float = 30.0, *, kill: bool = False) -> None:
        raise EmbeddedZooKeeperError("an external server cannot be restarted from here")

    def log_tail(self, lines: int = 200) -> str:
        return ""

    def __repr__(self) -> str:
        return f"<ExternalZooKeeper {self._hosts}>"


# --------------------------------------------------------------------------------------------------------
# ensembles


class ZooKeeperEnsemble(_Started):
    """``size`` ZooKeeper servers forming one ensemble, numbered from 0 (``myid`` is index + 1).

    Stopped members keep their address and data, so :meth:`start_member` brings a member back as the
    same server. Subclasses provide the per-member primitives (``_member_address``, ``_member_alive``,
    ``_launch_member``, ``_halt_members``, ``_member_log``, ...); waiting, leader and log logic is here.

    An ensemble whose membership changes at run time (``reconfigurable``: :meth:`add_member`,
    :meth:`remove_member`) keeps its indices: an added member takes the next index (and ``myid``), a
    removed one leaves a gap. :meth:`members` lists the indices of the current configuration, ``size``
    counts them, and everything that enumerates members (``hosts``, :meth:`running_members`,
    :meth:`wait_until_serving`...) follows them.
    """

    backend = "?"
    #: The membership may be changed with :meth:`add_member` and :meth:`remove_member`.
    reconfigurable = False

    def __init__(self, size: int, options: ServerOptions) -> None:
        if size < 1:
            raise InvalidArgumentError("an ensemble needs at least one member")
        self.size = size
        self.options = options

    # -- per-member primitives

    @property
    @abstractmethod
    def started(self) -> bool:
        """The members exist (addresses chosen, possibly stopped)."""

    @abstractmethod
    def _member_address(self, index: int) -> tuple[str, int]:
        """Where a client (of this process) reaches the member."""

    def _admin_address(self, index: int) -> tuple[str, int]:
        """Where this process probes the member (``srvr``, ``ruok``...): its client address, unless the
        backend keeps a path that tests cannot cut."""
        return self._member_address(index)

    @abstractmethod
    def _member_alive(self, index: int) -> bool: ...

    def _member_exit_code(self, index: int) -> int | None:
        """The exit code of a member that was started and has exited since, else None."""
        return None

    @abstractmethod
    def _launch_member(self, index: int) -> None:
        """Start a stopped member (its data kept)."""

    @abstractmethod
    def _halt_members(self, indices: Sequence[int], *, kill: bool, grace: float) -> None:
        """Stop members (their data kept). Idempotent."""

    @abstractmethod
    def _member_log(self, index: int, lines: int) -> str: ...

    def _member_is_ours(self, index: int) -> bool:
        """The server answering at the member's address is the member (not a stranger on the port)."""
        return True

    @abstractmethod
    def start(self, timeout: float = 60.0) -> None:
        """Start every member (or the stopped ones) and wait for a quorum in which every member serves."""

    @abstractmethod
    def stop(self, *, grace: float = 5.0) -> None:
        """Stop every member and remove what the ensemble made. Idempotent."""

    # -- addresses

    def members(self) -> list[int]:
        """The indices of the members of the current configuration, in order (``0 .. size - 1`` until
        members are added or removed)."""
        return list(range(self.size))

    def _known_indices(self) -> range:
        """Every index a member ever had (members removed since included)."""
        return range(self.size)

    def _check_index(self, index: int) -> None:
        if not self.started:
            raise EmbeddedZooKeeperError("the ensemble is not started")
        if index not in self._known_indices():
            raise IndexError(f"no member {index} in the ensemble (members: {self.members()})")

    _client_address: str | None = None

    @property
    def client_address(self) -> str:
        """The address the members see this machine's clients connect from (asked once, whoAmI)."""
        if self._client_address is None:
            self._client_address = client_address_seen_by(self.member_hosts(self.running_members()[0]))
        return self._client_address

    @property
    def hosts(self) -> str:
        """The connect string of all members, ``"host1:p1,host2:p2,..."``."""
        return ",".join(self.member_hosts(i) for i in self.members())

    def member_hosts(self, index: int) -> str:
        self._check_index(index)
        host, port = self._member_address(index)
        return f"{host}:{port}"

    def member_port(self, index: int) -> int:
        self._check_index(index)
        return self._member_address(index)[1]

    def is_running(self, index: int) -> bool:
        self._check_index(index)
        return self._member_alive(index)

    def running_members(self) -> list[int]:
        return [i for i in self.members() if self.started and self._member_alive(i)]

    def member_mode(self, index: int, timeout: float = 2.0) -> str | None:
        """``leader``, ``follower``, ``read-only``..., or None if the member does not serve."""
        self._check_index(index)
        return srvr_mode(self._admin_address(index), timeout)

    def four_letter_word(self, index: int, cmd: str, timeout: float = 5.0) -> str:
        self._check_index(index)
        return four_letter_word(self._admin_address(index), cmd, timeout)

    def log_tail(self, index: int | None = None, lines: int = 200) -> str:
        """The end of one member's log, or of every member's (with a header line each) if index is None."""
        if index is None:
            return "\n".join(
                f"==== member {i} ({'running' if self.started and self._member_alive(i) else 'stopped'})\n"
                + self._member_log(i, lines)
                for i in self.members()
            )
        return self._member_log(index, lines)

    # -- members

    def start_member(self, index: int, timeout: float = 60.0) -> None:
        """Start a stopped member again (same address, same data) and wait until it serves."""
        self._check_index(index)
        if self._member_alive(index):
            return
        self._launch_member(index)
        self.wait_until_serving(timeout)

    def stop_member(self, index: int, *, kill: bool = False, grace: float = 5.0) -> None:
        """Stop one member (SIGTERM, or SIGKILL with ``kill=True``). Its data and address are kept."""
        self._check_index(index)
        self._halt_members([index], kill=kill, grace=grace)

    def restart_member(self, index: int, timeout: float = 60.0, *, kill: bool = False) -> None:
        self.stop_member(index, kill=kill)
        self.start_member(index, timeout)

    def wait_until_serving(self, timeout: float = 60.0) -> None:
        """Wait until every running member serves clients.

        With a majority running, each must be leader or follower (and accept a session); without one,
        each must be in read-only mode if that is enabled, else merely be up.
        """
        deadline = time.monotonic() + timeout
        while True:
            running = self.running_members()
            for i in self.members():
                code = self._member_exit_code(i)
                if code is not None:
                    raise ZooKeeperStartError(f"ensemble member {i} exited with code {code}", self.log_tail(i, 60))
            has_quorum = len(running) > self.size // 2
            pending = [i for i in running if not self._member_ready(i, has_quorum)]
            if not pending:
                return
            if time.monotonic() > deadline:
                tails = "\n".join(f"==== member {i}\n{self.log_tail(i, 40)}" for i in pending)
                raise ZooKeeperStartError(f"ensemble members {pending} not serving within {timeout} s", tails)
            time.sleep(0.05)

    def _member_ready(self, index: int, has_quorum: bool) -> bool:
        address = self._admin_address(index)
        if has_quorum or self.options.read_only_mode:
            modes = ("leader", "follower") if has_quorum else ("read-only",)
            return serving(address, modes, lambda: self._member_is_ours(index), read_only=not has_quorum)
        try:
            return four_letter_word(address, "ruok", PROBE_TIMEOUT) == "imok"
        except OSError:
            return False

    def leader_index(self, timeout: float = 30.0) -> int:
        """Index of the current leader, waiting up to ``timeout`` s for one to be elected."""
        deadline = time.monotonic() + timeout
        while True:
            for i in self.running_members():
                if self.member_mode(i, PROBE_TIMEOUT) == "leader":
                    return i
            if time.monotonic() > deadline:
                raise EmbeddedZooKeeperError(f"no leader within {timeout} s")
            time.sleep(0.05)

    # -- membership (dynamic reconfiguration)

    def _not_reconfigurable(self) -> ReconfigError:
        return ReconfigError(
            f"{type(self).__name__} (backend {self.backend}) cannot change its membership: dynamic "
            "reconfiguration is supported by the local backend's EmbeddedEnsemble(reconfigurable=True)"
        )

    def add_member(self, *, role: str = "participant", timeout: float = 60.0) -> int:
        """Start a new server and make it a member (a reconfiguration); its index. Blocking.

        Raises:
            ReconfigError: the backend cannot change the membership, the server refused it, or it did not
                happen within ``timeout`` s.
        """
        raise self._not_reconfigurable()

    def remove_member(self, index: int, *, stop: bool = True, timeout: float = 60.0) -> None:
        """Remove a member from the configuration (a reconfiguration), then stop it unless ``stop`` is
        False. Blocking.

        Raises:
            ReconfigError: the backend cannot change the membership, the server refused it, or it did not
                happen within ``timeout`` s.
        """
        raise self._not_reconfigurable()

    def config_text(self, index: int | None = None, timeout: float = 10.0) -> str:
        """The configuration as a member reports it: the text of ``/zookeeper/config`` (after a sync),
        read over a session of its own on member ``index``, or on the first running member that answers.

        Raises:
            EmbeddedZooKeeperError: no member answered within ``timeout`` s (the last failure is chained).
        """
        if index is not None:
            self._check_index(index)
        deadline = time.monotonic() + timeout
        last: Exception | None = None
        while True:
            for i in [index] if index is not None else self.running_members():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                try:
                    with RawSession(self._member_address(i), min(remaining, 5.0)) as session:
                        session.sync("/")
                        data, _ = session.get_data(CONFIG_NODE, chroot=False)
                    return data.decode()
                except (OSError, EmbeddedZooKeeperError) as exc:
                    last = exc
            if time.monotonic() >= deadline:
                who = f"member {index} did not answer" if index is not None else "no running member answered"
                raise EmbeddedZooKeeperError(f"{who} with the configuration within {timeout} s") from last
            time.sleep(0.1)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} size={self.size} running={self.running_members()}>"
