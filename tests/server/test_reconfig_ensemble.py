"""zkwire.testing's reconfigurable ensembles: members added and removed at run time (dynamic
reconfiguration, ZooKeeper 3.5+), the config node after each change, and the super user that may change
the membership."""

from __future__ import annotations

import logging
import traceback

import pytest
import trio

import zkwire
from zkwire.testing.base import AuthCredential
from zkwire.testing.containers import DockerEnsemble
from zkwire.testing.embedded import EmbeddedEnsemble
from zkwire.testing.errors import ReconfigError, ServerRefusedError
from zkwire.testing.wire import RawSession

pytestmark = pytest.mark.ensemble

CONFIG = "/zookeeper/config"


def parse(config: str) -> tuple[dict[int, str], str]:
    """The member lines of a config node's text by myid, and its version."""
    members: dict[int, str] = {}
    version = ""
    for line in config.split("\n"):
        key, _, value = line.partition("=")
        if key.startswith("server."):
            members[int(key.removeprefix("server."))] = value
        elif key == "version":
            version = value
    return members, version


def expected_line(ens: EmbeddedEnsemble, index: int) -> str:
    """Member ``index``'s line as the ensemble wrote it: quorum, election, role and client address."""
    return ens._server_line(ens._members[index]).partition("=")[2]


async def config_seen(zk: zkwire.Client) -> dict[int, str]:
    await zk.sync("/")
    data, _ = await zk.get_data(CONFIG)
    return parse(data.decode())[0]


async def test_three_to_five_to_three(reconfigurable: EmbeddedEnsemble) -> None:
    ens = reconfigurable
    with trio.fail_after(180):
        async with zkwire.open_client(ens.member_hosts(0), session_timeout=20) as zk:
            members, version = parse((await zk.get_data(CONFIG))[0].decode())
            assert members == {i + 1: expected_line(ens, i) for i in range(3)}
            assert all(members[i + 1].endswith(f";127.0.0.1:{ens.member_port(i)}") for i in range(3))
            assert int(version, 16) > 0
            versions = [int(version, 16)]

            _, _, watch = await zk.get_data(CONFIG, watch=True)
            added = [await trio.to_thread.run_sync(ens.add_member) for _ in range(2)]
            assert added == [3, 4]
            assert (await watch.wait()).type is zkwire.EventType.NODE_DATA_CHANGED
            assert ens.members() == [0, 1, 2, 3, 4] and ens.size == 5
            assert ens.hosts == ",".join(f"127.0.0.1:{ens.member_port(i)}" for i in range(5))
            assert await config_seen(zk) == {i + 1: expected_line(ens, i) for i in range(5)}
            assert ens.config_text(4) == ens.config_text(0)
            versions.append(int(parse(ens.config_text())[1], 16))

            # An added member is a member like the others: it serves, stops and starts again.
            async with zkwire.open_client(ens.member_hosts(4), session_timeout=20) as on_new:
                await on_new.ensure_path("/reconfig-test", data=b"written on member 4")
            await trio.to_thread.run_sync(ens.stop_member, 4)
            assert not ens.is_running(4) and ens.running_members() == [0, 1, 2, 3]
            await trio.to_thread.run_sync(ens.start_member, 4)
            assert ens.member_mode(4) in ("leader", "follower")
            async with zkwire.open_client(ens.member_hosts(4), session_timeout=20) as on_new:
                assert (await on_new.get_data("/reconfig-test"))[0] == b"written on member 4"

            # Back to three: one added member and one of the first ones (the leader if it is among them).
            leader = ens.leader_index()
            first_gone = leader if leader in (1, 2) else 2
            for index in (3, first_gone):
                await trio.to_thread.run_sync(ens.remove_member, index)
                assert not ens.is_running(index)  # stopped once it left
                versions.append(int(parse(ens.config_text())[1], 16))
            remaining = [i for i in range(5) if i not in (3, first_gone)]
            assert ens.members() == remaining and ens.size == 3
            assert ens.running_members() == remaining
            assert ens.hosts == ",".join(ens.member_hosts(i) for i in remaining)
            assert await config_seen(zk) == {i + 1: expected_line(ens, i) for i in remaining}
            assert versions == sorted(versions) and len(set(versions)) == 4  # each change a newer version
            assert ens.leader_index() in remaining
            with pytest.raises(zkwire.ZKError):
                await trio.to_thread.run_sync(ens.start_member, first_gone)  # removed: not started again

        # The ensemble of three serves as a whole (a client given its hosts).
        async with zkwire.open_client(ens.hosts, session_timeout=20) as zk:
            assert (await zk.get_data("/reconfig-test"))[0] == b"written on member 4"


async def test_removing_the_leader_moves_the_leadership(reconfigurable: EmbeddedEnsemble) -> None:
    ens = reconfigurable
    leader = ens.leader_index()
    follower = next(i for i in ens.members() if i != leader)
    with trio.fail_after(120):
        async with zkwire.open_client(ens.member_hosts(follower), session_timeout=20) as zk:
            session = zk.session_id
            _, stat, watch = await zk.get_data(CONFIG, watch=True)
            await trio.to_thread.run_sync(ens.remove_member, leader)
            assert (await watch.wait()).type is zkwire.EventType.NODE_DATA_CHANGED
            assert not ens.is_running(leader) and leader not in ens.members()
            new_leader = ens.leader_index()
            assert new_leader != leader and new_leader in ens.members()
            members = await config_seen(zk)  # the session lives on (its member dropped it while the leader moved)
            assert zk.session_id == session
            assert members == {i + 1: expected_line(ens, i) for i in ens.members()}
            await zk.ensure_path("/after-the-leader-left")
            _, written = await zk.get_data("/after-the-leader-left")
            assert written.czxid >> 32 > stat.mzxid >> 32  # the new leader writes in a new epoch


