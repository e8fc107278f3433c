"""The ``zkwire`` shell's ``config`` and ``reconfig`` against real servers (a standalone one, whose configuration
is empty and which refuses reconfiguration; an ensemble of our own with reconfiguration enabled), and what
the tracing proxy shows of them: a reconfig's lists and versions, a configuration's version."""

from __future__ import annotations

import io
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
import trio
from helpers.cli import closed_port, zkw, zkw_all
from helpers.tracerproc import TracerProcess

import zkwire
from zkwire.client.api import Client
from zkwire.shell.commands import COMMANDS
from zkwire.shell.context import Context
from zkwire.shell.dispatch import execute_line
from zkwire.shell.outcomes import EXIT_CONNECTION
from zkwire.testing.embedded import EmbeddedEnsemble

# ------------------------------------------------------------------------------------ a standalone server


async def test_a_standalone_server_shows_an_empty_configuration(zk_hosts: str) -> None:
    plain, client, stat = await zkw_all(zk_hosts, [["config"], ["config", "-c"], ["config", "-s"]])
    assert (plain.code, plain.out, plain.err) == (0, "\n", "")
    assert (client.code, client.out, client.err) == (0, "0 \n", "")
    assert stat.code == 0 and stat.out.startswith("\ncZxid = 0x") and "dataLength = 0" in stat.out
    # -w waits for the configuration to change, as any one-shot -w does: it does not here.
    r = await zkw(zk_hosts, "config", "-w", options=("--timeout", "1"))
    assert (r.code, r.out, r.err) == (4, "\n", "No watch event within 1s\n")


async def test_reconfig_on_a_server_that_does_not_allow_it(zk_hosts: str) -> None:
    results = await zkw_all(
        zk_hosts,
        [
            ["reconfig", "-remove", "3"],
            ["reconfig", "-add", "server.9=127.0.0.1:1:2;127.0.0.1:3", "-v", "100000000"],
            ["reconfig", "-members", "server.1=127.0.0.1:1:2;3"],
        ],
    )
    assert [(r.code, r.out, r.err) for r in results] == [(1, "", "Reconfiguration is disabled\n")] * 3


async def test_contradictory_or_malformed_reconfig_arguments_are_refused_before_connecting(tmp_path: Path) -> None:
    # Nothing listens on the port: a usage error (exit 2) shows that nothing was even attempted.
    hosts = f"127.0.0.1:{closed_port()}"
    members, grouped = tmp_path / "members.cfg", tmp_path / "grouped.cfg"
    members.write_text("server.1=127.0.0.1:1:2;3\nversion=100000000\n")
    grouped.write_text("server.1=127.0.0.1:1:2;3\ngroup.1=1:2:3\n")
    usage = COMMANDS["reconfig"].usage
    cases = [
        (["reconfig"], "reconfig: give -add and/or -remove, or -members, or -file"),
        (
            ["reconfig", "-members", "server.1=h:1:2;3", "-remove", "2"],
            "reconfig: -members cannot be combined with -add or -remove"
            " (a whole new membership, or a change to the current one)",
        ),
        (
            ["reconfig", "-file", str(members), "-members", "server.1=h:1:2;3"],
            "reconfig: -members and -file cannot be combined (each is the whole new membership)",
        ),
        (
            ["reconfig", "-file", str(grouped)],
            f"reconfig: {grouped}, line 2: not a server.N= line (only those and a version= line are read)",
        ),
        (["reconfig", "-remove", "1,two"], "reconfig: -remove takes server ids separated by commas, not 'two'"),
        (
            ["reconfig", "-remove", "3", "-v", "12g"],
            "reconfig: -v takes the configuration's version in hexadecimal (as config shows it), not '12g'",
        ),
        (["reconfig", "-add", "server.4=h:1;2"], "reconfig: a quorum address is host:port:port in 'server.4=h:1;2'"),
        (["reconfig", "-add"], f"reconfig: option -add needs a value; usage: {usage}"),
        (["reconfig", "-adds", "x"], f"reconfig: unknown option -adds; usage: {usage}"),
        (["config", "-v"], "config: unknown option -v; usage: config [-c] [-w] [-s]"),
    ]
    results = await zkw_all(hosts, [args for args, _ in cases])
    assert [(r.code, r.out, r.err) for r in results] == [(2, "", message + "\n") for _, message in cases]


class _LosingClient:
    """A session whose reconfig loses its connection (the member it was on left the ensemble)."""

    async def reconfig(self, **arguments: Any) -> None:
        raise zkwire.ConnectionLossError()


