"""DIGEST-MD5 (zkwire.sasl.digest): RFC 2831's worked example, the exchange as ZooKeeper's server runs
it, and every malformed challenge a typed refusal."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from zkwire.errors import AuthFailedError, InvalidArgumentError
from zkwire.sasl import DigestMD5
from zkwire.sasl.digest import digest_values, parse_challenge

#: What ZooKeeper 3.8.0's server sends first (its shape; the nonce varies).
CHALLENGE = b'realm="zk-sasl-md5",nonce="dGVzdG5vbmNl",qop="auth",charset=utf-8,algorithm=md5-sess'


def test_rfc_2831_worked_example() -> None:
    # RFC 2831 section 4: user chris, password secret, realm elwood.innosoft.com, imap.
    response, rspauth = digest_values(
        b"chris", b"elwood.innosoft.com", b"secret", "OA6MG9tEQGm2hh", "OA6MHXh6VqTrRk", "00000001",
        "imap/elwood.innosoft.com",
    )  # fmt: skip
    assert response == "d388dad90d4bbd760a152321f2143af7"
    assert rspauth == b"ea40f60335c427b5527b84dbabcdfffd"


def response_of(mech: DigestMD5, challenge: bytes = CHALLENGE) -> tuple[object, dict[str, list[str]]]:
    ex = mech.exchange("zk1")
    assert ex.initial_response() == b""
    token = ex.evaluate(challenge)
    assert token is not None and not ex.complete
    return ex, parse_challenge(token)


def test_the_response_as_zookeeper_expects_it() -> None:
    _, d = response_of(DigestMD5("alice", "pw"))
    assert d["username"] == ["alice"] and d["realm"] == ["zk-sasl-md5"] and d["nonce"] == ["dGVzdG5vbmNl"]
    assert d["digest-uri"] == ["zookeeper/zk-sasl-md5"] and d["qop"] == ["auth"] and d["nc"] == ["00000001"]
    assert d["charset"] == ["utf-8"] and len(d["cnonce"][0]) == 32
    expected, _ = digest_values(
        b"alice", b"zk-sasl-md5", b"pw", "dGVzdG5vbmNl", d["cnonce"][0], "00000001", "zookeeper/zk-sasl-md5"
    )
    assert d["response"] == [expected]


def test_rspauth_completes_the_exchange_and_a_wrong_one_is_refused() -> None:
    mech = DigestMD5("alice", "pw")
    ex, d = response_of(mech)
    _, rspauth = digest_values(
        b"alice", b"zk-sasl-md5", b"pw", "dGVzdG5vbmNl", d["cnonce"][0], "00000001", "zookeeper/zk-sasl-md5"
    )
    assert ex.evaluate(b"rspauth=" + rspauth) is None and ex.complete  # type: ignore[attr-defined]
    with pytest.raises(AuthFailedError, match="went on"):
        ex.evaluate(b"rspauth=" + rspauth)  # type: ignore[attr-defined]
    ex2, _ = response_of(mech)
    with pytest.raises(AuthFailedError, match="does not match"):
        ex2.evaluate(b"rspauth=00000000000000000000000000000000")  # type: ignore[attr-defined]
    assert not ex2.complete  # type: ignore[attr-defined]


def test_a_non_ascii_user_and_password_are_utf8_under_charset_utf8() -> None:
    _, d = response_of(DigestMD5("jürgen", "pässwörd"))
    expected, _ = digest_values(
        "jürgen".encode(), b"zk-sasl-md5", "pässwörd".encode(), "dGVzdG5vbmNl", d["cnonce"][0], "00000001",
        "zookeeper/zk-sasl-md5",
    )  # fmt: skip
    assert d["response"] == [expected] and d["username"] == ["jürgen"]


def test_the_cnonce_is_fresh_for_every_exchange() -> None:
    mech = DigestMD5("alice", "pw")
    assert response_of(mech)[1]["cnonce"] != response_of(mech)[1]["cnonce"]


@pytest.mark.parametrize(
    ("challenge", "reason"),
    [
        (b"", "no DIGEST-MD5 challenge"),
        (b'realm="zk-sasl-md5",qop="auth"', "without a nonce"),
        (b'nonce="n",qop="auth-conf"', "no DIGEST-MD5 'auth' protection"),
        (b'nonce="n",algorithm=md5', "md5-sess expected"),
        (b'nonce="unterminated', "unterminated"),
        (b"nonce", "without '='"),
        (b'nonce="a",nonce="b"', "repeats 'nonce'"),
        (b'nonce="a" junk', "text after a value"),
        (b"\xff\xfe", "not UTF-8"),
        (b'nonce="' + b"x" * 3000 + b'"', "at most 2048"),
        (b'=x,nonce="a"', "bad directive name"),
    ],
)
def test_a_challenge_that_cannot_be_answered_is_refused(challenge: bytes, reason: str) -> None:
    with pytest.raises(AuthFailedError, match=reason):
        DigestMD5("alice", "pw").exchange("zk1").evaluate(challenge)


def test_quoted_values_unescape() -> None:
    assert parse_challenge(b'realm="a\\"b\\\\c", nonce=x ,qop="auth,auth-int"') == {
        "realm": ['a"b\\c'],
        "nonce": ["x"],
        "qop": ["auth,auth-int"],
    }


@given(st.binary(max_size=300))
def test_any_challenge_is_answered_or_refused_with_auth_failed(challenge: bytes) -> None:
    try:
        DigestMD5("alice", "pw").exchange("zk1").evaluate(challenge)
    except AuthFailedError:
        pass


def test_the_password_is_in_no_repr() -> None:
    mech = DigestMD5("alice", "sekrit-value")
    ex = mech.exchange("zk1")
    assert "sekrit-value" not in repr(mech) and "sekrit-value" not in repr(ex)
    assert mech.identity() == "alice"


@pytest.mark.parametrize(
    ("user", "password"),
    [("", "pw"), ("a\nb", "pw"), ("alice", 42), ("alice", "pw\udcff")],
    ids=["empty", "control", "password-type", "surrogate"],
)
def test_bad_arguments_are_invalid_argument(user: str, password: object) -> None:
    with pytest.raises(InvalidArgumentError):
        DigestMD5(user, password)  # type: ignore[arg-type]
