"""The test harness itself: real ZooKeeper servers started by zkwire.testing.embedded."""

from __future__ import annotations

import ipaddress
import os
import signal
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers.addresses import first_server

from zkwire.testing import embedded
from zkwire.testing.base import PortInUseError, free_subnet
from zkwire.testing.embedded import (
    EmbeddedEnsemble,
    EmbeddedZooKeeper,
    ZooKeeperNotInstalledError,
    ZooKeeperStartError,
    four_letter_word,
    free_port,
)

TICK_TIME_MS = 200  # as in conftest.py
TEST_ROOT = "/zkwire-tests"

# Tests that start servers of their own (skipped when the suite runs against external servers).
local = pytest.mark.usefixtures("local_zookeeper")

# --------------------------------------------------------------------------------------------------------
# a session opened by hand


def _recv_exactly(sock: socket.socket, size: int) -> bytes:
    buf = b""
    while len(buf) < size:
        chunk = sock.recv(size - len(buf))
        assert chunk, "the server closed the connection"
        buf += chunk
    return buf


def _connect_raw(hosts: str, timeout_ms: int, read_only: bool = False) -> tuple[int, int, int, bytes, bool]:
    """ConnectRequest by hand; returns (protocol version, negotiated timeout, session id, password, ro)."""
    host, port = first_server(hosts)
    body = struct.pack(">iqiqi", 0, 0, timeout_ms, 0, 16) + bytes(16) + struct.pack(">?", read_only)
    with socket.create_connection((host, port), timeout=10) as sock:
        sock.sendall(struct.pack(">i", len(body)) + body)
        (length,) = struct.unpack(">i", _recv_exactly(sock, 4))
        assert length == 37
        reply = _recv_exactly(sock, length)
        proto, negotiated, session_id, passwd_len = struct.unpack_from(">iiqi", reply)
        assert passwd_len == 16
        passwd = reply[20:36]
        (readonly,) = struct.unpack_from(">?", reply, 36)
        # closeSession, so that the test leaves no session behind
        sock.sendall(struct.pack(">iii", 8, 1, -11))
        (length,) = struct.unpack(">i", _recv_exactly(sock, 4))
        xid, _zxid, err = struct.unpack(">iqi", _recv_exactly(sock, length))
        assert (xid, err) == (1, 0)
    return proto, negotiated, session_id, passwd, readonly


def _session_timeout_bounds(hosts: str) -> tuple[int, int]:
    conf = dict(line.split("=", 1) for line in four_letter_word(hosts, "conf").splitlines() if "=" in line)
    return int(conf["minSessionTimeout"]), int(conf["maxSessionTimeout"])


def test_raw_session_is_accepted_and_timeout_is_clamped(zk_hosts: str) -> None:
    try:
        low, high = _session_timeout_bounds(zk_hosts)
    except (OSError, KeyError):
        pytest.skip("the server does not answer `conf` (4lw not whitelisted)")
    for requested in (4000, 1, 10_000_000):
        proto, negotiated, session_id, passwd, readonly = _connect_raw(zk_hosts, requested)
        assert proto == 0
        assert negotiated == min(max(requested, low), high)
        assert session_id != 0
        assert passwd != bytes(16)
        assert readonly is False


@local
def test_default_session_bounds_are_two_and_twenty_ticks() -> None:
    # A second standalone server next to the session's one: no port clash, and the default bounds of
    # minSessionTimeout and maxSessionTimeout when maxSessionTimeout is 20 ticks.
    with EmbeddedZooKeeper(tick_time_ms=100, max_session_timeout_ms=2000) as zk:
        assert _session_timeout_bounds(zk.hosts) == (200, 2000)
        assert _connect_raw(zk.hosts, 4000)[1] == 2000
        assert _connect_raw(zk.hosts, 50)[1] == 200
        assert _connect_raw(zk.hosts, 1500)[1] == 1500


# --------------------------------------------------------------------------------------------------------
# standalone


