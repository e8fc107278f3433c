"""Run real Apache ZooKeeper servers from the locally installed package, for tests, demos and apps.

Servers are started from the jars of Debian's ``zookeeper`` package (``/usr/share/java``) with the first
``java`` found through ``JAVA_HOME`` or ``PATH``::

    with EmbeddedZooKeeper() as zk:          # a standalone server on a free loopback port
        print(zk.hosts)                      # "127.0.0.1:40123"

    with EmbeddedEnsemble(3) as ens:         # three QuorumPeerMain members
        ens.stop_member(ens.leader_index())  # failover
        ...

Both take a :class:`~zkwire.testing.base.ServerOptions` (``options=``), or its fields as keywords.

Each server gets its own temporary directory holding its config, its data (unless ``data_dir`` is given)
and its log, ``zookeeper.log``: the server's log4j output and anything the JVM prints. Debian's own
launcher puts no slf4j binding on the class path (so the server logs nothing), and putting every jar of
``/usr/share/java`` on it lets slf4j pick any of several bindings; here the class path names the jars and
the log4j binding explicitly, with a log4j config written into the server's directory.

This module uses the standard library only. Servers are stopped at interpreter exit, and on Linux a
server started from the main thread is also killed by the kernel if the Python process dies.
``python -m zkwire.testing.embedded`` runs one in the foreground.
"""

from __future__ import annotations

import argparse
import atexit
import base64
import contextlib
import ctypes
import hashlib
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Unpack

from ..errors import InvalidArgumentError, NewConfigNoQuorumError, ReconfigInProgressError
from .base import (
    AuthCredential,
    EmbeddedZooKeeperError,
    LocalPortServer,
    PortInUseError,
    ReconfigError,
    ServerOptionChanges,
    ServerOptions,
    ZooKeeperEnsemble,
    ZooKeeperNotInstalledError,
    ZooKeeperStartError,
    check_port_free,
    free_ports,
    last_lines,
    tail_file,
)
from .base import free_port as _base_free_port
from .certs import TestCertificates
from .errors import ServerRefusedError
from .wire import PROBE_TIMEOUT, RawSession, four_letter_word, serving

