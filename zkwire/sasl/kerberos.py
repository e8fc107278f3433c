"""GSSAPI (Kerberos V5, RFC 4752), as ZooKeeper's servers serve it, through the ``gssapi`` package.

``gssapi`` is an optional dependency: ``pip install 'zkwire[kerberos]'`` (it builds against MIT
Kerberos' headers: Debian's ``libkrb5-dev`` and a C compiler).  It is imported when a :class:`Kerberos`
is made; without it that raises :class:`KerberosUnavailableError`, naming the extra.

**Who the client is.**  The client principal's ticket-granting ticket comes from a ticket cache: the
default one (``KRB5CCNAME``, as ``kinit`` fills it) or ``ccache=``.  With ``keytab=`` the client gets its
tickets itself from the keytab's keys (MIT's "client keytab"): they are kept in a memory cache of the
mechanism, renewed when they expire, and never written to the user's cache.  ``principal=`` picks the
principal (needed with a keytab holding several; otherwise the cache's or keytab's default one).

**Which server.**  The server must hold the keys of ``<service>/<host>@REALM`` (``zookeeper/<host>``
unless ``service=`` says otherwise).  The host is the one the connection was made to, as written in the
connect string -- each connection of a session recomputes it, so a session that moves to another server
of the ensemble authenticates to that server.  It is given to the Kerberos library as the host-based
name ``service@host``; zkwire makes no DNS lookup of its own, and the library still applies the
machine's ``krb5.conf`` rules for such names (``dns_canonicalize_hostname``, ``rdns``, ``[domain_realm]``)
as it does for ``ssh`` or ``curl``.  Two options change that:

* ``canonicalize_host=True`` does what ZooKeeper's Java client does by default
  (``zookeeper.sasl.client.canonicalize.hostname``): the host is resolved and its address looked up
  again (reverse DNS, ``/etc/hosts`` first), and the canonical name found is used -- so a connect string
  of addresses or aliases reaches ``zookeeper/<the server's own name>``.  An address that has no name
  is used as it is.
* ``server_principal="zookeeper/zk1.example.com@EXAMPLE.COM"`` names the server's principal outright
  (the Java client's ``zookeeper.server.principal``): no host is looked at, and the name is not
  canonicalised.  Meant for a single server or an ensemble whose members share one principal.

The default (no lookup by zkwire) is kazoo's rule and the one that fails loudly rather than
authenticating to a name found in DNS: connect to the names the principals carry (``zk1.example.com``,
``localhost``), not to addresses.

**The exchange** (RFC 4752; observed on 3.8.0, protocol-notes/sasl-kerberos.md): the client's first
token is its Kerberos AP-REQ; the server answers with its AP-REP (mutual authentication), which the
client checks and answers with an empty token; the server then sends a wrapped 4-byte offer of security
layers, and the client answers with a wrapped choice of "no security layer" (ZooKeeper never wraps
frames), a maximum message size of 0 and no authorization id, so the server authorizes the
authenticated principal itself (``sasl:alice@EXAMPLE.COM`` unless the server's
``zookeeper.kerberos.remove*FromPrincipal`` settings shorten it).

Failures -- no ticket, an expired ticket, a server principal the KDC does not know, a server that fails
mutual authentication -- raise :class:`~zkwire.errors.AuthFailedError` with a detail naming the cause
(the Kerberos library's message), never a token.  The mechanism's methods may block on the KDC:
``blocking`` is True, and the session calls them in a worker thread.
"""

from __future__ import annotations

import ipaddress
import os
import socket
import struct
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import AuthFailedError, ConnectionLossError, InvalidArgumentError

if TYPE_CHECKING:
    import gssapi

__all__ = [
    "Kerberos",
    "KerberosExchange",
    "KerberosUnavailableError",
    "SECURITY_LAYER_NONE",
    "canonical_host",
]

#: RFC 4752's bit for "no security layer" in the server's offer and the client's choice.
SECURITY_LAYER_NONE = 0x01
#: The extra that brings ``gssapi``.
INSTALL_HINT = "pip install 'zkwire[kerberos]' (the gssapi package; it builds with libkrb5-dev and a C compiler)"


class KerberosUnavailableError(ImportError):
    """The ``gssapi`` package (the ``kerberos`` extra) is not installed."""

    def __init__(self) -> None:
        super().__init__(f"Kerberos (GSSAPI) needs the gssapi package: {INSTALL_HINT}", name="gssapi")


def _gssapi() -> Any:
    try:
        import gssapi
    except ImportError:
        raise KerberosUnavailableError() from None
    return gssapi


def canonical_host(host: str) -> str:
    """The Java client's canonical host name: ``host`` resolved, then its address looked up again
    (reverse DNS, ``/etc/hosts`` first); ``host`` itself when there is no name (the address as given).

    Raises:
        AuthFailedError: ``host`` does not resolve.
    """
    try:
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except OSError as e:
        raise AuthFailedError(detail=f"cannot resolve {host!r} for its Kerberos principal ({e})") from None
    address = str(infos[0][4][0])
    try:
        name, _ = socket.getnameinfo((address, 0), socket.NI_NAMEREQD)
    except OSError:
        return host
    return name.lower()