async def test_a_lost_connection_during_reconfig_says_it_may_have_been_applied() -> None:
    out, err = io.StringIO(), io.StringIO()
    ctx = Context(hosts="127.0.0.1:1", out=out, err=err)
    ctx.client = cast(Client, _LosingClient())
    assert await execute_line(ctx, "reconfig -remove 3") == EXIT_CONNECTION
    assert out.getvalue() == ""
    assert err.getvalue() == (
        "Connection lost: the reconfiguration may have been applied (the server this session was on may have"
        " left the ensemble); read it with config\n"
    )


# ------------------------------------------------------------------------- an ensemble that reconfigures


@pytest.fixture
def reconfigurable() -> Iterator[EmbeddedEnsemble]:
    """Three members that allow any session to reconfigure them."""
    ensemble = EmbeddedEnsemble(3, extra_config={"reconfigEnabled": "true", "skipACL": "yes"})
    ensemble.start()
    try:
        yield ensemble
    finally:
        ensemble.stop()


def _json_lines(output: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in output.decode().splitlines() if line.startswith("{")]


@pytest.mark.ensemble
async def test_reconfig_removes_a_member_through_the_tracer(reconfigurable: EmbeddedEnsemble, tmp_path: Path) -> None:
    ensemble = reconfigurable
    # The shell talks to the leader and removes a follower: no election, so no connection is lost.
    leader = await trio.to_thread.run_sync(ensemble.leader_index)
    on = ensemble.member_hosts(leader)
    removed = next(i for i in range(3) if i != leader) + 1
    kept = [i for i in (1, 2, 3) if i != removed]
    async with zkwire.open_client(on, follow_ensemble=False) as zk:
        before = await zk.get_config()
    assert [m.id for m in before.members] == [1, 2, 3]
    version = f"{before.version:x}"

    r = await zkw(on, "config")
    assert (r.code, r.out, r.err) == (0, before.text() + "\n", "")
    r = await zkw(on, "config", "-c")
    assert (r.code, r.err) == (0, "") and r.out.startswith(f"{version} ")

    member_file = tmp_path / "members.cfg"
    member_file.write_text("# a copy of the node\n" + before.text() + "\n")
    tracer = TracerProcess(on, "--json", stdout=subprocess.PIPE)
    try:
        # A stale version is refused by the server; so is a -file membership from a version gone by.
        stale = await zkw(tracer.hosts, "reconfig", "-remove", str(removed), "-v", f"{before.version - 1:x}")
        assert (stale.code, stale.out, stale.err) == (1, "", "Version does not match\n")
        r = await zkw(tracer.hosts, "reconfig", "-s", "-remove", str(removed), "-v", version, limit=60)
        assert r.code == 0 and r.err == "", r.err
        async with zkwire.open_client(on, follow_ensemble=False) as zk:
            after = await zk.get_config()
        assert [m.id for m in after.members] == kept and after.version > before.version
        lines = r.out.splitlines()
        assert lines[0] == "Committed new configuration:"
        assert "\n".join(lines[1:4]) == after.text() and lines[4].startswith("cZxid = 0x")
        again = await zkw(tracer.hosts, "reconfig", "-file", str(member_file), "-v", version)
        assert (again.code, again.out, again.err) == (1, "", "Version does not match\n")
        r = await zkw(tracer.hosts, "config", "-c")
        assert r.code == 0 and r.out.startswith(f"{after.version:x} ")
        await trio.sleep(0.5)  # the tracer prints the last replies
    finally:
        code, err = tracer.stop()
    assert code == 130 and err == b"", err.decode()

    frames = _json_lines(tracer.output)
    requests = [f for f in frames if f["kind"] == "request" and f["op_name"] == "reconfig"]
    assert [f["config"] for f in requests] == [
        {"joining": None, "leaving": [removed], "members": None, "from_config": before.version - 1},
        {"joining": None, "leaving": [removed], "members": None, "from_config": before.version},
        {
            "joining": None,
            "leaving": None,
            "members": [m.spec() for m in before.members],
            "from_config": before.version,
        },
    ]
    assert requests[1]["note"] == f"leaving 1 [{removed}]; from config 0x{before.version:x}"
    replies = [f for f in frames if f["kind"] == "reply" and f["op_name"] == "reconfig"]
    assert [(f["err_name"], f["config"]) for f in replies] == [
        ("BADVERSION", None),
        ("OK", {"version": after.version, "members": kept}),
        ("BADVERSION", None),
    ]
    assert replies[1]["note"] == f"config version 0x{after.version:x}, members {kept[0]}, {kept[1]}"
    reads = [f for f in frames if f["kind"] == "reply" and f["op_name"] == "getData"]
    assert reads and all(f["path"] == "/zookeeper/config" for f in reads)
    assert reads[-1]["config"] == {"version": after.version, "members": kept}
