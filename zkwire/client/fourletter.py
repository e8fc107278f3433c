"""ZooKeeper's four-letter words (``srvr``, ``stat``, ``mntr``, ``ruok``, ``cons``, ``envi``, ``conf``, ...).

A four-letter word is sent on a fresh TCP connection to the client port, instead of a session handshake;
the server writes its answer and closes the connection.  The server only answers the words listed in its
``4lw.commands.whitelist`` (others get a short "not executed because it is not in the whitelist" text).
"""

from __future__ import annotations

import os
import socket

import trio

from ..errors import InvalidArgumentError, ZKError

__all__ = ["FOUR_LETTER_WORDS", "four_letter_word", "FourLetterWordError", "connect_error_reason"]

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


class FourLetterWordError(ZKError):
    """The word could not be sent or its answer not read (connection refused, timeout, ...)."""


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


def _check_word(cmd: str) -> bytes:
    if not isinstance(cmd, str) or len(cmd) != 4 or not cmd.isascii() or not cmd.isalpha() or not cmd.islower():
        raise InvalidArgumentError(f"not a four-letter word: {cmd!r} (four lowercase letters, e.g. srvr, mntr, ruok)")
    return cmd.encode("ascii")


async def four_letter_word(host: str, port: int, cmd: str) -> str:
    """Send ``cmd`` to the server at ``host:port`` and return its whole answer (decoded as UTF-8).

    Raises :class:`~zkwire.errors.InvalidArgumentError` (a ValueError) for a malformed word and
    :class:`FourLetterWordError` (a ZKError) when the server cannot be reached.  Bound the wait with a
    cancel scope (``with trio.fail_after(10): ...``).
    """
    word = _check_word(cmd)
    chunks: list[bytes] = []
    size = 0
    try:
        stream = await trio.open_tcp_stream(host, port)
        async with stream:
            await stream.send_all(word)
            while True:
                chunk = await stream.receive_some(65536)
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
                if size > MAX_ANSWER:
                    raise FourLetterWordError(f"{host}:{port}: answer to {cmd} is larger than {MAX_ANSWER} bytes")
    except (OSError, trio.BrokenResourceError) as e:
        if chunks:
            # Some servers reset the connection right after writing the answer: keep what came.
            return b"".join(chunks).decode("utf-8", "replace")
        raise FourLetterWordError(f"{host}:{port}: {connect_error_reason(e)}") from None
    return b"".join(chunks).decode("utf-8", "replace")