#: MIT Kerberos's minor codes for a KDC that cannot be reached (KRB5_KDC_UNREACH, KRB5_REALM_CANT_RESOLVE),
#: signed and as the library reports them (unsigned 32-bit): for now, not a refusal.
KDC_UNREACHABLE = frozenset({-1765328228, -1765328228 + (1 << 32), -1765328164, -1765328164 + (1 << 32)})


def _gss_failure(what: str, error: BaseException) -> AuthFailedError | ConnectionLossError:
    """An AuthFailedError for a GSSAPI error: the library's messages, which name principals and
    caches but hold no key or token.  A KDC out of reach is a ConnectionLossError instead: the session
    drops the connection and tries again, as for a server out of reach (a KDC outage during a failover
    must not end a session)."""
    gss = _gssapi()
    major = ""
    if isinstance(error, gss.exceptions.ExpiredCredentialsError):
        major = "the Kerberos ticket has expired (renew it: kinit)"
    elif isinstance(error, gss.exceptions.MissingCredentialsError):
        major = "no Kerberos ticket (kinit first, or give a keytab)"
    messages = []
    if isinstance(error, gss.exceptions.GSSError):
        for code, kind in ((error.maj_code, "major"), (error.min_code, "minor")):
            try:
                text = error.get_all_statuses(code, kind == "major")
            except Exception:  # a message the library cannot produce: the type says enough
                text = []
            messages += [str(t).strip() for t in text if str(t).strip() and str(t).strip() != "Success"]
    else:
        messages.append(type(error).__name__)
    # "Unspecified GSS failure.  Minor code may provide more information": the minor code's message follows.
    messages = [m for m in messages if not m.startswith("Unspecified GSS failure")] or messages
    detail = "; ".join(dict.fromkeys([m for m in [major, *messages] if m]))
    if isinstance(error, gss.exceptions.GSSError) and error.min_code in KDC_UNREACHABLE:
        return ConnectionLossError(detail=f"GSSAPI {what}: {detail}")
    return AuthFailedError(detail=f"GSSAPI {what}: {detail}")


@dataclass(eq=False)
class Kerberos:
    """GSSAPI (Kerberos) for ``open_client(hosts, sasl=Kerberos())`` (see the module for the rules).

    ``service``: the first part of the server's principal (``zookeeper``). ``principal``: the client
    principal (default: the cache's or keytab's). ``keytab``: a client keytab to get tickets from.
    ``ccache``: a ticket cache (``FILE:/path``, or a path) instead of the default one.
    ``canonicalize_host``: look the host up as the Java client does. ``server_principal``: the
    server's principal, verbatim.  Nothing here is a secret, but the repr shows file names only.
    """

    service: str = "zookeeper"
    principal: str | None = None
    keytab: str | os.PathLike[str] | None = None
    ccache: str | os.PathLike[str] | None = None
    canonicalize_host: bool = False
    server_principal: str | None = None
    #: The mechanism's IANA name.
    name: str = field(default="GSSAPI", init=False)
    #: Tickets may have to be fetched from the KDC: the exchange runs in a worker thread.
    blocking: bool = field(default=True, init=False)
    _memory_cache: str | None = field(default=None, init=False, repr=False)
    #: The client principal of the last credentials found (for messages when none was given).
    _found_principal: str | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        _gssapi()
        if not isinstance(self.service, str) or not self.service or any(c in self.service for c in "/@ "):
            raise InvalidArgumentError(f"a Kerberos service is a word without '/', '@' or spaces, not {self.service!r}")
        for what, value in (("principal", self.principal), ("server_principal", self.server_principal)):
            if value is not None and (not isinstance(value, str) or not value or any(ord(c) < 0x21 for c in value)):
                raise InvalidArgumentError(f"the Kerberos {what} must be a non-empty name without spaces")
        if self.keytab is not None:
            self.keytab = os.fspath(self.keytab)
            # The client's tickets, fetched with the keytab, live in a cache of this mechanism only.
            self._memory_cache = f"MEMORY:zkwire-{os.getpid()}-{id(self):x}"
        if self.ccache is not None:
            cache = os.fspath(self.ccache)
            self.ccache = cache if ":" in cache.split("/", 1)[0] else f"FILE:{cache}"

    def identity(self) -> str:
        return self.principal or self._found_principal or "the default Kerberos principal"

    def target(self, host: str) -> tuple[str, bool]:
        """The server's name for a connection to ``host``: (name, host-based?) -- ``service@host``, or
        :attr:`server_principal` verbatim.

        Raises:
            AuthFailedError: ``canonicalize_host`` is set and ``host`` does not resolve.
        """
        if self.server_principal is not None:
            return self.server_principal, False
        if self.canonicalize_host:
            host = canonical_host(host)
        else:
            try:
                host = str(ipaddress.ip_address(host.strip("[]")))
            except ValueError:
                host = host.lower()
        return f"{self.service}@{host}", True

    def credentials(self) -> gssapi.Credentials:
        """The client's credentials (the ticket-granting ticket is looked at, or fetched from the
        keytab, now).

        Raises:
            AuthFailedError: there is no usable ticket.
        """
        gss = _gssapi()
        name = None
        if self.principal is not None:
            name = gss.Name(self.principal, gss.NameType.kerberos_principal)
        store: dict[bytes | str, bytes | str] = {}
        if self.keytab is not None:
            store["client_keytab"] = str(self.keytab)
            store["ccache"] = str(self._memory_cache)
        elif self.ccache is not None:
            store["ccache"] = str(self.ccache)
        try:
            creds: gssapi.Credentials = gss.Credentials(name=name, usage="initiate", store=store or None)
            if self.keytab is None:
                creds.inquire(name=False, lifetime=True, usage=False, mechs=False)  # raises if it expired
        except gss.exceptions.GSSError as e:
            raise _gss_failure("could not get the client's credentials", e) from None
        if self.principal is None:
            try:
                self._found_principal = str(creds.name)
            except gss.exceptions.GSSError:
                pass
        return creds

    def exchange(self, host: str) -> KerberosExchange:
        """A new exchange with the server at ``host`` (may block: the credentials are looked at here).

        Raises:
            AuthFailedError: no usable ticket, or ``host`` does not resolve.
        """
        target, host_based = self.target(host)
        return KerberosExchange(self, self.credentials(), target, host_based)


