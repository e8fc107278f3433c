"""Run real Apache ZooKeeper servers from the locally installed package, for tests, demos and apps.

Servers are started from the jars of Debian's ``zookeeper`` package (``/usr/share/java``) with the first
``java`` found through ``JAVA_HOME`` or ``PATH``::

    with EmbeddedZooKeeper() as zk:          # a standalone server on a free loopback port
        print(zk.hosts)                      # "127.0.0.1:40123"

    with EmbeddedEnsemble(3) as ens:         # three QuorumPeerMain members
        ens.stop_member(ens.leader_index())  # failover
        ...

Each server gets its own temporary directory holding its config, its data (unless ``data_dir`` is given)
and its log, ``zookeeper.log``: the server's log4j output and anything the JVM prints. Debian's own
launcher puts no slf4j binding on the class path (so the server logs nothing), and putting every jar of
``/usr/share/java`` on it lets slf4j pick any of several bindings; here the class path names the jars and
the log4j binding explicitly, with a log4j config written into the server's directory.

This module uses the standard library only. Servers are stopped at interpreter exit, and on Linux a
server started from the main thread is also killed by the kernel if the Python process dies.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import ctypes
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType

from .errors import InvalidArgumentError, ZKError

__all__ = [
    "DEFAULT_JVM_FLAGS",
    "EmbeddedEnsemble",
    "EmbeddedZooKeeper",
    "EmbeddedZooKeeperError",
    "ZooKeeperNotInstalledError",
    "ZooKeeperStartError",
    "find_java",
    "four_letter_word",
    "free_port",
    "server_classpath",
]

JAVA_DIR = "/usr/share/java"
INSTALL_HINT = "apt-get install -y zookeeper (Debian/Ubuntu: installs the server jars and a Java runtime)"

STANDALONE_MAIN = "org.apache.zookeeper.server.ZooKeeperServerMain"
QUORUM_MAIN = "org.apache.zookeeper.server.quorum.QuorumPeerMain"

#: JVM options for a small, quick-starting test server (a server starts in well under a second).
#: Flags passed as ``jvm_flags`` come after these, so they win: for benchmarks, give the optimising
#: compiler back with ``jvm_flags=["-XX:TieredStopAtLevel=4", "-Xmx1g"]``.
DEFAULT_JVM_FLAGS: tuple[str, ...] = (
    "-Xms16m",
    "-Xmx256m",
    "-XX:+UseSerialGC",
    "-XX:TieredStopAtLevel=1",
    "-XX:-UsePerfData",
    "-Xshare:auto",
    "-XX:+ExitOnOutOfMemoryError",
    "-Djava.net.preferIPv4Stack=true",
    "-Djava.awt.headless=true",
)

# Timeout of each four-letter word of the readiness check (see _is_serving).
_PROBE_TIMEOUT = 0.5

# Commands the readiness check needs; always added to the 4lw whitelist.
_REQUIRED_4LW = ("ruok", "srvr", "conf")

_LOG4J_PROPERTIES = """\
log4j.rootLogger=INFO, OUT
log4j.appender.OUT=org.apache.log4j.ConsoleAppender
log4j.appender.OUT.Target=System.out
log4j.appender.OUT.layout=org.apache.log4j.PatternLayout
log4j.appender.OUT.layout.ConversionPattern=%d{ISO8601} %-5p [%t:%C{1}@%L] - %m%n
"""


class EmbeddedZooKeeperError(ZKError, RuntimeError):
    """Base class of this module's errors (a ZKError, and a RuntimeError as before)."""


class ZooKeeperNotInstalledError(EmbeddedZooKeeperError):
    """Java or the ZooKeeper jars are missing."""


class ZooKeeperStartError(EmbeddedZooKeeperError):
    """A server exited or did not become ready in time. ``log_tail`` holds the end of its log."""

    def __init__(self, message: str, log_tail: str = "") -> None:
        super().__init__(f"{message}\n--- end of the server log ---\n{log_tail}" if log_tail else message)
        self.log_tail = log_tail


