"""Four-letter words: one exchange (zkwire.protocol.fourletter) behind the trio client and the blocking
one of the test harness; both fronts validate, bound and report failures the same way."""

from __future__ import annotations

import pytest
import trio

from zkwire.client import fourletter as async_front
from zkwire.errors import InvalidArgumentError, ZKError
from zkwire.protocol import fourletter
from zkwire.protocol.fourletter import FourLetterExchange, FourLetterWordError
from zkwire.sansio.hosts import parse_host_port
from zkwire.testing import base as sync_front


def test_the_fronts_share_the_exchange() -> None:
    assert async_front.FourLetterWordError is FourLetterWordError
    assert async_front.FOUR_LETTER_WORDS is fourletter.FOUR_LETTER_WORDS
    assert issubclass(FourLetterWordError, ZKError) and issubclass(FourLetterWordError, OSError)


@pytest.mark.parametrize("word", ["RUOK", "ruo", "ruok!", "r0ok", "rüok", ""])
async def test_both_fronts_refuse_a_malformed_word(word: str) -> None:
    with pytest.raises(InvalidArgumentError, match="not a four-letter word"):
        sync_front.four_letter_word(("127.0.0.1", 1), word)
    with pytest.raises(InvalidArgumentError, match="not a four-letter word"):
        await async_front.four_letter_word("127.0.0.1", 1, word)


async def test_both_fronts_report_an_unreachable_server_alike() -> None:
    with pytest.raises(FourLetterWordError) as blocking:
        sync_front.four_letter_word(("127.0.0.1", 1), "ruok", timeout=2.0)
    with trio.fail_after(10), pytest.raises(FourLetterWordError) as trio_:
        await async_front.four_letter_word("127.0.0.1", 1, "ruok")
    assert str(blocking.value) == str(trio_.value) == "127.0.0.1:1: Connection refused"


def test_the_exchange_bounds_the_answer_and_keeps_a_reset_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    exchange = FourLetterExchange("h", 1, "mntr")
    assert exchange.request == b"mntr"
    exchange.received(b"zk_version\t3.8")
    assert exchange.failed(ConnectionResetError(104, "reset")) == "zk_version\t3.8"
    with pytest.raises(FourLetterWordError, match="h:1: Connection refused"):
        FourLetterExchange("h", 1, "mntr").failed(ConnectionRefusedError(111, "refused"))
    monkeypatch.setattr(fourletter, "MAX_ANSWER", 100)
    big = FourLetterExchange("h", 1, "dump")
    big.received(bytes(60))
    with pytest.raises(FourLetterWordError, match="h:1: answer to dump is larger than 100 bytes"):
        big.received(bytes(60))


async def test_both_fronts_against_the_real_server(zk_hosts: str) -> None:
    host, port = parse_host_port(zk_hosts.split(",")[0].split("/")[0])
    assert sync_front.four_letter_word((host, port), "ruok") == "imok"
    with trio.fail_after(10):
        assert await async_front.four_letter_word(host, port, "ruok") == "imok"
    blocking = await trio.to_thread.run_sync(sync_front.four_letter_word, (host, port), "srvr")
    with trio.fail_after(10):
        answer = await async_front.four_letter_word(host, port, "srvr")
    assert blocking.splitlines()[0] == answer.splitlines()[0]  # the version line