class KerberosExchange:
    """One GSSAPI authentication (RFC 4752): the security context, then the security-layer choice."""

    __slots__ = ("_context", "_host_based", "_mechanism", "_phase", "complete", "target")

    def __init__(self, mechanism: Kerberos, creds: gssapi.Credentials, target: str, host_based: bool) -> None:
        gss = _gssapi()
        self._mechanism = mechanism
        self.target = target
        self._host_based = host_based
        name_type = gss.NameType.hostbased_service if host_based else gss.NameType.kerberos_principal
        flags = gss.RequirementFlag.mutual_authentication | gss.RequirementFlag.integrity
        self._context = gss.SecurityContext(
            name=gss.Name(target, name_type),
            creds=creds,
            usage="initiate",
            mech=gss.MechType.kerberos,
            flags=flags,
        )
        #: "context" (establishing it), "layer" (waiting for the security-layer offer), "done".
        self._phase = "context"
        self.complete = False

    def __repr__(self) -> str:
        return f"<KerberosExchange to {self.target!r}, {self._phase}>"

    def initial_response(self) -> bytes:
        """The AP-REQ for the server's principal (fetching a service ticket from the KDC if needed).

        Raises:
            AuthFailedError: the ticket expired, the KDC does not know the server's principal...
        """
        return self._step(None)

    def evaluate(self, challenge: bytes) -> bytes | None:
        if self._phase == "context":
            return self._step(challenge)
        if self._phase == "layer":
            return self._choose_layer(challenge)
        raise AuthFailedError(detail="the server went on after GSSAPI had finished")

    def _step(self, token: bytes | None) -> bytes:
        gss = _gssapi()
        if token is not None and not token:
            raise AuthFailedError(
                detail="the server sent an empty GSSAPI token (is Kerberos set up on the server: JAAS Server section?)"
            )
        try:
            out = self._context.step(token)
        except gss.exceptions.GSSError as e:
            kind = "start the security context with" if token is None else "check the answer of"
            raise _gss_failure(f"could not {kind} {self.target}", e) from None
        if self._context.complete:
            self._phase = "layer"
        return out or b""

    def _choose_layer(self, challenge: bytes) -> bytes:
        gss = _gssapi()
        try:
            # MIT's unwrap works in place on the buffer it is given (it rotates and clears the token's
            # header): it gets a copy, so the caller's bytes object keeps what the server sent.
            offer = self._context.unwrap(bytes(bytearray(challenge))).message
        except gss.exceptions.GSSError as e:
            raise _gss_failure("could not read the server's security-layer offer", e) from None
        if len(offer) != 4:
            raise AuthFailedError(detail=f"the server's GSSAPI security-layer offer is {len(offer)} bytes (4 expected)")
        if not offer[0] & SECURITY_LAYER_NONE:
            raise AuthFailedError(
                detail=f"the server requires a GSSAPI security layer (offer {offer[0]:#04x}); ZooKeeper uses none"
            )
        # No security layer, maximum message size 0 (no layer to size), no authorization id.
        choice = struct.pack(">I", SECURITY_LAYER_NONE << 24)
        try:
            wrapped = self._context.wrap(choice, False).message
        except gss.exceptions.GSSError as e:
            raise _gss_failure("could not wrap the security-layer choice", e) from None
        self._phase = "done"
        self.complete = True
        return bytes(wrapped)
