"""A throw-away Kerberos realm for tests: an MIT KDC run from a temporary directory.

:class:`KerberosRealm` makes a realm of its own (``kdc.conf``, ``krb5.conf``, a database made by
``kdb5_util create -s`` with a random master password that is written nowhere but the stash file),
runs the KDC in the foreground (``krb5kdc -n``) on a free loopback port, and makes principals, keytabs
and ticket caches with ``kadmin.local`` and ``kinit``.  Nothing touches the machine's own Kerberos
set-up: every program gets ``KRB5_CONFIG`` and ``KRB5_KDC_PROFILE`` pointing into the directory, and
no system service is started.  It needs MIT Kerberos' programs (Debian: ``krb5-kdc``,
``krb5-admin-server``, ``krb5-user``)::

    with KerberosRealm() as realm:
        server = realm.service_principal("zookeeper", "localhost")   # its keytab for the server
        alice = realm.user_principal("alice")
        ccache = realm.kinit(alice)                                   # FILE:... holding alice's ticket
        short = realm.kinit(alice, realm.directory / "short.cc", lifetime="5s")  # expires soon

The client libraries of the test process find the realm through :meth:`KerberosRealm.activate`
(``KRB5_CONFIG`` for MIT's library; a JVM needs ``-Djava.security.krb5.conf=`` ``realm.krb5_conf``,
as it ignores ``KRB5_CONFIG``).  Every lookup stays local: the KDC is named by address and no DNS
lookup is made for realms, KDCs or host names.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import secrets
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from .embedded import _death_signal_preexec, free_port, make_temp_dir, remove_temp_dir
from .errors import EmbeddedZooKeeperError, ZooKeeperNotInstalledError

__all__ = [
    "DEBIAN_PACKAGES",
    "KerberosNotInstalledError",
    "KerberosPrincipal",
    "KerberosRealm",
    "KerberosRealmError",
    "kerberos_missing",
]

#: The programs a realm needs.
PROGRAMS = ("krb5kdc", "kdb5_util", "kadmin.local", "kinit", "kdestroy")
#: The Debian packages that hold them.
DEBIAN_PACKAGES = ("krb5-kdc", "krb5-admin-server", "krb5-user")
#: How long one of the realm's commands may run.
COMMAND_TIMEOUT = 30.0
#: The encryption types of the realm's keys: ones that MIT's library and the JDK both use.
ENCTYPES = ("aes256-cts-hmac-sha1-96", "aes128-cts-hmac-sha1-96")


class KerberosRealmError(EmbeddedZooKeeperError):
    """A realm could not be made or its KDC did not start (the message holds the command's output)."""


class KerberosNotInstalledError(KerberosRealmError, ZooKeeperNotInstalledError):
    """MIT Kerberos' KDC and tools are not installed."""


def _sbin_path() -> str:
    # kdb5_util, kadmin.local and krb5kdc live in /usr/sbin, which a non-root PATH may lack.
    parts = os.environ.get("PATH", "").split(os.pathsep)
    return os.pathsep.join([*parts, *(p for p in ("/usr/sbin", "/sbin") if p not in parts)])


def kerberos_missing() -> str | None:
    """None when the realm's programs are installed; else what is missing and how to install it."""
    path = _sbin_path()
    missing = [name for name in PROGRAMS if shutil.which(name, path=path) is None]
    if not missing:
        return None
    return f"MIT Kerberos is not installed ({', '.join(missing)} missing): apt-get install {' '.join(DEBIAN_PACKAGES)}"


@dataclass(frozen=True)
class KerberosPrincipal:
    """A principal of the realm (``name`` with its realm) and the keytab holding its keys."""

    name: str
    keytab: Path

    @property
    def short_name(self) -> str:
        """The name without its realm (``zookeeper/localhost``, ``alice``)."""
        return self.name.rpartition("@")[0]


_live: set[KerberosRealm] = set()
_live_lock = threading.Lock()


@atexit.register
def _stop_realms_at_exit() -> None:
    with _live_lock:
        realms = list(_live)
    for realm in realms:
        realm.stop()


class KerberosRealm:
    """A Kerberos realm and its KDC, in a temporary directory (see the module).

    ``directory``: where the realm lives (default: a new temporary directory, removed by
    :meth:`stop`; a given one is kept).  ``port``: the KDC's port on ``host`` (default: a free one).
    ``max_life``: the longest ticket the KDC issues (kdc.conf's ``max_life``; ``kinit -l`` asks for
    less).  A context manager: ``with`` starts and stops it.
    """

    def __init__(
        self,
        realm: str = "ZKWIRE.TEST",
        *,
        directory: str | Path | None = None,
        host: str = "127.0.0.1",
        port: int | None = None,
        max_life: str = "1h",
    ) -> None:
        if not realm or not all(c.isalnum() or c in ".-_" for c in realm):
            raise ValueError(f"realm {realm!r}: letters, digits, '.', '-' and '_' only")
        self.realm = realm
        self.host = host
        self.max_life = max_life
        self._port = port
        self._given_directory = Path(directory).resolve() if directory is not None else None
        self._directory: Path | None = None
        self._process: subprocess.Popen[bytes] | None = None

    # -- where things are

    @property
    def directory(self) -> Path:
        if self._directory is None:
            raise KerberosRealmError("the realm has not been started")
        return self._directory

    @property
    def port(self) -> int:
        if self._port is None:
            raise KerberosRealmError("the realm has not been started")
        return self._port

    @property
    def krb5_conf(self) -> Path:
        """The clients' configuration (``KRB5_CONFIG``, and ``java.security.krb5.conf`` for a JVM)."""
        return self.directory / "krb5.conf"

    @property
    def kdc_conf(self) -> Path:
        """The KDC's configuration (``KRB5_KDC_PROFILE``)."""
        return self.directory / "kdc.conf"

    @property
    def kdc_log(self) -> Path:
        return self.directory / "kdc.log"

    @property
    def env(self) -> dict[str, str]:
        """The environment variables that point MIT's programs and library at this realm (a replay
        cache directory of its own included)."""
        return {
            "KRB5_CONFIG": str(self.krb5_conf),
            "KRB5_KDC_PROFILE": str(self.kdc_conf),
            "KRB5RCACHEDIR": str(self.directory / "rcache"),
        }

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def __repr__(self) -> str:
        where = f"127.0.0.1:{self._port}" if self._port is not None else "not started"
        return f"<KerberosRealm {self.realm} ({where})>"

    # -- lifecycle

    def start(self, timeout: float = 20.0) -> None:
        """Make the realm (first start only) and start its KDC; return once the KDC accepts connections.

        Raises:
            KerberosNotInstalledError: the programs are missing.
            KerberosRealmError: a command failed, or the KDC did not start within ``timeout`` seconds.
        """
        if self.running:
            return
        missing = kerberos_missing()
        if missing is not None:
            raise KerberosNotInstalledError(missing)
        if self._directory is None:
            if self._given_directory is not None:
                self._given_directory.mkdir(parents=True, exist_ok=True)
                self._directory = self._given_directory
            else:
                self._directory = make_temp_dir("zkwire-kerberos-")
        fixed = self._port is not None
        deadline = time.monotonic() + timeout
        for _ in range(1 if fixed else 5):
            if not fixed:
                self._port = free_port(self.host)
            self._write_config()
            if not (self.directory / "principal").exists():
                self._create_database()
            if self._launch(deadline):
                with _live_lock:
                    _live.add(self)
                return
        raise KerberosRealmError(f"the KDC did not start:\n{self._log_tail()}")

    def stop(self) -> None:
        """Stop the KDC and remove the realm's directory (unless it was given). Idempotent."""
        proc = self._process
        if proc is not None:
            with contextlib.suppress(ProcessLookupError):
                proc.terminate()
            try:
                proc.wait(5.0)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
                proc.wait(5.0)
            self._process = None
        with _live_lock:
            _live.discard(self)
        if self._directory is not None and self._given_directory is None:
            remove_temp_dir(self._directory)
            self._directory = None

    def stop_kdc(self) -> None:
        """Stop the KDC only, keeping the realm: clients that need it get "Cannot contact any KDC" until
        :meth:`start_kdc` (an outage, for tests)."""
        self._kill_kdc()

    def start_kdc(self, timeout: float = 20.0) -> None:
        """Start the KDC again on its port after :meth:`stop_kdc`.

        Raises:
            KerberosRealmError: it did not start within ``timeout`` seconds (the port was taken meanwhile).
        """
        if self.running:
            return
        if self._directory is None or self._port is None:
            raise KerberosRealmError("the realm was never started (use start())")
        if not self._launch(time.monotonic() + timeout):
            raise KerberosRealmError(f"the KDC did not start again:\n{self._log_tail()}")

    def __enter__(self) -> KerberosRealm:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    @contextlib.contextmanager
    def activate(self) -> Iterator[None]:
        """Point this process's Kerberos library (``gssapi``) at the realm for the ``with`` block
        (sets :attr:`env` in ``os.environ`` and restores it after)."""
        saved = {key: os.environ.get(key) for key in self.env}
        (self.directory / "rcache").mkdir(exist_ok=True)
        os.environ.update(self.env)
        try:
            yield
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value

    # -- principals and tickets

    def principal_name(self, name: str) -> str:
        """``name`` with the realm appended if it has none."""
        return name if "@" in name else f"{name}@{self.realm}"

    def add_principal(self, name: str, keytab: Path | None = None, *, max_life: str | None = None) -> KerberosPrincipal:
        """Create ``name`` (with random keys; the realm is appended if missing) and write its keys to
        ``keytab`` (default: ``<directory>/<name>.keytab``, readable by its owner only).
        ``max_life``: the longest ticket the KDC issues to it (``"8s"``, ``"2m"``), whoever asks --
        ``kinit`` or a client getting its tickets from the keytab by itself."""
        _check_name(name)
        full = self.principal_name(name)
        path = keytab if keytab is not None else self.directory / (full.split("@")[0].replace("/", "_") + ".keytab")
        limit = ""
        if max_life is not None:
            if not max_life or not all(c.isalnum() or c == ":" for c in max_life):
                raise ValueError(f"max_life {max_life!r}: a duration such as '8s', '2m' or '0:00:08'")
            limit = f"-maxlife {max_life} "
        self._kadmin(f"addprinc -randkey {limit}{full}")
        self.export_keytab(full, path)
        return KerberosPrincipal(full, path)

    def export_keytab(self, name: str, keytab: Path) -> Path:
        """Append ``name``'s current keys to ``keytab`` (the keys are not changed: earlier keytabs and
        tickets stay valid)."""
        _check_name(name)
        self._kadmin(f"ktadd -k {keytab} -norandkey {self.principal_name(name)}")
        os.chmod(keytab, 0o600)
        return keytab

    def service_principal(self, service: str = "zookeeper", host: str = "localhost") -> KerberosPrincipal:
        """The principal ``<service>/<host>@REALM`` with its keytab (what a server's JAAS file names)."""
        return self.add_principal(f"{service}/{host}")

    def user_principal(self, name: str, *, max_life: str | None = None) -> KerberosPrincipal:
        """A client principal ``name@REALM`` with its keytab (``max_life``: its tickets' longest life)."""
        return self.add_principal(name, max_life=max_life)

    def kinit(self, principal: KerberosPrincipal, ccache: Path | None = None, *, lifetime: str | None = None) -> str:
        """Get ``principal`` a ticket-granting ticket from its keytab into the file ``ccache`` (default:
        ``<directory>/<name>.cc``); returns the cache's name (``FILE:...``, for ``KRB5CCNAME``).
        ``lifetime``: a shorter ticket than the realm's ``max_life`` (``kinit -l``: ``"5s"``, ``"2m"``)."""
        path = ccache if ccache is not None else self.directory / (principal.short_name.replace("/", "_") + ".cc")
        name = f"FILE:{path}"
        cmd = ["kinit", "-k", "-t", str(principal.keytab), "-c", name]
        if lifetime is not None:
            cmd += ["-l", lifetime]
        self._run([*cmd, principal.name])
        return name

    def kdestroy(self, ccache: str) -> None:
        """Remove the tickets of ``ccache`` (a name :meth:`kinit` returned)."""
        self._run(["kdestroy", "-q", "-c", ccache], check=False)

    # -- internals

    def _write_config(self) -> None:
        d = self.directory
        enctypes = " ".join(f"{e}:normal" for e in ENCTYPES)
        kdc = f"{self.host}:{self.port}"
        (d / "kdc.conf").write_text(
            "[kdcdefaults]\n"
            f"    kdc_listen = {kdc}\n"
            f"    kdc_tcp_listen = {kdc}\n"
            "[realms]\n"
            f"    {self.realm} = {{\n"
            f"        database_name = {d / 'principal'}\n"
            f"        key_stash_file = {d / 'stash'}\n"
            f"        acl_file = {d / 'kadm5.acl'}\n"
            f"        max_life = {self.max_life}\n"
            "        max_renewable_life = 0\n"
            f"        supported_enctypes = {enctypes}\n"
            "    }\n"
            "[logging]\n"
            f"    kdc = FILE:{self.kdc_log}\n"
            f"    admin_server = FILE:{d / 'kadmin.log'}\n"
            f"    default = FILE:{d / 'krb5lib.log'}\n"
        )
        (d / "kadm5.acl").write_text("")
        (d / "krb5.conf").write_text(
            "[libdefaults]\n"
            f"    default_realm = {self.realm}\n"
            "    dns_lookup_kdc = false\n"
            "    dns_lookup_realm = false\n"
            "    dns_canonicalize_hostname = false\n"
            "    rdns = false\n"
            "    udp_preference_limit = 1\n"
            "    forwardable = false\n"
            f"    default_tkt_enctypes = {' '.join(ENCTYPES)}\n"
            f"    default_tgs_enctypes = {' '.join(ENCTYPES)}\n"
            f"    permitted_enctypes = {' '.join(ENCTYPES)}\n"
            f"    default_ccache_name = FILE:{d / 'default.cc'}\n"
            "[realms]\n"
            f"    {self.realm} = {{\n"
            f"        kdc = {kdc}\n"
            "    }\n"
            "[domain_realm]\n"
            f"    localhost = {self.realm}\n"
            f"    {self.host} = {self.realm}\n"
        )

    def _create_database(self) -> None:
        # The master password goes to kdb5_util on its standard input (twice: it asks to confirm) and
        # is kept only in the stash file that -s writes, which the KDC reads.
        master = secrets.token_urlsafe(24)
        self._run(["kdb5_util", "create", "-s", "-r", self.realm], stdin=f"{master}\n{master}\n")

    def _launch(self, deadline: float) -> bool:
        """Start ``krb5kdc -n``; True once it accepts connections, False if it exited (a port taken)."""
        log = (self.directory / "krb5kdc.out").open("ab")
        with log:
            self._process = subprocess.Popen(
                ["krb5kdc", "-n", "-r", self.realm],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=self._environment(),
                cwd=self.directory,
                start_new_session=True,
                preexec_fn=_death_signal_preexec(),
            )
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                self._process = None
                return False
            with contextlib.suppress(OSError), socket.create_connection((self.host, self.port), timeout=0.5):
                return True
            time.sleep(0.05)
        self._kill_kdc()
        raise KerberosRealmError(f"the KDC did not accept connections in time:\n{self._log_tail()}")

    def _kill_kdc(self) -> None:
        proc, self._process = self._process, None
        if proc is not None:
            proc.kill()
            proc.wait(5.0)

    def _log_tail(self) -> str:
        texts = []
        for name in ("krb5kdc.out", "kdc.log"):
            with contextlib.suppress(OSError):
                texts.append((self.directory / name).read_text(errors="replace")[-4000:])
        return "\n".join(texts)

    def _environment(self) -> dict[str, str]:
        env = {**os.environ, **self.env, "PATH": _sbin_path()}
        env.pop("KRB5CCNAME", None)
        env.pop("KRB5_CLIENT_KTNAME", None)
        return env

    def _kadmin(self, query: str) -> None:
        self._run(["kadmin.local", "-r", self.realm, "-q", query])

    def _run(self, cmd: list[str], *, stdin: str | None = None, check: bool = True) -> None:
        try:
            done = subprocess.run(
                cmd,
                input=(stdin or "").encode(),
                capture_output=True,
                env=self._environment(),
                cwd=self.directory,
                timeout=COMMAND_TIMEOUT,
            )
        except subprocess.TimeoutExpired:
            raise KerberosRealmError(f"{cmd[0]} did not finish in {COMMAND_TIMEOUT:.0f} s") from None
        output = (done.stdout + done.stderr).decode(errors="replace")
        # kadmin.local reports some failures on its output with exit code 0.
        failed = done.returncode != 0 or (cmd[0] == "kadmin.local" and " while " in output)
        if check and failed:
            raise KerberosRealmError(f"{' '.join(cmd[:2])} failed ({done.returncode}):\n{output[-2000:]}")


def _check_name(name: str) -> None:
    if not name or not all(c.isalnum() or c in "/@.-_" for c in name):
        raise ValueError(f"principal {name!r}: letters, digits and '/', '@', '.', '-', '_' only")