async def test_a_member_removed_but_left_running_is_stopped_with_the_ensemble(reconfigurable: EmbeddedEnsemble) -> None:
    ens = reconfigurable
    with trio.fail_after(120):
        await trio.to_thread.run_sync(lambda: ens.remove_member(1, stop=False))
        assert ens.is_running(1) and 1 not in ens.members() and 1 not in ens.running_members()
        assert str(ens.member_port(1)) not in ens.hosts
        assert 2 not in parse(ens.config_text(0))[0]
        process = ens._members[1].server
        assert process is not None and process.alive()
        with pytest.raises(ReconfigError, match="not in the configuration"):
            await trio.to_thread.run_sync(ens.remove_member, 1)
        added = await trio.to_thread.run_sync(ens.add_member)
        assert added == 3 and ens.members() == [0, 2, 3]
        added_process = ens._members[3].server
        await trio.to_thread.run_sync(ens.stop)
        assert not process.alive() and added_process is not None and not added_process.alive()
        assert ens.size == 3 and not ens.started


async def test_the_super_user_may_reconfigure_and_nobody_else(reconfigurable: EmbeddedEnsemble) -> None:
    ens = reconfigurable
    leader = ens.leader_index()
    target = next(i for i in (1, 2) if i != leader)  # a follower: its removal needs no new leader
    myid = target + 1
    line = f"server.{myid}={expected_line(ens, target)}"
    with trio.fail_after(120):
        async with zkwire.open_client(ens.member_hosts(0), session_timeout=20) as anonymous:
            with pytest.raises(zkwire.NoAuthError):
                await anonymous.reconfig(leaving=str(myid))
        # Through the hand-made session too: the server's error is in the typed error.
        with RawSession(ens._member_address(0), 10.0) as session, pytest.raises(ServerRefusedError) as refused:
            session.reconfig(leaving=str(myid))
        assert refused.value.code == zkwire.NoAuthError.code and refused.value.error == "NOAUTH"
        assert myid in parse(ens.config_text())[0]

        async with zkwire.open_client(ens.member_hosts(0), session_timeout=20, auth=[ens.super_auth]) as admin:
            config = await admin.reconfig(leaving=myid)
            assert config.member(myid) is None
            assert config.stat is not None and config.stat.mzxid == config.version
            # The member is still running, with its data: it may join again.
            while True:
                try:
                    config = await admin.reconfig(joining=line)
                    break
                except zkwire.NewConfigNoQuorumError:  # it has not caught up with the leader yet
                    await trio.sleep(0.2)
            assert parse(config.text())[0][myid] == expected_line(ens, target)


async def test_the_super_users_password_is_in_no_repr_or_log(
    reconfigurable: EmbeddedEnsemble, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    ens = reconfigurable
    credential = ens.super_auth
    assert isinstance(credential, AuthCredential) and credential.scheme == "digest"
    user, _, password = credential.credential.decode().partition(":")
    assert user == "super" and len(password) >= 24
    assert EmbeddedEnsemble(3, reconfigurable=True).super_auth != credential  # chosen per ensemble
    texts = [repr(ens), str(ens), repr(credential), str(credential), repr([credential]), repr(ens.options)]
    with trio.fail_after(120):
        async with zkwire.open_client(ens.member_hosts(0), session_timeout=20, auth=[credential]) as admin:
            texts += [repr(admin), repr(await admin.who_am_i())]
            follower = next(i for i in (1, 2) if i != ens.leader_index())
            await admin.reconfig(leaving=str(follower + 1))
            while True:
                try:
                    await admin.reconfig(joining=f"server.{follower + 1}={expected_line(ens, follower)}")
                    break
                except zkwire.NewConfigNoQuorumError:
                    await trio.sleep(0.2)
        await trio.to_thread.run_sync(ens.remove_member, follower)
        try:
            async with zkwire.open_client(ens.member_hosts(0), auth=[("digest", b"super:wrong")]) as wrong:
                await wrong.get_data("/")
        except zkwire.AuthFailedError as exc:
            texts += [str(exc), repr(exc), "".join(traceback.format_exception(exc))]
    texts += [caplog.text, *(r.getMessage() for r in caplog.records), ens.log_tail(lines=100_000)]
    texts += [ens.log_tail(i, 100_000) for i in range(3)]
    blob = "\n".join(texts)
    assert password not in blob and password.encode().hex() not in blob
    assert ens._super_digest().partition(":")[2] in ens.log_tail(0, 100_000)  # the servers know the digest only


async def test_ensembles_that_cannot_reconfigure_say_so() -> None:
    plain = EmbeddedEnsemble(3)
    with pytest.raises(ReconfigError, match="reconfigurable=True"):
        plain.add_member()
    with pytest.raises(zkwire.ZKError, match="no super user"):
        _ = plain.super_auth
    with pytest.raises(ReconfigError, match="not started"):
        EmbeddedEnsemble(3, reconfigurable=True).remove_member(0)

    docker = DockerEnsemble(3)  # nothing started: the refusal comes first
    with pytest.raises(ReconfigError, match="backend docker"):
        docker.add_member()
    with pytest.raises(ReconfigError, match="backend docker"):
        docker.remove_member(0)
