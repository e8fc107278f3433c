"""ZooKeeper in Docker containers, through testcontainers: a standalone server and an ensemble.

::

    with DockerZooKeeper() as zk:             # a container, its client port published on 127.0.0.1
        print(zk.hosts)                       # "127.0.0.1:41234"

    with DockerEnsemble(3) as ens:            # three containers on a user network of their own,
        ens.stop_member(ens.leader_index())   # finding each other by name (zk1, zk2, zk3)

The image is, in this order: the ``image`` argument, ``$ZKWIRE_TEST_IMAGE``, the locally built
``zkwire/zookeeper:3.8`` if the engine has it (``zkwire/testing/image/build.sh`` builds it from Debian
packages, no registry needed; :func:`build_image` runs it), else the official ``zookeeper:3.8``, which
the engine pulls from Docker Hub. Both images take the same environment variables, which
:meth:`ServerOptions.container_env <zkwire.testing.base.ServerOptions.container_env>` fills in.

testcontainers is configured for a local engine when the user has not configured it: its reaper
container (Ryuk, pulled from Docker Hub) is off and replaced by our own clean-up -- containers and
networks carry a label naming the process that made them, are removed by :meth:`DockerZooKeeper.stop`
and :meth:`DockerEnsemble.stop`, at interpreter exit, and by the next process if this one died -- and
the containers' published ports are reached on 127.0.0.1 (testcontainers would pick a bridge address on a
machine that has ``/.dockerenv``).

Ports are published on 127.0.0.1 only, on ports chosen here (or given), so that a container that is
stopped and started again keeps its address.
"""

from __future__ import annotations

import atexit
import contextlib
import ipaddress
import os
import socket
import subprocess
import threading
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from .base import (
    EmbeddedZooKeeperError,
    LocalPortServer,
    PortInUseError,
    ServerOptions,
    ZooKeeperEnsemble,
    ZooKeeperNotInstalledError,
    ZooKeeperStartError,
    check_port_free,
    free_ports,
    free_subnet,
    last_lines,
    pid_alive,
)
from .wire import PROBE_TIMEOUT, four_letter_word, probe_session, srvr_mode

if TYPE_CHECKING:
    from docker import DockerClient
    from docker.models.containers import Container
    from testcontainers.core.container import DockerContainer
    from testcontainers.core.network import Network

__all__ = [
    "DEFAULT_IMAGE",
    "OFFICIAL_IMAGE",
    "DockerEnsemble",
    "DockerZooKeeper",
    "build_image",
    "choose_image",
    "docker_unavailable_reason",
]

#: The image build.sh makes from Debian packages.
DEFAULT_IMAGE = "zkwire/zookeeper:3.8"
#: The official image on Docker Hub.
OFFICIAL_IMAGE = "zookeeper:3.8"
#: Where the image's build script, Dockerfile and entrypoint are.
IMAGE_DIR = Path(__file__).resolve().parent / "image"

LABEL = "org.zkwire.testing"
LABEL_PID = "org.zkwire.testing.pid"
LABEL_HOST = "org.zkwire.testing.host"

_INSTALL_HINT = "pip install 'testcontainers>=4.0' (zkwire's docker extra: pip install 'path/to/zklock[docker]')"


# --------------------------------------------------------------------------------------------------------
# the engine, the image, testcontainers' configuration


def _docker_client() -> DockerClient:
    try:
        import docker
    except ImportError as exc:
        raise ZooKeeperNotInstalledError(f"the docker package is missing: {_INSTALL_HINT}") from exc
    return docker.from_env()


def docker_unavailable_reason() -> str | None:
    """None when a Docker engine answers; else why not, in one line."""
    try:
        import testcontainers  # noqa: F401
    except ImportError:
        return f"testcontainers is not installed: {_INSTALL_HINT}"
    try:
        client = _docker_client()
        try:
            client.ping()
        finally:
            client.close()
    except Exception as exc:
        text = " ".join(str(exc).split())
        return f"no Docker engine answers ({text[:200]})"
    return None


