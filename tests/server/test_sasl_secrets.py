"""No credential or token anywhere a SASL session's traffic or failures show up: the logs (at DEBUG),
exceptions (message, repr, traceback), reprs, and ``zkwire trace`` between the client and a server
requiring SASL (text, verbose and JSON).  With ``--reveal-secrets`` the tracer does show the tokens:
that proves the search would find them."""

from __future__ import annotations

import logging
import re
import subprocess
import traceback
from typing import Any

import pytest
import trio
from helpers.sasl import SASL_USERS, SaslServer
from helpers.tracerproc import TracerProcess

import zkwire
from zkwire.sasl import DigestMD5
from zkwire.sasl.digest import DigestExchange


class RecordingDigest:
    """DIGEST-MD5 that keeps the random parts of every token both ways: the values to look for."""

    name = "DIGEST-MD5"
    blocking = False

    def __init__(self, user: str, password: str) -> None:
        self.inner = DigestMD5(user, password)
        self.secrets: set[str] = {password}

    def identity(self) -> str:
        return self.inner.identity()

    def exchange(self, host: str) -> RecordingExchange:
        return RecordingExchange(self.inner.exchange(host), self.secrets)


class RecordingExchange:
    def __init__(self, inner: DigestExchange, secrets: set[str]) -> None:
        self.inner = inner
        self.secrets = secrets

    def initial_response(self) -> bytes:
        return self.inner.initial_response()

    def evaluate(self, challenge: bytes) -> bytes | None:
        self._keep(challenge)
        token = self.inner.evaluate(challenge)
        if token is not None:
            self._keep(token)
        return token

    def _keep(self, token: bytes) -> None:
        for key in ("nonce", "cnonce", "response", "rspauth"):
            for value in re.findall(rf'(?:^|,){key}="?([^",]+)', token.decode("utf-8", "replace")):
                self.secrets.add(value)

    @property
    def complete(self) -> bool:
        return self.inner.complete


async def _scenario(hosts: str, texts: list[str]) -> list[RecordingDigest]:
    alice = RecordingDigest("alice", SASL_USERS["alice"])
    wrong = RecordingDigest("bob", "bob-wrong-pw-" + "9c41e7")
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
    return [alice, wrong]


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
        mechanisms = await _scenario(tracer.hosts, texts)
    finally:
        _, err = tracer.stop()
    traced = (tracer.output + err).decode("utf-8", "replace")
    assert "SASL" in traced.upper() or "sasl" in traced  # the exchange was traced
    secrets = set().union(*(m.secrets for m in mechanisms))
    assert len(secrets) >= 8  # two passwords; nonce, cnonce and response of both exchanges, rspauth
    texts += [traced, caplog.text, *(r.getMessage() for r in caplog.records)]
    assert _found(texts, secrets) == set()


async def test_the_tracer_shows_tokens_only_when_asked(sasl_server: SaslServer) -> None:
    tracer = TracerProcess(
        sasl_server.hosts, "--max-line", "0", "--verbose", "--reveal-secrets", stdout=subprocess.PIPE
    )
    texts: list[str] = []
    try:
        mechanisms: list[Any] = await _scenario(tracer.hosts, texts)
    finally:
        tracer.stop()
    traced = tracer.output.decode("utf-8", "replace")
    tokens = set().union(*(m.secrets for m in mechanisms)) - {SASL_USERS["alice"], "bob-wrong-pw-9c41e7"}
    assert _found([traced], tokens) == tokens  # every token value, when the user asks for them
