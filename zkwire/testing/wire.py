"""Blocking conversations with a server over a plain socket, for fixtures and readiness checks.

Two kinds: a four-letter word (:func:`four_letter_word`, the blocking front of
:class:`~zkwire.protocol.fourletter.FourLetterExchange`, as :func:`zkwire.client.fourletter.four_letter_word`
is its trio front), and a session opened by hand (:class:`RawSession`) for the few requests fixtures
make without the client under test: whoAmI, create, getChildren, delete, and for an ensemble's
membership an auth packet, sync, getData and reconfig.  Every frame is written and read by the
project's codec (:mod:`zkwire.protocol.codec`).

Standard library only (no pytest, no trio, no docker).
"""

from __future__ import annotations

import contextlib
import socket
import time
from collections.abc import Callable, Mapping, Sequence
from types import TracebackType
from typing import Any, Self

from ..constants import AUTH_XID, PING_XID, WATCH_XID, OpCode
from ..errors import NoNodeError, NotEmptyError, ProtocolError
from ..protocol.codec import (
    decode_connect_response,
    decode_reply,
    decode_reply_header,
    encode_connect_request,
    encode_request,
)
from ..protocol.fourletter import FourLetterExchange, FourLetterWordError, server_mode
from ..protocol.framing import LENGTH
from ..protocol.records import (
    AuthPacket,
    ConnectRequest,
    DeleteRequest,
    GetChildrenRequest,
    GetChildrenResponse,
    GetDataRequest,
    GetDataResponse,
    ReconfigRequest,
    Record,
    Stat,
    SyncRequest,
    WhoAmIResponse,
)
from ..sansio.hosts import parse_host_port
from .errors import EmbeddedZooKeeperError, ServerRefusedError

__all__ = [
    "PROBE_TIMEOUT",
    "RawSession",
    "client_address_seen_by",
    "delete_tree",
    "ensure_path",
    "four_letter_word",
    "probe_session",
    "serving",
    "split_address",
    "srvr_mode",
]

# Timeout of each four-letter word of the readiness checks.
PROBE_TIMEOUT = 0.5

#: The session timeout a hand-opened session asks for (ms).
_SESSION_TIMEOUT_MS = 10_000


def split_address(address: str | tuple[str, int]) -> tuple[str, int]:
    """``(host, port)`` of an address or of the first server of a connect string."""
    if isinstance(address, tuple):
        return address
    first = address.split(",")[0].split("/")[0]
    host, port = parse_host_port(first, default_port=None, default_host="127.0.0.1")
    return host, port


# --------------------------------------------------------------------------------------------------------
# four-letter words


def four_letter_word(address: str | tuple[str, int], command: str, timeout: float = 5.0) -> str:
    """Send a four-letter-word command (``ruok``, ``srvr``, ``mntr``...) and return the whole reply.

    ``address`` is ``"host:port"`` (the first server of a connect string is used) or ``(host, port)``.
    A command that is not whitelisted gets the server's "is not executed" message back.  The blocking
    front of :class:`~zkwire.protocol.fourletter.FourLetterExchange`: a malformed word raises
    InvalidArgumentError; no connection, or no complete reply within ``timeout`` s, raises
    :class:`~zkwire.protocol.fourletter.FourLetterWordError` (an OSError).
    """
    host, port = split_address(address)
    exchange = FourLetterExchange(host, port, command)
    deadline = time.monotonic() + timeout
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.sendall(exchange.request)
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError
                sock.settimeout(remaining)
                data = sock.recv(65536)
                if not data:
                    break
                exchange.received(data)
    except FourLetterWordError:
        raise
    except TimeoutError:
        # An answer cut short by the deadline is not an answer (a starting 3.8 server can answer
        # without ever closing the connection).
        raise exchange.error(f"no complete reply to {command!r} within {timeout} s") from None
    except OSError as e:
        return exchange.failed(e)
    return exchange.answer()


def srvr_mode(address: str | tuple[str, int], timeout: float = 2.0) -> str | None:
    """The ``Mode:`` a server reports (standalone, leader, follower, read-only), or None."""
    try:
        return server_mode(four_letter_word(address, "srvr", timeout))
    except OSError:
        return None


def serving(
    address: tuple[str, int], modes: Sequence[str], is_ours: Callable[[], bool], read_only: bool = False
) -> bool:
    """The server at ``address`` answers ``ruok``, reports one of ``modes``, is ours (``is_ours()``: not
    a stranger on the port), and accepts a session (a read-only one if ``read_only``)."""
    try:
        if four_letter_word(address, "ruok", PROBE_TIMEOUT) != "imok":
            return False
        if srvr_mode(address, PROBE_TIMEOUT) not in modes:
            return False
        if not is_ours():
            return False
        probe_session(address, 2.0, read_only=read_only)
    except (OSError, ValueError):
        return False
    return True


# --------------------------------------------------------------------------------------------------------
# a session opened by hand