def _has_image(client: DockerClient, name: str) -> bool:
    import docker.errors

    try:
        client.images.get(name)
    except docker.errors.ImageNotFound:
        return False
    return True


def choose_image(image: str | None = None) -> str:
    """``image``, else ``$ZKWIRE_TEST_IMAGE``, else the local :data:`DEFAULT_IMAGE` if the engine has it,
    else the official :data:`OFFICIAL_IMAGE`."""
    chosen = image or os.environ.get("ZKWIRE_TEST_IMAGE", "").strip()
    if chosen:
        return chosen
    client = _docker_client()
    try:
        return DEFAULT_IMAGE if _has_image(client, DEFAULT_IMAGE) else OFFICIAL_IMAGE
    finally:
        client.close()


def build_image(tag: str = DEFAULT_IMAGE, *, also_tags: Sequence[str] = (), force: bool = False) -> None:
    """Build (or reuse) the test image with ``image/build.sh`` (needs mmdebstrap the first time)."""
    cmd = ["bash", str(IMAGE_DIR / "build.sh"), "--tag", tag]
    for extra in also_tags:
        cmd += ["--also-tag", extra]
    if force:
        cmd.append("--force")
    result = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise EmbeddedZooKeeperError(f"build.sh failed ({result.returncode}):\n{result.stdout}{result.stderr}")


_configured = False


def configure_testcontainers() -> None:
    """Settings for a local engine, each only where the user set nothing (environment or
    ``~/.testcontainers.properties``): no Ryuk (it comes from Docker Hub; our clean-up replaces it), and
    with a local socket, published ports on 127.0.0.1 (with ``/.dockerenv`` present, testcontainers
    would otherwise use the default gateway's or a bridge address)."""
    global _configured
    if _configured:
        return
    from testcontainers.core.config import ConnectionMode, testcontainers_config

    props = testcontainers_config.tc_properties
    if "TESTCONTAINERS_RYUK_DISABLED" not in os.environ and "ryuk.disabled" not in props:
        testcontainers_config.ryuk_disabled = True
    docker_host = os.environ.get("DOCKER_HOST", "")
    local = docker_host == "" or docker_host.startswith("unix://")
    if local and testcontainers_config.connection_mode_override is None:
        testcontainers_config.connection_mode_override = ConnectionMode.docker_host
    if local and testcontainers_config.tc_host_override is None and "tc.host" not in props:
        testcontainers_config.tc_host_override = "127.0.0.1"
    _configured = True


# --------------------------------------------------------------------------------------------------------
# clean-up


_ours: dict[str, str] = {}  # container or network id -> "container" / "network"
_ours_lock = threading.Lock()
_reaped = False


def _labels() -> dict[str, str]:
    return {LABEL: "1", LABEL_PID: str(os.getpid()), LABEL_HOST: socket.gethostname()}


def _remember(kind: str, ident: str) -> None:
    with _ours_lock:
        _ours[ident] = kind


def _forget(ident: str) -> None:
    with _ours_lock:
        _ours.pop(ident, None)


def reap_stale() -> None:
    """Remove the containers and networks left by processes of this machine that died without
    cleaning up (what Ryuk would have done)."""
    client = _docker_client()
    try:
        host = socket.gethostname()
        label = f"{LABEL_HOST}={host}"
        for container in client.containers.list(all=True, filters={"label": label}):
            pid = int(container.labels.get(LABEL_PID, "0") or 0)
            if pid and not pid_alive(pid):
                with contextlib.suppress(Exception):
                    container.remove(force=True, v=True)
        for network in client.networks.list(filters={"label": label}):
            pid = int((network.attrs.get("Labels") or {}).get(LABEL_PID, "0") or 0)
            if pid and not pid_alive(pid):
                with contextlib.suppress(Exception):
                    network.remove()
    finally:
        client.close()


def _reap_once() -> None:
    global _reaped
    if not _reaped:
        _reaped = True
        with contextlib.suppress(Exception):
            reap_stale()