def test_ruok_and_version(embedded_zk: EmbeddedZooKeeper) -> None:
    assert embedded_zk.four_letter_word("ruok") == "imok"
    srvr = embedded_zk.four_letter_word("srvr")
    assert "Zookeeper version: 3.8.0" in srvr
    assert "Mode: standalone" in srvr


def test_every_four_letter_word_is_allowed(embedded_zk: EmbeddedZooKeeper) -> None:
    assert embedded_zk.four_letter_word("isro") == "rw"
    mntr = embedded_zk.four_letter_word("mntr")
    assert "zk_server_state\tstandalone" in mntr
    assert "zk_version\t3.8.0" in mntr
    assert "is not executed" not in embedded_zk.four_letter_word("wchs")


def test_server_configuration(embedded_zk: EmbeddedZooKeeper) -> None:
    conf = embedded_zk.four_letter_word("conf")
    assert f"tickTime={TICK_TIME_MS}" in conf
    assert f"minSessionTimeout={2 * TICK_TIME_MS}" in conf
    assert "maxSessionTimeout=60000" in conf
    assert f"clientPort={embedded_zk.port}" in conf
    assert embedded_zk.hosts == f"127.0.0.1:{embedded_zk.port}"
    log = embedded_zk.log_path
    assert log is not None
    text = log.read_text(errors="replace")
    assert "Using checkIntervalMs=1000" in text  # znode.container.checkIntervalMs reached the server
    assert "-Dzookeeper.extendedTypesEnabled=true" in text  # the command line is logged first


def test_log_tail_is_the_server_log(embedded_zk: EmbeddedZooKeeper) -> None:
    embedded_zk.four_letter_word("envi")
    tail = embedded_zk.log_tail(20)
    assert 0 < len(tail.splitlines()) <= 20
    assert "Processing envi command" in tail  # log4j output of the server, through our config
    assert " INFO " in tail


def test_zk_path_is_unique_and_absolute(zk_path: str, request: pytest.FixtureRequest) -> None:
    assert zk_path.startswith(TEST_ROOT + "/test_zk_path_is_unique_and_absolute-")
    assert len(zk_path.rsplit("-", 1)[1]) == 8
    assert request.getfixturevalue("zk_path") == zk_path


@local
def test_stop_is_idempotent_and_cleans_up() -> None:
    zk = EmbeddedZooKeeper()
    zk.stop()  # never started
    zk.start()
    port, log_path = zk.port, zk.log_path
    assert log_path is not None and log_path.exists()
    workdir = log_path.parent
    zk.stop()
    zk.stop()
    assert not zk.running
    assert not workdir.exists()
    assert "Processing" in zk.log_tail(50)  # the log as it was at the stop
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=2).close()


@local
def test_restart_keeps_port_and_data() -> None:
    from kazoo.client import KazooClient

    with EmbeddedZooKeeper() as zk:
        port = zk.port
        kz = KazooClient(hosts=zk.hosts)
        kz.start(timeout=15)
        try:
            kz.create("/kept", b"v1")
        finally:
            kz.stop()
            kz.close()
        zk.restart()
        assert zk.port == port
        kz = KazooClient(hosts=zk.hosts)
        kz.start(timeout=15)
        try:
            assert kz.get("/kept")[0] == b"v1"
        finally:
            kz.stop()
            kz.close()
        assert zk.log_path is not None
        # one log file for both runs
        assert zk.log_path.read_text(errors="replace").count("==== zkwire.testing:") == 2


def test_shared_server_is_running_again_after_a_test_stopped_it(embedded_zk: EmbeddedZooKeeper) -> None:
    port = embedded_zk.port
    embedded_zk.stop(keep_data=True)
    assert not embedded_zk.running
    embedded_zk.start()
    assert embedded_zk.port == port
    embedded_zk.stop(keep_data=True)  # left stopped: the fixture starts it again


def test_shared_server_is_back(embedded_zk: EmbeddedZooKeeper, zk_hosts: str) -> None:
    assert embedded_zk.running
    assert embedded_zk.hosts == zk_hosts
    assert _connect_raw(zk_hosts, 4000)[1] == 4000


