"""An ensemble whose members live in network namespaces of their own, so that tests can cut links.

::

    with NetnsEnsemble(3) as net:
        leader = net.leader_index()
        net.isolate(leader)            # the leader can no longer reach its followers, nor they it
        ...
        net.partition([0, 1], [2])     # two sides; members of different sides do not hear each other
        net.cut(0, 1, both_ways=False) # packets from member 0 to member 1 are lost, the others pass
        net.cut_clients(2)             # clients no longer reach member 2
        net.heal()                     # everything passes again

Topology (Linux, root, ``ip`` from iproute2, ``nsenter`` and ``iptables-restore``)::

    host ns --veth-- [switch ns: bridge] --veth-- member ns 0 (eth0: peer address, client address)
                                         --veth-- member ns 1 ...
                                         --veth-- client ns (optional, for client processes)

Each member's JVM runs in its namespace (``nsenter --net=/var/run/netns/NAME`` executes it, so the
process started is the JVM). A member has two addresses on one interface: its peer address, which the
quorum and election ports listen on and which this process uses for probes (``srvr``, ``ruok``), and
its client address, the one in :attr:`NetnsEnsemble.hosts`. Links are cut with packet filter rules in the
member namespaces (the whole filter table is rewritten at each change): dropping a peer's address cuts
member links, dropping the client address cuts clients -- whether they run in this process (host
namespace) or in the client namespace (:meth:`NetnsEnsemble.client_command`) -- while probes still get
through. Packets are dropped, not refused: the other side sees silence, as in a real partition.

The bridge sits in a namespace of its own so that the host's packet filter (e.g. Docker's FORWARD
policy, which bridged traffic passes through when ``br_netfilter`` is loaded) never sees the traffic.
Names are ``zkw<6 hex>-...``; :meth:`NetnsEnsemble.stop` removes the namespaces (also after a failed
start), and so does the next ensemble if a process died before it could (the owners are listed in
``/run/zkwire-netns``). The kernel here has no ``netem`` qdisc, so there are no delays, only losses.
"""

from __future__ import annotations

import atexit
import contextlib
import ipaddress
import os
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path

from .base import ServerOptions, ZooKeeperNotInstalledError, ZooKeeperStartError, free_subnet, pid_alive
from .embedded import EmbeddedEnsemble, _Member

__all__ = ["NetnsEnsemble", "netns_unavailable_reason"]

NETNS_DIR = Path("/var/run/netns")
REGISTRY = Path(os.environ.get("ZKWIRE_NETNS_REGISTRY", "/run/zkwire-netns"))
CLIENT_PORT, QUORUM_PORT, ELECTION_PORT = 2181, 2888, 3888
_TOOLS = ("ip", "nsenter", "iptables-restore")
_TIMEOUT = 20.0

_live: set[NetnsEnsemble] = set()
_live_lock = threading.Lock()


def netns_unavailable_reason() -> str | None:
    """None if this process can build namespaces; else why not, in one line."""
    if not sys.platform.startswith("linux"):
        return "network namespaces are Linux only"
    if os.geteuid() != 0:
        return "network namespaces need root (CAP_NET_ADMIN and CAP_SYS_ADMIN)"
    missing = [tool for tool in _TOOLS if shutil.which(tool) is None]
    if missing:
        return f"missing {', '.join(missing)} (apt-get install iproute2 util-linux iptables)"
    return None