class RawSession:
    """A session opened by hand over a blocking socket, on the project's codec.

    ``hosts`` is an address or a connect string (its first server; a chroot in it is applied by
    :meth:`path`).  Opening raises ConnectionError when the server answers with no session (a 3.8
    read-only server without local sessions answers with a bare reply header), or refuses it.  A
    context manager: leaving it closes the session.
    """

    def __init__(self, hosts: str | tuple[str, int], timeout: float, *, read_only: bool = False) -> None:
        if isinstance(hosts, tuple):
            self.server, chroot = f"{hosts[0]}:{hosts[1]}", ""
        else:
            self.server, _, chroot = hosts.split(",")[0].partition("/")
        self.chroot = "/" + chroot.strip("/") if chroot.strip("/") else ""
        self._xid = 0
        self.sock = socket.create_connection(split_address(self.server), timeout=timeout)
        try:
            self.timeout_ms = self._connect(read_only)
        except BaseException:
            self.sock.close()
            raise

    def _connect(self, read_only: bool) -> int:
        request = ConnectRequest(0, 0, _SESSION_TIMEOUT_MS, 0, bytes(16), read_only)
        self.sock.sendall(encode_connect_request(request))
        payload = self._frame()
        if len(payload) < 36:
            raise ConnectionError(f"{self.server}: not a connect response ({len(payload)} bytes)")
        try:
            response = decode_connect_response(payload)
        except ProtocolError as e:
            raise ConnectionError(f"{self.server}: {e}") from None
        if response.expired:
            raise ConnectionError(f"{self.server} refused a session")
        return response.timeout

    def _frame(self) -> bytes:
        (length,) = LENGTH.unpack(self._exactly(4))
        return self._exactly(length)

    def _exactly(self, size: int) -> bytes:
        buf = bytearray()
        while len(buf) < size:
            data = self.sock.recv(size - len(buf))
            if not data:
                raise ConnectionError("connection closed by the server")
            buf += data
        return bytes(buf)

    def path(self, path: str) -> str:
        """``path`` under the chroot."""
        return (self.chroot + "/" + path.strip("/")).rstrip("/") or "/"

    def request(self, op: OpCode, record: Record | None = None, *, xid: int | None = None) -> tuple[int, Record | None]:
        """One request and its reply: the error code (0: ok) and the reply's record.

        ``xid``: a special one (the auth packet's); by default the next of the session's own. Watch
        notifications and ping replies that arrive before the reply are skipped.
        """
        if xid is None:
            self._xid += 1
            xid = self._xid
        self.sock.sendall(encode_request(xid, op, record))
        while True:
            payload = self._frame()
            try:
                if decode_reply_header(payload).xid in (WATCH_XID, PING_XID):
                    continue
                header, body = decode_reply(op, payload)
            except ProtocolError as e:
                raise ConnectionError(f"{self.server}: {e}") from None
            if header.xid == xid:
                return header.err, body

    def failure(self, what: str, err: int) -> ServerRefusedError:
        return ServerRefusedError(f"{what} on {self.server}", err)

    def authenticate(self, scheme: str, credential: bytes) -> None:
        """Send an auth packet (``addauth``) and wait for its answer.

        Raises:
            ServerRefusedError: the server refused the credential (it then closes the connection).
        """
        err, _ = self.request(OpCode.AUTH, AuthPacket(0, scheme, credential), xid=AUTH_XID)
        if err != 0:
            raise self.failure(f"auth ({scheme})", err)

    def sync(self, path: str = "/") -> None:
        """sync: the server catches up with the leader before it answers later reads of this session."""
        err, _ = self.request(OpCode.SYNC, SyncRequest(self.path(path)))
        if err != 0:
            raise self.failure(f"sync {path}", err)

    def get_data(self, path: str, *, chroot: bool = True) -> tuple[bytes, Stat]:
        """A node's data and Stat (``chroot=False``: ``path`` as given, e.g. ``/zookeeper/config``)."""
        full = self.path(path) if chroot else path
        err, body = self.request(OpCode.GET_DATA, GetDataRequest(full, False))
        if err != 0 or not isinstance(body, GetDataResponse):
            raise self.failure(f"getData {full}", err)
        return body.data or b"", body.stat

    def reconfig(
        self,
        *,
        joining: str | None = None,
        leaving: str | None = None,
        members: str | None = None,
        from_config: int = -1,
    ) -> tuple[bytes, Stat]:
        """reconfig (incremental with ``joining``/``leaving``, bulk with ``members``): the new
        configuration's text and the config node's Stat.

        Raises:
            ServerRefusedError: the server's error (``code``), e.g. NOAUTH without admin rights.
            ConnectionError: the connection broke before the reply (the change may have been made).
        """
        err, body = self.request(OpCode.RECONFIG, ReconfigRequest(joining, leaving, members, from_config))
        if err != 0 or not isinstance(body, GetDataResponse):
            raise self.failure("reconfig", err)
        return body.data or b"", body.stat

    def children(self, path: str) -> list[str]:
        """The names of ``path``'s children ([] when it does not exist)."""
        err, body = self.request(OpCode.GET_CHILDREN, GetChildrenRequest(self.path(path), False))
        if err == NoNodeError.code:
            return []
        if err != 0 or not isinstance(body, GetChildrenResponse):
            raise self.failure(f"getChildren {path}", err)
        return [name or "" for name in body.children or ()]

    def delete(self, path: str) -> int:
        """Delete ``path`` whatever its version; the error code (0: deleted)."""
        err, _ = self.request(OpCode.DELETE, DeleteRequest(self.path(path), -1))
        return err

    def who_am_i(self) -> list[tuple[str | None, str | None]]:
        """The (scheme, user) pairs the server knows this session by (whoAmI, 3.9 and later)."""
        err, body = self.request(OpCode.WHO_AM_I)
        if err != 0 or not isinstance(body, WhoAmIResponse):
            raise self.failure("whoAmI", err)
        return [(info.auth_scheme, info.user) for info in body.client_info or ()]

    def close(self) -> None:
        """closeSession (its reply is a header, then the server closes the connection)."""
        with contextlib.suppress(OSError, ConnectionError):
            self.request(OpCode.CLOSE_SESSION)
        self.sock.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def probe_session(address: tuple[str, int], timeout: float, read_only: bool = False) -> int:
    """Open a session by hand, close it again, and return the negotiated session timeout (ms)."""
    with RawSession(address, timeout, read_only=read_only) as session:
        return session.timeout_ms


