"""What every test backend shares: the server options, the wire probes and the two base classes.

A backend runs ZooKeeper somewhere -- JVMs started from the local package (:mod:`.embedded`), Docker
containers (:mod:`.containers`), JVMs in network namespaces (:mod:`.netns`) -- and offers one of two
shapes:

* :class:`ZooKeeperServer`: one server (``hosts``, ``start``/``stop``/``restart``, ``log_tail``, ...);
* :class:`ZooKeeperEnsemble`: numbered members (``member_hosts(i)``, ``stop_member(i)``,
  ``leader_index()``, ...), whose waiting and leader logic lives here, on top of a few per-member
  primitives that each backend implements.

:class:`ServerOptions` describes the server the same way for all of them: it becomes a ``zoo.cfg`` and
JVM system properties for a local JVM, and the official image's environment variables for a container.

Standard library only (no pytest, no trio, no docker).
"""

from __future__ import annotations

import contextlib
import dataclasses
import ipaddress
import os
import random
import socket
import struct
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from ..errors import InvalidArgumentError, ZKError
from ..protocol.fourletter import FourLetterExchange, FourLetterWordError
from ..protocol.framing import LENGTH, REPLY_HEADER, REQUEST_FRAME_HEAD, REQUEST_HEADER
from ..sansio.hosts import parse_host_port

__all__ = [
    "EmbeddedZooKeeperError",
    "ExternalZooKeeper",
    "PortInUseError",
    "ServerOptions",
    "ZooKeeperEnsemble",
    "ZooKeeperNotInstalledError",
    "ZooKeeperServer",
    "ZooKeeperStartError",
    "check_port_free",
    "client_address_seen_by",
    "delete_tree",
    "ensure_path",
    "four_letter_word",
    "free_port",
    "srvr_mode",
]

# Timeout of each four-letter word of the readiness checks.
PROBE_TIMEOUT = 0.5

# Commands the readiness checks need; always added to the 4lw whitelist.
REQUIRED_4LW = ("ruok", "srvr", "conf")


class EmbeddedZooKeeperError(ZKError, RuntimeError):
    """Base class of the errors of ``zkwire.testing`` (the name predates the other backends); a
    ZKError, and a RuntimeError as before."""


class ZooKeeperNotInstalledError(EmbeddedZooKeeperError):
    """What a backend needs is missing: Java or the ZooKeeper jars, a Docker engine, ``ip``..."""


class ZooKeeperStartError(EmbeddedZooKeeperError):
    """A server exited or did not become ready in time. ``log_tail`` holds the end of its log."""

    def __init__(self, message: str, log_tail: str = "") -> None:
        super().__init__(f"{message}\n--- end of the server log ---\n{log_tail}" if log_tail else message)
        self.log_tail = log_tail


class PortInUseError(ZooKeeperStartError):
    """The port a server was asked to listen on (a fixed port) is taken by another socket on this host.
    ``log_tail`` holds the end of the server's log when the server itself failed to bind it."""

    def __init__(self, host: str, port: int, reason: str, log_tail: str = "") -> None:
        message = f"port {port} of {host} is in use ({reason}): stop what holds it, or choose another port"
        super().__init__(message, log_tail)
        self.host = host
        self.port = port


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

    def replace(self, **changes: Any) -> ServerOptions:
        """A copy with ``changes`` applied; changes whose value is None are ignored."""
        given = {key: value for key, value in changes.items() if value is not None}
        if "extra_config" in given:
            given["extra_config"] = dict(given["extra_config"])
        if "jvm_flags" in given:
            given["jvm_flags"] = tuple(given["jvm_flags"])
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


# --------------------------------------------------------------------------------------------------------
# probes on the wire


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


def split_address(address: str | tuple[str, int]) -> tuple[str, int]:
    """``(host, port)`` of an address or of the first server of a connect string."""
    if isinstance(address, tuple):
        return address
    first = address.split(",")[0].split("/")[0]
    host, port = parse_host_port(first, default_port=None, default_host="127.0.0.1")
    return host, port


def four_letter_word(address: str | tuple[str, int], command: str, timeout: float = 5.0) -> str:
    """Send a four-letter-word command (``ruok``, ``srvr``, ``mntr``...) and return the whole reply.

    ``address`` is ``"host:port"`` (the first server of a connect string is used) or ``(host, port)``.
    A command that is not whitelisted gets the server's "is not executed" message back.  The blocking
    front of :class:`~zkwire.protocol.fourletter.FourLetterExchange`: a malformed word raises
    InvalidArgumentError; no connection, or no complete reply within ``timeout`` s, raises
    :class:`~zkwire.protocol.fourletter.FourLetterWordError` (an OSError).
    """
    host, port = split_address(address)
    exchange = FourLetterExchange(host, port, command)
    deadline = time.monotonic() + timeout
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.sendall(exchange.request)
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError
                sock.settimeout(remaining)
                data = sock.recv(65536)
                if not data:
                    break
                exchange.received(data)
    except FourLetterWordError:
        raise
    except TimeoutError:
        # An answer cut short by the deadline is not an answer (a starting 3.8 server can answer
        # without ever closing the connection).
        raise exchange.error(f"no complete reply to {command!r} within {timeout} s") from None
    except OSError as e:
        return exchange.failed(e)
    return exchange.answer()