__all__ = [
    "DEFAULT_JVM_FLAGS",
    "EmbeddedEnsemble",
    "EmbeddedZooKeeper",
    "EmbeddedZooKeeperError",
    "ServerOptions",
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

_LOG4J_PROPERTIES = """\
log4j.rootLogger=INFO, OUT
log4j.appender.OUT=org.apache.log4j.ConsoleAppender
log4j.appender.OUT.Target=System.out
log4j.appender.OUT.layout=org.apache.log4j.PatternLayout
log4j.appender.OUT.layout.ConversionPattern=%d{ISO8601} %-5p [%t:%C{1}@%L] - %m%n
"""


# --------------------------------------------------------------------------------------------------------
# helpers


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that is free on ``host`` right now (the kernel's choice)."""
    return _base_free_port(host)


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


_live: set[ServerProcess] = set()
_temp_dirs: set[Path] = set()
_live_lock = threading.Lock()


def make_temp_dir(prefix: str) -> Path:
    """A temporary directory removed at interpreter exit unless :func:`remove_temp_dir` did it before."""
    path = Path(tempfile.mkdtemp(prefix=prefix)).resolve()
    with _live_lock:
        _temp_dirs.add(path)
    return path


def remove_temp_dir(path: Path) -> None:
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
        remove_temp_dir(path)


class ServerProcess:
    """One ZooKeeper JVM: its work directory, config file, log file and process.

    ``command_prefix`` runs the JVM through another command that ends by executing it (e.g.
    ``nsenter --net=...``), so the process started is still the JVM.
    """

    def __init__(
        self,
        workdir: Path,
        main_class: str,
        java: str,
        classpath: Sequence[str],
        command_prefix: Sequence[str] = (),
    ) -> None:
        self.workdir = workdir
        self.main_class = main_class
        self.java = java
        self.classpath = list(classpath)
        self.command_prefix = list(command_prefix)
        self.cfg_path = workdir / "zoo.cfg"
        self.log_path = workdir / "zookeeper.log"
        self.log4j_path = workdir / "log4j.properties"
        self.process: subprocess.Popen[bytes] | None = None
        self._launch_offset = 0  # where the log of the current run starts

    def launch(
        self,
        cfg: Mapping[str, str],
        system_properties: Mapping[str, str],
        jvm_flags: Sequence[str],
        *,
        keep_config: bool = False,
    ) -> None:
        """Start the JVM on ``cfg`` written as ``zoo.cfg`` -- unless ``keep_config`` and the file exists
        already (a reconfigurable server rewrites its own configuration files as the membership changes)."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        if not (keep_config and self.cfg_path.exists()):
            self.cfg_path.write_text("".join(f"{key}={value}\n" for key, value in cfg.items()))
        self.log4j_path.write_text(_LOG4J_PROPERTIES)
        props = {
            "log4j.configuration": self.log4j_path.as_uri(),
            "zookeeper.log.dir": str(self.workdir),
            "zookeeper.jmx.log4j.disable": "true",
            **system_properties,
        }
        cmd = [
            *self.command_prefix,
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
            log.write(f"==== zkwire.testing: {time.strftime('%Y-%m-%d %H:%M:%S')} starting\n".encode())
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
        return tail_file(self.log_path, lines)

    def bind_failed(self) -> bool:
        """The current run failed to bind one of its ports."""
        try:
            with self.log_path.open("rb") as f:
                f.seek(self._launch_offset)
                text = f.read(4 << 20).decode("utf-8", "replace")
        except OSError:
            return False
        return "Address already in use" in text or "BindException" in text


def _serves_our_data(address: tuple[str, int], data_dir: Path) -> bool:
    """The server at ``address`` is ours: its ``conf`` names our data directory.

    The 4lw timeouts are short on purpose: a 3.8 server listens before its database is loaded, and a
    command that arrives then is answered but its connection is never closed (a NullPointerException
    in the server), so a reader waiting for the end of the reply would wait for its whole timeout.
    """
    try:
        return f"dataDir={data_dir}" in four_letter_word(address, "conf", PROBE_TIMEOUT)
    except OSError:
        return False


# --------------------------------------------------------------------------------------------------------
# standalone


class EmbeddedZooKeeper(LocalPortServer):
    """A standalone ZooKeeper server (``ZooKeeperServerMain``) on a loopback port.

    ``port=None`` picks a free port at the first start and keeps it across restarts. ``data_dir=None``
    uses a temporary directory, removed by :meth:`stop` (unless ``keep_data=True``). Sessions may last
    from ``min_session_timeout_ms`` (default: two ticks) to ``max_session_timeout_ms``.

    TLS: give ``tls_keystore`` (and its password); the server then uses the netty connection factory
    and also listens for TLS clients on ``secure_port`` (a free port if None; see :attr:`secure_hosts`).
    Clients need no certificate unless ``tls_client_auth`` is ``"want"`` or ``"need"``.

    Mutual TLS: ``certificates`` (made by :func:`~zkwire.testing.certs.make_test_certificates`) gives
    the keystore and the truststore at once, and ``tls_client_auth`` is then ``"need"`` unless given:
    a client must present a certificate the test CA signed, and is identified by its subject in the
    ``x509`` scheme (the server registers that provider by itself once it has a secure port).
    """

    backend = "local"

    def __init__(
        self,
        options: ServerOptions | None = None,
        *,
        host: str = "127.0.0.1",
        port: int | None = None,
        data_dir: str | None = None,
        secure_port: int | None = None,
        tls_keystore: str | None = None,
        tls_keystore_password: str | None = None,
        tls_truststore: str | None = None,
        tls_truststore_password: str | None = None,
        tls_client_auth: str | None = None,
        certificates: TestCertificates | None = None,
        java: str | None = None,
        classpath: Sequence[str] | None = None,
        **changes: Unpack[ServerOptionChanges],
    ) -> None:
        self.options = (options or ServerOptions()).replace(**changes)
        if certificates is not None:
            if tls_keystore is not None or tls_truststore is not None:
                raise ValueError("give certificates= or tls_keystore=/tls_truststore=, not both")
            tls_keystore, tls_truststore = str(certificates.server_keystore), str(certificates.server_truststore)
            tls_keystore_password = tls_truststore_password = certificates.store_password
        if tls_client_auth is None:
            tls_client_auth = "need" if certificates is not None else "none"
        if tls_client_auth not in ("none", "want", "need"):
            raise ValueError(f"tls_client_auth must be 'none', 'want' or 'need', not {tls_client_auth!r}")
        self.host = host
        self._port = port
        self._fixed_port = port is not None
        self._user_data_dir = Path(data_dir).resolve() if data_dir is not None else None
        self._secure_port = secure_port
        self.tls_keystore = tls_keystore
        self.tls_keystore_password = tls_keystore_password
        self.tls_truststore = tls_truststore
        self.tls_truststore_password = tls_truststore_password
        self.tls_client_auth = tls_client_auth
        self._java = java
        self._classpath = list(classpath) if classpath is not None else None
        self._workdir: Path | None = None
        self._server: ServerProcess | None = None
        self._last_log = ""

    # -- properties

    @property
    def tick_time_ms(self) -> int:
        return self.options.tick_time_ms

    @property
    def client_address(self) -> str:
        """The server listens on ``host`` and clients of this machine connect from there."""
        return self.host

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

    @property
    def pid(self) -> int | None:
        """The server JVM's process id while it runs (for ``jcmd``, ``jstat`` or a signal), else None."""
        process = None if self._server is None else self._server.process
        return process.pid if process is not None and process.poll() is None else None

    def log_tail(self, lines: int = 200) -> str:
        """The last ``lines`` lines of the server log (after a full stop: of the log as it was then)."""
        if self._server is None:
            return last_lines(self._last_log, lines)
        return self._server.log_tail(lines)

    def four_letter_word(self, cmd: str, timeout: float = 5.0) -> str:
        return four_letter_word((self.host, self.port), cmd, timeout)

    # -- lifecycle

    def _config(self) -> dict[str, str]:
        cfg = self.options.zoo_cfg()
        cfg["dataDir"] = str(self.data_dir)
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
        cfg.update(self.options.extra_config)
        return cfg

    def _system_properties(self) -> dict[str, str]:
        props = self.options.system_properties()
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
            self._workdir = make_temp_dir("zkwire-zk-")
            self._server = ServerProcess(self._workdir, STANDALONE_MAIN, java, classpath)
        assert self._server is not None
        self.data_dir.mkdir(parents=True, exist_ok=True)
        if self._fixed_port:
            assert self._port is not None
            check_port_free(self.host, self._port)  # a clear error now, not a JVM that exits with a log
        attempts = 1 if self._fixed_port else 3
        for attempt in range(attempts):
            if self._port is None:
                self._port = free_port(self.host)
            if self.tls_keystore is not None and self._secure_port is None:
                self._secure_port = free_port(self.host)
            self._server.launch(self._config(), self._system_properties(), self.options.jvm_flags)
            try:
                self._wait_ready(timeout)
                return
            except ZooKeeperStartError as exc:
                bind_failed = self._server.bind_failed()
                self._server.stop(grace=2.0)
                if bind_failed and self._fixed_port:  # taken between the check and the JVM's bind
                    raise PortInUseError(self.host, self.port, "the server could not bind it", exc.log_tail) from exc
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
        modes = ("standalone", "read-only") if self.options.read_only_mode else ("standalone",)
        while True:
            code = self._server.exit_code()
            if code is not None:
                raise ZooKeeperStartError(f"ZooKeeper exited with code {code} while starting", self.log_tail(60))
            if serving(address, modes, lambda: _serves_our_data(address, self.data_dir)):
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
            remove_temp_dir(self._workdir)
        self._workdir = None
        self._server = None

    def __repr__(self) -> str:
        where = f"{self.host}:{self._port}" if self._port is not None else "not started"
        return f"<EmbeddedZooKeeper {where} {'running' if self.running else 'stopped'}>"


class _Member:
    def __init__(self, index: int, client_port: int, quorum_port: int, election_port: int) -> None:
        self.index = index
        self.myid = index + 1
        self.client_port = client_port
        self.quorum_port = quorum_port
        self.election_port = election_port
        #: ``participant`` or ``observer`` (the role it was given in a reconfigurable ensemble).
        self.role = "participant"
        #: In the ensemble's current configuration (False: being added, or removed).
        self.in_config = True
        #: The server lines of a reconfigurable member's first dynamic configuration file (None: the
        #: ensemble's first members).
        self.initial_servers: list[str] | None = None
        #: The TLS client port (members of an ensemble with ``certificates`` only).
        self.secure_port: int | None = None
        self.server: ServerProcess | None = None


class EmbeddedEnsemble(ZooKeeperEnsemble):
    """``size`` ZooKeeper servers (``QuorumPeerMain``) forming one ensemble on loopback.

    Members are numbered from 0 (their ``myid`` is index + 1). Stopped members keep their ports and
    data, so :meth:`start_member` brings a member back as the same server. ``client_ports`` pins the
    members' client ports (else free ports are chosen). With ``read_only_mode``, a member cut off from
    the quorum serves reads (``srvr`` reports ``Mode: read-only``) about two seconds later; as ZooKeeper
    needs local sessions for that, they are enabled too (``localSessionsEnabled`` and
    ``localSessionsUpgradingEnabled``; a session becomes global when it creates an ephemeral node).

    ``certificates`` (:func:`~zkwire.testing.certs.make_test_certificates`): every member also listens
    for TLS clients on a port of its own (:attr:`secure_hosts`), requiring a client certificate unless
    ``tls_client_auth`` says otherwise, as :class:`EmbeddedZooKeeper` does (the quorum's own traffic
    stays plain).

    ``reconfigurable=True``: the members allow dynamic reconfiguration (``reconfigEnabled=true``,
    ``standaloneEnabled=false``), their membership lives in a dynamic configuration file whose lines carry
    each member's client address (``server.N=host:quorum:election:participant;host:clientPort``, with no
    static ``clientPort``), and a digest super user with a password chosen at random for the ensemble
    may change it: :attr:`super_auth` is its credential for :func:`zkwire.open_client`'s ``auth``.
    :meth:`add_member` and :meth:`remove_member` change the membership; :meth:`config_text` reads it.
    With ``wildcard_client_addresses`` each member is given a bare client port: it listens on every
    address and the config node shows ``0.0.0.0:<port>`` for it.
    """

    backend = "local"

    def __init__(
        self,
        size: int = 3,
        options: ServerOptions | None = None,
        *,
        host: str = "127.0.0.1",
        client_ports: Sequence[int] | None = None,
        certificates: TestCertificates | None = None,
        tls_client_auth: str | None = None,
        reconfigurable: bool = False,
        wildcard_client_addresses: bool = False,
        java: str | None = None,
        classpath: Sequence[str] | None = None,
        **changes: Unpack[ServerOptionChanges],
    ) -> None:
        super().__init__(size, (options or ServerOptions()).replace(**changes))
        self._first_size = size
        self.reconfigurable = reconfigurable
        #: Reconfigurable members are given a bare client port (``...;<port>``): each listens on every
        #: address and the config node shows ``0.0.0.0:<port>`` (a client must find the host elsewhere).
        self.wildcard_client_addresses = wildcard_client_addresses
        # The super user's password: in super_auth (whose repr hides it), never in a repr, log or file.
        self.__super_password = secrets.token_urlsafe(24) if reconfigurable else None
        if tls_client_auth not in (None, "none", "want", "need"):
            raise ValueError(f"tls_client_auth must be 'none', 'want' or 'need', not {tls_client_auth!r}")
        self.certificates = certificates
        self.tls_client_auth = tls_client_auth or "need"
        if client_ports is not None and len(client_ports) != size:
            raise ValueError(f"client_ports names {len(client_ports)} ports for {size} members")
        self.host = host
        self.client_ports = list(client_ports) if client_ports is not None else None
        self._java = java
        self._classpath = list(classpath) if classpath is not None else None
        self._workdir: Path | None = None
        self._members: list[_Member] = []
        self._last_logs: dict[int, str] = {}

    @property
    def tick_time_ms(self) -> int:
        return self.options.tick_time_ms

    @property
    def client_address(self) -> str:
        return self.host

    @property
    def super_auth(self) -> AuthCredential:
        """The super user's credential, ``("digest", b"super:<password>")``, for :func:`zkwire.open_client`'s
        ``auth`` (``auth=[ensemble.super_auth]``); its repr hides the password. Reconfigurable ensembles only.

        The super user passes every ACL check, including the admin check of a reconfiguration.
        """
        if self.__super_password is None:
            raise EmbeddedZooKeeperError("the ensemble has no super user (reconfigurable=True makes one)")
        return AuthCredential("digest", f"super:{self.__super_password}".encode())

    def _super_digest(self) -> str:
        """``super:<base64 of the SHA-1 of "super:<password>">``: what the servers are given."""
        digest = hashlib.sha1(self.super_auth.credential).digest()
        return f"super:{base64.b64encode(digest).decode()}"

    # -- primitives

    @property
    def started(self) -> bool:
        return bool(self._members)

    def members(self) -> list[int]:
        if not self._members:
            return list(range(self.size))
        return [m.index for m in self._members if m.in_config]

    def _known_indices(self) -> range:
        return range(len(self._members)) if self._members else range(self.size)

    def _member_address(self, index: int) -> tuple[str, int]:
        return self.host, self._members[index].client_port

    def _member_alive(self, index: int) -> bool:
        server = self._members[index].server
        return server is not None and server.alive()

    def _member_exit_code(self, index: int) -> int | None:
        server = self._members[index].server if self._members else None
        if server is None or server.process is None:
            return None
        return server.exit_code()

    def _member_log(self, index: int, lines: int) -> str:
        server = self._members[index].server if self._members else None
        if server is None:
            return last_lines(self._last_logs.get(index, ""), lines)
        return server.log_tail(lines)

    def _member_is_ours(self, index: int) -> bool:
        return _serves_our_data(self._admin_address(index), self.member_data_dir(index))

    @property
    def secure_hosts(self) -> str:
        """The members' TLS client addresses, as a connect string (with ``certificates`` only)."""
        if self.certificates is None or not self._members:
            raise EmbeddedZooKeeperError("TLS is not configured (no certificates), or the ensemble is not started")
        return ",".join(f"{self._member_address(i)[0]}:{self._members[i].secure_port}" for i in self.members())

    def member_data_dir(self, index: int) -> Path:
        if self._workdir is None:
            raise EmbeddedZooKeeperError("the ensemble is not started")
        return self._workdir / f"member{index}" / "data"

    def log_path(self, index: int) -> Path | None:
        server = self._members[index].server if self._members else None
        return None if server is None else server.log_path

    # -- what a subclass running members elsewhere changes

    def _allocate_members(self) -> list[_Member]:
        if self.client_ports is not None:
            ports = free_ports(2 * self.size, self.host)
            return [_Member(i, self.client_ports[i], ports[2 * i], ports[2 * i + 1]) for i in range(self.size)]
        ports = free_ports(3 * self.size, self.host)
        return [_Member(i, ports[3 * i], ports[3 * i + 1], ports[3 * i + 2]) for i in range(self.size)]

    def _peer_host(self, index: int) -> str:
        """The address a member's quorum and election ports listen on."""
        return self.host

    def _command_prefix(self, index: int) -> list[str]:
        return []

    def _server_line(self, member: _Member) -> str:
        """The member's line in a dynamic configuration: quorum and election addresses, role, client address."""
        peer = f"{self._peer_host(member.index)}:{member.quorum_port}:{member.election_port}:{member.role}"
        host, port = self._member_address(member.index)
        return (
            f"server.{member.myid}={peer};{port}"
            if self.wildcard_client_addresses
            else f"server.{member.myid}={peer};{host}:{port}"
        )

    def _shown_line(self, member: _Member) -> str:
        """The member's line as the config node shows it (a bare client port as ``0.0.0.0:<port>``)."""
        line = self._server_line(member)
        if self.wildcard_client_addresses:
            head, _, port = line.rpartition(";")
            line = f"{head};0.0.0.0:{port}"
        return line

    def _dynamic_config_path(self, member: _Member) -> Path:
        assert self._workdir is not None
        return self._workdir / f"member{member.index}" / "zoo.cfg.dynamic"

    def _config(self, member: _Member) -> dict[str, str]:
        cfg = self.options.zoo_cfg(ensemble=True)
        cfg.update(
            {
                "dataDir": str(self.member_data_dir(member.index)),
                "clientPort": str(member.client_port),
                "clientPortAddress": self._member_address(member.index)[0],
                "quorumListenOnAllIPs": "false",
            }
        )
        if self.reconfigurable:
            # The client address is in each member's dynamic line instead.
            del cfg["clientPort"], cfg["clientPortAddress"]
            cfg["reconfigEnabled"] = "true"
            cfg["standaloneEnabled"] = "false"
            cfg["dynamicConfigFile"] = str(self._dynamic_config_path(member))
        else:
            for m in self._members:
                cfg[f"server.{m.myid}"] = f"{self._peer_host(m.index)}:{m.quorum_port}:{m.election_port}"
        if self.certificates is not None:
            if member.secure_port is None:
                member.secure_port = free_port(self._member_address(member.index)[0])
            cfg["secureClientPort"] = str(member.secure_port)
            cfg["secureClientPortAddress"] = self._member_address(member.index)[0]
            cfg.update(self.certificates.server_config(self.tls_client_auth))
        cfg.update(self.options.extra_config)
        return cfg

    def _launch_member(self, index: int) -> None:
        assert self._workdir is not None
        member = self._members[index]
        if member.server is None:
            java = self._java or find_java()
            classpath = self._classpath if self._classpath is not None else server_classpath()
            member.server = ServerProcess(
                self._workdir / f"member{index}", QUORUM_MAIN, java, classpath, self._command_prefix(index)
            )
        data_dir = self.member_data_dir(index)
        data_dir.mkdir(parents=True, exist_ok=True)
        (data_dir / "myid").write_text(f"{member.myid}\n")
        props = self.options.system_properties(ensemble=True)
        if self.certificates is not None:
            props["zookeeper.serverCnxnFactory"] = "org.apache.zookeeper.server.NettyServerCnxnFactory"
        if self.reconfigurable:
            props["zookeeper.DigestAuthenticationProvider.superDigest"] = self._super_digest()
            if not member.server.cfg_path.exists():  # its first start
                lines = member.initial_servers
                if lines is None:
                    lines = [self._server_line(m) for m in self._members if m.initial_servers is None]
                path = self._dynamic_config_path(member)
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text("".join(f"{line}\n" for line in lines))
        # A reconfigurable member started again keeps the files the server rewrote (the membership now).
        member.server.launch(self._config(member), props, self.options.jvm_flags, keep_config=self.reconfigurable)

    def _halt_members(self, indices: Sequence[int], *, kill: bool, grace: float) -> None:
        servers = [s for i in indices if (s := self._members[i].server) is not None]
        for server in servers:
            server.signal_stop(kill)
        for server in servers:
            server.stop(grace=grace, kill=kill)

    def _prepare(self) -> None:
        """Called once before the first start (after the work directory exists)."""

    def _cleanup(self) -> None:
        """Called by :meth:`stop` after the members are stopped, and when a first start fails."""

    # -- lifecycle

    def start(self, timeout: float = 60.0) -> None:
        """Start every member at once and wait for a quorum in which every member serves."""
        if self._members and all(self._member_alive(i) for i in self.members()):
            return
        if self._workdir is None:
            # Fail early, before any port is chosen, if Java or ZooKeeper is missing.
            if self._java is None:
                find_java()
            if self._classpath is None:
                server_classpath()
            self._workdir = make_temp_dir("zkwire-ensemble-")
        if self._members:
            for i in self.members():
                if not self._member_alive(i):
                    self._launch_member(i)
            self.wait_until_serving(timeout)
            return
        attempts = 1 if self.client_ports is not None else 3
        for attempt in range(attempts):
            self._members = self._allocate_members()
            try:
                self._prepare()
                for i in range(self.size):
                    self._launch_member(i)
                self.wait_until_serving(timeout)
                return
            except ZooKeeperStartError:
                bind_failed = any(m.server is not None and m.server.bind_failed() for m in self._members)
                self._keep_logs()
                self._halt_members(range(self.size), grace=2.0, kill=True)
                self._cleanup()
                if not bind_failed or attempt == attempts - 1:
                    self._members = []
                    raise
                for i in range(self.size):  # start again afresh on other ports
                    shutil.rmtree(self._workdir / f"member{i}", ignore_errors=True)
                self._members = []
            except BaseException:
                self._halt_members(range(self.size), grace=2.0, kill=True)
                self._cleanup()
                self._members = []
                raise

    def _keep_logs(self) -> None:
        for m in self._members:
            if m.server is not None:
                self._last_logs[m.index] = m.server.log_tail(1000)

    def stop(self, *, grace: float = 5.0) -> None:
        """Stop every member (and every server the ensemble ever started: members added, or removed but
        left running) and remove the ensemble's temporary directory. Idempotent; a later :meth:`start`
        begins afresh with the first membership."""
        if self._members:
            self._halt_members(range(len(self._members)), grace=grace, kill=False)
            self._keep_logs()
        self._cleanup()
        if self._workdir is not None:
            remove_temp_dir(self._workdir)
        self._workdir = None
        self._members = []
        self.size = self._first_size

    # -- membership (reconfigurable ensembles)

    def _require_reconfigurable(self) -> None:
        if not self.reconfigurable:
            raise ReconfigError(
                f"{type(self).__name__} was made without reconfigurable=True: its membership cannot change"
            )
        if not self._members:
            raise ReconfigError("the ensemble is not started")

    def add_member(self, *, role: str = "participant", timeout: float = 60.0) -> int:
        """Start a new server and make it a member; its index (its ``myid`` is the next one: index + 1).

        The new server's dynamic configuration is the ensemble's current one (read from a member) plus its
        own line; once it serves (synced with the leader, not yet voting), a session of the super user on
        a current member asks for the reconfiguration (``joining``). ``role``: ``participant`` or
        ``observer``. Blocking (from trio, call it through ``trio.to_thread.run_sync``), at most about
        ``timeout`` seconds; returns once every running member serves.

        Raises:
            ReconfigError: the ensemble is not reconfigurable, the server refused the change (``code``:
                its error), or it did not take effect within ``timeout`` s. The new server is stopped.
            ZooKeeperStartError: the new server exited or did not serve within ``timeout`` s.
        """
        self._require_reconfigurable()
        if role not in ("participant", "observer"):
            raise InvalidArgumentError(f"role must be 'participant' or 'observer', not {role!r}")
        deadline = time.monotonic() + timeout
        current = self.config_text(timeout=timeout)
        client_port, quorum_port, election_port = free_ports(3, self.host)
        member = _Member(len(self._members), client_port, quorum_port, election_port)
        member.role = role
        member.in_config = False
        self._members.append(member)
        member.initial_servers = [line for line in current.splitlines() if line.startswith("server.")]
        member.initial_servers.append(self._server_line(member))
        try:
            self._launch_member(member.index)
            self._wait_joiner_serving(member.index, deadline, timeout)
            line = self._server_line(member)
            shown = self._shown_line(member)
            self._reconfig(
                f"joining {line}",
                (line, None),
                lambda config: shown in config.splitlines(),
                member.index,
                deadline,
                timeout,
            )
        except BaseException:
            self._keep_logs()
            self._halt_members([member.index], kill=True, grace=2.0)
            raise
        member.in_config = True
        self.size += 1
        self.wait_until_serving(max(deadline - time.monotonic(), 1.0))
        return member.index

    def remove_member(self, index: int, *, stop: bool = True, timeout: float = 60.0) -> None:
        """Remove member ``index`` from the configuration (``leaving``, asked by the super user over a
        session on another member), then stop it unless ``stop`` is False (a removed member left running
        is still stopped by :meth:`stop`; it cannot be started again). Blocking, at most about
        ``timeout`` seconds; returns once every remaining running member serves.

        Raises:
            ReconfigError: the ensemble is not reconfigurable, the member is not in the configuration,
                the server refused the change (``code``: its error), or it did not take effect in time.
        """
        self._require_reconfigurable()
        self._check_index(index)
        if index not in self.members():
            raise ReconfigError(f"member {index} is not in the configuration (members: {self.members()})")
        if len(self.members()) == 1:
            raise ReconfigError(f"member {index} is the last member: it cannot be removed")
        deadline = time.monotonic() + timeout
        member = self._members[index]
        prefix = f"server.{member.myid}="
        self._reconfig(
            f"leaving {member.myid} (member {index})",
            (None, str(member.myid)),
            lambda config: not any(line.startswith(prefix) for line in config.splitlines()),
            index,
            deadline,
            timeout,
        )
        member.in_config = False
        self.size -= 1
        if stop:
            self._halt_members([index], kill=False, grace=5.0)
        self.wait_until_serving(max(deadline - time.monotonic(), 1.0))

    def start_member(self, index: int, timeout: float = 60.0) -> None:
        self._check_index(index)
        if index not in self.members():
            raise EmbeddedZooKeeperError(f"member {index} was removed from the configuration: it cannot start again")
        super().start_member(index, timeout)

    def _wait_joiner_serving(self, index: int, deadline: float, timeout: float) -> None:
        """Wait until a server that is joining serves clients (a non-voting follower, or an observer)."""
        address = self._admin_address(index)
        while True:
            code = self._member_exit_code(index)
            if code is not None:
                raise ZooKeeperStartError(f"the new member {index} exited with code {code}", self.log_tail(index, 60))
            if serving(address, ("follower", "observer"), lambda: self._member_is_ours(index)):
                return
            if time.monotonic() > deadline:
                raise ZooKeeperStartError(
                    f"the new member {index} did not serve within {timeout} s", self.log_tail(index, 60)
                )
            time.sleep(0.05)

    def _reconfig(
        self,
        what: str,
        change: tuple[str | None, str | None],
        applied: Callable[[str], bool],
        concerned: int,
        deadline: float,
        timeout: float,
    ) -> str:
        """Send a reconfiguration (``change``: joining, leaving) as the super user from a session on a
        running member other than ``concerned``, until a reply comes or ``applied(config)`` says a reply
        lost with its connection was applied; the new configuration's text. A refusal that may pass (no
        quorum for the new configuration yet, a reconfiguration in progress) is tried again until
        ``deadline``."""
        last: BaseException | None = None
        while True:
            for i in [i for i in self.running_members() if i != concerned]:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                try:
                    with RawSession(self._member_address(i), min(remaining, 10.0)) as session:
                        session.authenticate(*self.super_auth)
                        data, _ = session.reconfig(joining=change[0], leaving=change[1])
                    return data.decode()
                except ServerRefusedError as exc:
                    if exc.code not in (NewConfigNoQuorumError.code, ReconfigInProgressError.code):
                        raise ReconfigError(
                            f"reconfig ({what}) refused by member {i}: {exc}", exc.code, self.log_tail(concerned, 40)
                        ) from exc
                    last = exc
                except OSError as exc:  # the connection broke (a leader change): the change may be made
                    last = exc
                    config = self._config_from_others(concerned, deadline)
                    if config is not None and applied(config):
                        return config
            if time.monotonic() >= deadline:
                code = last.code if isinstance(last, ServerRefusedError) else None
                raise ReconfigError(
                    f"reconfig ({what}) not done within {timeout} s (last: {last})", code, self.log_tail(concerned, 40)
                ) from last
            time.sleep(0.2)

    def _config_from_others(self, concerned: int, deadline: float) -> str | None:
        """The configuration as a running member other than ``concerned`` reports it, or None."""
        for i in [i for i in self.running_members() if i != concerned]:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            with contextlib.suppress(EmbeddedZooKeeperError):
                return self.config_text(i, timeout=min(remaining, 5.0))
        return None

    def __repr__(self) -> str:
        extra = " reconfigurable" if self.reconfigurable else ""
        return (
            f"<{type(self).__name__}{extra} size={self.size} members={self.members()} running={self.running_members()}>"
        )


# --------------------------------------------------------------------------------------------------------
# python -m zkwire.testing.embedded


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m zkwire.testing.embedded", description="Run ZooKeeper in the foreground until Ctrl-C."
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
