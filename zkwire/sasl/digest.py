"""DIGEST-MD5 (RFC 2831), as ZooKeeper's servers serve it.

ZooKeeper's server side (the JDK's DIGEST-MD5 server behind ``DigestLoginModule``) offers ``qop=auth``
only -- authentication, no integrity or confidentiality layer -- with the realm and host name
``zk-sasl-md5`` and the protocol ``zookeeper``; every ZooKeeper client uses those names.  The exchange
(observed on 3.8.0; protocol-notes/sasl.md):

1. the client sends an empty token;
2. the server sends a challenge (``realm``, ``nonce``, ``qop="auth"``, ``charset=utf-8``,
   ``algorithm=md5-sess``);
3. the client sends its digest-response (:meth:`DigestExchange.evaluate`);
4. the server answers ``rspauth=...``, proving it knows the password too; the client checks it and
   sends nothing more.

A wrong password is refused by the server in step 4 (error -115, or -124 where SASL is required).  A
challenge the client cannot answer (malformed, no ``nonce``, no ``auth`` quality of protection), or a
``rspauth`` that does not match, raises :class:`~zkwire.errors.AuthFailedError`.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass, field
from typing import ClassVar

from ..errors import AuthFailedError, InvalidArgumentError

__all__ = ["DigestMD5", "DigestExchange", "ZOOKEEPER_SERVER_NAME", "digest_values", "parse_challenge"]

#: The host name every ZooKeeper client and server use in DIGEST-MD5 (digest-uri ``zookeeper/zk-sasl-md5``).
ZOOKEEPER_SERVER_NAME = "zk-sasl-md5"
#: Longest challenge accepted (RFC 2831 caps it at 2,048 bytes).
MAX_CHALLENGE = 2048


def _md5(data: bytes) -> bytes:
    return hashlib.md5(data, usedforsecurity=False).digest()


def _hex_md5(data: bytes) -> bytes:
    return hashlib.md5(data, usedforsecurity=False).hexdigest().encode("ascii")


def parse_challenge(data: bytes) -> dict[str, list[str]]:
    """``key=value, key="quoted value", ...`` -> key (lower-cased) -> its values, in order.

    Raises:
        AuthFailedError: the text is not a list of directives.
    """
    if len(data) > MAX_CHALLENGE:
        raise AuthFailedError(detail=f"DIGEST-MD5 challenge of {len(data)} bytes (at most {MAX_CHALLENGE})")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise AuthFailedError(detail="DIGEST-MD5 challenge is not UTF-8") from None
    directives: dict[str, list[str]] = {}
    i, n = 0, len(text)
    while i < n:
        while i < n and text[i] in " \t\r\n,":
            i += 1
        if i >= n:
            break
        eq = text.find("=", i)
        if eq < 0:
            raise AuthFailedError(detail="malformed DIGEST-MD5 challenge (a directive without '=')")
        key = text[i:eq].strip().lower()
        if not key or not all(c.isalnum() or c in "-_" for c in key):
            raise AuthFailedError(detail="malformed DIGEST-MD5 challenge (a bad directive name)")
        i = eq + 1
        if i < n and text[i] == '"':
            i += 1
            chars = []
            while True:
                if i >= n:
                    raise AuthFailedError(detail="malformed DIGEST-MD5 challenge (an unterminated quoted value)")
                c = text[i]
                if c == "\\" and i + 1 < n:
                    chars.append(text[i + 1])
                    i += 2
                    continue
                if c == '"':
                    i += 1
                    break
                chars.append(c)
                i += 1
            value = "".join(chars)
        else:
            end = text.find(",", i)
            end = n if end < 0 else end
            value = text[i:end].strip()
            i = end
        directives.setdefault(key, []).append(value)
        while i < n and text[i] in " \t\r\n":
            i += 1
        if i < n and text[i] != ",":
            raise AuthFailedError(detail="malformed DIGEST-MD5 challenge (text after a value)")
    return directives


def digest_values(
    username: bytes,
    realm: bytes,
    password: bytes,
    nonce: str,
    cnonce: str,
    nc: str,
    digest_uri: str,
    authzid: str = "",
) -> tuple[str, bytes]:
    """RFC 2831 2.1.2.1 for ``qop=auth``: the client's ``response`` value and the ``rspauth`` the
    server must answer with (both 32 hex digits)."""
    secret = _md5(username + b":" + realm + b":" + password)
    a1 = secret + b":" + nonce.encode() + b":" + cnonce.encode()
    if authzid:
        a1 += b":" + authzid.encode("utf-8")
    ha1 = _hex_md5(a1)
    tail = b":".join([nonce.encode(), nc.encode(), cnonce.encode(), b"auth"])

    def digest(a2: bytes) -> bytes:
        return _hex_md5(ha1 + b":" + tail + b":" + _hex_md5(a2))

    return digest(b"AUTHENTICATE:" + digest_uri.encode()).decode("ascii"), digest(b":" + digest_uri.encode())


def _quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _one(directives: dict[str, list[str]], key: str) -> str | None:
    values = directives.get(key)
    if values is None:
        return None
    if len(values) != 1:
        raise AuthFailedError(detail=f"DIGEST-MD5 challenge repeats {key!r}")
    return values[0]


@dataclass(eq=False)
class DigestMD5:
    """DIGEST-MD5 with a user name and password (``open_client(hosts, sasl=DigestMD5("alice", pw))``):
    the server's JAAS ``Server`` section lists the user (``user_alice="..."``); its ACLs then see
    ``sasl:alice``.  ``authzid``: an authorization id to act as (empty: the user's own)."""

    username: str
    password: str | bytes = field(repr=False)
    authzid: str = ""
    #: The mechanism's IANA name.
    name: str = field(default="DIGEST-MD5", init=False)
    #: Computing a response is a few hashes: done on the event loop.
    blocking: bool = field(default=False, init=False)
    #: Added to the message of a refusal by the server (which gives no reason).
    refusal_hint: ClassVar[str] = "a wrong user name or password?"

    def __post_init__(self) -> None:
        if not isinstance(self.username, str) or not self.username:
            raise InvalidArgumentError("DIGEST-MD5 needs a user name (a non-empty str)")
        if not isinstance(self.password, str | bytes):
            raise InvalidArgumentError(f"a DIGEST-MD5 password is a str or bytes, not {type(self.password).__name__}")
        given: tuple[tuple[str, str | bytes], ...] = (
            ("user name", self.username),
            ("password", self.password),
            ("authzid", self.authzid),
        )
        for what, value in given:
            if not isinstance(value, str):
                continue
            if what != "password" and any(ord(c) < 0x20 for c in value):
                raise InvalidArgumentError(f"the DIGEST-MD5 {what} holds a control character")
            if any("\ud800" <= c <= "\udfff" for c in value):
                raise InvalidArgumentError(f"the DIGEST-MD5 {what} is not valid UTF-8 text")

    def exchange(self, host: str) -> DigestExchange:
        """A new exchange (``host`` is not used: every ZooKeeper server is ``zk-sasl-md5`` here)."""
        return DigestExchange(self)

    def identity(self) -> str:
        return self.username


class DigestExchange:
    """One DIGEST-MD5 authentication (see the module for the steps)."""

    __slots__ = ("_cnonce", "_expected_rspauth", "_mechanism", "_step", "complete")

    def __init__(self, mechanism: DigestMD5) -> None:
        self._mechanism = mechanism
        self._step = 0
        self._expected_rspauth = b""
        self._cnonce = secrets.token_hex(16)
        self.complete = False

    def __repr__(self) -> str:
        return f"<DigestExchange for {self._mechanism.username!r}, step {self._step}>"

    def initial_response(self) -> bytes:
        return b""

    def evaluate(self, challenge: bytes) -> bytes | None:
        self._step += 1
        if self._step == 1:
            return self._respond(challenge)
        if self._step == 2:
            self._check_rspauth(challenge)
            return None
        raise AuthFailedError(detail="the server went on after DIGEST-MD5 had finished")

    def _respond(self, challenge: bytes) -> bytes:
        if not challenge:
            raise AuthFailedError(
                detail="the server sent no DIGEST-MD5 challenge (is SASL set up on the server: a JAAS Server section?)"
            )
        d = parse_challenge(challenge)
        nonce = _one(d, "nonce")
        if not nonce:
            raise AuthFailedError(detail="DIGEST-MD5 challenge without a nonce")
        qops = {q.strip() for value in d.get("qop", ["auth"]) for q in value.split(",")}
        if "auth" not in qops:
            raise AuthFailedError(detail=f"the server offers no DIGEST-MD5 'auth' protection ({sorted(qops)})")
        algorithm = _one(d, "algorithm")
        if algorithm is not None and algorithm.lower() != "md5-sess":
            raise AuthFailedError(detail=f"DIGEST-MD5 algorithm {algorithm!r} (md5-sess expected)")
        realms = d.get("realm", [])
        realm = realms[0] if realms else ""
        utf8 = (_one(d, "charset") or "").lower() == "utf-8"
        mech = self._mechanism
        digest_uri = f"zookeeper/{ZOOKEEPER_SERVER_NAME}"
        nc = "00000001"

        def text(value: str) -> bytes:
            # With charset=utf-8 the strings are UTF-8; otherwise ISO 8859-1 where they fit (RFC 2831 2.1.2.1).
            if not utf8:
                try:
                    return value.encode("latin-1")
                except UnicodeEncodeError:
                    pass
            return value.encode("utf-8")

        password = mech.password if isinstance(mech.password, bytes) else text(mech.password)
        response, self._expected_rspauth = digest_values(
            text(mech.username), text(realm), password, nonce, self._cnonce, nc, digest_uri, mech.authzid
        )
        parts = [
            ("charset", "utf-8") if utf8 else None,
            ("username", _quote(mech.username)),
            ("realm", _quote(realm)) if realms else None,
            ("nonce", _quote(nonce)),
            ("nc", nc),
            ("cnonce", _quote(self._cnonce)),
            ("digest-uri", _quote(digest_uri)),
            ("maxbuf", "65536"),
            ("response", response),
            ("qop", "auth"),
            ("authzid", _quote(mech.authzid)) if mech.authzid else None,
        ]
        return ",".join(f"{k}={v}" for k, v in (p for p in parts if p is not None)).encode("utf-8")

    def _check_rspauth(self, challenge: bytes) -> None:
        rspauth = _one(parse_challenge(challenge), "rspauth") if challenge else None
        if rspauth is None:
            raise AuthFailedError(detail="the server's last DIGEST-MD5 message has no rspauth")
        if not hmac.compare_digest(rspauth.encode("ascii", "replace"), self._expected_rspauth):
            raise AuthFailedError(
                detail="the server's DIGEST-MD5 rspauth does not match (it does not know the password)",
            )
        self.complete = True
