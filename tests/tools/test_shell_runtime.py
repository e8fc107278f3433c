"""zkwire.shell.runtime, the public part of the command lines, without a server: duration types,
UTF-8 checks, one-line usage errors and how run_cli ends a program."""

from __future__ import annotations

import argparse

import pytest

from zkwire.shell.runtime import (
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    MAX_SESSION_TIMEOUT,
    OneLineArgumentParser,
    is_utf8,
    run_cli,
    seconds,
    session_timeout,
)


def test_seconds_accepts_finite_numbers_in_range() -> None:
    positive = seconds()
    assert positive("1.5") == 1.5
    for text, message in [
        ("soon", "not a number of seconds: 'soon'"),
        ("inf", "must be a finite number of seconds, not 'inf'"),
        ("nan", "must be a finite number of seconds, not 'nan'"),
        ("0", "must be more than 0 seconds, not '0'"),
        ("-1", "must be more than 0 seconds, not '-1'"),
    ]:
        with pytest.raises(argparse.ArgumentTypeError) as caught:
            positive(text)
        assert str(caught.value) == message
    assert seconds(allow_minimum=True)("0") == 0.0
    assert session_timeout("0.001") == 0.001
    assert session_timeout(str(MAX_SESSION_TIMEOUT)) == MAX_SESSION_TIMEOUT
    with pytest.raises(argparse.ArgumentTypeError, match=r"from 0\.001 to 2147483\.647"):
        session_timeout("2147483.648")


def test_is_utf8() -> None:
    assert is_utf8("zkwire ✓")
    assert not is_utf8("bad\udcff")


def test_usage_errors_are_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    parser = OneLineArgumentParser(prog="prog")
    parser.add_argument("--wait", type=seconds())
    with pytest.raises(SystemExit) as caught:
        parser.parse_args(["--wait", "never\x1b[2J"])
    assert caught.value.code == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("prog: argument --wait: ") and "\x1b" not in err


def test_run_cli_endings() -> None:
    assert run_cli(lambda: 7) == 7

    def interrupted() -> int:
        raise KeyboardInterrupt

    def interrupted_in_a_group() -> int:
        raise BaseExceptionGroup("tasks", [BaseExceptionGroup("inner", [KeyboardInterrupt()])])

    def failed() -> int:
        raise BaseExceptionGroup("tasks", [KeyboardInterrupt(), ValueError("bug")])

    assert run_cli(interrupted) == EXIT_INTERRUPTED
    assert run_cli(interrupted_in_a_group) == EXIT_INTERRUPTED
    with pytest.raises(BaseExceptionGroup):
        run_cli(failed)
