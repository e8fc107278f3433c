"""The GSSAPI mechanism's rules that need no KDC: its arguments, the server's name for a host, and the
error when the kerberos extra is missing."""

from __future__ import annotations

import os
import sys

import pytest

from zkwire.errors import InvalidArgumentError
from zkwire.sasl import Kerberos
from zkwire.sasl.kerberos import KerberosUnavailableError, canonical_host

try:
    import gssapi  # noqa: F401
except ImportError:  # in CI a failure (.ci/setup installs the extra), elsewhere a skip that says why
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        raise
    pytest.skip("the kerberos extra (gssapi) is not installed", allow_module_level=True)


def test_the_server_name_is_the_host_as_given_in_the_connect_string() -> None:
    mechanism = Kerberos()
    assert mechanism.target("ZK1.Example.com") == ("zookeeper@zk1.example.com", True)
    assert mechanism.target("127.0.0.1") == ("zookeeper@127.0.0.1", True)
    assert mechanism.target("[::1]") == ("zookeeper@::1", True)
    assert Kerberos(service="zk").target("localhost") == ("zk@localhost", True)
    pinned = Kerberos(server_principal="zookeeper/zk.example.com@EXAMPLE.COM", canonicalize_host=True)
    assert pinned.target("10.1.2.3") == ("zookeeper/zk.example.com@EXAMPLE.COM", False)


def test_canonicalisation_looks_the_address_up_again() -> None:
    assert canonical_host("127.0.0.1") == "localhost"  # /etc/hosts
    assert Kerberos(canonicalize_host=True).target("127.0.0.1") == ("zookeeper@localhost", True)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"service": ""},
        {"service": "zookeeper/host"},
        {"principal": ""},
        {"principal": "al ice"},
        {"server_principal": ""},
    ],
)
def test_bad_arguments_are_refused(kwargs: dict[str, str]) -> None:
    with pytest.raises(InvalidArgumentError):
        Kerberos(**kwargs)  # type: ignore[arg-type]


def test_a_ccache_path_gets_its_type_and_the_repr_shows_file_names_only() -> None:
    mechanism = Kerberos(ccache="/tmp/alice.cc", keytab="/etc/alice.keytab", principal="alice@EXAMPLE.COM")
    assert mechanism.ccache == "FILE:/tmp/alice.cc"
    assert Kerberos(ccache="KCM:1000").ccache == "KCM:1000"
    assert "MEMORY:" not in repr(mechanism) and "_memory_cache" not in repr(mechanism)
    assert mechanism.identity() == "alice@EXAMPLE.COM" and mechanism.name == "GSSAPI" and mechanism.blocking


def test_without_gssapi_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "gssapi", None)
    with pytest.raises(KerberosUnavailableError, match=r"pip install 'zkwire\[kerberos\]'") as caught:
        Kerberos()
    assert isinstance(caught.value, ImportError) and caught.value.name == "gssapi"
