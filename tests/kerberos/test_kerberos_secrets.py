"""No Kerberos token or key anywhere a GSSAPI session's traffic or failures show up: the logs (at DEBUG),
exceptions (message, repr, traceback), reprs, and ``zkwire trace`` between the client and a server
requiring Kerberos (text, verbose and JSON), through a session, a sever (the exchange redone) and a
refused authentication.  The tokens are binary: what is looked for is every distinctive 16-byte slice
of each token the mechanism produced or received (and of the keytabs and the ticket cache), in hex
(contiguous, as the JSON shows payloads, and as the verbose hexdump spreads them over its lines) and
raw (the bytes as text, and as a bytes repr).  With ``--reveal-secrets`` the tracer does show the
tokens: that proves the search would find them."""

from __future__ import annotations

import logging
import re
import subprocess
import traceback
from pathlib import Path

import pytest
import trio
from helpers.faultproxy import open_fault_proxy
from helpers.kerberos import KerberosServer
from helpers.sasl import RecordingMechanism
from helpers.tracerproc import TracerProcess

import zkwire
from zkwire import SessionState
from zkwire.sasl import Kerberos
from zkwire.testing.kerberos import KerberosPrincipal

#: A slice is this long, and distinctive when it has this many different bytes and no run of this
#: many printable characters (principal and realm names are no secret).
SLICE, DISTINCT, PRINTABLE_RUN = 16, 13, 6


def distinctive_slices(data: bytes) -> set[bytes]:
    """The 16-byte slices of ``data`` (every 4 bytes) that look like key material or ciphertext."""
    found = set()
    for start in range(0, max(len(data) - SLICE, 0) + 1, 4):
        piece = data[start : start + SLICE]
        if len(piece) < SLICE or len(set(piece)) < DISTINCT:
            continue
        if re.search(rb"[\x20-\x7e]{%d}" % PRINTABLE_RUN, piece):
            continue
        found.add(piece)
    return found


def _hexdump_streams(text: str) -> list[str]:
    """The hex of each run of hexdump lines (``    0010  aa bb ... |text|``), joined into one string."""
    streams, current = [], []
    for line in text.splitlines():
        match = re.match(r"\s+[0-9a-f]{4}  ((?:(?:[0-9a-f]{2}|\*\*) ?){1,16})\s*\|", line)
        if match:
            current.append(match.group(1).replace(" ", ""))
        elif current:
            streams.append("".join(current))
            current = []
    if current:
        streams.append("".join(current))
    return streams


def found(texts: list[str], slices: set[bytes]) -> set[bytes]:
    """The slices that appear in ``texts``, in hex or raw."""
    blob = "\n".join(texts)
    lowered = blob.lower()
    streams = "\n".join(_hexdump_streams(blob))
    hits = set()
    for piece in slices:
        forms = [piece.decode("latin-1"), repr(piece)[2:-1]]
        if any(form in blob for form in forms) or piece.hex() in lowered or piece.hex() in streams:
            hits.add(piece)
    return hits


def _failure(e: BaseException) -> list[str]:
    return [str(e), repr(e), "".join(traceback.format_exception(e))]


@pytest.fixture(scope="module")
def elsewhere(kerberos_server: KerberosServer) -> KerberosPrincipal:
    """A service principal the KDC knows and the server does not hold: a ticket for it is refused."""
    return kerberos_server.kerberos.realm.service_principal("zookeeper", "secrets-elsewhere")


async def _scenario(
    kerberos_server: KerberosServer, elsewhere: KerberosPrincipal, tracer: TracerProcess, texts: list[str]
) -> list[RecordingMechanism]:
    setup = kerberos_server.kerberos
    # The tracer and the proxy in front of it are reached by address: the server's principal is named.
    alice = RecordingMechanism(Kerberos(ccache=setup.ccache, server_principal=setup.service.name))
    refused = RecordingMechanism(Kerberos(ccache=setup.ccache, server_principal=elsewhere.name))
    with trio.fail_after(30):
        async with open_fault_proxy("127.0.0.1", tracer.port) as proxy:
            async with zkwire.open_client(proxy.hosts, sasl=alice, session_timeout=10) as zk:
                texts += [repr(zk), repr(alice.inner), repr(await zk.who_am_i())]
                await zk.ensure_path("/krb-secrets")
                assert await proxy.sever() >= 1
                await zk.wait_for_state(SessionState.SUSPENDED, SessionState.CONNECTING)
                await zk.wait_connected()
                assert ("sasl", kerberos_server.principal) in await zk.who_am_i()
                texts.append(repr(zk))
        try:
            async with zkwire.open_client(tracer.hosts, sasl=refused):
                raise AssertionError("must not connect")
        except zkwire.AuthFailedError as e:
            assert "-124" in str(e)  # the server could not accept the ticket
            texts += _failure(e)
    assert len([t for t in alice.tokens if len(t) >= SLICE]) >= 6  # AP-REQ, AP-REP, offer and choice, twice
    assert refused.tokens and len(refused.tokens[0]) >= SLICE  # the AP-REQ the server refused
    return [alice, refused]


def _keys(kerberos_server: KerberosServer) -> set[bytes]:
    """Slices of the keytabs (the server's and alice's) and of alice's ticket cache."""
    setup = kerberos_server.kerberos
    files = [setup.service.keytab, setup.alice.keytab, Path(setup.ccache.removeprefix("FILE:"))]
    return set().union(*(distinctive_slices(path.read_bytes()) for path in files))


@pytest.mark.parametrize("mode", [[], ["--verbose"], ["--json"]], ids=["text", "verbose", "json"])
async def test_no_token_or_key_in_logs_errors_reprs_or_the_tracer(
    kerberos_server: KerberosServer,
    elsewhere: KerberosPrincipal,
    mode: list[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    tracer = TracerProcess(kerberos_server.server.hosts, "--max-line", "0", *mode, stdout=subprocess.PIPE)
    texts: list[str] = []
    try:
        mechanisms = await _scenario(kerberos_server, elsewhere, tracer, texts)
    finally:
        _, err = tracer.stop()
    traced = (tracer.output + err).decode("utf-8", "replace")
    assert "sasl" in traced.lower()  # the exchanges were traced
    tokens = [t for m in mechanisms for t in m.tokens]
    slices = set().union(*(distinctive_slices(t) for t in tokens)) | _keys(kerberos_server)
    assert len(slices) >= 100
    texts += [traced, caplog.text, *(r.getMessage() for r in caplog.records)]
    assert found(texts, slices) == set()


async def test_the_tracer_shows_the_tokens_only_when_asked(
    kerberos_server: KerberosServer, elsewhere: KerberosPrincipal
) -> None:
    tracer = TracerProcess(
        kerberos_server.server.hosts, "--max-line", "0", "--verbose", "--reveal-secrets", stdout=subprocess.PIPE
    )
    texts: list[str] = []
    try:
        mechanisms = await _scenario(kerberos_server, elsewhere, tracer, texts)
    finally:
        tracer.stop()
    traced = tracer.output.decode("utf-8", "replace")
    tokens = [t for m in mechanisms for t in m.tokens if distinctive_slices(t)]
    assert len(tokens) >= 7
    # Every token the mechanisms sent or received is found, when the user asks for them.
    missing = [len(t) for t in tokens if not found([traced], distinctive_slices(t))]
    assert missing == []
