"""No credential or token anywhere a SASL session's traffic or failures show up: the logs (at DEBUG),
exceptions (message, repr, traceback), reprs, and ``zkwire trace`` between the client and a server
requiring SASL (text, verbose and JSON).  With ``--reveal-secrets`` the tracer does show the tokens:
that proves the search would find them."""

from __future__ import annotations

import logging
import re
import signal
import socket
import subprocess
import sys
import time
import traceback
from typing import Any

import pytest
import trio
from helpers.sasl import SASL_USERS, SaslServer

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


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Tracer:
    def __init__(self, server: str, *args: str) -> None:
        self.port = _free_port()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "zkwire", "trace", "--listen", f"127.0.0.1:{self.port}", "--server", server, *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    raise
                time.sleep(0.05)

    def stop(self) -> str:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        try:
            out, err = self.proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            out, err = self.proc.communicate()
        return out + err


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
    tracer = Tracer(sasl_server.hosts, "--max-line", "0", *mode)
    texts: list[str] = []
    try:
        mechanisms = await _scenario(f"127.0.0.1:{tracer.port}", texts)
    finally:
        traced = tracer.stop()
    assert "SASL" in traced.upper() or "sasl" in traced  # the exchange was traced
    secrets = set().union(*(m.secrets for m in mechanisms))
    assert len(secrets) >= 8  # two passwords; nonce, cnonce and response of both exchanges, rspauth
    texts += [traced, caplog.text, *(r.getMessage() for r in caplog.records)]
    assert _found(texts, secrets) == set()


async def test_the_tracer_shows_tokens_only_when_asked(sasl_server: SaslServer) -> None:
    tracer = Tracer(sasl_server.hosts, "--max-line", "0", "--verbose", "--reveal-secrets")
    texts: list[str] = []
    try:
        mechanisms: list[Any] = await _scenario(f"127.0.0.1:{tracer.port}", texts)
    finally:
        traced = tracer.stop()
    tokens = set().union(*(m.secrets for m in mechanisms)) - {SASL_USERS["alice"], "bob-wrong-pw-9c41e7"}
    assert _found([traced], tokens) == tokens  # every token value, when the user asks for them
