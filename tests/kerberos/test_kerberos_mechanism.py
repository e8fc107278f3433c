"""The GSSAPI mechanism's tokens against a GSSAPI acceptor written here (the server's keytab from the
session's KDC, RFC 4752's server side by hand): no ZooKeeper involved."""

from __future__ import annotations

import struct
import time

import gssapi
import pytest
from helpers.kerberos import KerberosSetup

from zkwire.errors import AuthFailedError
from zkwire.sasl.kerberos import Kerberos, KerberosExchange

#: The acceptor's offer: every layer (none, integrity, confidentiality), 64 KiB messages.
OFFER = struct.pack(">I", (0x07 << 24) | 0x10000)


class Acceptor:
    """RFC 4752's server side: accept the context, offer the security layers, read the choice."""

    def __init__(self, setup: KerberosSetup) -> None:
        creds = gssapi.Credentials(usage="accept", store={"keytab": str(setup.service.keytab)})
        self.context = gssapi.SecurityContext(creds=creds, usage="accept")
        self.tokens_in: list[int] = []

    def step(self, token: bytes) -> bytes:
        """The server's answer to one client token."""
        self.tokens_in.append(len(token))
        if not self.context.complete:
            out = self.context.step(token)
            if out:
                return out
        return self.context.wrap(OFFER, False).message


def run(exchange: KerberosExchange, acceptor: Acceptor) -> tuple[bytes, list[str]]:
    """Drive the exchange as the session does; (the client's last token, the order of what was sent)."""
    sent = [exchange.initial_response()]
    trail = ["initial"]
    for _ in range(5):
        challenge = acceptor.step(sent[-1])
        if exchange.complete:
            break
        token = exchange.evaluate(challenge)
        assert token is not None
        sent.append(token)
        trail.append("empty" if token == b"" else "token")
    assert exchange.complete
    return sent[-1], trail


def test_the_exchange_authenticates_the_principal_of_the_ticket_cache(kerberos_realm: KerberosSetup) -> None:
    mechanism = Kerberos(ccache=kerberos_realm.ccache)
    acceptor = Acceptor(kerberos_realm)
    exchange = mechanism.exchange("localhost")
    assert exchange.target == "zookeeper@localhost"
    last, trail = run(exchange, acceptor)
    # AP-REQ; the server's AP-REP (mutual authentication) answered by an empty token; then the choice.
    assert trail == ["initial", "empty", "token"]
    assert str(acceptor.context.initiator_name) == kerberos_realm.alice.name
    assert mechanism.identity() == kerberos_realm.alice.name
    choice = acceptor.context.unwrap(last)
    assert choice.message == bytes([0x01, 0, 0, 0])  # no security layer, size 0, no authorization id
    assert not choice.encrypted
    with pytest.raises(AuthFailedError, match="after GSSAPI had finished"):
        exchange.evaluate(b"more")


def test_the_exchange_leaves_the_servers_tokens_as_they_were(kerberos_realm: KerberosSetup) -> None:
    # MIT's unwrap works in place on the buffer it is given: the mechanism gives it a copy, so the
    # bytes object the session (or a recorder of the traffic) holds keeps what the server sent.
    exchange = Kerberos(ccache=kerberos_realm.ccache).exchange("localhost")
    acceptor = Acceptor(kerberos_realm)
    token = exchange.initial_response()
    seen = 0
    while not exchange.complete:
        challenge = acceptor.step(token)
        before = bytes(bytearray(challenge))  # a copy of its own
        answer = exchange.evaluate(challenge)
        assert challenge == before
        assert answer is not None
        token, seen = answer, seen + 1
    assert seen == 2  # the AP-REP and the wrapped offer


def test_a_client_keytab_needs_no_kinit_and_leaves_the_default_cache_alone(kerberos_realm: KerberosSetup) -> None:
    alice = kerberos_realm.alice
    default_cache = kerberos_realm.realm.directory / "default.cc"
    mechanism = Kerberos(principal=alice.name, keytab=alice.keytab)
    for _ in range(2):  # the second exchange reuses the mechanism's memory cache
        acceptor = Acceptor(kerberos_realm)
        run(mechanism.exchange("localhost"), acceptor)
        assert str(acceptor.context.initiator_name) == alice.name
    assert not default_cache.exists()


