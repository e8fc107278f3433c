"""ZooKeeper's four-letter words over trio (``srvr``, ``stat``, ``mntr``, ``ruok``, ``cons``, ``envi``, ...).

The exchange itself (the word list, validation, the bound on the answer, error translation) is
:mod:`zkwire.protocol.fourletter`; this module is its trio front.
"""

from __future__ import annotations

import trio

from ..protocol.fourletter import (
    FOUR_LETTER_WORDS,
    MAX_ANSWER,
    FourLetterExchange,
    FourLetterWordError,
    connect_error_reason,
)

__all__ = ["FOUR_LETTER_WORDS", "MAX_ANSWER", "four_letter_word", "FourLetterWordError", "connect_error_reason"]


async def four_letter_word(host: str, port: int, cmd: str) -> str:
    """Send ``cmd`` to the server at ``host:port`` and return its whole answer (decoded as UTF-8).

    Raises :class:`~zkwire.errors.InvalidArgumentError` (a ValueError) for a malformed word and
    :class:`FourLetterWordError` (a ZKError) when the server cannot be reached.  Bound the wait with a
    cancel scope (``with trio.fail_after(10): ...``).
    """
    exchange = FourLetterExchange(host, port, cmd)
    try:
        stream = await trio.open_tcp_stream(host, port)
        async with stream:
            await stream.send_all(exchange.request)
            while chunk := await stream.receive_some(65536):
                exchange.received(chunk)
    except FourLetterWordError:
        raise
    except (OSError, trio.BrokenResourceError) as e:
        return exchange.failed(e)
    return exchange.answer()
