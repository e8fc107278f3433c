"""Commands about servers rather than nodes: ``four`` (a four-letter word, answered without a session)
and ``version`` (zkwire's own)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import trio

from ...client.fourletter import FOUR_LETTER_WORDS, FourLetterWordError, four_letter_word
from ...sansio.hosts import parse_connect_string
from ...sansio.session import HostPort
from ..context import Context
from ..outcomes import ArgumentError, CommandError, ConnectError
from ..registry import NoArguments, command, optional_positional, positional

__all__ = ["FourArguments"]


def _four_letter_word(text: str) -> str:
    if text not in FOUR_LETTER_WORDS:
        raise ArgumentError(f"unknown four-letter word {text!r} (one of {', '.join(FOUR_LETTER_WORDS)})")
    return text


def _servers(text: str) -> tuple[HostPort, ...]:
    hosts, _chroot = parse_connect_string(text)
    return tuple(hosts)


@dataclass(frozen=True, kw_only=True)
class FourArguments:
    word: str = positional(_four_letter_word)
    #: None: the server of the session, or else those of --server.
    servers: tuple[HostPort, ...] | None = optional_positional(_servers)


@command(
    "four",
    "four word [host:port]",
    "send a four-letter word (srvr, stat, mntr, ruok, cons, envi, conf, wchs, dump, isro, ...)",
    FourArguments,
    session=False,
)
async def cmd_four(ctx: Context, a: FourArguments) -> None:
    hosts: Sequence[HostPort]
    explain: Callable[[str], str] = str
    if a.servers is not None:
        hosts = a.servers
    elif ctx.client is not None and ctx.client.connected_host is not None:
        hosts = [ctx.client.connected_host]
    else:
        hosts, _chroot = parse_connect_string(ctx.hosts)
        explain = ctx.explain_hosts  # the tool's default server, perhaps: say so
    failures: list[str] = []
    silent = 0
    for host in hosts:
        try:
            with trio.fail_after(ctx.connect_timeout):
                answer = await four_letter_word(host.host, host.port, a.word)
        except FourLetterWordError as e:
            failures.append(str(e))
            continue
        except trio.TooSlowError:
            failures.append(f"{host.host}:{host.port}: no answer to {a.word} within {ctx.connect_timeout:g}s")
            continue
        if not answer:
            # 3.8 closes the connection without a word when the word is unknown to it.
            failures.append(f"{host.host}:{host.port}: no answer to {a.word} (the connection was closed)")
            silent += 1
            continue
        if len(hosts) > 1:
            ctx.print(f"== {host.host}:{host.port} ==")
        ctx.print(answer.removesuffix("\n"))
    if failures:
        if silent == len(failures):  # every server was reached, and none answered: exit 1, not 3
            raise CommandError("; ".join(failures))
        raise ConnectError(explain("; ".join(failures)))


@command("version", "version", "show zkwire's version", NoArguments, session=False)
async def cmd_version(ctx: Context, a: NoArguments) -> None:
    from ... import __version__

    ctx.print(f"zkwire {__version__}")