def test_an_address_names_no_principal_unless_canonicalised_or_pinned(kerberos_realm: KerberosSetup) -> None:
    cache = kerberos_realm.ccache
    with pytest.raises(AuthFailedError) as caught:
        Kerberos(ccache=cache).exchange("127.0.0.1").initial_response()
    assert "zookeeper/127.0.0.1@ZKWIRE.TEST not found in Kerberos database" in str(caught.value)
    # Canonicalised as the Java client does (127.0.0.1 is localhost in /etc/hosts), or pinned.
    for mechanism in (
        Kerberos(ccache=cache, canonicalize_host=True),
        Kerberos(ccache=cache, server_principal=kerberos_realm.service.name),
    ):
        acceptor = Acceptor(kerberos_realm)
        run(mechanism.exchange("127.0.0.1"), acceptor)
        assert str(acceptor.context.initiator_name) == kerberos_realm.alice.name


def test_an_unknown_service_principal_is_auth_failed(kerberos_realm: KerberosSetup) -> None:
    with pytest.raises(AuthFailedError, match=r"nosuch/localhost@ZKWIRE\.TEST not found"):
        Kerberos(ccache=kerberos_realm.ccache, service="nosuch").exchange("localhost").initial_response()


def test_no_ticket_is_auth_failed_saying_so(kerberos_realm: KerberosSetup) -> None:
    missing = kerberos_realm.realm.directory / "nobody.cc"
    with pytest.raises(AuthFailedError, match="no Kerberos ticket"):
        Kerberos(ccache=missing).exchange("localhost")


def test_an_expired_ticket_is_auth_failed_then_a_new_kinit_works(kerberos_realm: KerberosSetup) -> None:
    cache = kerberos_realm.fresh_ccache("expiring", lifetime="2s")
    mechanism = Kerberos(ccache=cache)
    run(mechanism.exchange("localhost"), Acceptor(kerberos_realm))
    deadline = time.monotonic() + 10
    while True:
        try:
            mechanism.exchange("localhost").initial_response()
        except AuthFailedError as e:
            assert "expired" in str(e)
            break
        assert time.monotonic() < deadline, "the 2 s ticket did not expire"
        time.sleep(0.5)
    kerberos_realm.fresh_ccache("expiring")  # kinit again, into the same cache
    acceptor = Acceptor(kerberos_realm)
    run(mechanism.exchange("localhost"), acceptor)
    assert str(acceptor.context.initiator_name) == kerberos_realm.alice.name


def test_a_server_failing_mutual_authentication_is_auth_failed_without_the_token(
    kerberos_realm: KerberosSetup,
) -> None:
    exchange = Kerberos(ccache=kerberos_realm.ccache).exchange("localhost")
    exchange.initial_response()
    forged = bytes(range(96, 224))
    with pytest.raises(AuthFailedError) as caught:
        exchange.evaluate(forged)
    text = str(caught.value)
    assert "GSSAPI could not check the answer of zookeeper@localhost" in text
    assert forged.hex() not in text and repr(forged) not in text and repr(forged)[2:30] not in text
    with pytest.raises(AuthFailedError, match="empty GSSAPI token"):
        Kerberos(ccache=kerberos_realm.ccache).exchange("localhost").evaluate(b"")


@pytest.mark.parametrize(
    ("offer", "message"),
    [(bytes([0x06, 0, 0x10, 0]), "requires a GSSAPI security layer"), (b"\x01\x00\x00", "3 bytes")],
)
def test_a_bad_security_layer_offer_is_auth_failed(kerberos_realm: KerberosSetup, offer: bytes, message: str) -> None:
    acceptor = Acceptor(kerberos_realm)
    exchange = Kerberos(ccache=kerberos_realm.ccache).exchange("localhost")
    reply = acceptor.step(exchange.initial_response())
    assert exchange.evaluate(reply) == b""
    with pytest.raises(AuthFailedError, match=message):
        exchange.evaluate(acceptor.context.wrap(offer, False).message)
    assert not exchange.complete
    with pytest.raises(AuthFailedError, match="security-layer offer"):
        Kerberos(ccache=kerberos_realm.ccache).exchange("localhost")._choose_layer(b"not wrapped")


def test_reprs_hold_no_token(kerberos_realm: KerberosSetup) -> None:
    mechanism = Kerberos(principal=kerberos_realm.alice.name, keytab=kerberos_realm.alice.keytab)
    exchange = mechanism.exchange("localhost")
    token = exchange.initial_response()
    for text in (repr(mechanism), repr(exchange), str(mechanism)):
        assert token.hex()[:16] not in text and "MEMORY:" not in text
    assert repr(exchange) == "<KerberosExchange to 'zookeeper@localhost', context>"
