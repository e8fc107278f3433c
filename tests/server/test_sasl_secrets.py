"""No credential or token anywhere a SASL session's traffic or failures show up: the logs (at DEBUG),
exceptions (message, repr, traceback), reprs, and ``zkwire trace`` between the client and a server
requiring SASL (text, verbose and JSON).  With ``--reveal-secrets`` the tracer does show the tokens:
that proves the search would find them."""

from __future__ import annotations

import logging
import re
import subprocess
import traceback

import pytest
import trio
from helpers.sasl import SASL_USERS, RecordingMechanism, SaslServer
from helpers.tracerproc import TracerProcess

import zkwire
from zkwire.sasl import DigestMD5


def digest_secrets(mechanism: RecordingMechanism, password: str) -> set[str]:
    """The password and the random parts of every DIGEST-MD5 token both ways: the values to look for."""
    secrets = {password}
    for token in mechanism.tokens:
        for key in ("nonce", "cnonce", "response", "rspauth"):
            secrets.update(re.findall(rf'(?:^|,){key}="?([^",]+)', token.decode("utf-8", "replace")))
    return secrets


async def _scenario(hosts: str, texts: list[str]) -> set[str]:
    alice = RecordingMechanism(DigestMD5("alice", SASL_USERS["alice"]))
    wrong = RecordingMechanism(DigestMD5("bob", "bob-wrong-pw-" + "9c41e7"))
    with trio.fail_after(30):
        async with zkwire.open_client(hosts, sasl=alice) as zk:
            texts += [repr(zk), repr(alice.inner), repr(await zk.who_am_i())]
            await zk.ensure_path("/sasl-secrets")
        try:
            async with zkwire.open_client(hosts, sasl=wrong):
                raise AssertionError("must not connect")
        except zkwire.AuthFailedError as e:
            texts += [str(e), repr(e), "".join(traceback.format_exception(e))]
        async with zkwire.open_client(hosts) as plain:
            try:
                await plain.exists("/")
            except zkwire.SessionClosedRequireSaslAuthError as e:
                texts += [str(e), repr(e), "".join(traceback.format_exception(e))]
    return digest_secrets(alice, SASL_USERS["alice"]) | digest_secrets(wrong, "bob-wrong-pw-9c41e7")


def _found(texts: list[str], secrets: set[str]) -> set[str]:
    blob = "\n".join(texts)
    return {s for s in secrets if s in blob or s.encode().hex() in blob}


@pytest.mark.parametrize("mode", [[], ["--verbose"], ["--json"]], ids=["text", "verbose", "json"])
async def test_no_secret_in_logs_errors_reprs_or_the_tracer(
    sasl_server: SaslServer, mode: list[str], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    tracer = TracerProcess(sasl_server.hosts, "--max-line", "0", *mode, stdout=subprocess.PIPE)
    texts: list[str] = []
    try:
        secrets = await _scenario(tracer.hosts, texts)
    finally:
        _, err = tracer.stop()
    traced = (tracer.output + err).decode("utf-8", "replace")
    assert "SASL" in traced.upper() or "sasl" in traced  # the exchange was traced
    assert len(secrets) >= 8  # two passwords; nonce, cnonce and response of both exchanges, rspauth
    texts += [traced, caplog.text, *(r.getMessage() for r in caplog.records)]
    assert _found(texts, secrets) == set()


async def test_the_tracer_shows_tokens_only_when_asked(sasl_server: SaslServer) -> None:
    tracer = TracerProcess(
        sasl_server.hosts, "--max-line", "0", "--verbose", "--reveal-secrets", stdout=subprocess.PIPE
    )
    texts: list[str] = []
    try:
        secrets = await _scenario(tracer.hosts, texts)
    finally:
        tracer.stop()
    traced = tracer.output.decode("utf-8", "replace")
    tokens = secrets - {SASL_USERS["alice"], "bob-wrong-pw-9c41e7"}
    assert _found([traced], tokens) == tokens  # every token value, when the user asks for them
