"""zkwire's pytest plugin as a user's suite sees it: inert unless asked for, then the fixtures.

Each test runs pytest in a subprocess on a small suite of its own (pytester), with zkwire installed as
it is here: its ``pytest11`` entry point is active.
"""

from __future__ import annotations

import re
import socket
import time
from pathlib import Path
from typing import Any, cast

import pytest

from zkwire.testing import pytest_options
from zkwire.testing.base import free_ports
from zkwire.testing.handles import ServerHandle


@pytest.fixture(autouse=True)
def _no_outer_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    # The outer suite's settings (e.g. the docker pass of .ci/test) must not reach the inner suites.
    for name in (
        "ZKWIRE_TEST_BACKEND",
        "ZKWIRE_TEST_HOSTS",
        "ZKWIRE_TEST_IMAGE",
        "ZKWIRE_TEST_ENSEMBLE_PORTS",
        "ZKWIRE_TEST_PORT",
    ):
        monkeypatch.delenv(name, raising=False)


def test_installing_zkwire_changes_nothing_in_an_unrelated_suite(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An environment meant for another suite does not turn the plugin on either.
    monkeypatch.setenv("ZKWIRE_TEST_BACKEND", "docker")
    pytester.makeconftest(
        """
        import pytest

        @pytest.fixture
        def zk():
            return "the suite's own zk"
        """
    )
    pytester.makepyfile(
        """
        import sys
        import pytest

        def test_own_fixture_wins(zk):
            assert zk == "the suite's own zk"

        def test_nothing_of_zkwire_is_loaded(request):
            assert "zkwire.testing.plugin" not in sys.modules
            assert not any(name.startswith("zkwire.testing.embedded") for name in sys.modules)
            for name in ("zk_server", "zk_hosts", "zk_ensemble", "zk_chroot"):
                with pytest.raises(pytest.FixtureLookupError):
                    request.getfixturevalue(name)
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
    assert "zookeeper" not in result.stdout.str().lower()
    # The entry point is there, offering its options and nothing else.
    help_text = pytester.runpytest_subprocess("--help").stdout.str()
    assert "--zk-backend" in help_text and "zk_enable" in help_text


def test_opted_in_suite_gets_chrooted_clients(pytester: pytest.Pytester, zk_server: ServerHandle) -> None:
    """``zk_enable = true``; the session's server here is the external one of the inner suite."""
    pytester.makeini(
        """
        [pytest]
        zk_enable = true
        zk_root = /plugin-tests
        trio_mode = true
        """
    )
    pytester.makepyfile(
        """
        import zkwire

        chroots = []

        async def test_zk_is_a_client_in_a_fresh_chroot(zk, zk_chroot, zk_hosts, zk_connect_string):
            assert zk_chroot.startswith("/plugin-tests/test_zk_is_a_client_in_a_fresh_chroot-")
            assert zk_connect_string == zk_hosts + zk_chroot
            await zk.create("/app", b"data")
            async with zkwire.open_client(zk_hosts) as root:
                assert (await root.get_data(zk_chroot + "/app"))[0] == b"data"
            chroots.append(zk_chroot)

        async def test_the_chroot_is_gone_after_the_test(zk_hosts, zk_server):
            assert zk_server.backend == "external" and not zk_server.controllable
            async with zkwire.open_client(zk_hosts) as root:
                assert await root.exists(chroots[0]) is None
                assert await root.exists("/plugin-tests") is not None
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", f"--zk-hosts={zk_server.hosts}")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines([f"zookeeper: external ensemble {zk_server.hosts}"])


@pytest.mark.usefixtures("local_zookeeper")
def test_local_server_restart_failure_log_and_pinned_ensemble_ports(pytester: pytest.Pytester) -> None:
    """``-p zkwire.testing.plugin`` with the entry point off: a local server restarted from a trio test,
    its log in a failing test's report, an ensemble on pinned ports."""
    ports = free_ports(3)
    pytester.makeini(
        """
        [pytest]
        trio_mode = true
        """
    )
    pytester.makepyfile(
        f"""
        import zkwire

        async def test_restart_keeps_data_and_session(zk, zk_server):
            await zk.create("/kept", b"v1")
            sid = zk.session_id
            await zk_server.restart()
            assert (await zk.get_data("/kept"))[0] == b"v1"
            assert zk.session_id == sid

        async def test_a_stopped_server_is_back_for_the_next_test_1(zk_server):
            await zk_server.stop()
            assert not zk_server.running

        def test_a_stopped_server_is_back_for_the_next_test_2(zk_server):
            assert zk_server.running

        def test_failure_shows_the_server_log(zk_hosts, zk_server):
            zk_server.four_letter_word("envi")
            assert False, "fails on purpose"

        async def test_ensemble_on_pinned_ports(zk_ensemble):
            assert zk_ensemble.hosts == ",".join(f"127.0.0.1:{{p}}" for p in {ports!r})
            leader = await zk_ensemble.leader()
            await zk_ensemble.stop_member(leader)
            assert await zk_ensemble.leader() != leader
        """
    )
    result = pytester.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "-p",
        "no:zkwire",
        "-p",
        "zkwire.testing.plugin",
        f"--zk-ensemble-ports={','.join(map(str, ports))}",
    )
    result.assert_outcomes(passed=4, failed=1)
    out = result.stdout.str()
    assert "zookeeper: local servers from the installed package, tickTime 200 ms" in out
    section = out[out.index("zookeeper log (zk_server, call)") :]
    assert "Processing envi command" in section


@pytest.mark.usefixtures("local_zookeeper")
def test_standalone_server_on_a_pinned_port_and_a_busy_one(pytester: pytest.Pytester) -> None:
    """``zk_port`` in the ini file (``--zk-port`` on the command line wins) pins ``zk_server``'s client
    port; a port something else listens on fails the tests that use the server at once, in one line."""
    pinned, busy = free_ports(2)
    pytester.makeini(
        f"""
        [pytest]
        zk_enable = true
        zk_port = {pinned}
        """
    )
    pytester.makepyfile(
        f"""
        def test_the_server_listens_on_the_pinned_port(zk_server, zk_hosts):
            assert zk_hosts == "127.0.0.1:{pinned}"
            zk_server.four_letter_word("ruok")

        def test_without_a_server():
            pass
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", timeout=120)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines([f"zookeeper: local servers *, the standalone server on port {pinned}"])

    with socket.socket() as holder:
        holder.bind(("127.0.0.1", busy))
        holder.listen()
        started = time.monotonic()
        result = pytester.runpytest_subprocess("-p", "no:cacheprovider", f"--zk-port={busy}", timeout=120)
        took = time.monotonic() - started
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            f"*zkwire: no ZooKeeper server (local backend): port {busy} of 127.0.0.1 is in use "
            "(Address already in use): stop what holds it, or choose another port"
        ]
    )
    assert took < 60, took  # not a wait for a server that never comes


def test_zk_port_usage_errors(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_nothing(): pass")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--zk", "--zk-port=21x81")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*zkwire: --zk-port '21x81': not a TCP port (1 to 65535)*"])
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--zk-hosts=127.0.0.1:2181", "--zk-port=2181")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*zkwire: --zk-port starts the server on that port: not with an external ensemble*"])


class _Recorder:
    """Stands in for pytest's parser: records the names of the options and ini keys added."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def getgroup(self, *args: Any, **kwargs: Any) -> _Recorder:
        return self

    def addoption(self, *names: str, **kwargs: Any) -> None:
        self.names.extend(names)

    def addini(self, name: str, *args: Any, **kwargs: Any) -> None:
        self.names.append(name)


def test_every_setting_is_documented() -> None:
    """docs/testing.rst describes the plugin as it is: each option, ini key and environment variable."""
    recorder = _Recorder()
    pytest_options.add_options(cast(pytest.Parser, recorder))
    source = Path(pytest_options.__file__).read_text()
    variables = set(re.findall(r'"(ZKWIRE_TEST_[A-Z_]+)"', source))
    assert "--zk-port" in recorder.names and "zk_port" in recorder.names and "ZKWIRE_TEST_PORT" in variables
    page = (Path(__file__).resolve().parents[2] / "docs" / "testing.rst").read_text()
    missing = [name for name in [*recorder.names, *sorted(variables)] if f"``{name}``" not in page]
    assert not missing, missing
    assert "to come" not in page.lower()


@pytest.mark.usefixtures("local_zookeeper")
def test_a_suite_with_a_sasl_server_gives_the_fixtures_its_credentials(pytester: pytest.Pytester) -> None:
    """A users' suite secures its server (zkwire.testing.secured: DIGEST-MD5 required) and gives the
    fixtures' sessions the credentials with ``zk_client_options``; a client without them is refused."""
    pytester.makeini(
        """
        [pytest]
        zk_enable = true
        trio_mode = true
        """
    )
    pytester.makeconftest(
        """
        import pytest
        from zkwire.sasl import DigestMD5
        from zkwire.testing.secured import digest_sasl_options

        @pytest.fixture(scope="session")
        def zk_server_options(tmp_path_factory):
            return digest_sasl_options(tmp_path_factory.mktemp("jaas"), {"app": "app-secret"})

        @pytest.fixture(scope="session")
        def zk_client_options():
            return {"sasl": DigestMD5("app", "app-secret")}
        """
    )
    pytester.makepyfile(
        """
        import pytest
        import zkwire

        async def test_the_fixture_client_is_authenticated(zk, zk_hosts):
            assert ("sasl", "app") in await zk.who_am_i()
            await zk.create("/node", b"x")
            async with zkwire.open_client(zk_hosts) as anonymous:
                with pytest.raises(zkwire.SessionClosedRequireSaslAuthError):
                    await anonymous.exists("/")

        async def test_a_second_test_gets_its_own_chroot(zk):
            assert await zk.exists("/node") is None
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--zk-backend=local")
    result.assert_outcomes(passed=2)


@pytest.mark.usefixtures("local_zookeeper")
def test_a_suite_with_client_certificates_gets_a_tls_port(pytester: pytest.Pytester) -> None:
    """``zk_server_certificates`` gives the local server a TLS port requiring client certificates;
    the suite's tests reach it on ``zk_server.secure_hosts`` with the certificates' x509 identities."""
    pytester.makeini(
        """
        [pytest]
        zk_enable = true
        trio_mode = true
        """
    )
    pytester.makeconftest(
        """
        import pytest
        from zkwire.testing.certs import make_test_certificates

        @pytest.fixture(scope="session")
        def zk_server_certificates(tmp_path_factory):
            return make_test_certificates(tmp_path_factory.mktemp("certs"))
        """
    )
    pytester.makepyfile(
        """
        import zkwire

        async def test_an_x509_session(zk_server, zk_server_certificates):
            alice = zk_server_certificates.clients["alice"]
            context = zkwire.tls_context(ca=zk_server_certificates.ca, cert=alice.cert, key=alice.key)
            async with zkwire.open_client(zk_server.secure_hosts, ssl_context=context) as zk:
                assert ("x509", alice.dn) in await zk.who_am_i()

        async def test_the_plain_fixtures_still_work(zk):
            await zk.create("/plain", b"x")
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--zk-backend=local")
    result.assert_outcomes(passed=2)