def _run(*args: str, stdin: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
    try:
        result = subprocess.run(list(args), input=stdin, capture_output=True, text=True, timeout=_TIMEOUT, check=False)
    except subprocess.TimeoutExpired as exc:
        raise ZooKeeperStartError(f"{' '.join(args)} did not finish within {_TIMEOUT} s") from exc
    if check and result.returncode != 0:
        raise ZooKeeperStartError(f"{' '.join(args)} failed ({result.returncode}): {result.stderr.strip()}")
    return result


def _remove_namespaces(prefix: str) -> None:
    """Kill what runs in the namespaces named ``prefix-*``, then delete them and the host link."""
    names = [p.name for p in NETNS_DIR.glob(f"{prefix}-*")] if NETNS_DIR.is_dir() else []
    for name in names:
        pids = _run("ip", "netns", "pids", name, check=False).stdout.split()
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, ValueError):
                os.kill(int(pid), signal.SIGKILL)
    for name in names:
        _run("ip", "netns", "del", name, check=False)
    # The host end of the switch's veth goes with the switch namespace; this is for a half-built one.
    if Path(f"/sys/class/net/{prefix}").exists():
        _run("ip", "link", "del", prefix, check=False)


def remove_stale() -> None:
    """Remove the namespaces of ensembles whose process died before it could."""
    if not REGISTRY.is_dir():
        return
    for entry in REGISTRY.iterdir():
        try:
            pid = int(entry.read_text().strip() or "0")
        except (OSError, ValueError):
            pid = 0
        if pid and pid_alive(pid):
            continue
        _remove_namespaces(entry.name)
        with contextlib.suppress(OSError):
            entry.unlink()


@atexit.register
def _remove_everything_at_exit() -> None:
    with _live_lock:
        live = list(_live)
    for ensemble in live:
        with contextlib.suppress(Exception):
            ensemble.stop(grace=3.0)


def _pick_subnet() -> ipaddress.IPv4Network:
    """A /24 in 10.200.0.0/13 that no route of this machine overlaps."""
    routes = _run("ip", "-4", "route", "show", "table", "all", check=False).stdout.split("\n")
    used: list[ipaddress.IPv4Network] = []
    for line in routes:
        word = line.split(" ", 1)[0]
        if word and word[0].isdigit():
            with contextlib.suppress(ValueError):
                used.append(ipaddress.ip_network(word, strict=False))  # type: ignore[arg-type]
    return free_subnet(ipaddress.IPv4Network("10.200.0.0/13"), used)


