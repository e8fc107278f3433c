"""What the client logs: connection attempts at DEBUG with a rate-limited WARNING, a quiet normal close."""

from __future__ import annotations

import logging

import pytest
import trio

import zkwire
from zkwire.client.connectlog import FIRST_SUMMARY_AFTER, SUMMARY_INTERVAL, ConnectFailureLog
from zkwire.testing.embedded import free_port


def test_connect_failures_summarised(caplog: pytest.LogCaptureFixture) -> None:
    log = logging.getLogger("zkwire.test-connectlog")
    report = ConnectFailureLog(log)
    with caplog.at_level(logging.DEBUG, logger=log.name):
        report.failed("h1:1", OSError("refused"), hosts=2, now=100.0)
        assert [r.levelno for r in caplog.records] == [logging.DEBUG]  # not every host tried yet
        report.failed("h2:1", OSError("refused"), hosts=2, now=100.1)
        for i in range(1, 4 * int(FIRST_SUMMARY_AFTER)):  # four a second: DEBUG only, for a while
            report.failed("h1:1", OSError("refused"), hosts=2, now=100.0 + i * 0.25)
        assert {r.levelno for r in caplog.records} == {logging.DEBUG}
        report.failed("h2:1", OSError("refused"), hosts=2, now=100.0 + FIRST_SUMMARY_AFTER)
        warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
        assert len(warnings) == 1 and f"for {FIRST_SUMMARY_AFTER:.1f}s" in warnings[0].getMessage()
        start = 100.0 + FIRST_SUMMARY_AFTER
        for i in range(100):  # for most of the interval: no new warning
            report.failed("h1:1", OSError("refused"), hosts=2, now=start + i * 0.25)
        assert sum(r.levelno == logging.WARNING for r in caplog.records) == 1
        report.failed("h1:1", OSError("refused"), hosts=2, now=start + SUMMARY_INTERVAL)
        assert sum(r.levelno == logging.WARNING for r in caplog.records) == 2
        report.succeeded("h1:1", now=160.0)
        assert caplog.records[-1].levelno == logging.INFO and "60.0s" in caplog.records[-1].getMessage()
        caplog.clear()
        report.succeeded("h1:1", now=141.0)  # no outage: nothing to say
        assert caplog.records == []


async def test_a_down_server_logs_attempts_at_debug(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("zkwire.client.connectlog.FIRST_SUMMARY_AFTER", 0.5)
    hosts = f"127.0.0.1:{free_port()}"
    with caplog.at_level(logging.DEBUG, logger="zkwire"):
        with trio.move_on_after(1.5):
            async with zkwire.open_client(hosts, session_timeout=10):
                pytest.fail("nothing listens there")
    mine = [r for r in caplog.records if r.name == "zkwire.client" and "connect" in r.getMessage()]
    assert sum(r.levelno == logging.DEBUG for r in mine) >= 3
    assert [r.levelno for r in mine if r.levelno >= logging.INFO] == [logging.WARNING]


async def test_a_normal_close_is_quiet(zk_hosts: str, caplog: pytest.LogCaptureFixture) -> None:
    async with zkwire.open_client(zk_hosts) as zk:
        await zk.get_data("/")
        caplog.clear()
        caplog.set_level(logging.DEBUG, logger="zkwire")
    loud = [r.getMessage() for r in caplog.records if r.name.startswith("zkwire") and r.levelno >= logging.INFO]
    assert loud == []
    assert any("-> closed" in r.getMessage() for r in caplog.records)  # still there at DEBUG
