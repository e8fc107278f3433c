"""ZooKeeper's four-letter words (``srvr``, ``stat``, ``mntr``, ``ruok``, ``cons``, ``envi``, ``conf``, ...), sans I/O.

A four-letter word is sent on a fresh TCP connection to the client port, instead of a session handshake;
the server writes its answer and closes the connection.  The server only answers the words listed in its
``4lw.commands.whitelist`` (others get a short "not executed because it is not in the whitelist" text).

:class:`FourLetterExchange` is that exchange without the socket: the word to send (validated), the
answer as it arrives (bounded), and what a failed connection means.  The trio client
(:func:`zkwire.client.fourletter.four_letter_word`) and the blocking one of the test harness
(:func:`zkwire.testing.wire.four_letter_word`) are both thin loops around it; what the answers say is
read here too (:func:`server_mode`).
"""

from __future__ import annotations

import os
import socket

from ..errors import InvalidArgumentError, ZKError

__all__ = [
    "FOUR_LETTER_WORDS",
    "MAX_ANSWER",
    "FourLetterWordError",
    "FourLetterExchange",
    "check_word",
    "connect_error_reason",
    "server_mode",
]

#: The words ZooKeeper 3.8 knows (any four lowercase letters may be sent; these are the documented ones).
FOUR_LETTER_WORDS = (
    "conf",
    "cons",
    "crst",
    "dirs",
    "dump",
    "envi",
    "gtmk",
    "hash",
    "isro",
    "mntr",
    "ruok",
    "srst",
    "srvr",
    "stat",
    "stmk",
    "wchc",
    "wchp",
    "wchs",
)

#: Largest answer accepted (``dump`` / ``wchp`` on a busy server can be long, but not unbounded).
MAX_ANSWER = 64 * 1024 * 1024


class FourLetterWordError(ZKError, OSError):
    """The word could not be sent or its answer not read (connection refused, timeout, ...).

    Also an ``OSError``, as the socket errors it stands for are.
    """


def connect_error_reason(error: BaseException) -> str:
    """A short reason for a failed connection ("Connection refused"), also when trio wrapped the
    per-address errors of ``open_tcp_stream`` into one ``OSError`` caused by an exception group."""
    seen: list[BaseException] = [error]
    while seen:
        e = seen.pop(0)
        if isinstance(e, OSError) and e.errno and e.errno > 0 and not isinstance(e, socket.gaierror):
            return os.strerror(e.errno)
        if isinstance(e, OSError) and e.strerror:
            return e.strerror
        if isinstance(e, BaseExceptionGroup):
            seen.extend(e.exceptions)
        if e.__cause__ is not None:
            seen.append(e.__cause__)
    return str(error)


def check_word(cmd: str) -> bytes:
    """The bytes to send for ``cmd``; InvalidArgumentError unless it is four lowercase ASCII letters."""
    if not isinstance(cmd, str) or len(cmd) != 4 or not cmd.isascii() or not cmd.isalpha() or not cmd.islower():
        raise InvalidArgumentError(f"not a four-letter word: {cmd!r} (four lowercase letters, e.g. srvr, mntr, ruok)")
    return cmd.encode("ascii")


class FourLetterExchange:
    """One word sent to ``host:port`` and its answer.

    A front connects, sends :attr:`request`, passes each chunk read to :meth:`received` until the
    server closes the connection, then takes :meth:`answer`; when connecting or reading fails it
    returns :meth:`failed` instead, which raises unless part of the answer had already come.
    """

    __slots__ = ("_chunks", "_size", "cmd", "host", "port", "request")

    def __init__(self, host: str, port: int, cmd: str) -> None:
        self.request = check_word(cmd)
        self.cmd = cmd
        self.host = host
        self.port = port
        self._chunks: list[bytes] = []
        self._size = 0

    def received(self, chunk: bytes) -> None:
        """A chunk of the answer; FourLetterWordError once the answer exceeds :data:`MAX_ANSWER`."""
        self._chunks.append(chunk)
        self._size += len(chunk)
        if self._size > MAX_ANSWER:
            raise self.error(f"answer to {self.cmd} is larger than {MAX_ANSWER} bytes")

    def answer(self) -> str:
        """The whole answer, decoded as UTF-8 (undecodable bytes replaced)."""
        return b"".join(self._chunks).decode("utf-8", "replace")

    def failed(self, error: BaseException) -> str:
        """The answer so far if any came (some servers reset the connection right after writing it);
        otherwise raise a FourLetterWordError giving the reason."""
        if self._chunks:
            return self.answer()
        raise self.error(connect_error_reason(error)) from None

    def error(self, reason: str) -> FourLetterWordError:
        """A FourLetterWordError naming the server and ``reason``."""
        return FourLetterWordError(f"{self.host}:{self.port}: {reason}")


def server_mode(answer: str) -> str | None:
    """The ``Mode:`` of a ``srvr`` or ``stat`` answer (standalone, leader, follower, read-only), or None."""
    for line in answer.splitlines():
        if line.startswith("Mode:"):
            return line.partition(":")[2].strip()
    return None