@local
def test_two_servers_at_once_get_distinct_ports(embedded_zk: EmbeddedZooKeeper) -> None:
    with EmbeddedZooKeeper() as a, EmbeddedZooKeeper(four_letter_words="mntr") as b:
        assert len({a.port, b.port, embedded_zk.port}) == 3
        for server in (a, b, embedded_zk):
            assert server.four_letter_word("ruok") == "imok"
        # a restricted whitelist keeps what the readiness check needs (ruok, srvr, conf)
        assert "zk_server_state" in b.four_letter_word("mntr")
        assert "is not executed" in b.four_letter_word("envi")
        assert "is not executed" not in a.four_letter_word("envi")


@local
def test_fixed_port_in_use_is_an_error_that_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        said = f"port {port} of 127.0.0.1 is in use"
        zk = EmbeddedZooKeeper(port=port)
        try:
            # Found before a JVM is started.
            with pytest.raises(PortInUseError) as info:
                zk.start(timeout=20)
            assert str(info.value).startswith(f"{said} (Address already in use)") and zk.pid is None
            # Taken after that check: the server's failure to bind says the same, with its log.
            monkeypatch.setattr(embedded, "check_port_free", lambda host, port: None)
            with pytest.raises(PortInUseError) as info:
                zk.start(timeout=20)
            assert str(info.value).startswith(f"{said} (the server could not bind it)")
            assert "Address already in use" in info.value.log_tail
        finally:
            zk.stop()


@local
def test_port_taken_after_it_was_chosen_is_chosen_again(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        taken = busy.getsockname()[1]
        choices = iter([taken])
        real_free_port = embedded.free_port
        monkeypatch.setattr(embedded, "free_port", lambda host="127.0.0.1": next(choices, None) or real_free_port())
        with EmbeddedZooKeeper() as zk:
            assert zk.port != taken
            assert zk.four_letter_word("ruok") == "imok"
            assert zk.log_path is not None
            assert "Address already in use" in zk.log_path.read_text(errors="replace")


@local
def test_bad_configuration_is_an_error_with_the_log() -> None:
    zk = EmbeddedZooKeeper(extra_config={"tickTime": "not-a-number"})
    try:
        with pytest.raises(ZooKeeperStartError, match="exited with code") as info:
            zk.start(timeout=20)
        assert "not-a-number" in info.value.log_tail
    finally:
        zk.stop()
    assert not zk.running


def test_missing_java_or_jars_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ZooKeeperNotInstalledError, match="apt-get install -y zookeeper"):
        EmbeddedZooKeeper().start()
    with pytest.raises(ZooKeeperNotInstalledError, match="apt-get install -y zookeeper"):
        embedded.server_classpath(str(tmp_path))


def test_free_port_is_bindable() -> None:
    port = free_port()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))


@local
def test_module_runs_a_server_in_the_foreground() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "zkwire.testing.embedded", "--tick", "200"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        hosts = proc.stdout.readline().strip()
        assert hosts.startswith("127.0.0.1:"), proc.stderr.read() if proc.stderr else ""
        assert four_letter_word(hosts, "ruok") == "imok"
        proc.send_signal(signal.SIGTERM)  # as Ctrl-C
        assert proc.wait(30) == 0
        with pytest.raises(OSError):
            socket.create_connection(first_server(hosts), timeout=2).close()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


# --------------------------------------------------------------------------------------------------------
# ensemble


def _modes(ens: EmbeddedEnsemble) -> list[str | None]:
    return [ens.member_mode(i) for i in range(ens.size)]


def test_ensemble_is_up_with_one_leader(ensemble: EmbeddedEnsemble) -> None:
    modes = _modes(ensemble)
    assert sorted(m or "" for m in modes) == ["follower", "follower", "leader"]
    assert modes[ensemble.leader_index()] == "leader"
    assert ensemble.hosts.split(",") == [ensemble.member_hosts(i) for i in range(3)]
    for i in range(3):
        assert "Zookeeper version: 3.8.0" in ensemble.four_letter_word(i, "srvr")
        assert _connect_raw(ensemble.member_hosts(i), 4000)[1] == 4000