def client_address_seen_by(address: str | tuple[str, int], timeout: float = 10.0) -> str:
    """The address the server at ``address`` sees this process connect from: the ``ip`` entry of a
    whoAmI answer, asked over a session opened by hand.

    127.0.0.1 for a local server; a container's gateway when Docker forwards a published port.
    """
    with RawSession(split_address(address), timeout) as session:
        for scheme, user in session.who_am_i():
            if scheme == "ip" and user:
                return user
    raise EmbeddedZooKeeperError(f"{address} did not name the client's address")


def ensure_path(hosts: str, path: str, timeout: float = 10.0, client_options: Mapping[str, Any] | None = None) -> None:
    """Create ``path`` and its missing parents (persistent, open ACL, empty) in a session of its own,
    opened and closed for the call (zkwire's :meth:`~zkwire.Client.ensure_path`, under ``trio.run``):
    fixtures prepare a server with it before any test's client exists.  Call it outside trio.

    A chroot in ``hosts`` is honoured (its own nodes are created too). Nodes that exist already are left
    as they are.  ``client_options``: more :func:`~zkwire.open_client` keywords (a secured server's
    ``sasl``, ``auth`` or ``ssl_context``).

    Raises:
        EmbeddedZooKeeperError: no session within ``timeout`` seconds, or the server refused a create.
    """
    _with_client(hosts, timeout, client_options or {}, f"create {path}", "ensure_path", path)


def delete_tree(hosts: str, path: str, timeout: float = 10.0, client_options: Mapping[str, Any] | None = None) -> None:
    """Delete ``path`` and everything under it (a chroot in ``hosts`` is honoured), over a session
    opened by hand -- or, with ``client_options`` (a secured server's credentials), a zkwire client's
    (:meth:`~zkwire.Client.delete_recursive`). Nodes that vanish meanwhile are fine; ephemeral nodes of
    live sessions are deleted like any other."""
    if client_options:
        if path.strip("/"):
            _with_client(hosts, timeout, client_options, f"delete {path}", "delete_recursive", "/" + path.strip("/"))
        return

    def remove(session: RawSession, node: str, attempts: int = 5) -> None:
        for _ in range(attempts):
            for child in session.children(node):
                remove(session, f"{node.rstrip('/')}/{child}")
            err = session.delete(node)
            if err in (0, NoNodeError.code):
                return
            if err != NotEmptyError.code:  # NOTEMPTY: a child appeared meanwhile, go again
                raise session.failure(f"cannot delete {node}", err)
        raise EmbeddedZooKeeperError(f"{node} on {session.server} keeps getting new children")

    with RawSession(hosts, timeout) as session:
        if path.strip("/"):
            remove(session, "/" + path.strip("/"))


def _with_client(
    hosts: str, timeout: float, client_options: Mapping[str, Any], what: str, method: str, path: str
) -> None:
    """``client.<method>(path)`` in a zkwire session of its own, opened and closed for the call under
    ``trio.run`` (the uses of the client in this module, which otherwise speaks the wire by hand).

    Raises:
        EmbeddedZooKeeperError: no session within ``timeout`` seconds, or the server refused the call.
    """
    import trio

    from ..client.api import open_client
    from ..errors import ZKError

    async def call() -> None:
        with trio.fail_after(timeout):
            async with open_client(hosts, **client_options) as client:
                await getattr(client, method)(path)

    try:
        trio.run(call)
    except (ZKError, trio.TooSlowError) as exc:
        raise EmbeddedZooKeeperError(f"cannot {what} on {hosts}: {exc or 'no session in time'}") from exc
