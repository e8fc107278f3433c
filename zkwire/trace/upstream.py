"""Where the tracing proxy forwards a connection: servers tried in order (a whole ensemble), in plain TCP
or TLS (trio).

:class:`Upstreams` connects each client connection to the first server that answers within
``connect_timeout`` (TCP connect, and the TLS handshake when TLS is on); a failure is kept to say why
no server would do.  :func:`tls_context` builds the client-side TLS context from a CA file and an
optional client certificate, with a :class:`~zkwire.errors.InvalidArgumentError` naming the file that
would not load.
"""

from __future__ import annotations

import ssl
from collections.abc import Sequence
from dataclasses import dataclass, field

import trio

from ..client.connectlog import tls_failure
from ..client.tls import tls_context as client_tls_context
from ..errors import InvalidArgumentError, ZKError

__all__ = ["Upstreams", "UpstreamError", "tls_context", "Endpoint"]

Endpoint = tuple[str, int]


class UpstreamError(ZKError, ConnectionError):
    """No server took the connection; ``failures`` says why, server by server."""

    def __init__(self, failures: list[str]) -> None:
        super().__init__("no server could be reached: " + "; ".join(failures))
        self.failures = failures


def tls_context(ca: str | None = None, cert: str | None = None, key: str | None = None) -> ssl.SSLContext:
    """A client TLS context verifying the server against ``ca`` (default: the system's CAs), presenting
    ``cert`` (with ``key``, or a key in the same file) when given: :func:`zkwire.tls_context`."""
    if key is not None and cert is None:
        raise InvalidArgumentError("a client key needs its certificate (--cert)")
    return client_tls_context(ca=ca, cert=cert, key=key)


def _name(server: Endpoint) -> str:
    host, port = server
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


@dataclass
class Upstreams:
    """The servers, in the order they are tried; ``tls`` on, with ``server_hostname`` checked against the
    certificate (default: the server's host as given)."""

    servers: Sequence[Endpoint]
    tls: ssl.SSLContext | None = None
    server_hostname: str | None = None
    connect_timeout: float = 5.0
    names: list[str] = field(init=False)

    def __post_init__(self) -> None:
        if not self.servers:
            raise InvalidArgumentError("no upstream server given")
        self.names = [_name(s) for s in self.servers]

    async def connect(self) -> tuple[trio.abc.Stream, Endpoint, list[str]]:
        """A stream to the first server that answers, that server, and what failed before it.

        Raises:
            UpstreamError: none answered (each server's failure is in it).
        """
        failures: list[str] = []
        for server in self.servers:
            stream = await self._try(server, failures)
            if stream is not None:
                return stream, server, failures
        raise UpstreamError(failures)

    async def _try(self, server: Endpoint, failures: list[str]) -> trio.abc.Stream | None:
        host, port = server
        tcp: trio.SocketStream | None = None
        with trio.move_on_after(self.connect_timeout):
            try:
                tcp = await trio.open_tcp_stream(host, port)
                if self.tls is None:
                    return tcp
                secure = trio.SSLStream(tcp, self.tls, server_hostname=self.server_hostname or host)
                await secure.do_handshake()
                return secure
            except (OSError, trio.BrokenResourceError) as e:
                cause = e.__cause__ if isinstance(e, trio.BrokenResourceError) and e.__cause__ else e
                refused = tls_failure(e, _name(server))  # a certificate refused: say which, and why
                failures.append(str(refused) if refused is not None else f"{_name(server)}: {cause}")
                if tcp is not None:
                    await trio.aclose_forcefully(tcp)
                return None
            except BaseException:  # cancelled: the socket goes with it
                if tcp is not None:
                    with trio.CancelScope(shield=True):
                        await trio.aclose_forcefully(tcp)
                raise
        failures.append(f"{_name(server)}: no answer in {self.connect_timeout:g} s")
        if tcp is not None:
            await trio.aclose_forcefully(tcp)
        return None