def srvr_mode(address: str | tuple[str, int], timeout: float = 2.0) -> str | None:
    """The ``Mode:`` a server reports (standalone, leader, follower, read-only), or None."""
    try:
        reply = four_letter_word(address, "srvr", timeout)
    except OSError:
        return None
    for line in reply.splitlines():
        if line.startswith("Mode:"):
            return line.partition(":")[2].strip()
    return None


def serving(
    address: tuple[str, int], modes: Sequence[str], is_ours: Callable[[], bool], read_only: bool = False
) -> bool:
    """The server at ``address`` answers ``ruok``, reports one of ``modes``, is ours (``is_ours()``: not
    a stranger on the port), and accepts a session (a read-only one if ``read_only``)."""
    try:
        if four_letter_word(address, "ruok", PROBE_TIMEOUT) != "imok":
            return False
        if srvr_mode(address, PROBE_TIMEOUT) not in modes:
            return False
        if not is_ours():
            return False
        probe_session(address, 2.0, read_only=read_only)
    except (OSError, ValueError, struct.error):
        return False
    return True


def pid_alive(pid: int) -> bool:
    """A process ``pid`` exists on this machine (perhaps another user's)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _recv_exactly(sock: socket.socket, size: int) -> bytes:
    buf = bytearray()
    while len(buf) < size:
        data = sock.recv(size - len(buf))
        if not data:
            raise ConnectionError("connection closed by the server")
        buf += data
    return bytes(buf)


def _call(sock: socket.socket, body: bytes) -> bytes:
    sock.sendall(LENGTH.pack(len(body)) + body)
    (length,) = LENGTH.unpack(_recv_exactly(sock, 4))
    return _recv_exactly(sock, length)


def _connect_request(read_only: bool) -> bytes:
    # protocolVersion, lastZxidSeen, timeOut (ms), sessionId, passwd (16 zero bytes), readOnly
    return struct.pack(">iqiqi16s?", 0, 0, 10_000, 0, 16, bytes(16), read_only)


def probe_session(address: tuple[str, int], timeout: float, read_only: bool = False) -> int:
    """Open a session by hand, close it again, and return the negotiated session timeout (ms)."""
    with socket.create_connection(address, timeout=timeout) as sock:
        reply = _call(sock, _connect_request(read_only))
        if len(reply) < 36:
            # A 3.8 read-only server without local sessions answers with a bare reply header
            # (error NOTREADONLY) instead of a connect response.
            raise ConnectionError(f"not a connect response ({len(reply)} bytes)")
        _proto, negotiated, _session_id = struct.unpack_from(">iiq", reply)
        if negotiated <= 0:
            raise ConnectionError("the server refused the session")
        # closeSession (xid 1, type -11); the reply is a header, then the server closes the connection.
        sock.sendall(REQUEST_FRAME_HEAD.pack(8, 1, -11))
        with contextlib.suppress(OSError):
            (length,) = LENGTH.unpack(_recv_exactly(sock, 4))
            _recv_exactly(sock, length)
        return int(negotiated)


def _read_ustring(data: bytes, offset: int) -> tuple[str | None, int]:
    (length,) = struct.unpack_from(">i", data, offset)
    offset += 4
    if length < 0:
        return None, offset
    return data[offset : offset + length].decode("utf-8", "replace"), offset + length


def client_address_seen_by(address: str | tuple[str, int], timeout: float = 10.0) -> str:
    """The address the server at ``address`` sees this process connect from: the ``ip`` entry of a
    whoAmI (opcode 107) answer, asked over a session opened by hand.

    127.0.0.1 for a local server; a container's gateway when Docker forwards a published port.
    """
    with socket.create_connection(split_address(address), timeout=timeout) as sock:
        if len(_call(sock, _connect_request(False))) < 36:
            raise ConnectionError(f"{address} refused a session")
        try:
            reply = _call(sock, REQUEST_HEADER.pack(1, 107))
            _xid, _zxid, err = REPLY_HEADER.unpack_from(reply)
            if err != 0:
                raise EmbeddedZooKeeperError(f"whoAmI failed on {address}: ZooKeeper error {err}")
            (count,) = struct.unpack_from(">i", reply, 16)
            offset = 20
            for _ in range(max(count, 0)):
                scheme, offset = _read_ustring(reply, offset)
                user, offset = _read_ustring(reply, offset)
                if scheme == "ip" and user:
                    return user
        finally:
            with contextlib.suppress(OSError, struct.error):
                _call(sock, REQUEST_HEADER.pack(2, -11))  # closeSession
    raise EmbeddedZooKeeperError(f"{address} did not name the client's address")


def _ustring(text: str) -> bytes:
    data = text.encode()
    return LENGTH.pack(len(data)) + data


def ensure_path(hosts: str, path: str, timeout: float = 10.0) -> None:
    """Create ``path`` and its missing parents (persistent, open ACL, empty) in a session of its own,
    opened and closed for the call (zkwire's :meth:`~zkwire.Client.ensure_path`, under ``trio.run``):
    fixtures prepare a server with it before any test's client exists.  Call it outside trio.

    A chroot in ``hosts`` is honoured (its own nodes are created too). Nodes that exist already are left
    as they are.

    Raises:
        EmbeddedZooKeeperError: no session within ``timeout`` seconds, or the server refused a create.
    """
    import trio  # the one use of the client in this module, which otherwise speaks the wire by hand

    from ..client.api import open_client
    from ..errors import ZKError

    async def create() -> None:
        with trio.fail_after(timeout):
            async with open_client(hosts) as client:
                await client.ensure_path(path)

    try:
        trio.run(create)
    except (ZKError, trio.TooSlowError) as exc:
        raise EmbeddedZooKeeperError(f"cannot create {path} on {hosts}: {exc or 'no session in time'}") from exc


class _RawSession:
    """A session opened by hand over a plain socket, for the few requests fixtures need."""

    def __init__(self, hosts: str, timeout: float) -> None:
        server, _, chroot = hosts.split(",")[0].partition("/")
        self.server = server
        self.chroot = "/" + chroot.strip("/") if chroot.strip("/") else ""
        self.sock = socket.create_connection(split_address(server), timeout=timeout)
        self.xid = 0
        if len(_call(self.sock, _connect_request(False))) < 36:
            self.sock.close()
            raise ConnectionError(f"{server} refused a session")

    def path(self, path: str) -> str:
        return (self.chroot + "/" + path.strip("/")).rstrip("/") or "/"

    def request(self, op: int, body: bytes) -> tuple[int, bytes]:
        self.xid += 1
        reply = _call(self.sock, REQUEST_HEADER.pack(self.xid, op) + body)
        _xid, _zxid, err = REPLY_HEADER.unpack_from(reply)
        return err, reply[16:]

    def children(self, path: str) -> list[str]:
        err, body = self.request(8, _ustring(self.path(path)) + b"\0")  # getChildren, no watch
        if err == -101:  # NONODE
            return []
        if err != 0:
            raise EmbeddedZooKeeperError(f"getChildren {path} on {self.server}: ZooKeeper error {err}")
        (count,) = struct.unpack_from(">i", body)
        names, offset = [], 4
        for _ in range(max(count, 0)):
            name, offset = _read_ustring(body, offset)
            names.append(name or "")
        return names

    def delete(self, path: str) -> int:
        err, _ = self.request(2, _ustring(self.path(path)) + struct.pack(">i", -1))  # delete, any version
        return err

    def close(self) -> None:
        with contextlib.suppress(OSError, struct.error):
            self.request(-11, b"")  # closeSession
        self.sock.close()


def delete_tree(hosts: str, path: str, timeout: float = 10.0) -> None:
    """Delete ``path`` and everything under it (a chroot in ``hosts`` is honoured), over a session
    opened by hand. Nodes that vanish meanwhile are fine; ephemeral nodes of live sessions are deleted
    like any other."""
    session = _RawSession(hosts, timeout)
    try:

        def remove(node: str, attempts: int = 5) -> None:
            for _ in range(attempts):
                for child in session.children(node):
                    remove(f"{node.rstrip('/')}/{child}")
                err = session.delete(node)
                if err in (0, -101):  # ok, NONODE
                    return
                if err != -111:  # NOTEMPTY: a child appeared meanwhile, go again
                    raise EmbeddedZooKeeperError(f"cannot delete {node} on {session.server}: ZooKeeper error {err}")
            raise EmbeddedZooKeeperError(f"{node} on {session.server} keeps getting new children")

        if path.strip("/"):
            remove("/" + path.strip("/"))
    finally:
        session.close()


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


class ZooKeeperServer(ABC):
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

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


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


class ZooKeeperEnsemble(ABC):
    """``size`` ZooKeeper servers forming one ensemble, numbered from 0 (``myid`` is index + 1).

    Stopped members keep their address and data, so :meth:`start_member` brings a member back as the
    same server. Subclasses provide the per-member primitives (``_member_address``, ``_member_alive``,
    ``_launch_member``, ``_halt_members``, ``_member_log``, ...); waiting, leader and log logic is here.
    """

    backend = "?"

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

    def _check_index(self, index: int) -> None:
        if not self.started:
            raise EmbeddedZooKeeperError("the ensemble is not started")
        if not 0 <= index < self.size:
            raise IndexError(f"no member {index} in an ensemble of {self.size}")

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
        return ",".join(self.member_hosts(i) for i in range(self.size))

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
        return [i for i in range(self.size) if self.started and self._member_alive(i)]

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
                for i in range(self.size)
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
            for i in range(self.size):
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

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} size={self.size} running={self.running_members()}>"