@atexit.register
def _remove_ours_at_exit() -> None:
    with _ours_lock:
        items = list(_ours.items())
        _ours.clear()
    if not items:
        return
    try:
        client = _docker_client()
    except Exception:
        return
    try:
        for ident, kind in sorted(items, key=lambda item: item[1] != "container"):  # containers first
            with contextlib.suppress(Exception):
                if kind == "container":
                    client.containers.get(ident).remove(force=True, v=True)
                else:
                    client.networks.get(ident).remove()
    finally:
        client.close()


# --------------------------------------------------------------------------------------------------------
# one container


def _pick_subnet() -> ipaddress.IPv4Network:
    """A /24 in 10.220.0.0/14 that neither the engine's networks nor this machine's routes overlap."""
    used: list[ipaddress.IPv4Network] = []
    client = _docker_client()
    try:
        for network in client.networks.list():
            for config in (network.attrs.get("IPAM") or {}).get("Config") or []:
                with contextlib.suppress(ValueError, KeyError, TypeError):
                    used.append(ipaddress.IPv4Network(config["Subnet"], strict=False))
    finally:
        client.close()
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        routes = subprocess.run(["ip", "-4", "route"], capture_output=True, text=True, timeout=10, check=False)
        for line in routes.stdout.splitlines():
            with contextlib.suppress(ValueError):
                used.append(ipaddress.IPv4Network(line.split(" ", 1)[0], strict=False))
    return free_subnet(ipaddress.IPv4Network("10.220.0.0/14"), used)


def _is_port_conflict(exc: BaseException) -> bool:
    text = str(exc).lower()
    return "port is already allocated" in text or "address already in use" in text


class _Node:
    """One ZooKeeper container: created through testcontainers, then stopped and started in place."""

    def __init__(
        self,
        image: str,
        env: dict[str, str],
        host: str,
        port: int,
        name: str | None = None,
        network: Network | None = None,
        aliases: Sequence[str] = (),
        ipv4_address: str | None = None,
        extra_hosts: dict[str, str] | None = None,
    ) -> None:
        self.image = image
        self.env = env
        self.host = host
        self.port = port
        self.name = name
        self.network = network
        self.aliases = list(aliases)
        self.ipv4_address = ipv4_address
        self.extra_hosts = extra_hosts or {}
        self.tc: DockerContainer | None = None
        self.stopped_by_us = False
        self.last_log = ""

    @property
    def container(self) -> Container:
        assert self.tc is not None
        return self.tc.get_wrapped_container()

    def create_and_start(self) -> None:
        from testcontainers.core.container import DockerContainer

        bind_host = self.host

        class _ZooKeeperContainer(DockerContainer):
            def _configure(self) -> None:
                # Publish on one address only (testcontainers' own binding is on every interface).
                ports = cast("dict[str, Any]", self.ports)
                for key, value in list(ports.items()):
                    if isinstance(value, int):
                        ports[key] = (bind_host, value)

        tc = _ZooKeeperContainer(self.image)
        for key, value in self.env.items():
            tc.with_env(key, value)
        tc.with_bind_ports(2181, self.port)
        if self.name:
            tc.with_name(self.name)
        kwargs: dict[str, Any] = {"labels": _labels()}
        if self.network is not None and self.ipv4_address is not None:
            # A fixed address: a member that is stopped and started again comes back where its peers
            # knew it (ZooKeeper keeps the address it resolved, and Docker would hand out another one).
            from docker import version
            from docker.types import EndpointConfig

            kwargs["network"] = self.network.name
            endpoint = EndpointConfig(version.__version__, aliases=self.aliases, ipv4_address=self.ipv4_address)
            kwargs["networking_config"] = {self.network.name: endpoint}
            if self.extra_hosts:
                kwargs["extra_hosts"] = dict(self.extra_hosts)
        elif self.network is not None:
            tc.with_network(self.network)
            tc.with_network_aliases(*self.aliases)
        tc.with_kwargs(**kwargs)
        self.tc = tc
        try:
            tc.start()
        except BaseException:
            self.remove()
            raise
        _remember("container", self.container.id or "")
        self.stopped_by_us = False

    def status(self) -> str:
        if self.tc is None:
            return "absent"
        try:
            container = self.container
            container.reload()
            return str(container.status)
        except Exception:
            return "absent"

    def alive(self) -> bool:
        return self.status() == "running"

    def exit_code(self) -> int | None:
        """The exit code of a container that exited without being stopped here."""
        if self.tc is None or self.stopped_by_us:
            return None
        try:
            container = self.container
            container.reload()
        except Exception:
            return None
        if container.status not in ("exited", "dead"):
            return None
        return int(container.attrs.get("State", {}).get("ExitCode", -1))

    def gateway(self) -> str:
        container = self.container
        container.reload()
        networks = container.attrs.get("NetworkSettings", {}).get("Networks", {})
        name = self.network.name if self.network is not None else next(iter(networks), "")
        gateway = networks.get(name, {}).get("Gateway", "")
        if not gateway:
            raise EmbeddedZooKeeperError(f"no gateway for {container.name} on network {name!r}")
        return str(gateway)

    def start(self) -> None:
        self.container.start()
        self.stopped_by_us = False

    def stop(self, *, kill: bool, grace: float) -> None:
        if self.tc is None:
            return
        self.stopped_by_us = True
        with contextlib.suppress(Exception):
            if kill:
                self.container.kill()
            else:
                self.container.stop(timeout=max(1, int(grace)))

    def log_tail(self, lines: int) -> str:
        if self.tc is None:
            return last_lines(self.last_log, lines)
        try:
            data = self.container.logs(stdout=True, stderr=True, tail=max(lines, 0))
        except Exception as exc:
            return f"(no log: {exc})"
        return last_lines(bytes(data).decode("utf-8", "replace"), lines)

    def remove(self) -> None:
        if self.tc is None:
            return
        with contextlib.suppress(Exception):
            self.last_log = self.log_tail(1000)
        ident = ""
        with contextlib.suppress(Exception):
            ident = self.container.id or ""
        with contextlib.suppress(Exception):
            self.tc.stop()
        if ident:
            _forget(ident)
        self.tc = None


