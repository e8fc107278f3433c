"""The docker backend itself (zkwire.testing.containers and the image of zkwire/testing/image).

Run by the docker pass of .ci/test (ZKWIRE_TEST_BACKEND=docker); skipped on the other backends.
"""

from __future__ import annotations

import os
import subprocess

import pytest
import trio

from zkwire.testing import ServerHandle, ServerOptions, containers, four_letter_word
from zkwire.testing.containers import DockerZooKeeper
from zkwire.testing.handles import EnsembleHandle

pytestmark = pytest.mark.docker


@pytest.fixture
def docker_server(zk_server: ServerHandle) -> DockerZooKeeper:
    if not isinstance(zk_server.server, DockerZooKeeper):
        pytest.skip(f"the docker backend's own tests (backend: {zk_server.backend})")
    return zk_server.server


def test_session_server_is_a_container_publishing_on_loopback(docker_server: DockerZooKeeper) -> None:
    container = docker_server.container
    assert container is not None
    container.reload()
    bindings = container.attrs["HostConfig"]["PortBindings"]["2181/tcp"]
    assert bindings == [{"HostIp": "127.0.0.1", "HostPort": str(docker_server.port)}]
    assert container.labels[containers.LABEL_PID] == str(os.getpid())
    # the server logs to stdout, and the address it sees us from is the network's gateway
    docker_server.four_letter_word("envi")
    assert "Processing envi command from /" + docker_server.client_address in docker_server.log_tail(50)
    conf = docker_server.four_letter_word("conf")
    assert "tickTime=200" in conf and "maxSessionTimeout=60000" in conf


def test_image_takes_the_official_images_variables(docker_server: DockerZooKeeper) -> None:
    options = ServerOptions(
        tick_time_ms=300,
        four_letter_words="mntr",
        max_session_timeout_ms=12_345,
        extra_config={"globalOutstandingLimit": "777"},
        jvm_flags=("-Dzookeeper.extendedTypesEnabled=false",),
    )
    env = options.container_env()
    assert env["ZOO_TICK_TIME"] == "300" and "maxSessionTimeout=12345" in env["ZOO_CFG_EXTRA"]
    with DockerZooKeeper(options, image=docker_server.image) as server:
        conf = server.four_letter_word("conf")
        assert "tickTime=300" in conf and "maxSessionTimeout=12345" in conf
        assert "zk_server_state\tstandalone" in server.four_letter_word("mntr")
        assert "is not executed" in server.four_letter_word("envi")  # whitelist: mntr + the probes' words
        container = server.container
        assert container is not None
        cfg = container.exec_run(["cat", "/conf/zoo.cfg"]).output.decode()
        assert "globalOutstandingLimit=777" in cfg and "4lw.commands.whitelist=mntr,ruok,srvr,conf" in cfg
        name = container.name
    # a full stop removes the container
    client = containers._docker_client()
    try:
        assert not client.containers.list(all=True, filters={"name": name})
    finally:
        client.close()


async def test_restart_keeps_address_and_data(docker_server: DockerZooKeeper, zk_server: ServerHandle) -> None:
    import zkwire

    async with zkwire.open_client(zk_server.hosts, session_timeout=40) as zk:
        path = await zk.create("/zkwire-tests/kept-", b"v1", sequential=True)
        sid = zk.session_id
        hosts = zk_server.hosts
        started = trio.current_time()
        await zk_server.restart()
        restarted = trio.current_time() - started
        assert zk_server.hosts == hosts
        with trio.fail_after(30):
            await zk.wait_connected()
        assert (await zk.get_data(path))[0] == b"v1", f"restart took {restarted:.1f} s"
        assert zk.session_id == sid
        await zk.delete(path)


def test_containers_of_a_dead_process_are_removed(docker_server: DockerZooKeeper) -> None:
    dead = subprocess.Popen(["true"])
    dead.wait()
    client = containers._docker_client()
    try:
        labels = {**containers._labels(), containers.LABEL_PID: str(dead.pid)}
        orphan = client.containers.create(docker_server.image, labels=labels)
        network = client.networks.create(f"zkwire-orphan-{dead.pid}", labels=labels)
        containers.reap_stale()
        assert not client.containers.list(all=True, filters={"id": orphan.id})
        assert not client.networks.list(ids=[network.id])
    finally:
        client.close()


def test_ensemble_members_find_each_other_by_name(zk_ensemble: EnsembleHandle) -> None:
    if zk_ensemble.backend != "docker":
        pytest.skip(f"the docker backend's own tests (backend: {zk_ensemble.backend})")
    ensemble = zk_ensemble.ensemble
    assert isinstance(ensemble, containers.DockerEnsemble)
    for i in range(ensemble.size):
        conf = ensemble.four_letter_word(i, "conf")
        assert "server.1=zk1" in conf.replace("/", "") or "zk1:2888:3888" in conf
        container = ensemble.container(i)
        container.reload()
        settings = container.attrs["NetworkSettings"]["Networks"][ensemble.network_name]
        assert f"zk{i + 1}" in settings["Aliases"]
        # fixed addresses, also in /etc/hosts: a member restarting while a peer is down resolves it at once
        peer = f"zk{(i + 1) % ensemble.size + 1}"
        resolved = container.exec_run(["getent", "hosts", peer]).output.decode().split()
        assert resolved and resolved[0].startswith(settings["IPAddress"].rsplit(".", 1)[0] + ".")
    assert four_letter_word(ensemble.member_hosts(0), "ruok") == "imok"
    assert zk_ensemble.client_address.count(".") == 3
