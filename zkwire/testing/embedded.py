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
import contextlib
import ctypes
import os
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

from .base import (
    EmbeddedZooKeeperError,
    LocalPortServer,
    PortInUseError,
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
from .wire import PROBE_TIMEOUT, four_letter_word, serving

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
        java: str | None = None,
        classpath: Sequence[str] | None = None,
        **changes: Unpack[ServerOptionChanges],
    ) -> None:
        super().__init__(size, (options or ServerOptions()).replace(**changes))
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

    # -- primitives

    @property
    def started(self) -> bool:
        return bool(self._members)

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
        return ",".join(f"{self._member_address(m.index)[0]}:{m.secure_port}" for m in self._members)

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
        member.server.launch(self._config(member), props, self.options.jvm_flags)

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
        if self._members and all(self._member_alive(i) for i in range(self.size)):
            return
        if self._workdir is None:
            # Fail early, before any port is chosen, if Java or ZooKeeper is missing.
            if self._java is None:
                find_java()
            if self._classpath is None:
                server_classpath()
            self._workdir = make_temp_dir("zkwire-ensemble-")
        if self._members:
            for i in range(self.size):
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
        """Stop every member and remove the ensemble's temporary directory. Idempotent."""
        if self._members:
            self._halt_members(range(self.size), grace=grace, kill=False)
            self._keep_logs()
        self._cleanup()
        if self._workdir is not None:
            remove_temp_dir(self._workdir)
        self._workdir = None
        self._members = []


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