class NetnsEnsemble(EmbeddedEnsemble):
    """An :class:`~zkwire.testing.embedded.EmbeddedEnsemble` whose members each run in a network
    namespace, linked by a bridge; see the module's documentation for the topology and the rules.

    ``client_namespace=True`` also makes a namespace for client processes (:meth:`client_command`).
    Members listen on the usual ports (2181, 2888, 3888) on their own addresses.
    """

    backend = "netns"

    def __init__(
        self,
        size: int = 3,
        options: ServerOptions | None = None,
        *,
        client_namespace: bool = False,
        tick_time_ms: int | None = None,
        read_only_mode: bool | None = None,
        java: str | None = None,
        classpath: Sequence[str] | None = None,
    ) -> None:
        super().__init__(
            size, options, tick_time_ms=tick_time_ms, read_only_mode=read_only_mode, java=java, classpath=classpath
        )
        self.client_namespace = client_namespace
        self.prefix = f"zkw{os.urandom(3).hex()}"
        self.subnet: ipaddress.IPv4Network | None = None
        self._blocked: set[tuple[str, str]] = set()
        self._built = False

    # -- addresses

    def _address(self, offset: int) -> str:
        if self.subnet is None:
            raise ZooKeeperStartError("the ensemble's network is not built")
        return str(self.subnet.network_address + offset)

    @property
    def host_address(self) -> str:
        """This machine's address on the ensemble's network."""
        return self._address(254)

    @property
    def client_address(self) -> str:
        return self.host_address

    @property
    def client_ns_address(self) -> str:
        return self._address(100)

    def peer_address(self, index: int) -> str:
        return self._address(10 + index)

    def client_facing_address(self, index: int) -> str:
        return self._address(50 + index)

    def peer_hosts(self, index: int) -> str:
        """Member ``index`` at its peer address: a way in that :meth:`cut_clients` leaves open (for an
        observer that must keep seeing a side the test's clients are cut from)."""
        return f"{self.peer_address(index)}:{CLIENT_PORT}"

    def namespace(self, index: int) -> str:
        """The name of member ``index``'s namespace (``ip netns``)."""
        return f"{self.prefix}-m{index}"

    @property
    def client_namespace_name(self) -> str:
        return f"{self.prefix}-c"

    def client_command(self, argv: Sequence[str]) -> list[str]:
        """``argv`` run in the client namespace (needs ``client_namespace=True``)."""
        if not self.client_namespace:
            raise ValueError("the ensemble has no client namespace (client_namespace=True)")
        return ["nsenter", f"--net={NETNS_DIR / self.client_namespace_name}", "--", *argv]

    # -- EmbeddedEnsemble's hooks

    def _allocate_members(self) -> list[_Member]:
        return [_Member(i, CLIENT_PORT, QUORUM_PORT, ELECTION_PORT) for i in range(self.size)]

    def _member_address(self, index: int) -> tuple[str, int]:
        return self.client_facing_address(index), CLIENT_PORT

    def _admin_address(self, index: int) -> tuple[str, int]:
        return self.peer_address(index), CLIENT_PORT

    def _peer_host(self, index: int) -> str:
        return self.peer_address(index)

    def _command_prefix(self, index: int) -> list[str]:
        return ["nsenter", f"--net={NETNS_DIR / self.namespace(index)}", "--"]

    def _config(self, member: _Member) -> dict[str, str]:
        cfg = super()._config(member)
        cfg["clientPortAddress"] = "0.0.0.0"  # the client address for clients, the peer address for probes
        return cfg

    def _prepare(self) -> None:
        reason = netns_unavailable_reason()
        if reason is not None:
            raise ZooKeeperNotInstalledError(reason)
        remove_stale()
        self.subnet = _pick_subnet()
        REGISTRY.mkdir(parents=True, exist_ok=True)
        (REGISTRY / self.prefix).write_text(f"{os.getpid()}\n")
        with _live_lock:
            _live.add(self)
        self._built = True
        try:
            self._build()
        except BaseException:
            self._cleanup()
            raise

    def _build(self) -> None:
        assert self.subnet is not None
        p, length = self.prefix, self.subnet.prefixlen
        switch = f"{p}-sw"
        _run("ip", "netns", "add", switch)
        _run("ip", "-n", switch, "link", "add", "br0", "type", "bridge")
        _run("ip", "-n", switch, "link", "set", "br0", "up")
        _run("ip", "-n", switch, "link", "set", "lo", "up")
        # this machine
        _run("ip", "link", "add", p, "type", "veth", "peer", "name", "host", "netns", switch)
        _run("ip", "addr", "add", f"{self.host_address}/{length}", "dev", p)
        _run("ip", "link", "set", p, "up")
        self._attach(switch, "host")
        # members, and the client namespace
        spokes = [
            (self.namespace(i), f"m{i}", [self.peer_address(i), self.client_facing_address(i)])
            for i in range(self.size)
        ]
        if self.client_namespace:
            spokes.append((self.client_namespace_name, "client", [self.client_ns_address]))
        for ns, port, addresses in spokes:
            _run("ip", "netns", "add", ns)
            _run("ip", "-n", ns, "link", "add", "eth0", "type", "veth", "peer", "name", port, "netns", switch)
            for address in addresses:  # the first one is the source of the member's own connections
                _run("ip", "-n", ns, "addr", "add", f"{address}/{length}", "dev", "eth0")
            _run("ip", "-n", ns, "link", "set", "eth0", "up")
            _run("ip", "-n", ns, "link", "set", "lo", "up")
            self._attach(switch, port)
        self._apply()

    @staticmethod
    def _attach(switch: str, port: str) -> None:
        _run("ip", "-n", switch, "link", "set", port, "master", "br0")
        _run("ip", "-n", switch, "link", "set", port, "up")

    def _cleanup(self) -> None:
        if not self._built:
            return
        _remove_namespaces(self.prefix)
        with contextlib.suppress(OSError):
            (REGISTRY / self.prefix).unlink()
        with _live_lock:
            _live.discard(self)
        self._built = False
        self._blocked.clear()

    def stop(self, *, grace: float = 5.0) -> None:
        """Stop every member, then remove the namespaces and the ensemble's directory. Idempotent."""
        super().stop(grace=grace)

    # -- links

    @property
    def blocked(self) -> frozenset[tuple[str, str]]:
        """The directed links that lose packets: ``("m0", "m1")``, ``("client", "m2")``..."""
        return frozenset(self._blocked)

    def _endpoint(self, index: int) -> str:
        if not 0 <= index < self.size:
            raise IndexError(f"no member {index} in an ensemble of {self.size}")
        return f"m{index}"

    def cut(self, a: int, b: int, *, both_ways: bool = True) -> None:
        """Packets from member ``a`` to member ``b`` are lost (and from ``b`` to ``a`` with ``both_ways``)."""
        ea, eb = self._endpoint(a), self._endpoint(b)
        self._blocked.add((ea, eb))
        if both_ways:
            self._blocked.add((eb, ea))
        self._apply()

    def isolate(self, index: int) -> None:
        """Member ``index`` and every other member no longer hear each other (clients still reach it)."""
        me = self._endpoint(index)
        for other in range(self.size):
            if other != index:
                self._blocked |= {(me, f"m{other}"), (f"m{other}", me)}
        self._apply()

    def partition(self, *groups: Iterable[int]) -> None:
        """Members of different groups no longer hear each other; members in no group are isolated."""
        side = {}
        for number, group in enumerate(groups):
            for index in group:
                side[self._endpoint(index)] = number
        names = [f"m{i}" for i in range(self.size)]
        for a in names:
            for b in names:
                if a != b and side.get(a, -1 - names.index(a)) != side.get(b, -1 - names.index(b)):
                    self._blocked.add((a, b))
        self._apply()

    def cut_clients(self, *indices: int, both_ways: bool = True) -> None:
        """Clients (of this process and of the client namespace) no longer reach these members.

        With ``both_ways=False`` only the client's packets to the member are lost.
        """
        for index in indices:
            me = self._endpoint(index)
            self._blocked.add(("client", me))
            if both_ways:
                self._blocked.add((me, "client"))
        self._apply()

    def heal(self) -> None:
        """Every link passes again."""
        self._blocked.clear()
        self._apply()

    def _rules(self, index: int) -> list[str]:
        me = f"m{index}"
        rules = []
        for src, dst in sorted(self._blocked):
            if dst == me and src.startswith("m"):
                rules.append(f"-A INPUT -s {self.peer_address(int(src[1:]))}/32 -j DROP")
            elif src == me and dst.startswith("m"):
                rules.append(f"-A OUTPUT -d {self.peer_address(int(dst[1:]))}/32 -j DROP")
            elif src == "client" and dst == me:
                rules.append(f"-A INPUT -d {self.client_facing_address(index)}/32 -j DROP")
            elif src == me and dst == "client":
                rules.append(f"-A OUTPUT -s {self.client_facing_address(index)}/32 -j DROP")
        return rules

    def _apply(self) -> None:
        if not self._built:
            return
        for i in range(self.size):
            table = "\n".join(
                ["*filter", ":INPUT ACCEPT [0:0]", ":FORWARD ACCEPT [0:0]", ":OUTPUT ACCEPT [0:0]", *self._rules(i)]
            )
            _run(
                "nsenter",
                f"--net={NETNS_DIR / self.namespace(i)}",
                "--",
                "iptables-restore",
                stdin=table + "\nCOMMIT\n",
            )

    def __repr__(self) -> str:
        return f"<NetnsEnsemble {self.prefix} size={self.size} blocked={sorted(self._blocked)}>"