def test_ensemble_keeps_quorum_without_a_follower(ensemble: EmbeddedEnsemble) -> None:
    follower = next(i for i in range(3) if i != ensemble.leader_index())
    ensemble.stop_member(follower)
    ensemble.stop_member(follower)  # idempotent
    assert ensemble.running_members() == [i for i in range(3) if i != follower]
    ensemble.wait_until_serving(30)
    rest = [m for i, m in enumerate(_modes(ensemble)) if i != follower]
    assert sorted(m or "" for m in rest) == ["follower", "leader"]
    ensemble.start_member(follower)
    assert ensemble.member_mode(follower) == "follower"


def test_ensemble_elects_a_new_leader(ensemble: EmbeddedEnsemble) -> None:
    old = ensemble.leader_index()
    ensemble.stop_member(old, kill=True)
    started = time.monotonic()
    new = ensemble.leader_index(timeout=30)
    assert new != old
    ensemble.wait_until_serving(30)
    print(f"new leader after {time.monotonic() - started:.2f} s")
    # the member is left stopped: the fixture starts it again for the next test


def test_ensemble_is_whole_again_after_a_test_stopped_a_member(ensemble: EmbeddedEnsemble) -> None:
    assert ensemble.running_members() == [0, 1, 2]
    assert sorted(m or "" for m in _modes(ensemble)) == ["follower", "follower", "leader"]


def test_ensemble_log_tail(ensemble: EmbeddedEnsemble) -> None:
    ensemble.four_letter_word(1, "envi")
    assert "Processing envi command" in ensemble.log_tail(1, 50)
    everything = ensemble.log_tail(lines=5)
    assert everything.count("==== member ") == 3


@local
@pytest.mark.slow
def test_read_only_mode_when_the_quorum_is_lost() -> None:
    with EmbeddedEnsemble(3, tick_time_ms=TICK_TIME_MS, read_only_mode=True) as ens:
        survivor = ens.leader_index()
        for i in range(3):
            if i != survivor:
                ens.stop_member(i, kill=True)
        ens.wait_until_serving(30)  # the survivor turns read-only (after about two seconds)
        assert ens.member_mode(survivor) == "read-only"
        assert ens.four_letter_word(survivor, "isro") == "ro"
        _proto, negotiated, _sid, _pw, readonly = _connect_raw(ens.member_hosts(survivor), 4000, read_only=True)
        assert readonly is True and negotiated == 4000


@local
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux only")
def test_server_dies_with_its_python_process(tmp_path: Path) -> None:
    script = (
        "import os, signal\n"
        "from zkwire.testing.embedded import EmbeddedZooKeeper\n"
        "zk = EmbeddedZooKeeper(); zk.start()\n"
        "print(zk.port, flush=True)\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    env = {**os.environ, "TMPDIR": str(tmp_path)}  # the server's directory is left behind: keep it here
    proc = subprocess.run(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, timeout=60, check=False, env=env
    )
    assert proc.returncode == -signal.SIGKILL
    port = int(proc.stdout.strip())
    deadline = time.monotonic() + 10
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
        except OSError:
            break
        assert time.monotonic() < deadline, "the server outlived its parent"
        time.sleep(0.1)


def test_free_subnet_avoids_the_networks_in_use_and_says_when_none_is_left() -> None:
    pool = ipaddress.IPv4Network("10.200.0.0/23")  # two /24s
    default_route = ipaddress.IPv4Network("0.0.0.0/0")
    taken = ipaddress.IPv4Network("10.200.0.0/24")
    for _ in range(20):
        assert free_subnet(pool, [default_route, taken]) == ipaddress.IPv4Network("10.200.1.0/24")
    with pytest.raises(ZooKeeperStartError, match=r"no free /24 in 10\.200\.0\.0/23"):
        free_subnet(pool, [ipaddress.IPv4Network("10.200.0.0/23")])