# --------------------------------------------------------------------------------------------------------
# standalone


class DockerZooKeeper(LocalPortServer):
    """A standalone ZooKeeper in a container, its client port published on ``host`` (127.0.0.1).

    ``port=None`` picks a free port at the first start and keeps it: :meth:`stop` with ``keep_data``
    stops the container and :meth:`start` starts the same container again (same data, same address);
    a full :meth:`stop` removes it.
    """

    backend = "docker"

    def __init__(
        self,
        options: ServerOptions | None = None,
        *,
        image: str | None = None,
        host: str = "127.0.0.1",
        port: int | None = None,
    ) -> None:
        self.options = options or ServerOptions()
        self._image = image
        self.host = host
        self._port = port
        self._fixed_port = port is not None
        self._node: _Node | None = None
        self._last_log = ""

    @property
    def image(self) -> str:
        if self._image is None:
            self._image = choose_image()
        return self._image

    @property
    def running(self) -> bool:
        return self._node is not None and self._node.alive()

    @property
    def client_address(self) -> str:
        """The gateway of the container's network: Docker forwards published ports from there."""
        if self._node is None or self._node.tc is None:
            raise EmbeddedZooKeeperError("the server is not started")
        return self._node.gateway()

    @property
    def container(self) -> Container | None:
        """The docker SDK's container object (None when there is no container)."""
        return None if self._node is None or self._node.tc is None else self._node.container

    def log_tail(self, lines: int = 200) -> str:
        if self._node is None:
            return last_lines(self._last_log, lines)
        return self._node.log_tail(lines)

    def start(self, timeout: float = 60.0) -> None:
        """Start the container (create it the first time) and wait until the server serves."""
        if self.running:
            return
        if self._node is not None:
            self._node.start()
            self._wait_ready(timeout)
            return
        reason = docker_unavailable_reason()
        if reason is not None:
            raise ZooKeeperNotInstalledError(reason)
        configure_testcontainers()
        _reap_once()
        if self._fixed_port:
            assert self._port is not None
            check_port_free(self.host, self._port)  # before a container is created for nothing
        attempts = 1 if self._fixed_port else 3
        for attempt in range(attempts):
            if self._port is None:
                self._port = free_ports(1, self.host)[0]
            node = _Node(self.image, self.options.container_env(), self.host, self._port)
            try:
                node.create_and_start()
            except Exception as exc:
                if _is_port_conflict(exc) and attempt < attempts - 1:
                    self._port = None
                    continue
                if _is_port_conflict(exc) and self._fixed_port:
                    raise PortInUseError(self.host, self._port, "Docker could not publish it") from exc
                raise ZooKeeperStartError(f"cannot start a container of {self.image}: {exc}") from exc
            self._node = node
            try:
                self._wait_ready(timeout)
            except BaseException:
                self.stop()
                raise
            return

    def _wait_ready(self, timeout: float) -> None:
        assert self._node is not None
        deadline = time.monotonic() + timeout
        address = (self.host, self.port)
        while True:
            code = self._node.exit_code()
            if code is not None:
                raise ZooKeeperStartError(f"the container exited with code {code}", self.log_tail(60))
            try:
                if srvr_mode(address, PROBE_TIMEOUT) in ("standalone", "read-only"):
                    probe_session(address, 2.0)
                    return
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise ZooKeeperStartError(
                    f"{self.image} on {self.hosts} not ready within {timeout} s", self.log_tail(60)
                )
            time.sleep(0.1)

    def stop(self, *, keep_data: bool = False, kill: bool = False, grace: float = 5.0) -> None:
        """Stop the container; unless ``keep_data``, remove it too. Idempotent."""
        if self._node is None:
            return
        if keep_data:
            self._node.stop(kill=kill, grace=grace)
            return
        if kill:
            self._node.stop(kill=True, grace=grace)
        self._node.remove()
        self._last_log = self._node.last_log
        self._node = None

    def four_letter_word(self, cmd: str, timeout: float = 5.0) -> str:
        return four_letter_word((self.host, self.port), cmd, timeout)

    def __repr__(self) -> str:
        where = f"{self.host}:{self._port}" if self._port is not None else "not started"
        return f"<DockerZooKeeper {self._image or '?'} {where} {'running' if self.running else 'stopped'}>"