# --------------------------------------------------------------------------------------------------------
# helpers


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that is free on ``host`` right now (the kernel's choice)."""
    return _free_ports(1, host)[0]


def _free_ports(count: int, host: str = "127.0.0.1") -> list[int]:
    # All sockets stay bound until every port is chosen, so the ports are distinct.
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


def find_java() -> str:
    """Path of the ``java`` launcher: ``$JAVA_HOME/bin/java``, else the first one on ``PATH``."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        candidate = Path(java_home) / "bin" / "java"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    found = shutil.which("java")
    if found is None:
        raise ZooKeeperNotInstalledError(f"no java found (JAVA_HOME or PATH); install it: {INSTALL_HINT}")
    return found


def server_classpath(java_dir: str = JAVA_DIR) -> list[str]:
    """The jars a server needs, from a Debian-style jar directory.

    ``zookeeper.jar``'s manifest names its own dependencies; added here are the log4j binding of slf4j
    and the netty jars that the manifest leaves out but TLS (the netty connection factory) needs.
    """
    base = Path(java_dir)
    zookeeper_jar = base / "zookeeper.jar"
    if not zookeeper_jar.is_file():
        raise ZooKeeperNotInstalledError(f"ZooKeeper is not installed ({zookeeper_jar} is missing): {INSTALL_HINT}")
    extras = [
        "zookeeper-jute.jar",
        "slf4j-api.jar",
        "slf4j-log4j12.jar",
        "log4j-1.2.jar",
        "netty-codec.jar",
        "netty-resolver.jar",
        "netty-transport-native-unix-common.jar",
    ]
    return [str(zookeeper_jar)] + [str(base / name) for name in extras if (base / name).is_file()]


def _split_address(address: str | tuple[str, int]) -> tuple[str, int]:
    if isinstance(address, tuple):
        return address
    first = address.split(",")[0].split("/")[0]
    host, _, port = first.rpartition(":")
    return host.strip("[]") or "127.0.0.1", int(port)


def four_letter_word(address: str | tuple[str, int], command: str, timeout: float = 5.0) -> str:
    """Send a four-letter-word command (``ruok``, ``srvr``, ``mntr``...) and return the whole reply.

    ``address`` is ``"host:port"`` (the first server of a connect string is used) or ``(host, port)``.
    A command that is not whitelisted gets the server's "is not executed" message back.
    """
    if len(command) != 4 or not command.isascii():
        raise InvalidArgumentError(f"a four-letter word has four ASCII letters, not {command!r}")
    deadline = time.monotonic() + timeout
    chunks: list[bytes] = []
    with socket.create_connection(_split_address(address), timeout=timeout) as sock:
        sock.sendall(command.encode("ascii"))
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"no complete reply to {command!r} within {timeout} s")
            sock.settimeout(remaining)
            data = sock.recv(65536)
            if not data:
                break
            chunks.append(data)
    return b"".join(chunks).decode("utf-8", "replace")


def _recv_exactly(sock: socket.socket, size: int) -> bytes:
    buf = bytearray()
    while len(buf) < size:
        data = sock.recv(size - len(buf))
        if not data:
            raise ConnectionError("connection closed by the server")
        buf += data
    return bytes(buf)


def _probe_session(address: tuple[str, int], timeout: float, read_only: bool = False) -> int:
    """Open a session by hand, close it again, and return the negotiated session timeout (ms)."""
    body = struct.pack(">iqiqi16s?", 0, 0, 10_000, 0, 16, bytes(16), read_only)
    with socket.create_connection(address, timeout=timeout) as sock:
        sock.sendall(struct.pack(">i", len(body)) + body)
        (length,) = struct.unpack(">i", _recv_exactly(sock, 4))
        reply = _recv_exactly(sock, length)
        if length < 36:
            # A 3.8 read-only server without local sessions answers with a bare reply header
            # (error NOTREADONLY) instead of a connect response.
            raise ConnectionError(f"not a connect response ({length} bytes)")
        _proto, negotiated, _session_id = struct.unpack_from(">iiq", reply)
        if negotiated <= 0:
            raise ConnectionError("the server refused the session")
        # closeSession (xid 1, type -11); the reply is a header, then the server closes the connection.
        sock.sendall(struct.pack(">iii", 8, 1, -11))
        with contextlib.suppress(OSError):
            (length,) = struct.unpack(">i", _recv_exactly(sock, 4))
            _recv_exactly(sock, length)
        return int(negotiated)


def _srvr_mode(address: tuple[str, int], timeout: float = 2.0) -> str | None:
    """The ``Mode:`` a server reports (standalone, leader, follower, read-only), or None."""
    try:
        reply = four_letter_word(address, "srvr", timeout)
    except OSError:
        return None
    for line in reply.splitlines():
        if line.startswith("Mode:"):
            return line.partition(":")[2].strip()
    return None


def _tail(path: Path, lines: int) -> str:
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


def _death_signal_preexec() -> Callable[[], None] | None:
    """A preexec_fn asking Linux to SIGKILL the child when its parent dies (main thread only).

    The kernel sends the signal when the *thread* that forked exits, so a server started from a worker
    thread (e.g. ``trio.to_thread``) would die with that thread: those rely on the atexit cleanup only.
    """
    if not sys.platform.startswith("linux") or threading.current_thread() is not threading.main_thread():
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    prctl.restype = ctypes.c_int
    parent = os.getpid()
    pr_set_pdeathsig = 1
    sigkill = int(signal.SIGKILL)

    def preexec() -> None:
        prctl(pr_set_pdeathsig, sigkill, 0, 0, 0)
        if os.getppid() != parent:  # the parent died before prctl took effect
            os._exit(1)

    return preexec


# --------------------------------------------------------------------------------------------------------
# one JVM


_live: set[_ServerProcess] = set()
_temp_dirs: set[Path] = set()
_live_lock = threading.Lock()


def _make_temp_dir(prefix: str) -> Path:
    path = Path(tempfile.mkdtemp(prefix=prefix)).resolve()
    with _live_lock:
        _temp_dirs.add(path)
    return path


def _remove_temp_dir(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
    with _live_lock:
        _temp_dirs.discard(path)


@atexit.register
def _stop_everything_at_exit() -> None:
    with _live_lock:
        procs = list(_live)
    for proc in procs:
        proc.signal_stop()
    for proc in procs:
        proc.stop(grace=3.0)
    with _live_lock:
        dirs = list(_temp_dirs)
    for path in dirs:
        _remove_temp_dir(path)


class _ServerProcess:
    """One ZooKeeper JVM: its work directory, config file, log file and process."""

    def __init__(self, workdir: Path, main_class: str, java: str, classpath: Sequence[str]) -> None:
        self.workdir = workdir
        self.main_class = main_class
        self.java = java
        self.classpath = list(classpath)
        self.cfg_path = workdir / "zoo.cfg"
        self.log_path = workdir / "zookeeper.log"
        self.log4j_path = workdir / "log4j.properties"
        self.process: subprocess.Popen[bytes] | None = None
        self._launch_offset = 0  # where the log of the current run starts

    def launch(self, cfg: Mapping[str, str], system_properties: Mapping[str, str], jvm_flags: Sequence[str]) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.cfg_path.write_text("".join(f"{key}={value}\n" for key, value in cfg.items()))
        self.log4j_path.write_text(_LOG4J_PROPERTIES)
        props = {
            "log4j.configuration": self.log4j_path.as_uri(),
            "zookeeper.log.dir": str(self.workdir),
            "zookeeper.jmx.log4j.disable": "true",
            **system_properties,
        }
        cmd = [
            self.java,
            *DEFAULT_JVM_FLAGS,
            *(f"-D{key}={value}" for key, value in props.items()),
            *jvm_flags,
            "-cp",
            os.pathsep.join(self.classpath),
            self.main_class,
            str(self.cfg_path),
        ]
        with self.log_path.open("ab") as log:
            self._launch_offset = log.tell()
            log.write(f"==== zkwire.embedded: {time.strftime('%Y-%m-%d %H:%M:%S')} starting\n".encode())
            log.write((" ".join(cmd) + "\n").encode())
            log.flush()
            self.process = subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=self.workdir,
                start_new_session=True,
                preexec_fn=_death_signal_preexec(),
            )
        with _live_lock:
            _live.add(self)

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def exit_code(self) -> int | None:
        return None if self.process is None else self.process.poll()

    def signal_stop(self, kill: bool = False) -> None:
        if self.process is not None and self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                if kill:
                    self.process.kill()
                else:
                    self.process.terminate()

    def stop(self, grace: float = 5.0, kill: bool = False) -> None:
        """SIGTERM (or SIGKILL), SIGKILL after ``grace`` seconds, and always reap. Idempotent."""
        proc = self.process
        if proc is not None:
            self.signal_stop(kill)
            try:
                proc.wait(grace)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
                proc.wait()
            self.process = None
        with _live_lock:
            _live.discard(self)

    def log_tail(self, lines: int) -> str:
        return _tail(self.log_path, lines)

    def bind_failed(self) -> bool:
        """The current run failed to bind one of its ports."""
        try:
            with self.log_path.open("rb") as f:
                f.seek(self._launch_offset)
                text = f.read(4 << 20).decode("utf-8", "replace")
        except OSError:
            return False
        return "Address already in use" in text or "BindException" in text


def _whitelist(four_letter_words: str) -> str:
    words = [w.strip() for w in four_letter_words.split(",") if w.strip()]
    if "*" in words:
        return "*"
    return ",".join(dict.fromkeys([*words, *_REQUIRED_4LW]))


def _common_system_properties(
    extended_types: bool, read_only_mode: bool, container_check_interval_ms: int
) -> dict[str, str]:
    return {
        "zookeeper.admin.enableServer": "false",
        "zookeeper.extendedTypesEnabled": "true" if extended_types else "false",
        "readonlymode.enabled": "true" if read_only_mode else "false",
        "znode.container.checkIntervalMs": str(container_check_interval_ms),
        # Test servers: no fsync per transaction, small preallocated log files.
        "zookeeper.forceSync": "no",
        "zookeeper.preAllocSize": "4096",
    }


def _common_config(
    tick_time_ms: int,
    data_dir: Path,
    min_session_timeout_ms: int | None,
    max_session_timeout_ms: int,
    four_letter_words: str,
) -> dict[str, str]:
    cfg = {
        "tickTime": str(tick_time_ms),
        "dataDir": str(data_dir),
        "maxClientCnxns": "0",
        "maxSessionTimeout": str(max_session_timeout_ms),
        "admin.enableServer": "false",
        "4lw.commands.whitelist": _whitelist(four_letter_words),
    }
    if min_session_timeout_ms is not None:
        cfg["minSessionTimeout"] = str(min_session_timeout_ms)
    return cfg


def _is_serving(address: tuple[str, int], data_dir: Path, modes: Sequence[str], read_only: bool = False) -> bool:
    """The server at ``address`` is ours (its ``conf`` names our data dir), in one of ``modes``, and
    accepts a session.

    The 4lw timeouts are short on purpose: a 3.8 server listens before its database is loaded, and a
    command that arrives then is answered but its connection is never closed (a NullPointerException
    in the server), so a reader waiting for the end of the reply would wait for its whole timeout.
    """
    try:
        if four_letter_word(address, "ruok", _PROBE_TIMEOUT) != "imok":
            return False
        if _srvr_mode(address, _PROBE_TIMEOUT) not in modes:
            return False
        if f"dataDir={data_dir}" not in four_letter_word(address, "conf", _PROBE_TIMEOUT):
            return False
        _probe_session(address, 2.0, read_only=read_only)
    except (OSError, struct.error):
        return False
    return True


# --------------------------------------------------------------------------------------------------------
# standalone


class EmbeddedZooKeeper:
    """A standalone ZooKeeper server (``ZooKeeperServerMain``) on a loopback port.

    ``port=None`` picks a free port at the first start and keeps it across restarts. ``data_dir=None``
    uses a temporary directory, removed by :meth:`stop` (unless ``keep_data=True``). Sessions may last
    from ``min_session_timeout_ms`` (default: two ticks) to ``max_session_timeout_ms``.

    TLS: give ``tls_keystore`` (and its password); the server then uses the netty connection factory
    and also listens for TLS clients on ``secure_port`` (a free port if None; see :attr:`secure_hosts`).
    Clients need no certificate unless ``tls_client_auth`` is ``"want"`` or ``"need"``.
    """

    def __init__(
        self,
        *,
        tick_time_ms: int = 200,
        host: str = "127.0.0.1",
        port: int | None = None,
        data_dir: str | None = None,
        extended_types: bool = True,
        four_letter_words: str = "*",
        read_only_mode: bool = False,
        min_session_timeout_ms: int | None = None,
        max_session_timeout_ms: int = 60_000,
        container_check_interval_ms: int = 1000,
        extra_config: Mapping[str, str] | None = None,
        jvm_flags: Sequence[str] | None = None,
        secure_port: int | None = None,
        tls_keystore: str | None = None,
        tls_keystore_password: str | None = None,
        tls_truststore: str | None = None,
        tls_truststore_password: str | None = None,
        tls_client_auth: str = "none",
        java: str | None = None,
        classpath: Sequence[str] | None = None,
    ) -> None:
        self.tick_time_ms = tick_time_ms
        self.host = host
        self._port = port
        self._fixed_port = port is not None
        self._user_data_dir = Path(data_dir).resolve() if data_dir is not None else None
        self.extended_types = extended_types
        self.four_letter_words = four_letter_words
        self.read_only_mode = read_only_mode
        self.min_session_timeout_ms = min_session_timeout_ms
        self.max_session_timeout_ms = max_session_timeout_ms
        self.container_check_interval_ms = container_check_interval_ms
        self.extra_config = dict(extra_config or {})
        self.jvm_flags = list(jvm_flags or [])
        self._secure_port = secure_port
        self.tls_keystore = tls_keystore
        self.tls_keystore_password = tls_keystore_password
        self.tls_truststore = tls_truststore
        self.tls_truststore_password = tls_truststore_password
        self.tls_client_auth = tls_client_auth
        self._java = java
        self._classpath = list(classpath) if classpath is not None else None
        self._workdir: Path | None = None
        self._server: _ServerProcess | None = None
        self._last_log = ""

    # -- properties

    @property
    def port(self) -> int:
        if self._port is None:
            raise EmbeddedZooKeeperError("the server has no port yet: start it first")
        return self._port

    @property
    def hosts(self) -> str:
        """The connect string, ``"127.0.0.1:port"``."""
        return f"{self.host}:{self.port}"

    @property
    def secure_port(self) -> int | None:
        return self._secure_port

    @property
    def secure_hosts(self) -> str:
        if self._secure_port is None:
            raise EmbeddedZooKeeperError("TLS is not configured (no tls_keystore)")
        return f"{self.host}:{self._secure_port}"

    @property
    def data_dir(self) -> Path:
        if self._user_data_dir is not None:
            return self._user_data_dir
        if self._workdir is None:
            raise EmbeddedZooKeeperError("the server has no data directory yet: start it first")
        return self._workdir / "data"

    @property
    def log_path(self) -> Path | None:
        """The server's log file (None before the first start and after a full stop)."""
        return None if self._server is None else self._server.log_path

    @property
    def running(self) -> bool:
        return self._server is not None and self._server.alive()

    def log_tail(self, lines: int = 200) -> str:
        """The last ``lines`` lines of the server log (after a full stop: of the log as it was then)."""
        if self._server is None:
            return "\n".join(self._last_log.splitlines()[-lines:]) if lines > 0 else ""
        return self._server.log_tail(lines)

    def four_letter_word(self, cmd: str, timeout: float = 5.0) -> str:
        return four_letter_word((self.host, self.port), cmd, timeout)

    # -- lifecycle

    def _config(self) -> dict[str, str]:
        cfg = _common_config(
            self.tick_time_ms,
            self.data_dir,
            self.min_session_timeout_ms,
            self.max_session_timeout_ms,
            self.four_letter_words,
        )
        cfg["clientPort"] = str(self.port)
        cfg["clientPortAddress"] = self.host
        if self.tls_keystore is not None:
            cfg["secureClientPort"] = str(self._secure_port)
            cfg["secureClientPortAddress"] = self.host
            cfg["ssl.keyStore.location"] = self.tls_keystore
            if self.tls_keystore_password is not None:
                cfg["ssl.keyStore.password"] = self.tls_keystore_password
            if self.tls_truststore is not None:
                cfg["ssl.trustStore.location"] = self.tls_truststore
            if self.tls_truststore_password is not None:
                cfg["ssl.trustStore.password"] = self.tls_truststore_password
            cfg["ssl.clientAuth"] = self.tls_client_auth
        cfg.update(self.extra_config)
        return cfg

    def _system_properties(self) -> dict[str, str]:
        props = _common_system_properties(self.extended_types, self.read_only_mode, self.container_check_interval_ms)
        if self.tls_keystore is not None:
            props["zookeeper.serverCnxnFactory"] = "org.apache.zookeeper.server.NettyServerCnxnFactory"
        return props

    def start(self, timeout: float = 30.0) -> None:
        """Start the server; return once it answers ``ruok``/``srvr`` and accepts a session."""
        if self.running:
            return
        java = self._java or find_java()
        classpath = self._classpath if self._classpath is not None else server_classpath()
        if self._workdir is None:
            self._workdir = _make_temp_dir("zkwire-zk-")
            self._server = _ServerProcess(self._workdir, STANDALONE_MAIN, java, classpath)
        assert self._server is not None
        self.data_dir.mkdir(parents=True, exist_ok=True)
        attempts = 1 if self._fixed_port else 3
        for attempt in range(attempts):
            if self._port is None:
                self._port = free_port(self.host)
            if self.tls_keystore is not None and self._secure_port is None:
                self._secure_port = free_port(self.host)
            self._server.launch(self._config(), self._system_properties(), self.jvm_flags)
            try:
                self._wait_ready(timeout)
                return
            except ZooKeeperStartError:
                bind_failed = self._server.bind_failed()
                self._server.stop(grace=2.0)
                if not bind_failed or attempt == attempts - 1:
                    raise
                self._port = None  # somebody took the port between the choice and the bind: choose again
            except BaseException:  # e.g. KeyboardInterrupt: leave no server behind
                self._server.stop(grace=2.0)
                raise

    def _wait_ready(self, timeout: float) -> None:
        assert self._server is not None
        deadline = time.monotonic() + timeout
        address = (self.host, self.port)
        modes = ("standalone", "read-only") if self.read_only_mode else ("standalone",)
        while True:
            code = self._server.exit_code()
            if code is not None:
                raise ZooKeeperStartError(f"ZooKeeper exited with code {code} while starting", self.log_tail(60))
            if _is_serving(address, self.data_dir, modes):
                return
            if time.monotonic() > deadline:
                raise ZooKeeperStartError(
                    f"ZooKeeper on {self.host}:{self.port} not ready within {timeout} s", self.log_tail(60)
                )
            time.sleep(0.05)

    def stop(self, *, keep_data: bool = False, kill: bool = False, grace: float = 5.0) -> None:
        """Stop the server (SIGTERM, or SIGKILL with ``kill=True``; SIGKILL after ``grace`` s).

        Idempotent. Unless ``keep_data``, the temporary directory (config, log, and the data unless
        ``data_dir`` was given) is removed and a later :meth:`start` begins afresh (on the same port).
        """
        if self._server is None:
            return
        self._server.stop(grace=grace, kill=kill)
        if keep_data:
            return
        self._last_log = self._server.log_tail(1000)
        if self._workdir is not None:
            _remove_temp_dir(self._workdir)
        self._workdir = None
        self._server = None

    def restart(self, timeout: float = 30.0, *, kill: bool = False) -> None:
        """Stop and start again on the same port with the same data."""
        self.stop(keep_data=True, kill=kill)
        self.start(timeout)

    def __enter__(self) -> EmbeddedZooKeeper:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        where = f"{self.host}:{self._port}" if self._port is not None else "not started"
        return f"<EmbeddedZooKeeper {where} {'running' if self.running else 'stopped'}>"


# --------------------------------------------------------------------------------------------------------
# ensemble


class _Member:
    def __init__(self, index: int, client_port: int, quorum_port: int, election_port: int) -> None:
        self.index = index
        self.myid = index + 1
        self.client_port = client_port
        self.quorum_port = quorum_port
        self.election_port = election_port
        self.server: _ServerProcess | None = None


class EmbeddedEnsemble:
    """``size`` ZooKeeper servers (``QuorumPeerMain``) forming one ensemble on loopback.

    Members are numbered from 0 (their ``myid`` is index + 1). Stopped members keep their ports and
    data, so :meth:`start_member` brings a member back as the same server. With ``read_only_mode``, a
    member cut off from the quorum serves reads (``srvr`` reports ``Mode: read-only``) about two seconds
    later; as ZooKeeper needs local sessions for that, they are enabled too (``localSessionsEnabled`` and
    ``localSessionsUpgradingEnabled``; a session becomes global when it creates an ephemeral node).
    """

    def __init__(
        self,
        size: int = 3,
        *,
        tick_time_ms: int = 200,
        host: str = "127.0.0.1",
        init_limit: int = 50,
        sync_limit: int = 10,
        extended_types: bool = True,
        four_letter_words: str = "*",
        read_only_mode: bool = False,
        min_session_timeout_ms: int | None = None,
        max_session_timeout_ms: int = 60_000,
        container_check_interval_ms: int = 1000,
        extra_config: Mapping[str, str] | None = None,
        jvm_flags: Sequence[str] | None = None,
        java: str | None = None,
        classpath: Sequence[str] | None = None,
    ) -> None:
        if size < 1:
            raise InvalidArgumentError("an ensemble needs at least one member")
        self.size = size
        self.tick_time_ms = tick_time_ms
        self.host = host
        self.init_limit = init_limit
        self.sync_limit = sync_limit
        self.extended_types = extended_types
        self.four_letter_words = four_letter_words
        self.read_only_mode = read_only_mode
        self.min_session_timeout_ms = min_session_timeout_ms
        self.max_session_timeout_ms = max_session_timeout_ms
        self.container_check_interval_ms = container_check_interval_ms
        self.extra_config = dict(extra_config or {})
        self.jvm_flags = list(jvm_flags or [])
        self._java = java
        self._classpath = list(classpath) if classpath is not None else None
        self._workdir: Path | None = None
        self._members: list[_Member] = []
        self._last_logs: dict[int, str] = {}

    # -- addresses

    def _member(self, index: int) -> _Member:
        if not self._members:
            raise EmbeddedZooKeeperError("the ensemble is not started")
        if not 0 <= index < self.size:
            raise IndexError(f"no member {index} in an ensemble of {self.size}")
        return self._members[index]

    @property
    def hosts(self) -> str:
        """The connect string of all members, ``"127.0.0.1:p1,127.0.0.1:p2,..."``."""
        return ",".join(self.member_hosts(i) for i in range(self.size))

    def member_hosts(self, index: int) -> str:
        return f"{self.host}:{self._member(index).client_port}"

    def member_port(self, index: int) -> int:
        return self._member(index).client_port

    def member_data_dir(self, index: int) -> Path:
        if self._workdir is None:
            raise EmbeddedZooKeeperError("the ensemble is not started")
        return self._workdir / f"member{index}" / "data"

    def is_running(self, index: int) -> bool:
        server = self._member(index).server
        return server is not None and server.alive()

    def running_members(self) -> list[int]:
        return [i for i in range(self.size) if self._members and self.is_running(i)]

    def member_mode(self, index: int, timeout: float = 2.0) -> str | None:
        """``leader``, ``follower``, ``read-only``..., or None if the member does not serve."""
        return _srvr_mode((self.host, self._member(index).client_port), timeout)

    def four_letter_word(self, index: int, cmd: str, timeout: float = 5.0) -> str:
        return four_letter_word((self.host, self._member(index).client_port), cmd, timeout)

    def log_path(self, index: int) -> Path | None:
        server = self._member(index).server if self._members else None
        return None if server is None else server.log_path

    def log_tail(self, index: int | None = None, lines: int = 200) -> str:
        """The end of one member's log, or of every member's (with a header line each) if index is None."""
        if index is None:
            return "\n".join(
                f"==== member {i} ({'running' if self._members and self.is_running(i) else 'stopped'})\n"
                + self.log_tail(i, lines)
                for i in range(self.size)
            )
        server = self._members[index].server if self._members else None
        if server is None:
            return "\n".join(self._last_logs.get(index, "").splitlines()[-lines:]) if lines > 0 else ""
        return server.log_tail(lines)

    # -- lifecycle

    def _config(self, member: _Member) -> dict[str, str]:
        data_dir = self.member_data_dir(member.index)
        cfg = _common_config(
            self.tick_time_ms,
            data_dir,
            self.min_session_timeout_ms,
            self.max_session_timeout_ms,
            self.four_letter_words,
        )
        cfg.update(
            {
                "initLimit": str(self.init_limit),
                "syncLimit": str(self.sync_limit),
                "clientPort": str(member.client_port),
                "clientPortAddress": self.host,
                "quorumListenOnAllIPs": "false",
                "reconfigEnabled": "false",
                "standaloneEnabled": "false",
            }
        )
        if self.read_only_mode:
            # Since 3.7 a read-only server only accepts new sessions as local sessions.
            cfg["localSessionsEnabled"] = "true"
            cfg["localSessionsUpgradingEnabled"] = "true"
        for m in self._members:
            cfg[f"server.{m.myid}"] = f"{self.host}:{m.quorum_port}:{m.election_port}"
        cfg.update(self.extra_config)
        return cfg

    def _launch(self, member: _Member) -> None:
        assert self._workdir is not None
        if member.server is None:
            java = self._java or find_java()
            classpath = self._classpath if self._classpath is not None else server_classpath()
            member.server = _ServerProcess(self._workdir / f"member{member.index}", QUORUM_MAIN, java, classpath)
        data_dir = self.member_data_dir(member.index)
        data_dir.mkdir(parents=True, exist_ok=True)
        (data_dir / "myid").write_text(f"{member.myid}\n")
        props = _common_system_properties(self.extended_types, self.read_only_mode, self.container_check_interval_ms)
        props["zookeeper.fastleader.maxNotificationInterval"] = "1000"
        member.server.launch(self._config(member), props, self.jvm_flags)

    def start(self, timeout: float = 60.0) -> None:
        """Start every member at once and wait for a quorum in which every member serves."""
        if self._members and all(self.is_running(i) for i in range(self.size)):
            return
        if self._workdir is None:
            # Fail early, before any port is chosen, if Java or ZooKeeper is missing.
            if self._java is None:
                find_java()
            if self._classpath is None:
                server_classpath()
            self._workdir = _make_temp_dir("zkwire-ensemble-")
        if not self._members:
            attempts = 3
            for attempt in range(attempts):
                ports = _free_ports(3 * self.size, self.host)
                self._members = [_Member(i, ports[3 * i], ports[3 * i + 1], ports[3 * i + 2]) for i in range(self.size)]
                try:
                    self._start_members(range(self.size), timeout)
                    return
                except ZooKeeperStartError:
                    bind_failed = any(m.server is not None and m.server.bind_failed() for m in self._members)
                    self._stop_members(range(self.size), grace=2.0, kill=True)
                    if not bind_failed or attempt == attempts - 1:
                        raise
                    for i in range(self.size):  # start again afresh on other ports
                        shutil.rmtree(self._workdir / f"member{i}", ignore_errors=True)
                    self._members = []
                except BaseException:
                    self._stop_members(range(self.size), grace=2.0, kill=True)
                    raise
        else:
            self._start_members([i for i in range(self.size) if not self.is_running(i)], timeout)

    def _start_members(self, indices: Sequence[int], timeout: float) -> None:
        for i in indices:
            self._launch(self._members[i])
        self.wait_until_serving(timeout)

    def start_member(self, index: int, timeout: float = 60.0) -> None:
        """Start a stopped member again (same ports, same data) and wait until it serves."""
        member = self._member(index)
        if member.server is not None and member.server.alive():
            return
        self._launch(member)
        self.wait_until_serving(timeout)

    def stop_member(self, index: int, *, kill: bool = False, grace: float = 5.0) -> None:
        """Stop one member (SIGTERM, or SIGKILL with ``kill=True``). Its data and ports are kept."""
        member = self._member(index)
        if member.server is not None:
            member.server.stop(grace=grace, kill=kill)

    def _stop_members(self, indices: Sequence[int], grace: float, kill: bool = False) -> None:
        servers = [s for i in indices if (s := self._members[i].server) is not None]
        for server in servers:
            server.signal_stop(kill)
        for server in servers:
            server.stop(grace=grace, kill=kill)

    def stop(self, *, grace: float = 5.0) -> None:
        """Stop every member and remove the ensemble's temporary directory. Idempotent."""
        if self._members:
            self._stop_members(range(self.size), grace)
            for m in self._members:
                if m.server is not None:
                    self._last_logs[m.index] = m.server.log_tail(1000)
        if self._workdir is not None:
            _remove_temp_dir(self._workdir)
        self._workdir = None
        self._members = []

    def wait_until_serving(self, timeout: float = 60.0) -> None:
        """Wait until every running member serves clients.

        With a majority running, each must be leader or follower (and accept a session); without one,
        each must be in read-only mode if that is enabled, else merely be up.
        """
        deadline = time.monotonic() + timeout
        while True:
            running = self.running_members()
            for i in range(self.size):
                server = self._members[i].server
                if server is not None and server.process is not None and not server.alive():
                    raise ZooKeeperStartError(
                        f"ensemble member {i} exited with code {server.exit_code()}", self.log_tail(i, 60)
                    )
            has_quorum = len(running) > self.size // 2
            pending = [i for i in running if not self._member_ready(i, has_quorum)]
            if not pending:
                return
            if time.monotonic() > deadline:
                tails = "\n".join(f"==== member {i}\n{self.log_tail(i, 40)}" for i in pending)
                raise ZooKeeperStartError(f"ensemble members {pending} not serving within {timeout} s", tails)
            time.sleep(0.05)

    def _member_ready(self, index: int, has_quorum: bool) -> bool:
        address = (self.host, self._members[index].client_port)
        data_dir = self.member_data_dir(index)
        if has_quorum:
            return _is_serving(address, data_dir, ("leader", "follower"))
        if self.read_only_mode:
            return _is_serving(address, data_dir, ("read-only",), read_only=True)
        try:
            return four_letter_word(address, "ruok", _PROBE_TIMEOUT) == "imok"
        except OSError:
            return False

    def leader_index(self, timeout: float = 30.0) -> int:
        """Index of the current leader, waiting up to ``timeout`` s for one to be elected."""
        deadline = time.monotonic() + timeout
        while True:
            for i in self.running_members():
                if self.member_mode(i, _PROBE_TIMEOUT) == "leader":
                    return i
            if time.monotonic() > deadline:
                raise EmbeddedZooKeeperError(f"no leader within {timeout} s")
            time.sleep(0.05)

    def __enter__(self) -> EmbeddedEnsemble:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"<EmbeddedEnsemble size={self.size} running={self.running_members()}>"


# --------------------------------------------------------------------------------------------------------
# python -m zkwire.embedded


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m zkwire.embedded", description="Run ZooKeeper in the foreground until Ctrl-C."
    )
    parser.add_argument("--port", type=int, default=None, help="client port (default: a free one)")
    parser.add_argument("--ensemble", type=int, default=0, metavar="N", help="run an N-member ensemble")
    parser.add_argument("--tick", type=int, default=2000, help="tickTime in ms (default 2000)")
    parser.add_argument("--data-dir", default=None, help="keep the data here (standalone only)")
    args = parser.parse_args(argv)
    server: EmbeddedZooKeeper | EmbeddedEnsemble
    if args.ensemble:
        server = EmbeddedEnsemble(args.ensemble, tick_time_ms=args.tick)
    else:
        server = EmbeddedZooKeeper(tick_time_ms=args.tick, port=args.port, data_dir=args.data_dir)

    def terminate(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, terminate)  # stop the server on SIGTERM as on Ctrl-C
    try:
        server.start()
        print(server.hosts, flush=True)
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        return 0
    except EmbeddedZooKeeperError as exc:
        print(exc, file=sys.stderr)
        return 1
    finally:
        server.stop()


if __name__ == "__main__":
    sys.exit(main())