# --------------------------------------------------------------------------------------------------------
# ensemble


class DockerEnsemble(ZooKeeperEnsemble):
    """``size`` containers on a user network of their own; member i is reached by the others as
    ``zk<i+1>`` (``ZOO_SERVERS``), and by this process on 127.0.0.1 at a published port
    (``client_ports`` pins them).

    The network gets a /24 of its own and each member a fixed address in it, also written into every
    member's ``/etc/hosts``: ZooKeeper keeps the address it resolved for a peer, so a member stopped
    and started again must come back at the same address, and a member that starts while a peer is
    stopped must not wait for a DNS answer about it."""

    backend = "docker"

    def __init__(
        self,
        size: int = 3,
        options: ServerOptions | None = None,
        *,
        image: str | None = None,
        host: str = "127.0.0.1",
        client_ports: Sequence[int] | None = None,
    ) -> None:
        super().__init__(size, options or ServerOptions())
        if client_ports is not None and len(client_ports) != size:
            raise ValueError(f"client_ports names {len(client_ports)} ports for {size} members")
        self._image = image
        self.host = host
        self.client_ports = list(client_ports) if client_ports is not None else None
        self._network: Network | None = None
        self._nodes: list[_Node] = []
        self._last_logs: dict[int, str] = {}
        self.name = ""

    @property
    def image(self) -> str:
        if self._image is None:
            self._image = choose_image()
        return self._image

    @property
    def network_name(self) -> str | None:
        return None if self._network is None else self._network.name

    # -- primitives

    @property
    def started(self) -> bool:
        return bool(self._nodes)

    def _member_address(self, index: int) -> tuple[str, int]:
        return self.host, self._nodes[index].port

    def _member_alive(self, index: int) -> bool:
        return self._nodes[index].alive()

    def _member_exit_code(self, index: int) -> int | None:
        return self._nodes[index].exit_code() if self._nodes else None

    def _launch_member(self, index: int) -> None:
        self._nodes[index].start()

    def _halt_members(self, indices: Sequence[int], *, kill: bool, grace: float) -> None:
        for i in indices:
            self._nodes[i].stop(kill=kill, grace=grace)

    def _member_log(self, index: int, lines: int) -> str:
        if not self._nodes:
            return last_lines(self._last_logs.get(index, ""), lines)
        return self._nodes[index].log_tail(lines)

    @property
    def client_address(self) -> str:
        """The gateway of the ensemble's network: Docker forwards published ports from there."""
        self._check_index(0)
        return self._nodes[0].gateway()

    def container(self, index: int) -> Container:
        self._check_index(index)
        return self._nodes[index].container

    # -- lifecycle

    def _env(self, index: int) -> dict[str, str]:
        options = self.options.replace(extra_config={"quorumListenOnAllIPs": "true", **self.options.extra_config})
        env = options.container_env(ensemble=True)
        env["ZOO_MY_ID"] = str(index + 1)
        env["ZOO_SERVERS"] = " ".join(f"server.{j + 1}=zk{j + 1}:2888:3888;2181" for j in range(self.size))
        return env

    def start(self, timeout: float = 90.0) -> None:
        if self._nodes:
            for i in range(self.size):
                if not self._member_alive(i):
                    self._launch_member(i)
            self.wait_until_serving(timeout)
            return
        reason = docker_unavailable_reason()
        if reason is not None:
            raise ZooKeeperNotInstalledError(reason)
        configure_testcontainers()
        _reap_once()
        from testcontainers.core.network import Network

        image = self.image
        self.name = f"zkwire-{uuid.uuid4().hex[:8]}"
        network, subnet = self._create_network(Network)
        # Each member finds the others by name. The names are also in every member's /etc/hosts: Docker's
        # DNS only knows running containers and asks the machine's resolvers about the others, and a
        # member starting while a peer is stopped would wait for that answer (seconds, with no resolver).
        addresses = {f"zk{i + 1}": str(subnet.network_address + 10 + i) for i in range(self.size)}
        try:
            ports = self.client_ports or free_ports(self.size, self.host)
            self._nodes = [
                _Node(
                    image,
                    self._env(i),
                    self.host,
                    ports[i],
                    f"{self.name}-zk{i + 1}",
                    network,
                    [f"zk{i + 1}"],
                    addresses[f"zk{i + 1}"],
                    addresses,
                )
                for i in range(self.size)
            ]
            for node in self._nodes:
                try:
                    node.create_and_start()
                except Exception as exc:
                    raise ZooKeeperStartError(f"cannot start {node.name} ({image}): {exc}") from exc
            self.wait_until_serving(timeout)
        except BaseException:
            self.stop()
            raise

    def _create_network(self, network_class: type[Network]) -> tuple[Network, ipaddress.IPv4Network]:
        """The ensemble's user network, on a /24 of its own (members get fixed addresses in it)."""
        from docker.types import IPAMConfig, IPAMPool

        last_error: Exception | None = None
        for _ in range(5):
            subnet = _pick_subnet()
            ipam = IPAMConfig(pool_configs=[IPAMPool(subnet=str(subnet), gateway=str(subnet.network_address + 1))])
            network = network_class(docker_network_kw={"labels": _labels(), "ipam": ipam})
            network.name = self.name
            try:
                network.create()
            except Exception as exc:  # e.g. another engine user took the subnet meanwhile
                last_error = exc
                continue
            self._network = network
            _remember("network", network.id or "")
            return network, subnet
        raise ZooKeeperStartError(f"cannot create the ensemble's network: {last_error}")

    def stop(self, *, grace: float = 5.0) -> None:
        for node in self._nodes:
            node.remove()
        self._last_logs = {i: node.last_log for i, node in enumerate(self._nodes)}
        self._nodes = []
        if self._network is not None:
            ident = self._network.id or ""
            with contextlib.suppress(Exception):
                self._network.remove()
            _forget(ident)
            self._network = None
